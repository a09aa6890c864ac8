import { describe, expect, it, vi } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { DEFAULT_CODE_SETTINGS } from "../../shared/packs/code.js";
import { QuickJSSandbox } from "../../shared/packs/sandbox.js";
import { makeDeps } from "../loop/harness.js";

/**
 * A sandbox that cannot be set up (here: a harness that throws as it loads) is a fault of the
 * system. It must never read as a verdict on the draft's source (a syntax error, a failed test).
 */
vi.mock("../../shared/packs/sandbox-harness.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../shared/packs/sandbox-harness.js")>()),
  harnessSource: () => "throw new Error('the harness is broken');",
}));

const draft: Draft = {
  id: "code-setup",
  kind: "code",
  content: {
    language: "javascript",
    source: "function add(a, b) { return a + b; }",
    tests: [{ name: "adds", code: "assert.equal(add(2, 3), 5);" }],
  },
};

describe("a sandbox that cannot be set up", () => {
  it("throws SandboxSetupError instead of judging the source", async () => {
    const sandbox = new QuickJSSandbox();
    await sandbox.ready();
    const content = draft.content as { source: string; tests: { name: string; code: string }[] };
    expect(() => sandbox.runSuite(content.source, content.tests, DEFAULT_CODE_SETTINGS)).toThrow(
      expect.objectContaining({
        name: "SandboxSetupError",
        message: expect.stringMatching(/harness failed to load/),
      }),
    );
  });

  it("ends the run failed with system_error, not with a verdict on the draft", async () => {
    const { deps } = makeDeps(undefined);
    const result = await correctDraft(draft, deps);
    expect(result.status).toBe("failed");
    expect(result.reason).toBe("system_error");
  });
});
