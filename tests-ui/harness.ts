import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { vi } from "vitest";
import type { DraftSource } from "../app/inputs.js";
import { main } from "../cli/main.js";
import { LOCAL_BUCKET, LocalRuntime } from "../local/runtime.js";
import { loadAsl } from "../local/state-machine.js";
import { buildRunResult, type RunResult } from "../shared/loop/run.js";
import { ReplayModelClient } from "../shared/model/replay.js";
import { newRunRecord } from "../shared/store/types.js";
import { startViewer, type Viewer } from "../ui/server.js";

export const ROOT = join(import.meta.dirname, "..");
export const CASSETTE = join(ROOT, "examples", "example.cassette.json");

/** `redraft …` in this process, its output captured; returns the exit code and what it printed. */
export async function redraft(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    return { code: await main(["node", "redraft", ...args]), stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/** A data dir holding the examples, run through the state machine by `redraft run` with the example cassette. */
export async function examplesDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "redraft-ui-"));
  const run = await redraft(
    "run",
    join(ROOT, "examples", "drafts"),
    "--llm",
    `replay:${CASSETTE}`,
    "--data-dir",
    dir,
    "--no-progress",
  );
  if (run.code !== 0) throw new Error(`redraft run failed: ${run.stderr}`);
  await runUnpriced(dir);
  return dir;
}

/** The drafts of the batch manifest, in its line order; its last line is no draft at all. */
export const BATCH_DRAFTS = ["mcq-clean", "json-repaired", "mcq-seed004"] as const;

/**
 * A data dir holding one batch, run by `redraft batch` with the example cassette: three drafts of
 * the examples (one repaired without a model) and, last, a line of broken JSON the loop rejects.
 * Apart from examplesDataDir, whose counts the runs list's tests assert.
 */
export async function batchDataDir(): Promise<{ dir: string; batchId: string }> {
  const dir = await mkdtemp(join(tmpdir(), "redraft-ui-batch-"));
  const lines = await Promise.all(
    BATCH_DRAFTS.map(async (name) =>
      JSON.stringify(JSON.parse(await readFile(join(ROOT, "examples", "drafts", `${name}.json`), "utf8"))),
    ),
  );
  const manifest = join(dir, "manifest.jsonl");
  await writeFile(manifest, `${[...lines, '{"id": "broken", '].join("\n")}\n`);
  const run = await redraft(
    "batch",
    manifest,
    "--llm",
    `replay:${CASSETTE}`,
    "--data-dir",
    dir,
    "--no-progress",
    "--json",
  );
  if (run.code !== 0) throw new Error(`redraft batch failed: ${run.stderr}`);
  const summary = JSON.parse(run.stdout.trim().split("\n").at(-1) ?? "{}") as { batchId?: string };
  if (!summary.batchId) throw new Error(`redraft batch printed no batch id: ${run.stdout}`);
  return { dir, batchId: summary.batchId };
}

/**
 * A data dir holding `total` finished runs, of which `awaitingReview` wait for a person (every
 * tenth, from the newest): written through the folder's own run store (SQLite), as the loop's
 * records, so that the list's totals and pages are tried at a size no example folder reaches.
 */
export async function manyRunsDataDir(total: number, awaitingReview: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "redraft-ui-many-"));
  const runtime = await LocalRuntime.open({ dataDir: dir, asl: await loadAsl(), retryDelayMs: 0 });
  try {
    const start = Date.parse("2026-01-01T00:00:00.000Z");
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) {
      const at = new Date(start + i * 1000).toISOString();
      const review = (total - 1 - i) % 10 === 0 && (total - 1 - i) / 10 < awaitingReview;
      const run = newRunRecord(`many-${String(i).padStart(6, "0")}`, `draft-${i}`, "mcq", at);
      Object.assign(run, {
        status: review ? "needs_manual_review" : "validated",
        ...(review && { reason: "max_attempts" }),
        attempts: review ? 3 : 0,
        tokens: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, total: 15 },
        costUsd: 0.001,
      });
      writes.push(runtime.runs.createRun(run));
    }
    await Promise.all(writes);
  } finally {
    await runtime.close();
  }
  return dir;
}

/**
 * A data dir holding one run waiting for review whose draft is `bytes` long (a JSON record with a
 * long list), its best draft stored where the run page reads it: a large run page.
 */
export async function largeRunDataDir(
  bytes: number,
): Promise<{ dir: string; runId: string; draft: unknown }> {
  const dir = await mkdtemp(join(tmpdir(), "redraft-ui-large-"));
  const runtime = await LocalRuntime.open({ dataDir: dir, asl: await loadAsl(), retryDelayMs: 0 });
  try {
    const runId = "large-run-1";
    const items: { name: string }[] = [];
    for (let size = 0; size < bytes; size += 40)
      items.push({ name: `author ${items.length} of a long list` });
    const draft = { id: "large-draft", kind: "json", context: {}, content: { authors: items } };
    const run = newRunRecord(runId, "large-draft", "json", "2026-01-01T00:00:00.000Z");
    Object.assign(run, {
      status: "needs_manual_review",
      reason: "max_attempts",
      finalRef: `runs/${runId}/final.json`,
    });
    await runtime.runs.createRun(run);
    await runtime.blobs.put(`runs/${runId}/final.json`, JSON.stringify(draft));
    return { dir, runId, draft };
  } finally {
    await runtime.close();
  }
}

/** The draft id of a run whose model has no price: its cost must read "unpriced", never $0.00. */
export const UNPRICED_DRAFT = "mcq-unpriced";

/** mcq-seed004 again under another id, answered by a model the price table does not know. */
async function runUnpriced(dir: string): Promise<void> {
  const cassette = JSON.parse(await readFile(CASSETTE, "utf8")) as {
    responses: { draftId: string; model?: string }[];
  };
  const responses = cassette.responses
    .filter((r) => r.draftId === "mcq-seed004")
    .map((r) => ({ ...r, draftId: UNPRICED_DRAFT, model: "mystery-model-1" }));
  const draft = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-seed004.json"), "utf8"));
  await writeFile(join(dir, "unpriced.cassette.json"), JSON.stringify({ ...cassette, responses }));
  await writeFile(join(dir, "unpriced.json"), JSON.stringify({ ...draft, id: UNPRICED_DRAFT }));
  const run = await redraft(
    "run",
    join(dir, "unpriced.json"),
    "--llm",
    `replay:${join(dir, "unpriced.cassette.json")}`,
    "--data-dir",
    dir,
    "--no-progress",
  );
  if (run.code !== 0) throw new Error(`redraft run failed: ${run.stderr}`);
}

export interface Served {
  runtime: LocalRuntime;
  viewer: Viewer;
  /** Uploads a draft and runs it in this process, as `redraft run` does. */
  submit(source: DraftSource, parentRunId?: string): Promise<RunResult>;
  close(): Promise<void>;
}

/**
 * The viewer over a data dir, on a free port, with the runtime opened as the CLI opens it. Runs
 * started through `submit` execute in this same process, beside the server.
 */
export async function serve(dataDir: string): Promise<Served> {
  const runtime = await LocalRuntime.open({
    dataDir,
    asl: await loadAsl(),
    model: ReplayModelClient.fromFile(CASSETTE),
    retryDelayMs: 0,
  });
  const submit = async (source: DraftSource, parentRunId?: string) => {
    const key = `drafts/ui-test/${randomUUID()}.json`;
    await runtime.blobs.putIfAbsent(key, source.body);
    const runId = randomUUID();
    await runtime.execute(
      {
        draftRef: { bucket: LOCAL_BUCKET, key },
        submissionId: "ui-test",
        ...(parentRunId && { parentRunId }),
      },
      runId,
    );
    return buildRunResult(runId, runtime.deps);
  };
  const viewer = await startViewer({ runtime, asl: await loadAsl(), submit, reviewer: "tester", port: 0 });
  return {
    runtime,
    viewer,
    submit,
    close: async () => {
      await viewer.close();
      await runtime.close();
    },
  };
}
