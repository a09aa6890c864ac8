import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExecutionInput, LOCAL_BUCKET, LocalRuntime } from "../../local/runtime.js";
import { buildRunResult } from "../../shared/loop/run.js";
import { path, synthesizedAsl } from "./harness.js";

const ROOT = join(import.meta.dirname, "..", "..");
const DEPTH = 10_000;
const deepArray = `${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`;
const deepObject = `${'{"a":'.repeat(DEPTH)}1${"}".repeat(DEPTH)}`;
function deepValue(n: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < n; i++) value = [value];
  return value;
}

/** A local runtime over a temp folder, with no model: good drafts here validate at once. */
async function open(options: { maxDraftDepth?: number } = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), "redraft-bad-"));
  const runtime = await LocalRuntime.open({
    dataDir,
    asl: await synthesizedAsl(),
    retryDelayMs: 0,
    ...options,
  });
  let n = 0;
  return {
    runtime,
    /** Runs one input through the state machine and reads its run back, as the CLI does. */
    async run(input: ExecutionInput | string) {
      let execution: ExecutionInput;
      if (typeof input === "string") {
        const key = `drafts/upload-${++n}.json`;
        await runtime.blobs.putIfAbsent(key, input);
        execution = { draftRef: { bucket: LOCAL_BUCKET, key }, submissionId: "batch" };
      } else execution = { submissionId: "batch", ...input };
      const summary = await runtime.execute(execution);
      return { summary, result: await buildRunResult(summary.runId, runtime.deps) };
    },
    async close() {
      await runtime.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

let clean: Record<string, unknown>;
let repaired: Record<string, unknown>;

beforeAll(async () => {
  clean = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"));
  repaired = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "json-repaired.json"), "utf8"));
  await synthesizedAsl();
}, 180_000);

describe("the local state machine on a batch mixing every bad input with three good drafts", () => {
  let rt: Awaited<ReturnType<typeof open>>;
  beforeAll(async () => {
    rt = await open();
  });
  afterAll(async () => {
    await rt.close();
  });

  it("validates the good ones and rejects each bad one through InputRejected, with its reason", async () => {
    const inputs: Array<[string, ExecutionInput | string]> = [
      ["good-1", JSON.stringify(clean)],
      ["deep-array", deepArray],
      ["deep-object", deepObject],
      ["deep-content-upload", `{"id":"deep-content","kind":"mcq","content":${deepArray}}`],
      ["deep-content-inline", { draft: { ...clean, id: "deep-inline", content: deepValue(DEPTH) } }],
      ["good-2-bom", `\uFEFF${JSON.stringify(repaired)}`],
      ["null", "null"],
      ["number", "7"],
      [
        "unreadable",
        { rejectWith: { reason: "unreadable", message: "in/loop.json: symlink loop", draftId: "loop.json" } },
      ],
      ["twin-1", JSON.stringify({ ...clean, id: "twin" })],
      ["twin-2", JSON.stringify({ ...clean, id: "twin", metadata: { copy: 2 } })],
      ["good-3", JSON.stringify({ ...clean, id: "good-3" })],
    ];
    const outcomes: Record<
      string,
      { status: string; reason: string | null; message?: string; draftId: string }
    > = {};
    const paths: Record<string, (string | undefined)[]> = {};
    for (const [name, input] of inputs) {
      const { summary, result } = await rt.run(input);
      outcomes[name] = {
        status: result.status,
        reason: result.reason,
        draftId: result.draftId,
        ...(result.message !== undefined && { message: result.message }),
      };
      paths[name] = path(summary.history);
    }
    expect(outcomes).toMatchObject({
      "good-1": { status: "validated", draftId: "mcq-clean" },
      "good-2-bom": { status: "validated", draftId: "paper-repaired" },
      "good-3": { status: "validated" },
      "twin-1": { status: "validated", draftId: "twin" },
      "twin-2": { status: "validated", draftId: "twin" },
      "deep-array": { status: "rejected", reason: "too_deep", message: expect.stringMatching(/100 levels/) },
      "deep-object": { status: "rejected", reason: "too_deep" },
      "deep-content-upload": { status: "rejected", reason: "too_deep", draftId: "deep-content" },
      "deep-content-inline": { status: "rejected", reason: "too_deep", draftId: "deep-inline" },
      null: { status: "rejected", reason: "invalid_input", message: expect.stringMatching(/got null$/) },
      number: { status: "rejected", reason: "invalid_input", message: expect.stringMatching(/got number$/) },
      unreadable: {
        status: "rejected",
        reason: "unreadable",
        draftId: "loop.json",
        message: "in/loop.json: symlink loop",
      },
    });
    for (const name of [
      "deep-array",
      "deep-object",
      "deep-content-upload",
      "deep-content-inline",
      "unreadable",
    ])
      expect(paths[name]?.at(-1)).toBe("InputRejected");
    const listed = await rt.runtime.runs.listRuns({ limit: 100 });
    expect(listed).toHaveLength(inputs.length);
  }, 120_000);
});

describe("a fault inside Validate before the run is registered", () => {
  it("still leaves a failed run record, so the run can be listed and shown", async () => {
    // With the depth guard lifted, hashing the draft overflows the stack: a system fault in Validate.
    const rt = await open({ maxDraftDepth: Number.POSITIVE_INFINITY });
    try {
      const { summary, result } = await rt.run(`{"id":"overflow","kind":"mcq","content":${deepArray}}`);
      expect(summary.status).toBe("FAILED");
      expect(path(summary.history)).toContain("RecordFailure");
      expect(result).toMatchObject({ status: "failed", reason: "system_error", draftId: "overflow" });
      expect(result.message).toMatch(/RangeError/);
      const good = await rt.run(JSON.stringify(clean));
      expect(good.result.status).toBe("validated");
    } finally {
      await rt.close();
    }
  }, 120_000);
});
