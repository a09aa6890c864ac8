/**
 * The single-table design of redraft's DynamoDB table (docs/DESIGN.md §5 draws it: items, keys and
 * indexes), as constants and pure helpers. Everything that writes or reads the table by key — the
 * run and batch stores, the state machine's direct UpdateItem states built in infra/, the local
 * runtime's adapters — takes its key formats, index names and the terminal-status update from here,
 * so the formats cannot drift between them; hence no SDK import, which the CDK code would not want.
 * The storage errors the state machine retries on are named here too, where the SDK's are mapped.
 */
import { SelfCorrectionError, StoreRequestFailedError, StoreUnavailableError } from "../shared/errors.js";
import type { RunOutcome, RunRecord, RunStatus } from "../shared/store/types.js";

export const PARTITION_KEY = "pk";
export const SORT_KEY = "sk";
/** Epoch seconds after which AWS may delete the item (the table's `timeToLiveAttribute`). */
export const TTL_ATTRIBUTE = "ttl";
/** Number set of the attempt numbers whose tokens are already in the run's totals. */
export const COUNTED_ATTEMPTS_ATTRIBUTE = "countedAttempts";

export interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: string;
  readonly sortKey: string;
}

/** The three global secondary indexes; all keys are strings, keys only projected. */
export const INDEXES = {
  /** The runs of one draft, newest first. */
  byDraft: { indexName: "byDraft", partitionKey: "byDraftPk", sortKey: "byDraftSk" },
  /** The runs in one status, most recently moved there first (the review queue). */
  byStatus: { indexName: "byStatus", partitionKey: "byStatusPk", sortKey: "byStatusSk" },
  /** Every run, newest first: {@link CREATED_SHARDS} partitions merged by sort key. */
  byCreated: { indexName: "byCreated", partitionKey: "byCreatedPk", sortKey: "byCreatedSk" },
} as const satisfies Record<string, IndexDefinition>;

/** What every index projects: its keys and the table's, nothing else (see the module comment). */
export const INDEX_PROJECTION = "KEYS_ONLY";

export const RUN_KEY_PREFIX = "RUN#";
export const RUN_SORT_KEY = "RUN";
export const ATTEMPT_SORT_KEY_PREFIX = "ATTEMPT#";
const CONTENT_KEY_PREFIX = "CONTENT#";
const CLAIM_SORT_KEY = "CLAIM";
const DRAFT_KEY_PREFIX = "DRAFT#";
const STATUS_KEY_PREFIX = "STATUS#";
const ALL_RUNS_PARTITION = "RUNS";

/**
 * How many partitions `byCreated` spreads runs over. A GSI partition takes about 1,000 writes a
 * second; eight shards keep a burst of uploads well under that, and a newest-first page costs at
 * most eight queries. Changing it re-shards only runs written afterwards: keep it fixed per table.
 */
export const CREATED_SHARDS = 8;

/** FNV-1a over the run id: stable across runtimes, no crypto import needed in this SDK-free module. */
function shardOf(runId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < runId.length; i++) {
    hash ^= runId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % CREATED_SHARDS;
}

/** `RUNS#<shard>`: the byCreated partition of a run. */
export const createdPartition = (runId: string): string => `${ALL_RUNS_PARTITION}#${shardOf(runId)}`;
/**
 * Every byCreated partition a listing merges: the shards, and `RUNS`, where runs written before
 * the sharding (an existing table, a local data folder) still are. Nothing writes to `RUNS` now.
 */
export const CREATED_PARTITIONS: readonly string[] = [
  ...Array.from({ length: CREATED_SHARDS }, (_, shard) => `${ALL_RUNS_PARTITION}#${shard}`),
  ALL_RUNS_PARTITION,
];

/** Attempt numbers are zero-padded to this width so that the sort key orders them numerically. */
const ATTEMPT_DIGITS = 4;

export interface ItemKey {
  pk: string;
  sk: string;
}

export const runKey = (runId: string): ItemKey => ({ pk: `${RUN_KEY_PREFIX}${runId}`, sk: RUN_SORT_KEY });

/** `ATTEMPT#0001`…`ATTEMPT#9999`: a loop's budgets are single digits, so four digits never overflow. */
export function attemptKey(runId: string, attempt: number): ItemKey {
  if (!Number.isInteger(attempt) || attempt < 1 || attempt >= 10 ** ATTEMPT_DIGITS) {
    throw new RangeError(`attempt number ${attempt} is outside 1..${10 ** ATTEMPT_DIGITS - 1}`);
  }
  return {
    pk: `${RUN_KEY_PREFIX}${runId}`,
    sk: `${ATTEMPT_SORT_KEY_PREFIX}${String(attempt).padStart(ATTEMPT_DIGITS, "0")}`,
  };
}

export const claimKey = (contentHash: string): ItemKey => ({
  pk: `${CONTENT_KEY_PREFIX}${contentHash}`,
  sk: CLAIM_SORT_KEY,
});

export const draftPartition = (draftId: string): string => `${DRAFT_KEY_PREFIX}${draftId}`;
export const statusPartition = (status: RunStatus): string => `${STATUS_KEY_PREFIX}${status}`;
/** Sort key of every index: an ISO timestamp, then the run id so equal timestamps stay distinct. */
export const timeSortKey = (at: string, runId: string): string => `${at}#${runId}`;

/** The index keys a run item carries; rewritten whenever the status or updatedAt changes. */
export function runIndexKeys(
  run: Pick<RunRecord, "runId" | "draftId" | "status" | "createdAt" | "updatedAt">,
): Record<string, string> {
  return {
    [INDEXES.byDraft.partitionKey]: draftPartition(run.draftId),
    [INDEXES.byDraft.sortKey]: timeSortKey(run.createdAt, run.runId),
    [INDEXES.byStatus.partitionKey]: statusPartition(run.status),
    [INDEXES.byStatus.sortKey]: timeSortKey(run.updatedAt, run.runId),
    [INDEXES.byCreated.partitionKey]: createdPartition(run.runId),
    [INDEXES.byCreated.sortKey]: timeSortKey(run.createdAt, run.runId),
  };
}

/** Attributes that belong to the table design, not to a record: stripped when reading records back. */
export const DESIGN_ATTRIBUTES: readonly string[] = [
  PARTITION_KEY,
  SORT_KEY,
  TTL_ATTRIBUTE,
  COUNTED_ATTEMPTS_ATTRIBUTE,
  ...Object.values(INDEXES).flatMap((index) => [index.partitionKey, index.sortKey]),
];

/** Every attribute that is a key of the table or of an index (all strings). */
export const KEY_ATTRIBUTES: readonly string[] = [
  PARTITION_KEY,
  SORT_KEY,
  ...Object.values(INDEXES).flatMap((index) => [index.partitionKey, index.sortKey]),
];

const SECONDS_PER_DAY = 86_400;

/** The `ttl` value for an item written at `from` (ISO time) and kept `days` days. */
export function expiresAt(from: string, days: number): number {
  const ms = Date.parse(from);
  if (Number.isNaN(ms)) throw new RangeError(`"${from}" is not a timestamp`);
  return Math.ceil(ms / 1000) + Math.ceil(days * SECONDS_PER_DAY);
}

/** The RunOutcome fields a status change may also write (everything but the status itself). */
export type OutcomeField = Exclude<keyof RunOutcome, "status">;
const OUTCOME_FIELD_SET: Record<OutcomeField, true> = {
  reason: true,
  message: true,
  finalRef: true,
  resultRef: true,
  circuitBreakerRules: true,
  resolvedRules: true,
  persistentRules: true,
  violationsPerAttempt: true,
  repairs: true,
  attempts: true,
  logicAttempts: true,
  overrides: true,
  judgeRef: true,
};
export const OUTCOME_FIELDS = Object.keys(OUTCOME_FIELD_SET) as OutcomeField[];

/** Placeholders of the values a status update needs; `fields` only for the fields it was built with. */
interface StatusUpdateValueNames {
  /** The new status. Fixed per update: see {@link StatusUpdate.fixedValues}. */
  status: string;
  /** `statusPartition(status)`: the byStatus partition. Fixed per update. */
  statusKey: string;
  /** `timeSortKey(at, runId)`: the byStatus sort key. */
  statusSort: string;
  /** The ISO time of the change: written as `updatedAt`. */
  at: string;
  /** A one-element list `[{ status, at }]`, appended to `transitions`. */
  transition: string;
  /** One placeholder per outcome field the update was built with (`:reason`, `:finalRef`…). */
  fields: Partial<Record<OutcomeField, string>>;
  /** The new `ttl` (epoch seconds), when the update was built with `expires`. */
  ttl?: string;
}

/** An UpdateItem on the run item (`Key: runKey(runId)`), minus its values. */
export interface StatusUpdate {
  UpdateExpression: string;
  ConditionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  valueNames: StatusUpdateValueNames;
  /** The values that depend only on the status, so that a state machine can embed them as literals. */
  fixedValues: Record<string, string>;
}

/**
 * Describes the UpdateItem that moves a run to `status`: it sets `status`, the byStatus index keys,
 * `updatedAt` and each of `fields`, and appends `{ status, at }` to `transitions`, under the
 * condition `attribute_exists(pk) AND #status <> :status`.
 *
 * The contract, shared by two callers so that they cannot drift apart:
 * - `DynamoRunStore.setStatus` builds it with the fields it was given and fills every placeholder
 *   with {@link statusUpdateValues}.
 * - The state machine's DynamoDB `updateItem` states (MarkValidated, MarkNeedsReview…) build it with
 *   the fields their input carries (e.g. `["reason", "finalRef", "resultRef"]`), use `Key` =
 *   `{ pk: States.Format('RUN#{}', $.runId), sk: 'RUN' }` (see {@link RUN_KEY_PREFIX},
 *   {@link RUN_SORT_KEY}), take `fixedValues` as literals, and map the other placeholders from
 *   JSONPath: `statusSort` ← `States.Format('{}#{}', $.at, $.runId)`, `at` ← `$.at`,
 *   `transition` ← a list of one map `{ status: <literal>, at: $.at }`, each field ← its path.
 *
 * An optional field that is absent must be left out of `fields` rather than passed empty: DynamoDB
 * rejects a placeholder without a value, and a value without a placeholder.
 *
 * With `from`, the condition is `attribute_exists(pk) AND #status IN (:from0, …)` instead: only a
 * run still in one of those statuses moves (the finalizer fails active runs, never finished ones).
 *
 * Idempotency: when the run is already in `status`, the condition fails with
 * `ConditionalCheckFailedException` and nothing is written (no second transition). The store reads
 * the run to tell that apart from a missing run; a state machine should `Catch` that error on these
 * states and carry on, since the status it wanted is in place.
 */
export function statusUpdate(
  status: RunStatus,
  fields: readonly OutcomeField[] = [],
  options: { expires?: boolean; from?: readonly RunStatus[] } = {},
): StatusUpdate {
  const names: Record<string, string> = {
    "#status": "status",
    "#statusKey": INDEXES.byStatus.partitionKey,
    "#statusSort": INDEXES.byStatus.sortKey,
    "#updatedAt": "updatedAt",
    "#transitions": "transitions",
  };
  const sets = [
    "#status = :status",
    "#statusKey = :statusKey",
    "#statusSort = :statusSort",
    "#updatedAt = :at",
    "#transitions = list_append(#transitions, :transition)",
  ];
  const fieldValues: Partial<Record<OutcomeField, string>> = {};
  for (const field of new Set(fields)) {
    if (!(field in OUTCOME_FIELD_SET)) throw new RangeError(`"${field}" is not a run outcome field`);
    names[`#${field}`] = field;
    sets.push(`#${field} = :${field}`);
    fieldValues[field] = `:${field}`;
  }
  // The review queue waits for a person, however long that takes: no expiry while it is queued.
  const awaitsReview = status === "needs_manual_review";
  if (awaitsReview || options.expires) names["#ttl"] = TTL_ATTRIBUTE;
  if (options.expires && !awaitsReview) sets.push("#ttl = :ttl");
  // `from`: only a run in one of these statuses moves (a finalizer must not overwrite an outcome).
  const from = options.from ?? [];
  const fromValues = Object.fromEntries(from.map((s, i) => [`:from${i}`, s]));
  const condition =
    from.length > 0
      ? `attribute_exists(${PARTITION_KEY}) AND #status IN (${Object.keys(fromValues).join(", ")})`
      : `attribute_exists(${PARTITION_KEY}) AND #status <> :status`;
  return {
    UpdateExpression: `SET ${sets.join(", ")}${awaitsReview ? " REMOVE #ttl" : ""}`,
    ConditionExpression: condition,
    ExpressionAttributeNames: names,
    valueNames: {
      status: ":status",
      statusKey: ":statusKey",
      statusSort: ":statusSort",
      at: ":at",
      transition: ":transition",
      fields: fieldValues,
      ...(options.expires && !awaitsReview && { ttl: ":ttl" }),
    },
    fixedValues: { ":status": status, ":statusKey": statusPartition(status), ...fromValues },
  };
}

/**
 * The concrete `ExpressionAttributeValues` (plain JavaScript values, for the document client) of a
 * {@link statusUpdate}. Throws when a field the update was built with has no value.
 */
export function statusUpdateValues(
  update: StatusUpdate,
  values: { runId: string; at: string; fields?: Partial<RunOutcome>; ttl?: number },
): Record<string, unknown> {
  const { valueNames: n } = update;
  const status = update.fixedValues[n.status];
  const result: Record<string, unknown> = {
    ...update.fixedValues,
    [n.statusSort]: timeSortKey(values.at, values.runId),
    [n.at]: values.at,
    [n.transition]: [{ status, at: values.at }],
  };
  for (const [field, name] of Object.entries(n.fields) as [OutcomeField, string][]) {
    const value = values.fields?.[field];
    if (value === undefined) throw new RangeError(`status update expects a value for "${field}"`);
    result[name] = value;
  }
  if (n.ttl) {
    if (values.ttl === undefined) throw new RangeError("status update expects a value for ttl");
    result[n.ttl] = values.ttl;
  }
  return result;
}

const TRANSIENT_AWS_ERRORS = new Set([
  "ProvisionedThroughputExceededException",
  "ThrottlingException",
  "RequestLimitExceeded",
  "InternalServerError",
  "ServiceUnavailable",
  "SlowDown",
  "RequestTimeout",
  "TimeoutError",
  // S3: two conditional writes of one key raced; the loser may try again.
  "ConditionalRequestConflict",
]);

interface AwsErrorShape {
  name?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: number };
  $retryable?: unknown;
}

/** The AWS error's name (`ConditionalCheckFailedException`, `NoSuchKey`…), if it has one. */
export function awsErrorName(error: unknown): string | undefined {
  const name = (error as AwsErrorShape | undefined)?.name;
  return typeof name === "string" ? name : undefined;
}

/** Translates an SDK error into a named storage error; redraft's own errors pass through. */
export function storeError(operation: string, error: unknown): Error {
  if (error instanceof SelfCorrectionError) return error;
  const e = error as AwsErrorShape | undefined;
  const status = e?.$metadata?.httpStatusCode;
  const transient =
    TRANSIENT_AWS_ERRORS.has(awsErrorName(error) ?? "") ||
    e?.$retryable !== undefined ||
    (status !== undefined && status >= 500);
  return transient
    ? new StoreUnavailableError(operation, error)
    : new StoreRequestFailedError(operation, error);
}

/**
 * Batch records in the runs table, beside the runs: `BATCH#<id>` / `BATCH`, listed newest first
 * through the `byCreated` index under its own partition (`BATCHES`), so a batch never shows up
 * among runs and a listing of batches costs one query.
 *
 * The record is created by the batch state machine's own `CreateBatch` state (a conditional
 * PutItem: {@link batchItemKeys} and the attribute names here are what it writes), summed up by
 * λ batch at its AggregateBatch step (functions/lib/batch-store.ts), and read by `redraft batches` / `show`.
 */
export const BATCH_KEY_PREFIX = "BATCH#";
export const BATCH_SORT_KEY = "BATCH";
export const BATCHES_PARTITION = "BATCHES";

export const batchItemKeys = (batchId: string) => ({
  [PARTITION_KEY]: `${BATCH_KEY_PREFIX}${batchId}`,
  [SORT_KEY]: BATCH_SORT_KEY,
});
