import { describe, expect, it } from "vitest";
import type { BatchItem, BatchRecord } from "../../shared/batch/record.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";
import { batchDetailView, batchOfRun, findBatch } from "../../ui/batches.js";
import { makeRun } from "../stores/fixtures.js";

const BATCH = "b-0123456789abcdef01234567";
const ZERO = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };

const item = (line: number, status: BatchItem["status"], reason: string | null = null): BatchItem => ({
  line,
  runId: `${BATCH}-${line}`,
  draftId: `d${line}`,
  status,
  reason,
  ...(reason && { message: `why ${line}` }),
  attempts: 0,
  tokens: ZERO,
  costUsd: 0,
});

const record = (over: Partial<BatchRecord> = {}): BatchRecord => ({
  batchId: BATCH,
  status: "completed",
  manifestRef: { bucket: "b", key: "batches/m.jsonl" },
  startedAt: "2026-01-01T00:00:00.000Z",
  ...over,
});

describe("the viewer's batch page", () => {
  it("names the batch of an item's run, reruns included, and no batch for other runs", () => {
    expect(batchOfRun(`${BATCH}-12`)).toBe(BATCH);
    expect(batchOfRun(`${BATCH}-3.rerun-2`)).toBe(BATCH);
    expect(batchOfRun("3f2c9a1e-1111-4222-8333-444455556666")).toBeUndefined();
    expect(batchOfRun("b-xyz-1")).toBeUndefined();
  });

  it("reads the items of the results file, skipping lines that are not items (torn, hostile, wrong shape)", async () => {
    const blobs = new MemoryBlobStore();
    const lines = [
      JSON.stringify(item(1, "validated")),
      "{not json",
      JSON.stringify({ line: -1, runId: 5 }),
      JSON.stringify(item(2, "rejected", "invalid_input")),
      '{"__proto__": {"polluted": true}}',
      JSON.stringify(item(3, "not_run")),
      '{"line": 4, "runId": "x", "status":', // the torn last line of a file being written
    ];
    await blobs.put("batch-results/x/items.jsonl", lines.join("\n"));
    const view = await batchDetailView(
      { runs: new MemoryRunStore(), blobs },
      record({
        resultsRef: { bucket: "b", key: "batch-results/x/items.jsonl" },
        counts: { validated: 1, rejected: 1, not_run: 1 },
        reasons: { invalid_input: 1 },
        items: 3,
      }),
    );
    expect(view.items.map((i) => i.line)).toEqual([1, 2, 3]);
    expect(view.itemsTotal).toBe(3);
    expect(view.rejected).toEqual([
      { line: 2, runId: `${BATCH}-2`, reason: "invalid_input", message: "why 2" },
    ]);
    expect(view.batch.counts).toEqual({ validated: 1, rejected: 1, not_run: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("shows a running batch's items from the runs named after it, counted as they are", async () => {
    const runs = new MemoryRunStore();
    await runs.createRun(makeRun(`${BATCH}-2`, { status: "validated" }));
    await runs.createRun(
      makeRun(`${BATCH}-1`, { status: "rejected", reason: "invalid_input", message: "no" }),
    );
    await runs.createRun(makeRun("someone-else", { status: "validated" }));
    const view = await batchDetailView({ runs, blobs: new MemoryBlobStore() }, record({ status: "running" }));
    expect(view.items.map((i) => i.runId)).toEqual([`${BATCH}-1`, `${BATCH}-2`]);
    expect(view.batch.counts).toEqual({ rejected: 1, validated: 1 });
    expect(view.batch.reasons).toEqual({ invalid_input: 1 });
    expect(view.rejected).toEqual([{ line: 1, runId: `${BATCH}-1`, reason: "invalid_input", message: "no" }]);
  });

  it("finds a batch by a unique prefix, and lists the candidates of an ambiguous one", async () => {
    const other = record({ batchId: "b-0123ffff" });
    const reader = {
      get: async (id: string) => [record(), other].find((b) => b.batchId === id),
      list: async () => [record(), other],
    };
    expect(await findBatch(reader, "b-01234567")).toMatchObject({ batchId: BATCH });
    expect(await findBatch(reader, "b-0123")).toEqual({ ambiguous: [BATCH, "b-0123ffff"] });
    expect(await findBatch(reader, "b-9")).toBeUndefined();
  });
});
