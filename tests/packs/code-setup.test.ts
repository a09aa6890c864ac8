import { afterEach, describe, expect, it, vi } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { DEFAULT_CODE_SETTINGS } from "../../shared/packs/code/code.js";
import { QuickJSSandbox, SandboxSetupError } from "../../shared/packs/code/sandbox.js";
import { makeDeps } from "../loop/harness.js";

/**
 * A sandbox that cannot be set up is a fault of the system. It must never read as a verdict on the
 * draft's source (a syntax error, a failed test).
 */

const SOURCE = "function add(a, b) { return a + b; } // code-setup";
const TESTS = [{ name: "adds", code: "assert.equal(add(2, 3), 5);" }];

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a sandbox that cannot be set up", () => {
  it("throws SandboxSetupError when the harness cannot load, instead of judging the source", async () => {
    const sandbox = new QuickJSSandbox();
    await sandbox.ready();
    // Far below what the harness needs (the pack's settings never allow less than 1 MiB).
    const starved = { ...DEFAULT_CODE_SETTINGS, memoryLimitBytes: 64 * 1024 };
    expect(() => sandbox.runSuite(SOURCE, TESTS, starved)).toThrow(
      expect.objectContaining({
        name: "SandboxSetupError",
        message: expect.stringMatching(/harness failed to load/),
      }),
    );
    // The next suite runs on a fresh engine.
    await sandbox.ready();
    const result = sandbox.runSuite(SOURCE, TESTS, DEFAULT_CODE_SETTINGS);
    expect(result.kind === "ran" && result.outcomes.map((o) => o.passed)).toEqual([true]);
  });

  it("ends the run failed with system_error, not with a verdict on the draft", async () => {
    vi.spyOn(QuickJSSandbox.prototype, "runSuite").mockImplementation(() => {
      throw new SandboxSetupError("the sandbox harness failed to load: injected");
    });
    // The loop validates inside a deferral: the suite runs asynchronously (code.ts).
    vi.spyOn(QuickJSSandbox.prototype, "runSuiteAsync").mockRejectedValue(
      new SandboxSetupError("the sandbox harness failed to load: injected"),
    );
    const draft: Draft = {
      id: "code-setup",
      kind: "code",
      content: { language: "javascript", source: `${SOURCE} run`, tests: TESTS },
    };
    const { deps } = makeDeps(undefined);
    const result = await correctDraft(draft, deps);
    expect(result.status).toBe("failed");
    expect(result.reason).toBe("system_error");
  });
});
