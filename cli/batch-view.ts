import { shortIds } from "../app/ids.js";
import { type BatchItem, BatchItemSchema, type BatchRecord } from "../shared/batch/record.js";
import { buildRunResult } from "../shared/loop/run.js";
import type { BlobStore } from "../shared/store/types.js";
import { costText, jsonLine, paintStatus, statusColumn, usd } from "./format.js";
import { type OutputStyle, renderTable, stdoutStyle } from "./output.js";

/**
 * What the batch records say, for `redraft batches`, `redraft show <batchId>` and the lines
 * `redraft batch` prints. Apart from cli/batch.ts (the runner): a listing loads only what it reads,
 * not the batch state machine, the Lambda entries it calls and every pack behind them
 * (tests/cli/read-only-imports.test.ts).
 */

/** Status order in tables and on the progress bar: outcomes first, then what did not get one. */
const STATUS_ORDER = ["validated", "needs_manual_review", "rejected", "failed", "not_run"];

/**
 * The statuses present in `present`, in STATUS_ORDER, then any other (a run a failed batch left
 * `correcting` or `draft`) by name: a table never hides an item because its status is unexpected.
 */
export function statusesIn(present: Iterable<string>): string[] {
  const seen = new Set(present);
  const rest = [...seen].filter((s) => !STATUS_ORDER.includes(s)).sort();
  return [...STATUS_ORDER.filter((s) => seen.has(s)), ...rest];
}
export const SHORT: Record<string, string> = {
  validated: "validated",
  needs_manual_review: "review",
  rejected: "rejected",
  failed: "failed",
};

/** The summary line `--json` ends with: the contract `{batchId, counts, tokens, costUsd, resultsRef}`. */
export function summaryLine(record: BatchRecord, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    batchId: record.batchId,
    status: record.status,
    items: record.items ?? 0,
    counts: record.counts ?? {},
    reasons: record.reasons ?? {},
    tokens: record.tokens,
    costUsd: record.costUsd ?? 0,
    resultsRef: record.resultsRef ?? null,
    ...(record.pricing && { pricing: record.pricing }),
    ...(record.rounds && { rounds: record.rounds.length }),
    ...(record.priceClasses && { priceClasses: record.priceClasses }),
    ...(record.error && { error: record.error }),
    ...extra,
  });
}

/** What reading a batch's items needs: its blobs and runs (a LocalRuntime, or cloud mode's CloudRuntime). */
type BatchReader = { blobs: BlobStore } & { deps: Parameters<typeof buildRunResult>[1] };

/** The per-item results file of a finished batch, in line order. */
export async function batchItems(runtime: BatchReader, record: BatchRecord): Promise<BatchItem[]> {
  if (!record.resultsRef) return [];
  const text = await runtime.blobs.get(record.resultsRef.key);
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => BatchItemSchema.parse(JSON.parse(line)));
}

/** One `--json` line per item: the run result as `redraft run --json` prints it, with the batch and line. */
export async function itemLine(
  runtime: BatchReader,
  batchId: string,
  item: BatchItem,
  duplicate: boolean,
): Promise<string> {
  const where = { batchId, line: item.line, ...(duplicate && { duplicate: true }) };
  if (item.status === "not_run")
    return JSON.stringify({ ...where, runId: item.runId, status: "not_run", reason: null });
  const result = await buildRunResult(item.runId, runtime.deps);
  return JSON.stringify({ ...where, ...JSON.parse(jsonLine(result)) });
}

/** A batch for a person: counts per status and reason, tokens and cost, where the results are. */
export function batchSummary(record: BatchRecord, style: OutputStyle = stdoutStyle()): string {
  const counts = record.counts ?? {};
  const rows = statusesIn(Object.keys(counts).filter((s) => counts[s])).map((s) => [s, counts[s] ?? 0]);
  const reasons = Object.entries(record.reasons ?? {}).sort(([, a], [, b]) => b - a);
  const tokens = record.tokens?.total ?? 0;
  const lines = [
    `Batch ${record.batchId}: ${record.status}, ${record.items ?? 0} items (${record.manifestRef.key})`,
    renderTable([statusColumn, { head: "items" }], rows, style),
  ];
  if (reasons.length) lines.push(`Reasons: ${reasons.map(([r, n]) => `${r} ${n}`).join(", ")}`);
  lines.push(`Tokens: ${tokens} · cost ${costText(record.costUsd ?? 0, tokens)}`);
  if (record.pricing === "batch") {
    const classes = record.priceClasses;
    lines.push(
      `Batch pricing: ${record.rounds?.length ?? 0} rounds of batch requests` +
        (classes
          ? ` · at batch price ${classes.batch.tokens.total} tokens, ${usd(classes.batch.costUsd)}; on demand ${classes.on_demand.tokens.total} tokens, ${usd(classes.on_demand.costUsd)}`
          : ""),
    );
  }
  if (record.rejected?.length)
    lines.push(
      `Rejected lines: ${record.rejected
        .slice(0, 10)
        .map((r) => `${r.line} (${r.reason})`)
        .join(", ")}${record.rejected.length > 10 ? ", …" : ""}`,
    );
  if (record.error) lines.push(`Failed: ${record.error.error}: ${record.error.cause}`);
  if (record.resultsRef) lines.push(`Per-item results: ${record.resultsRef.key}`);
  return lines.join("\n");
}

/** `redraft batches`: newest first, a line each. */
export function batchesTable(records: readonly BatchRecord[], style: OutputStyle = stdoutStyle()): string {
  return renderTable(
    [
      { head: "batch" },
      { head: "status", paint: paintStatus },
      { head: "items" },
      { head: "counts", wrapTo: 24 },
      { head: "cost" },
      { head: "started" },
    ],
    records.map((r) => [
      r.batchId,
      r.status,
      r.items ?? "",
      statusesIn(Object.keys(r.counts ?? {}).filter((s) => r.counts?.[s]))
        .map((s) => `${SHORT[s] ?? s} ${r.counts?.[s]}`)
        .join(" · "),
      usd(r.costUsd ?? 0),
      r.startedAt.slice(0, 19).replace("T", " "),
    ]),
    style,
    ["started", "cost", "items"],
    { oneLine: true },
  );
}

/**
 * `redraft show <batchId>`: the summary, then the items grouped by status, their runs' ids as short
 * as `knownIds` (every run id of the data folder) allows.
 */
export async function showBatch(
  runtime: BatchReader,
  record: BatchRecord,
  json: boolean,
  knownIds: readonly string[] = [],
): Promise<string> {
  const items = await batchItems(runtime, record);
  if (json) return JSON.stringify({ ...record, itemsDetail: items });
  const groups = statusesIn(items.map((i) => i.status)).map(
    (status) => [status, items.filter((i) => i.status === status)] as const,
  );
  const style = stdoutStyle();
  const short = shortIds(
    items.map((i) => i.runId),
    knownIds,
  );
  const parts = [batchSummary(record, style)];
  for (const [status, list] of groups) {
    parts.push(`\n${status} (${list.length})`);
    parts.push(
      renderTable(
        [
          { head: "line" },
          { head: "run" },
          { head: "draft" },
          { head: "reason", wrapTo: 30 },
          { head: "attempts" },
        ],
        list.map((i) => [i.line, short.get(i.runId) ?? i.runId, i.draftId ?? "", i.reason ?? "", i.attempts]),
        style,
        ["attempts", "draft"],
        { oneLine: true },
      ),
    );
  }
  return parts.join("\n");
}
