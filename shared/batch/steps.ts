import pLimit from "p-limit";
import { BlobNotFoundError, InvalidDraftError } from "../errors.js";
import { BATCHES_PREFIX, batchKeys } from "../store/bucket-layout.js";
import { getByEventKey } from "../store/event-key.js";
import {
  ACTIVE_STATUSES,
  type BlobStore,
  type RunOutcome,
  type RunStatus,
  type RunStore,
} from "../store/types.js";
import { BATCH_LIMITS, type BatchLimits, ManifestRefusedError, splitManifest } from "./manifest.js";
import {
  type BatchInput,
  type BatchItem,
  type BatchRecord,
  type BatchStatus,
  type BatchSummary,
  batchItem,
  childRunId,
  type PriceClasses,
  priceClasses,
  rerunId,
  summarize,
  wasInterrupted,
} from "./record.js";
import { checkToleratedFailures, failedItemsOf } from "./round-steps.js";
import type { Pricing, RoundRecord } from "./rounds.js";

/**
 * The two Lambda steps of the batch state machine, over the same stores as the per-draft steps:
 * PrepareItems turns a manifest into the Distributed Map's item list; AggregateBatch sums up the
 * children's runs into the batch record once the Map has ended.
 */

/** How many blob writes or run reads one step keeps in flight. */
const STORE_CONCURRENCY = 32;

/**
 * One line of the items file: the item's number, its run id (the child execution's name), its batch
 * and its draft reference. The on-demand Map selects what it needs; a batch-priced round takes the
 * line as its item's input.
 */
export interface MapItem {
  line: number;
  runId: string;
  batchId: string;
  draftRef: { bucket: string; key: string };
}

export interface PreparedBatch {
  itemsKey: string;
  items: number;
}

/** The conditional write that ends a run only while it is under way (DynamoRunStore's). */
interface ActiveRunFinisher {
  finishActive(
    runId: string,
    status: RunStatus,
    from: readonly RunStatus[],
    at: string,
    fields: Partial<RunOutcome>,
  ): Promise<boolean>;
}

export interface BatchStepDeps {
  blobs: BlobStore;
  /** The runs; a batch-priced batch that failed ends its items still under way through `finishActive`. */
  runs: RunStore & Partial<ActiveRunFinisher>;
  /** The deployment's bucket: the only one a manifest may be read from. */
  bucketName: string;
}

/** What AggregateBatch writes into the batch record when the Map has ended. */
export interface BatchFinish {
  status: Exclude<BatchStatus, "running">;
  endedAt: string;
  summary: BatchSummary;
  resultsRef: { bucket: string; key: string };
  mapResultsRef?: { bucket: string; key: string } | undefined;
  error?: { error: string; cause: string } | undefined;
  pricing?: Pricing | undefined;
  rounds?: RoundRecord[] | undefined;
  priceClasses?: PriceClasses | undefined;
}

/** The parts of the batch store the steps write (functions/lib/batch-store.ts). */
export interface BatchFinisher {
  finish(batchId: string, finish: BatchFinish, options?: { onlyIfRunning?: boolean }): Promise<boolean>;
  /** The record as it stands: a stopped batch's pricing is read from it. */
  get(batchId: string): Promise<{ pricing?: Pricing | undefined } | undefined>;
}

/**
 * Splits the manifest and writes each item's text as its own blob, and the item list the Map
 * reads. Every write is idempotent (same key, same text), so a retried step changes nothing. A
 * manifest that cannot be taken as a whole (missing, another bucket, beyond the limits, empty)
 * throws {@link ManifestRefusedError}: the batch ends `failed` with that message.
 */
export async function prepareBatch(
  input: BatchInput,
  deps: BatchStepDeps,
  limits: BatchLimits = BATCH_LIMITS,
): Promise<PreparedBatch> {
  const { batchId, manifestRef } = input;
  if (manifestRef.bucket !== deps.bucketName)
    throw new ManifestRefusedError(
      `the manifest is in bucket "${manifestRef.bucket}", not this deployment's bucket`,
    );
  // λ start refuses such an event already; this holds for any other way in (a console execution):
  // under another prefix lie other batches' items and results, which would run again.
  if (!manifestRef.key.startsWith(BATCHES_PREFIX))
    throw new ManifestRefusedError(`the manifest ${manifestRef.key} is not under ${BATCHES_PREFIX}`);
  let text: string;
  try {
    // An upload's own event may give the key URL-encoded: read raw, else decoded, with the version
    // it names (so the decoded key can only be that upload). Any other key is matched exactly.
    text =
      manifestRef.keyForm === "notification" && manifestRef.versionId
        ? (await getByEventKey(deps.blobs, manifestRef.key, manifestRef.versionId)).text
        : await deps.blobs.get(manifestRef.key, manifestRef.versionId);
  } catch (error) {
    if (error instanceof BlobNotFoundError)
      throw new ManifestRefusedError(`the manifest ${manifestRef.key} does not exist`);
    // A manifest in another encoding (the bucket's store reads it as a person's file): refused, not run.
    if (error instanceof InvalidDraftError) throw new ManifestRefusedError(error.message);
    throw error;
  }
  const items = splitManifest(text, limits);
  const limit = pLimit(STORE_CONCURRENCY);
  await Promise.all(
    items.map((item) => limit(() => deps.blobs.put(batchKeys.item(batchId, item.line), item.body))),
  );
  const lines = items.map((item) =>
    JSON.stringify({
      line: item.line,
      runId: childRunId(batchId, item.line),
      batchId,
      draftRef: { bucket: deps.bucketName, key: batchKeys.item(batchId, item.line) },
    } satisfies MapItem),
  );
  const itemsKey = batchKeys.items(batchId);
  await deps.blobs.put(itemsKey, `${lines.join("\n")}\n`, "application/jsonl");
  return { itemsKey, items: items.length };
}

export interface AggregateInput {
  batchId: string;
  /** Absent when PrepareItems refused the manifest. */
  prepared?: PreparedBatch | undefined;
  /** The Map's ResultWriter details, when it ended and wrote them. */
  mapResultsRef?: { bucket: string; key: string } | undefined;
  /** The error that ended the batch early: a refused manifest, too many failed items. */
  error?: { error: string; cause: string } | undefined;
  /** How its corrections were priced. */
  pricing?: Pricing | undefined;
  /** Batch pricing: the rounds as they ended (the state machine's `$.rounds.history`). */
  rounds?: RoundRecord[] | undefined;
  /**
   * Batch pricing: the failed items of its rounds and the share the batch tolerates; with a Map's
   * results (the on-demand fallback's), its failures are added and the share checked over the batch.
   */
  tolerance?: { failedItems: number; items: number; toleratedFailurePercentage: number } | undefined;
  /** A stopped batch-priced batch: end its items still under way, leaving its record's rounds as they are. */
  endActiveItems?: boolean | undefined;
}

/** What `Batch Completed` carries, and what the batch state machine ends with. */
export interface BatchOutcome {
  batchId: string;
  status: BatchRecord["status"];
  items: number;
  counts: Record<string, number>;
  reasons: Record<string, number>;
  tokens: BatchSummary["tokens"];
  costUsd: number;
  resultsRef: { bucket: string; key: string };
  mapResultsRef?: { bucket: string; key: string };
  error?: { error: string; cause: string };
  pricing?: Pricing;
  /** Batch pricing: how many rounds sent a batch, and tokens and cost by price class. */
  rounds?: number;
  priceClasses?: PriceClasses;
}

/** Reads the lines of the items file: which children the batch has. */
export async function readMapItems(blobs: BlobStore, itemsKey: string): Promise<MapItem[]> {
  const text = await blobs.get(itemsKey);
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as MapItem);
}

/**
 * Reads every child's run (by its deterministic id, so nothing depends on what the Map returned),
 * writes the per-item results file, and finishes the batch record. Idempotent: run again, it reads
 * the same runs and writes the same summary.
 */
export async function aggregateBatch(
  input: AggregateInput,
  deps: BatchStepDeps & { batches: BatchFinisher },
  now = () => new Date().toISOString(),
  options: { onlyIfRunning?: boolean } = {},
): Promise<BatchOutcome & { written: boolean }> {
  const { batchId } = input;
  // The fallback's Map tolerates every failure: the share is the batch's, counted here with the rounds'.
  if (!input.error && input.pricing === "batch" && input.tolerance && input.mapResultsRef) {
    const { failedItems, items, toleratedFailurePercentage } = input.tolerance;
    const failed =
      failedItems +
      (await failedItemsOf(deps.blobs, { Bucket: input.mapResultsRef.bucket, Key: input.mapResultsRef.key }));
    try {
      checkToleratedFailures(failed, items, toleratedFailurePercentage);
    } catch (error) {
      input = { ...input, error: { error: (error as Error).name, cause: (error as Error).message } };
    }
  }
  const mapItems = input.prepared ? await readMapItems(deps.blobs, input.prepared.itemsKey) : [];
  const limit = pLimit(STORE_CONCURRENCY);
  // A batch-priced item waiting for a round has no execution of its own that a finalizer would end:
  // when the batch fails, the batch ends it, or it would stay `correcting` for good.
  const finishActive = deps.runs.finishActive?.bind(deps.runs);
  if (input.error && (input.pricing === "batch" || input.endActiveItems) && finishActive) {
    const at = now();
    const message = `batch ${batchId} ended failed before this item's round did: ${input.error.error}${input.error.cause ? `: ${input.error.cause}` : ""}`;
    await Promise.all(
      mapItems.map(({ line }) =>
        limit(() =>
          finishActive(childRunId(batchId, line), "failed", ACTIVE_STATUSES, at, {
            reason: "system_error",
            message: message.length > 4096 ? `${message.slice(0, 4095)}…` : message,
          }),
        ),
      ),
    );
  }
  const items: BatchItem[] = await Promise.all(
    mapItems.map(({ line }) =>
      limit(async () => {
        // The item's last run: an interrupted child run again by a resumed batch is followed to its rerun.
        let runId = childRunId(batchId, line);
        let run = await deps.runs.getRun(runId);
        for (let n = 1; wasInterrupted(run); n++) {
          const next = await deps.runs.getRun(rerunId(batchId, line, n));
          if (!next) break;
          runId = rerunId(batchId, line, n);
          run = next;
        }
        return batchItem(line, runId, run);
      }),
    ),
  );
  const resultsRef = { bucket: deps.bucketName, key: batchKeys.results(batchId) };
  await deps.blobs.put(
    resultsRef.key,
    items.map((item) => `${JSON.stringify(item)}\n`).join(""),
    "application/jsonl",
  );
  const summary = summarize(items);
  const status = input.error ? "failed" : "completed";
  const rounds = input.pricing === "batch" ? (input.rounds ?? []) : undefined;
  const classes = rounds ? priceClasses(summary, rounds) : undefined;
  const written = await deps.batches.finish(
    batchId,
    {
      status,
      endedAt: now(),
      summary,
      resultsRef,
      mapResultsRef: input.mapResultsRef,
      error: input.error,
      pricing: input.pricing,
      rounds,
      priceClasses: classes,
    },
    options,
  );
  return {
    written,
    batchId,
    status,
    items: summary.items,
    counts: summary.counts,
    reasons: summary.reasons,
    tokens: summary.tokens,
    costUsd: summary.costUsd,
    resultsRef,
    ...(input.mapResultsRef && { mapResultsRef: input.mapResultsRef }),
    ...(input.error && { error: input.error }),
    ...(input.pricing && { pricing: input.pricing }),
    ...(rounds && { rounds: rounds.length }),
    ...(classes && { priceClasses: classes }),
  };
}

/**
 * A batch execution that stopped without ending (timed out, aborted, or failed outside its
 * Catches: Step Functions' `Execution Status Change`) leaves its record `running`. Finished here
 * as `failed` with the execution's status, counting the children as far as they got; a batch
 * whose record already has its end is left as it is.
 */
export async function finishStoppedBatch(
  stopped: { batchId: string; status: string; executionArn: string; cause?: string | undefined },
  deps: BatchStepDeps & { batches: BatchFinisher },
): Promise<BatchOutcome & { written: boolean }> {
  const error = {
    // The execution's own status names why: TIMED_OUT, ABORTED, FAILED.
    error: stopped.status,
    cause: `${stopped.executionArn} ended ${stopped.status}${stopped.cause ? `: ${stopped.cause}` : ""}`,
  };
  const once = { onlyIfRunning: true };
  const endActiveItems = (await deps.batches.get(stopped.batchId))?.pricing === "batch";
  try {
    const prepared = { itemsKey: batchKeys.items(stopped.batchId), items: 0 };
    return await aggregateBatch(
      { batchId: stopped.batchId, prepared, error, endActiveItems },
      deps,
      undefined,
      once,
    );
  } catch (e) {
    // Stopped before PrepareItems wrote its list: no child was started; the record alone says so.
    if (!(e instanceof BlobNotFoundError)) throw e;
    return aggregateBatch({ batchId: stopped.batchId, error, endActiveItems }, deps, undefined, once);
  }
}
