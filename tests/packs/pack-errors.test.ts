import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import { createModelClient } from "../../shared/model/index.js";
import type { Pack } from "../../shared/pack.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";
import { jsonLines, redraft } from "../helpers/run-cli.js";

/**
 * Pack authors get clear answers: a rule that throws is the pack's fault (`failed` / `pack_error`,
 * the message the violation `rule_error` naming pack and rule), never redraft's `system_error`;
 * misuse of the library is a named error saying what to give.
 */

const thrower = (when: "check" | "repair"): Pack => ({
  kind: "thrower",
  description: "a pack whose rule throws",
  settings: {},
  rules: [
    { id: "fine", description: "passes", severity: "warning", check: () => [] },
    {
      id: "boom",
      description: "throws",
      severity: "error",
      check: () => {
        if (when === "check") throw new TypeError("cannot read properties of undefined (reading 'x')");
        return [];
      },
      ...(when === "repair" && {
        repair: () => {
          throw "a string, not an error";
        },
      }),
    },
  ],
});

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-pack-errors-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("a rule that throws", () => {
  it.each(["check", "repair"] as const)(
    "in its %s: the run is failed / pack_error, naming pack and rule",
    async (when) => {
      const runs = new MemoryRunStore();
      const result = await correctDraft(
        { id: "d1", kind: "thrower", content: { text: "hello" } },
        { registry: new PackRegistry({}, [thrower(when)]), runs, blobs: new MemoryBlobStore() },
      );
      expect(result.status).toBe("failed");
      expect(result.reason).toBe("pack_error");
      const run = await runs.getRun(result.runId);
      expect(run?.reason).toBe("pack_error");
      expect(run?.message).toMatch(/^rule_error: pack "thrower" rule "boom" threw: /);
      expect(run?.message).toContain(
        when === "check" ? "TypeError: cannot read properties" : "a string, not an error",
      );
    },
  );

  it("through redraft run --pack: the draft's line says failed / pack_error, not system_error", async () => {
    const pack = join(work, "thrower.mjs");
    await writeFile(
      pack,
      `export const pack = { kind: "thrower", description: "d", settings: {}, rules: [{ id: "boom", description: "d", severity: "error", check: () => { throw new RangeError("bad index"); } }] };\n`,
    );
    const draft = join(work, "draft.json");
    await writeFile(draft, JSON.stringify({ id: "d2", kind: "thrower", content: { text: "x" } }));
    const out = await redraft([
      "--data-dir",
      join(work, "data"),
      "--pack",
      pack,
      "run",
      draft,
      "--llm",
      "none",
      "--json",
    ]);
    const [line] = jsonLines(out.stdout);
    expect(line).toMatchObject({ status: "failed", reason: "pack_error" });
    expect(String(line?.message)).toContain(
      'rule_error: pack "thrower" rule "boom" threw: RangeError: bad index',
    );
  });
});

describe("misuse of the library is a named error with the fix", () => {
  it("correctDraft(draft, {}) names each missing dependency", async () => {
    const error = await correctDraft({ id: "d", kind: "mcq", content: {} }, {} as never).catch(
      (e: unknown) => e,
    );
    expect((error as Error).name).toBe("CorrectDraftUsageError");
    expect((error as Error).message).toMatch(/deps\.registry .*new PackRegistry\(\)/);
    expect((error as Error).message).toMatch(/deps\.runs .*new MemoryRunStore\(\)/);
    expect((error as Error).message).toMatch(/deps\.blobs .*new MemoryBlobStore\(\)/);
  });

  it("an unknown model provider is an error, not undefined", () => {
    expect(() => createModelClient({ provider: "openai" } as never)).toThrow(
      expect.objectContaining({
        name: "ModelNotConfiguredError",
        message: expect.stringMatching(
          /unknown model provider "openai": one of anthropic, bedrock, replay, none/,
        ),
      }),
    );
    expect(() => createModelClient(undefined as never)).toThrow(/unknown model provider/);
  });

  it("anthropic without a key is a named error saying where the key goes", () => {
    expect(() => createModelClient({ provider: "anthropic" } as never)).toThrow(
      expect.objectContaining({
        name: "ModelNotConfiguredError",
        message: expect.stringMatching(/needs an API key/),
      }),
    );
  });
});
