import * as z from "zod";
import { sha256 } from "../hash.js";
import {
  addTotals,
  type RunRecord,
  RunStatusSchema,
  type TokenTotals,
  TokenTotalsSchema,
  ZERO_TOTALS,
} from "../store/types.js";
import { PricingSchema, RoundRecordSchema } from "./rounds.js";

/**
 * A batch: one manifest of drafts, each run as its own child execution of the per-draft state
 * machine (`<batchId>-<line>`), summed up in one record once the Distributed Map has ended.
 */

/** Where a manifest lies: the S3 object (and version) that was uploaded or named in an event. */
export const ManifestRefSchema = z.object({
  bucket: z.string().min(1),
  key: z.string().min(1),
  versionId: z.string().min(1).optional(),
  /**
   * Set by λ start for an upload's own event only: the key may be URL-encoded, and its decoded form
   * is read with `versionId`. A client's `Batch Submitted` names its key exactly (λ start drops it).
   */
  keyForm: z.literal("notification").optional(),
});

/** What starts a batch execution (λ start builds it; `redraft batch` too). */
export const BatchInputSchema = z.object({
  batchId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  manifestRef: ManifestRefSchema,
  /** Absent: the deployment's `batchPricing.default` (the state machine fills it in). */
  pricing: PricingSchema.optional(),
});
export type BatchInput = z.infer<typeof BatchInputSchema>;

/** `running` until λ batch (AggregateBatch) writes its summary: `completed`, or `failed` with the Map's error. */
const BatchStatusSchema = z.enum(["running", "completed", "failed"]);
export type BatchStatus = z.infer<typeof BatchStatusSchema>;

/** A run status, or `not_run` for an item the Map never started (it failed before reaching it). */
const ItemStatusSchema = z.union([RunStatusSchema, z.literal("not_run")]);

/** One item as the batch sees it: a line of the per-item results file. */
export const BatchItemSchema = z.object({
  line: z.number().int().positive(),
  runId: z.string(),
  draftId: z.string().nullable(),
  status: ItemStatusSchema,
  reason: z.string().nullable(),
  message: z.string().optional(),
  attempts: z.number().int().nonnegative(),
  tokens: TokenTotalsSchema,
  costUsd: z.number().nonnegative(),
});
export type BatchItem = z.infer<typeof BatchItemSchema>;

/** How many rejected items the record itself lists; all of them are in the results file. */
const MAX_REJECTED_IN_RECORD = 200;

const BatchSummarySchema = z.object({
  items: z.number().int().nonnegative(),
  counts: z.record(z.string(), z.number().int().nonnegative()),
  reasons: z.record(z.string(), z.number().int().nonnegative()),
  tokens: TokenTotalsSchema,
  costUsd: z.number().nonnegative(),
  rejected: z.array(
    z.object({ line: z.number().int(), runId: z.string(), reason: z.string(), message: z.string() }),
  ),
});
export type BatchSummary = z.infer<typeof BatchSummarySchema>;

/** Tokens and cost of one price class. */
const PriceClassTotalsSchema = z.object({ tokens: TokenTotalsSchema, costUsd: z.number().nonnegative() });

/**
 * Where a batch-priced batch's tokens and cost went: the answers its rounds' batches gave (billed
 * at batch price), and the calls made on demand (the deadline fallback, requests no batch took).
 */
const PriceClassesSchema = z.object({
  batch: PriceClassTotalsSchema,
  on_demand: PriceClassTotalsSchema,
});
export type PriceClasses = z.infer<typeof PriceClassesSchema>;

export const BatchRecordSchema = BatchSummarySchema.partial().extend({
  batchId: z.string(),
  status: BatchStatusSchema,
  manifestRef: ManifestRefSchema,
  startedAt: z.string(),
  endedAt: z.string().optional(),
  /** Where the per-item results file is (JSONL of {@link BatchItem}). */
  resultsRef: z.object({ bucket: z.string(), key: z.string() }).optional(),
  /** The Distributed Map's own result files (ResultWriter), when it wrote any. */
  mapResultsRef: z.object({ bucket: z.string(), key: z.string() }).optional(),
  /** Why the batch failed: the Map's error (too many failed items, a manifest refused). */
  error: z.object({ error: z.string(), cause: z.string() }).optional(),
  /** How its corrections were priced; absent on records written before batch pricing. */
  pricing: PricingSchema.optional(),
  /** Batch pricing: each round's batch requests, counts, tokens and cost, as they ended. */
  rounds: z.array(RoundRecordSchema).optional(),
  /** Batch pricing: tokens and cost by price class. */
  priceClasses: PriceClassesSchema.optional(),
});
export type BatchRecord = z.infer<typeof BatchRecordSchema>;

/** Every batch id begins so, hence every batch item's run id (the batch machine's role relies on it). */
export const BATCH_ID_PREFIX = "b-";

/**
 * A batch id from what identifies one submission of a manifest: an upload's bucket, key and
 * version, or an event's id. The same delivery always gives the same id, so a duplicate delivery
 * finds its batch record already written and starts nothing.
 */
export const batchIdFor = (parts: readonly string[]): string =>
  `${BATCH_ID_PREFIX}${sha256(parts.join("\n")).slice(0, 24)}`;

/** The child execution (and run id) of an item: deterministic, so a retried item never runs twice. */
export const childRunId = (batchId: string, line: number): string => `${batchId}-${line}`;

/**
 * The `n`th run of an item whose child was interrupted (its process killed) before it ended: a
 * resumed batch runs the item again under this id, and the interrupted run stays as history.
 */
export const rerunId = (batchId: string, line: number, n: number): string =>
  `${childRunId(batchId, line)}.rerun-${n}`;

/** Whether a run ended because its process was killed under it (local/recovery.ts finished it so). */
export const wasInterrupted = (run: RunRecord | undefined): boolean =>
  run?.status === "failed" && run.reason === "interrupted";

/** The item's line as the run sees it, and the run as the batch sees it. */
export function batchItem(line: number, runId: string, run: RunRecord | undefined): BatchItem {
  if (!run)
    return {
      line,
      runId,
      draftId: null,
      status: "not_run",
      reason: null,
      attempts: 0,
      tokens: { ...ZERO_TOTALS },
      costUsd: 0,
    };
  return {
    line,
    runId,
    draftId: run.draftId,
    status: run.status,
    reason: run.reason ?? null,
    ...(run.message !== undefined && { message: run.message }),
    attempts: run.attempts,
    tokens: run.tokens,
    costUsd: run.costUsd,
  };
}

/**
 * The batch's tokens and cost by price class: its rounds' answers are the batch class (summed as they
 * were collected), everything else its runs spent was on demand.
 */
export function priceClasses(
  summary: Pick<BatchSummary, "tokens" | "costUsd">,
  rounds: readonly z.infer<typeof RoundRecordSchema>[],
): PriceClasses {
  let tokens: TokenTotals = { ...ZERO_TOTALS };
  let cost = 0;
  for (const round of rounds) {
    if (round.tokens) tokens = addTotals(tokens, round.tokens);
    cost += round.costUsd ?? 0;
  }
  const minus = (a: number, b: number) => Math.max(0, a - b);
  return {
    batch: { tokens, costUsd: Math.round(cost * 1e6) / 1e6 },
    on_demand: {
      tokens: {
        input: minus(summary.tokens.input, tokens.input),
        output: minus(summary.tokens.output, tokens.output),
        cacheRead: minus(summary.tokens.cacheRead, tokens.cacheRead),
        cacheWrite: minus(summary.tokens.cacheWrite, tokens.cacheWrite),
        total: minus(summary.tokens.total, tokens.total),
      },
      costUsd: Math.round(minus(summary.costUsd, cost) * 1e6) / 1e6,
    },
  };
}

/** Sums the items up: counts per status and per reason, tokens, cost, and the rejected lines. */
export function summarize(items: readonly BatchItem[]): BatchSummary {
  const counts: Record<string, number> = {};
  const reasons: Record<string, number> = {};
  let tokens: TokenTotals = { ...ZERO_TOTALS };
  let cost = 0;
  const rejected: BatchSummary["rejected"] = [];
  for (const item of items) {
    counts[item.status] = (counts[item.status] ?? 0) + 1;
    if (item.reason) reasons[item.reason] = (reasons[item.reason] ?? 0) + 1;
    tokens = addTotals(tokens, item.tokens);
    cost += item.costUsd;
    if (item.status === "rejected" && rejected.length < MAX_REJECTED_IN_RECORD)
      rejected.push({
        line: item.line,
        runId: item.runId,
        reason: item.reason ?? "invalid_input",
        message: item.message ?? "",
      });
  }
  // Micro-dollars: a sum of thousands of floats is rounded once, not shown with float noise.
  return { items: items.length, counts, reasons, tokens, costUsd: Math.round(cost * 1e6) / 1e6, rejected };
}
