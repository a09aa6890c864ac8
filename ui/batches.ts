import { shortIds } from "../app/ids.js";
import { type BatchItem, BatchItemSchema, type BatchRecord } from "../shared/batch/record.js";
import type { BlobStore, RunRecord, RunStore } from "../shared/store/types.js";
import type { BatchDetail, BatchList, BatchSummaryView } from "./api-types.js";

/**
 * The viewer's batches: a list, and one batch's page (the console's Map Run): its counts by status
 * and reason, its items with their runs, and the manifest lines it rejected.
 */

/** What the viewer reads batches through: the local data dir's batch records, or a stack's. */
export interface BatchReader {
  get(batchId: string): Promise<BatchRecord | undefined>;
  /** Newest first. */
  list(limit?: number): Promise<BatchRecord[]>;
}

/** How many batches the list shows and a short id is matched among: a local data dir, not a warehouse. */
const BATCH_LIST_LIMIT = 500;
/**
 * Items one batch page lists (a manifest may hold 100,000): the counts above the table are the
 * record's and cover every item; the table says how many it leaves out.
 */
const BATCH_ITEMS_SHOWN = 2000;

/** A batch item's run id, `<batchId>-<line>` (or a rerun of it): the batch it belongs to. */
const ITEM_RUN = /^(b-[0-9a-f]+)-\d+(?:\.rerun-\d+)?$/;
export const batchOfRun = (runId: string): string | undefined => ITEM_RUN.exec(runId)?.[1];

const batchSummary = (r: BatchRecord): BatchSummaryView => ({
  batchId: r.batchId,
  status: r.status,
  items: r.items ?? null,
  counts: r.counts ?? {},
  reasons: r.reasons ?? {},
  tokens: r.tokens?.total ?? 0,
  costUsd: r.costUsd ?? 0,
  pricing: r.pricing ?? null,
  manifest: r.manifestRef.key,
  startedAt: r.startedAt,
  endedAt: r.endedAt ?? null,
  error: r.error ?? null,
});

export async function listBatchesView(reader: BatchReader): Promise<BatchList> {
  return { batches: (await reader.list(BATCH_LIST_LIMIT)).map(batchSummary) };
}

/**
 * The batch a short id names: the id itself, or a prefix of exactly one batch id. `ambiguous`
 * lists the candidates; undefined when no batch matches.
 */
export async function findBatch(
  reader: BatchReader,
  given: string,
): Promise<BatchRecord | { ambiguous: string[] } | undefined> {
  const exact = await reader.get(given);
  if (exact) return exact;
  const wanted = given.toLowerCase();
  const matches = (await reader.list(BATCH_LIST_LIMIT)).filter((b) => b.batchId.startsWith(wanted));
  if (matches.length > 1) return { ambiguous: matches.map((b) => b.batchId) };
  return matches[0];
}

/** The per-item results file of a finished batch, in line order; a line that does not parse is skipped. */
async function resultItems(blobs: BlobStore, record: BatchRecord): Promise<BatchItem[] | undefined> {
  if (!record.resultsRef) return undefined;
  let text: string;
  try {
    text = await blobs.get(record.resultsRef.key);
  } catch {
    return undefined;
  }
  const items: BatchItem[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const parsed = BatchItemSchema.safeParse(JSON.parse(line));
      if (parsed.success) items.push(parsed.data);
    } catch {
      // A torn last line of a file being written: the record's counts still cover it.
    }
  }
  return items;
}

/** A batch still running has no results file yet: its items are the runs named after it so far. */
const runningItems = (runs: readonly RunRecord[], batchId: string): BatchItem[] =>
  runs
    .filter((r) => batchOfRun(r.runId) === batchId)
    .map((r) => ({
      line: Number(/-(\d+)(?:\.rerun-\d+)?$/.exec(r.runId)?.[1] ?? 0),
      runId: r.runId,
      draftId: r.draftId,
      status: r.status,
      reason: r.reason ?? null,
      ...(r.message !== undefined && { message: r.message }),
      attempts: r.attempts,
      tokens: r.tokens,
      costUsd: r.costUsd,
    }))
    .sort((a, b) => a.line - b.line);

/** Everything the batch page shows. */
export async function batchDetailView(
  data: { runs: RunStore; blobs: BlobStore },
  record: BatchRecord,
  knownIds: readonly string[] = [],
): Promise<BatchDetail> {
  const items =
    (await resultItems(data.blobs, record)) ??
    runningItems(await data.runs.listRuns({ limit: BATCH_ITEMS_SHOWN * 2 }), record.batchId);
  const shown = items.slice(0, BATCH_ITEMS_SHOWN);
  const short = shortIds(
    shown.map((i) => i.runId),
    [...knownIds, ...items.map((i) => i.runId)],
  );
  // Counts from the record once the batch has ended; while it runs, from the items seen so far.
  const tally = (key: (i: BatchItem) => string | null) => {
    const out: Record<string, number> = {};
    for (const i of items) {
      const k = key(i);
      if (k !== null) out[k] = (out[k] ?? 0) + 1;
    }
    return out;
  };
  return {
    batch: {
      ...batchSummary(record),
      counts: record.counts ?? tally((i) => i.status),
      reasons: record.reasons ?? tally((i) => i.reason),
      priceClasses: record.priceClasses ?? null,
      rounds: record.rounds?.length ?? 0,
      resultsKey: record.resultsRef?.key ?? null,
    },
    /** The manifest's lines the loop rejected (not drafts, broken JSON, refused by the pack), with why. */
    // From the items when there are any (the record keeps only the first 200), else the record's.
    rejected:
      items.length > 0
        ? items
            .filter((i) => i.status === "rejected")
            .slice(0, BATCH_ITEMS_SHOWN)
            .map(rejectedLine)
        : (record.rejected ?? []),
    items: shown.map((i) => ({
      line: i.line,
      runId: i.runId,
      shortId: short.get(i.runId) ?? i.runId,
      draftId: i.draftId,
      status: i.status,
      reason: i.reason,
      attempts: i.attempts,
      tokens: i.tokens.total,
      costUsd: i.costUsd,
    })),
    itemsTotal: items.length,
  };
}

const rejectedLine = (i: BatchItem) => ({
  line: i.line,
  runId: i.runId,
  reason: i.reason ?? "",
  message: i.message ?? "",
});
