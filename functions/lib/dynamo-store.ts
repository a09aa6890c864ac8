import { CreateTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  type QueryCommandOutput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import {
  ATTEMPT_SORT_KEY_PREFIX,
  attemptKey,
  awsErrorName,
  COUNTED_ATTEMPTS_ATTRIBUTE,
  CREATED_PARTITIONS,
  claimKey,
  DESIGN_ATTRIBUTES,
  draftPartition,
  expiresAt,
  INDEX_PROJECTION,
  INDEXES,
  type IndexDefinition,
  type ItemKey,
  KEY_ATTRIBUTES,
  OUTCOME_FIELDS,
  type OutcomeField,
  PARTITION_KEY,
  RUN_KEY_PREFIX,
  runIndexKeys,
  runKey,
  SORT_KEY,
  statusPartition,
  statusUpdate,
  statusUpdateValues,
  storeError,
  TTL_ATTRIBUTE,
} from "../../contracts/table.js";
import { RunFinishedError, RunNotFoundError, StoreRequestFailedError } from "../../shared/errors.js";
import { claimTerms, mayTakeClaim } from "../../shared/store/claim.js";
import {
  ACTIVE_STATUSES,
  type AttemptRecord,
  AttemptRecordSchema,
  isActiveStatus,
  type Review,
  type RunOutcome,
  type RunQuery,
  type RunRecord,
  RunRecordSchema,
  type RunStatus,
  type RunStore,
  type TokenTotals,
} from "../../shared/store/types.js";

export interface DynamoRunStoreOptions {
  /**
   * A plain client is wrapped in a document client that drops undefined values. A document client
   * is used as given, so build it with `marshallOptions: { removeUndefinedValues: true }`.
   */
  client: DynamoDBClient | DynamoDBDocumentClient;
  tableName: string;
  /** Days to keep runs and attempts (written as `ttl`). @default undefined: kept until deleted */
  ttlDays?: number | undefined;
  /** Index items read per query page while listing. @default 100 */
  pageSize?: number;
}

/** One page of a listing: the runs, and the cursor of the next page when there may be more. */
export interface RunPage {
  runs: RunRecord[];
  /** Opaque; pass it back to {@link DynamoRunStore.listRunsPage} for the next page. */
  cursor?: string;
}

/** An index entry: the run's table key and its position in the index. */
interface IndexEntry {
  key: ItemKey;
  sort: string;
}

/** BatchGetItem takes at most 100 keys. */
const BATCH_GET_MAX = 100;
/** A BatchGet that keeps returning UnprocessedKeys is throttled: give up after this many rounds. */
const BATCH_GET_ROUNDS = 8;

const CONDITION_FAILED = "ConditionalCheckFailedException";
/** A claim read back after a failed conditional put can vanish (TTL) before we see it: try again, a few times. */
const CLAIM_TRIES = 3;
/** Likewise for a run whose status changes between a failed conditional update and the read after it. */
const STATUS_TRIES = 3;

const TOKEN_KEYS = ["input", "output", "cacheRead", "cacheWrite", "total"] as const;

/**
 * The RunStore on one DynamoDB table (see `table.ts` for the keys). Every write that can happen twice
 * is one conditional single-item write, and token totals grow by `ADD`: no transaction and no TTL is
 * needed for correctness, so dynalite, DynamoDB Local and AWS behave alike.
 */
export class DynamoRunStore implements RunStore {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #ttlDays: number | undefined;
  readonly #pageSize: number;

  constructor(options: DynamoRunStoreOptions) {
    this.#doc =
      options.client instanceof DynamoDBDocumentClient
        ? options.client
        : DynamoDBDocumentClient.from(options.client, { marshallOptions: { removeUndefinedValues: true } });
    this.#table = options.tableName;
    this.#ttlDays = options.ttlDays;
    this.#pageSize = options.pageSize ?? 100;
  }

  async createRun(run: RunRecord): Promise<boolean> {
    const item = { ...run, ...runKey(run.runId), ...runIndexKeys(run), ...this.#ttl(run.createdAt) };
    return this.#conditional(
      "createRun",
      new PutCommand({
        TableName: this.#table,
        Item: item,
        ConditionExpression: `attribute_not_exists(${PARTITION_KEY})`,
      }),
    );
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const item = await this.#get("getRun", runKey(runId));
    return item && toRun(item);
  }

  async claimContent(
    contentHash: string,
    runId: string,
    now: string,
    windowMs: number,
    replaceHolder?: string,
  ): Promise<string> {
    const terms = claimTerms(runId, now, windowMs, replaceHolder);
    const { claimedAtMs } = terms.claim;
    // Staleness is decided by claimedAtMs, never by the claim having expired: dynalite keeps it forever.
    const item = {
      ...claimKey(contentHash),
      runId,
      claimedAt: now,
      claimedAtMs,
      [TTL_ATTRIBUTE]: Math.ceil((claimedAtMs + windowMs) / 1000),
    };
    for (let tries = 0; tries < CLAIM_TRIES; tries++) {
      const claimed = await this.#conditional(
        "claimContent",
        new PutCommand({
          TableName: this.#table,
          Item: item,
          // mayTakeClaim, written as the put's condition so that DynamoDB decides it atomically.
          ConditionExpression: `attribute_not_exists(${PARTITION_KEY}) OR #claimedAtMs < :staleBefore OR #runId IN (:self, :replaced)`,
          ExpressionAttributeNames: { "#claimedAtMs": "claimedAtMs", "#runId": "runId" },
          ExpressionAttributeValues: {
            ":staleBefore": terms.staleBefore,
            ":self": terms.takesFrom[0],
            ":replaced": terms.takesFrom[1],
          },
        }),
      );
      if (claimed) return runId;
      const held = await this.#get("claimContent", claimKey(contentHash));
      // A claim that vanished (TTL) or became takeable between the put and this read: put again.
      if (typeof held?.runId === "string") {
        const holder = { runId: held.runId, claimedAtMs: Number(held.claimedAtMs) };
        if (!mayTakeClaim(holder, terms)) return holder.runId;
      }
    }
    throw new StoreRequestFailedError("claimContent", new Error(`claim on ${contentHash} kept changing`));
  }

  async setStatus(
    runId: string,
    status: RunStatus,
    at: string,
    fields: Partial<RunOutcome> = {},
  ): Promise<void> {
    const outcome = definedOutcome(fields);
    // A decision (or any status but the review queue) starts the retention clock from now.
    const expires = this.#ttlDays !== undefined;
    const ttl = expires ? expiresAt(at, this.#ttlDays ?? 0) : undefined;
    // Back under way only from under way: an outcome (the finalizer's `failed`…) is never reopened
    // by a step that outlived its execution.
    const from = isActiveStatus(status) ? ACTIVE_STATUSES.filter((s) => s !== status) : undefined;
    const command = this.#statusCommand(runId, status, at, outcome, { expires, ...(from && { from }) });
    for (let tries = 0; tries < STATUS_TRIES; tries++) {
      const moved = await this.#conditional("setStatus", command);
      if (moved) {
        await this.#retainAttempts(runId, status === "needs_manual_review" ? undefined : ttl);
        return;
      }
      // The condition failed: either there is no such run, or it is in this status already (a retry).
      const current = await this.#get("setStatus", runKey(runId));
      if (!current) throw new RunNotFoundError(runId);
      if (current.status === status) return;
      if (from && !isActiveStatus(current.status))
        throw new RunFinishedError(runId, String(current.status), status);
      // It moved to another status between the write and the read: write ours on top, as a later call would.
    }
    throw new StoreRequestFailedError("setStatus", new Error(`run ${runId} kept changing status`));
  }

  /**
   * Moves the run to `status` only while it is in one of `from` (one conditional update): false when
   * it is elsewhere already, or missing. Unlike {@link setStatus} it never writes over another status.
   */
  async finishActive(
    runId: string,
    status: RunStatus,
    from: readonly RunStatus[],
    at: string,
    fields: Partial<RunOutcome> = {},
  ): Promise<boolean> {
    const outcome = definedOutcome(fields);
    const expires = this.#ttlDays !== undefined;
    // The attempts keep the ttl they were written with: a run ends within hours of its attempts.
    return this.#conditional(
      "finishActive",
      this.#statusCommand(runId, status, at, outcome, { expires, from }),
    );
  }

  /** The conditional status update that `statusUpdate` (table.ts) describes, as one command. */
  #statusCommand(
    runId: string,
    status: RunStatus,
    at: string,
    outcome: Partial<RunOutcome>,
    options: { expires: boolean; from?: readonly RunStatus[] },
  ): UpdateCommand {
    const update = statusUpdate(status, Object.keys(outcome) as OutcomeField[], options);
    const ttl = options.expires ? expiresAt(at, this.#ttlDays ?? 0) : undefined;
    return new UpdateCommand({
      TableName: this.#table,
      Key: runKey(runId),
      UpdateExpression: update.UpdateExpression,
      ConditionExpression: update.ConditionExpression,
      ExpressionAttributeNames: update.ExpressionAttributeNames,
      ExpressionAttributeValues: statusUpdateValues(update, {
        runId,
        at,
        fields: outcome,
        ...(ttl !== undefined && { ttl }),
      }),
    });
  }

  async updateRun(runId: string, fields: Partial<RunOutcome>): Promise<void> {
    const outcome: Record<string, unknown> = definedOutcome(fields);
    // The status is no outcome field, but RunOutcome allows it: keep the byStatus partition in step.
    if (fields.status !== undefined) {
      outcome.status = fields.status;
      outcome[INDEXES.byStatus.partitionKey] = statusPartition(fields.status);
    }
    const entries = Object.entries(outcome);
    if (entries.length === 0) {
      if (!(await this.getRun(runId))) throw new RunNotFoundError(runId);
      return;
    }
    const updated = await this.#conditional(
      "updateRun",
      new UpdateCommand({
        TableName: this.#table,
        Key: runKey(runId),
        UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :f${i}`).join(", ")}`,
        ConditionExpression: `attribute_exists(${PARTITION_KEY})`,
        ExpressionAttributeNames: Object.fromEntries(entries.map(([name], i) => [`#f${i}`, name])),
        ExpressionAttributeValues: Object.fromEntries(entries.map(([, value], i) => [`:f${i}`, value])),
      }),
    );
    if (!updated) throw new RunNotFoundError(runId);
  }

  async putAttempt(attempt: AttemptRecord): Promise<boolean> {
    return this.#conditional(
      "putAttempt",
      new PutCommand({
        TableName: this.#table,
        Item: { ...attempt, ...attemptKey(attempt.runId, attempt.attempt), ...this.#ttl(attempt.at) },
        ConditionExpression: `attribute_not_exists(${PARTITION_KEY})`,
      }),
    );
  }

  async addUsage(runId: string, attempt: number, usage: TokenTotals, costUsd: number): Promise<boolean> {
    // One update adds the tokens and records the attempt as counted; the condition makes a retry a no-op.
    const added = await this.#conditional(
      "addUsage",
      new UpdateCommand({
        TableName: this.#table,
        Key: runKey(runId),
        UpdateExpression: `ADD ${TOKEN_KEYS.map((k) => `#tokens.#${k} :${k}`).join(", ")}, #costUsd :costUsd, #counted :attemptSet`,
        ConditionExpression: `attribute_exists(${PARTITION_KEY}) AND NOT contains(#counted, :attempt)`,
        ExpressionAttributeNames: {
          "#tokens": "tokens",
          ...Object.fromEntries(TOKEN_KEYS.map((k) => [`#${k}`, k])),
          "#costUsd": "costUsd",
          "#counted": COUNTED_ATTEMPTS_ATTRIBUTE,
        },
        ExpressionAttributeValues: {
          ...Object.fromEntries(TOKEN_KEYS.map((k) => [`:${k}`, usage[k]])),
          ":costUsd": costUsd,
          ":attemptSet": new Set([attempt]),
          ":attempt": attempt,
        },
      }),
    );
    if (added) return true;
    if (!(await this.#get("addUsage", runKey(runId)))) throw new RunNotFoundError(runId);
    return false;
  }

  /**
   * Keeps a run that awaits a person: removes the `ttl` of its attempt items (the state machine's
   * MarkNeedsReview removed the run item's already), so the review queue keeps its evidence until a
   * decision, which {@link setStatus} answers by starting the clock again. Idempotent.
   */
  async holdForReview(runId: string): Promise<void> {
    await this.#retainAttempts(runId, undefined);
  }

  /** Sets (`ttl`) or removes (undefined) the expiry of a run's attempt items; a no-op without retention. */
  async #retainAttempts(runId: string, ttl: number | undefined): Promise<void> {
    if (this.#ttlDays === undefined) return;
    const keys = await this.#query("retainAttempts", {
      KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
      ExpressionAttributeNames: { "#pk": PARTITION_KEY, "#sk": SORT_KEY },
      ExpressionAttributeValues: { ":pk": `${RUN_KEY_PREFIX}${runId}`, ":prefix": ATTEMPT_SORT_KEY_PREFIX },
      ProjectionExpression: "#pk, #sk",
      ConsistentRead: true,
    });
    for (const item of keys) {
      const key = { pk: String(item[PARTITION_KEY]), sk: String(item[SORT_KEY]) };
      await this.#conditional(
        "retainAttempts",
        new UpdateCommand({
          TableName: this.#table,
          Key: key,
          UpdateExpression: ttl === undefined ? "REMOVE #ttl" : "SET #ttl = :ttl",
          ConditionExpression: `attribute_exists(${PARTITION_KEY})`,
          ExpressionAttributeNames: { "#ttl": TTL_ATTRIBUTE },
          ...(ttl !== undefined && { ExpressionAttributeValues: { ":ttl": ttl } }),
        }),
      );
    }
  }

  async listAttempts(runId: string): Promise<AttemptRecord[]> {
    const items = await this.#query("listAttempts", {
      KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
      ExpressionAttributeNames: { "#pk": PARTITION_KEY, "#sk": SORT_KEY },
      ExpressionAttributeValues: { ":pk": `${RUN_KEY_PREFIX}${runId}`, ":prefix": ATTEMPT_SORT_KEY_PREFIX },
      ScanIndexForward: true,
      ConsistentRead: true,
    });
    return items.map((item) => AttemptRecordSchema.parse(withoutDesign(item)));
  }

  /** Newest first; every page of {@link listRunsPage} until `limit` runs. */
  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    const limit = query.limit ?? Number.POSITIVE_INFINITY;
    const runs: RunRecord[] = [];
    let cursor: string | undefined;
    while (runs.length < limit) {
      const page = await this.listRunsPage({ ...query, limit: Math.min(limit - runs.length, 1000) }, cursor);
      runs.push(...page.runs);
      cursor = page.cursor;
      if (!cursor) break;
    }
    return runs;
  }

  /**
   * One page of runs, newest first, from where `cursor` left off. With neither `draftId` nor
   * `status` it merges the byCreated shards: each shard is read newest first, and the newest head
   * is taken until the page is full. The cursor is the last index sort key returned; the next page
   * reads every partition below it, so a page boundary falls anywhere, across shards, exactly once.
   */
  async listRunsPage(query: RunQuery = {}, cursor?: string): Promise<RunPage> {
    const limit = query.limit ?? this.#pageSize;
    if (limit <= 0) return { runs: [] };
    const before = cursor === undefined ? undefined : decodeCursor(cursor);
    const [index, partitions]: [IndexDefinition, readonly string[]] = query.draftId
      ? [INDEXES.byDraft, [draftPartition(query.draftId)]]
      : query.status
        ? [INDEXES.byStatus, [statusPartition(query.status)]]
        : [INDEXES.byCreated, CREATED_PARTITIONS];
    // A partition's first read asks for its share of the page, twice over (the shards hold about
    // as many runs each): a 50-run page reads about 110 index entries across nine partitions
    // instead of 900. A partition that holds more of the page reads on, twice as much each time.
    const firstRead = Math.min(this.#pageSize, Math.ceil(limit / partitions.length) * 2);
    const streams = partitions.map((p) => this.#indexEntries(index, p, before, firstRead));
    const heads = await Promise.all(streams.map((s) => s.next()));
    const runs: RunRecord[] = [];
    // A run whose index entry moved while the index was read (a status update) shows up twice.
    const listed = new Set<string>();
    let last: string | undefined;
    let exhausted = false;
    while (runs.length < limit) {
      // Take up to the missing count from the merge, then read those runs by key.
      const batch: IndexEntry[] = [];
      while (batch.length < Math.min(limit - runs.length, BATCH_GET_MAX)) {
        let newest = -1;
        heads.forEach((head, i) => {
          if (!head.done && (newest < 0 || head.value.sort > (heads[newest]?.value?.sort ?? ""))) newest = i;
        });
        const head = heads[newest];
        const stream = streams[newest];
        if (!head || head.done || !stream) {
          exhausted = true;
          break;
        }
        batch.push(head.value);
        heads[newest] = await stream.next();
      }
      if (batch.length === 0) break;
      const items = await this.#batchGet(
        "listRuns",
        batch.map((e) => e.key),
      );
      for (const entry of batch) {
        last = entry.sort;
        if (listed.has(entry.key.pk)) continue;
        listed.add(entry.key.pk);
        const item = items.get(entry.key.pk);
        // Gone (expired) since the index was read, or moved out of the status queried: skip it.
        if (!item) continue;
        if (query.status && item.status !== query.status) continue;
        runs.push(toRun(item));
      }
      if (exhausted) break;
    }
    return exhausted || last === undefined ? { runs } : { runs, cursor: encodeCursor(last) };
  }

  async setReview(runId: string, review: Review): Promise<void> {
    const updated = await this.#conditional(
      "setReview",
      new UpdateCommand({
        TableName: this.#table,
        Key: runKey(runId),
        UpdateExpression: "SET #review = :review",
        ConditionExpression: `attribute_exists(${PARTITION_KEY})`,
        ExpressionAttributeNames: { "#review": "review" },
        ExpressionAttributeValues: { ":review": review },
      }),
    );
    if (!updated) throw new RunNotFoundError(runId);
  }

  async claimReview(
    runId: string,
    from: readonly RunStatus[],
    review: Review,
    staleBefore: string,
  ): Promise<boolean> {
    const statuses = Object.fromEntries(from.map((status, i) => [`:from${i}`, status]));
    const claimed = await this.#conditional(
      "claimReview",
      new UpdateCommand({
        TableName: this.#table,
        Key: runKey(runId),
        UpdateExpression: "SET #review = :review",
        ConditionExpression: `attribute_exists(${PARTITION_KEY}) AND #status IN (${Object.keys(statuses).join(", ")}) AND (attribute_not_exists(#review) OR #review.#at < :staleBefore)`,
        ExpressionAttributeNames: { "#review": "review", "#status": "status", "#at": "at" },
        ExpressionAttributeValues: { ":review": review, ":staleBefore": staleBefore, ...statuses },
      }),
    );
    if (!claimed && !(await this.#get("claimReview", runKey(runId)))) throw new RunNotFoundError(runId);
    return claimed;
  }

  async releaseReview(runId: string, review: Review): Promise<void> {
    // Only our own claim: a later reviewer's (after ours went stale) stays.
    await this.#conditional(
      "releaseReview",
      new UpdateCommand({
        TableName: this.#table,
        Key: runKey(runId),
        UpdateExpression: "REMOVE #review",
        ConditionExpression: "#review.#at = :at AND #review.#reviewer = :reviewer",
        ExpressionAttributeNames: { "#review": "review", "#at": "at", "#reviewer": "reviewer" },
        ExpressionAttributeValues: { ":at": review.at, ":reviewer": review.reviewer ?? "" },
      }),
    );
  }

  /**
   * One partition of an index, newest first, below `before`; read a page at a time as consumed,
   * `firstRead` entries first, then twice as many each time up to the store's page size.
   */
  async *#indexEntries(
    index: IndexDefinition,
    partition: string,
    before: string | undefined,
    firstRead: number,
  ): AsyncGenerator<IndexEntry, void, undefined> {
    let startKey: Record<string, unknown> | undefined;
    let read = Math.max(1, firstRead);
    do {
      let page: QueryCommandOutput;
      try {
        page = await this.#doc.send(
          new QueryCommand({
            TableName: this.#table,
            IndexName: index.indexName,
            KeyConditionExpression: before ? "#ipk = :ipk AND #isk < :before" : "#ipk = :ipk",
            ExpressionAttributeNames: {
              "#ipk": index.partitionKey,
              ...(before && { "#isk": index.sortKey }),
            },
            ExpressionAttributeValues: { ":ipk": partition, ...(before && { ":before": before }) },
            ScanIndexForward: false,
            Limit: read,
            ...(startKey && { ExclusiveStartKey: startKey }),
          }),
        );
      } catch (error) {
        throw storeError("listRuns", error);
      }
      read = Math.min(read * 2, this.#pageSize);
      for (const item of page.Items ?? []) {
        yield {
          key: { pk: String(item[PARTITION_KEY]), sk: String(item[SORT_KEY]) },
          sort: String(item[index.sortKey]),
        };
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }

  /** The items of `keys` by their `pk` (consistent reads); missing ones are left out. */
  async #batchGet(operation: string, keys: ItemKey[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    // BatchGetItem refuses a request that names one key twice; a listing merged from several index
    // pages or shards can name a run twice (an index entry moving while it is read).
    let pending: ItemKey[] = [...new Map(keys.map((k) => [`${k.pk}\u0000${k.sk}`, k])).values()];
    for (let round = 0; pending.length > 0; round++) {
      if (round >= BATCH_GET_ROUNDS) {
        throw storeError(
          operation,
          Object.assign(new Error("BatchGetItem kept keys unprocessed"), {
            name: "ThrottlingException",
          }),
        );
      }
      try {
        const { Responses, UnprocessedKeys } = await this.#doc.send(
          new BatchGetCommand({ RequestItems: { [this.#table]: { Keys: pending, ConsistentRead: true } } }),
        );
        for (const item of Responses?.[this.#table] ?? []) found.set(String(item[PARTITION_KEY]), item);
        pending = (UnprocessedKeys?.[this.#table]?.Keys ?? []) as ItemKey[];
      } catch (error) {
        throw storeError(operation, error);
      }
    }
    return found;
  }

  #ttl(from: string): Record<string, number> {
    return this.#ttlDays === undefined ? {} : { [TTL_ATTRIBUTE]: expiresAt(from, this.#ttlDays) };
  }

  /** Sends a conditional write: false when its condition failed, a named error for anything else. */
  async #conditional(operation: string, command: PutCommand | UpdateCommand): Promise<boolean> {
    try {
      // The document client's overloads take one command type at a time.
      await (command instanceof PutCommand ? this.#doc.send(command) : this.#doc.send(command));
      return true;
    } catch (error) {
      if (awsErrorName(error) === CONDITION_FAILED) return false;
      throw storeError(operation, error);
    }
  }

  async #get(operation: string, key: ItemKey): Promise<Record<string, unknown> | undefined> {
    try {
      const { Item } = await this.#doc.send(
        new GetCommand({ TableName: this.#table, Key: key, ConsistentRead: true }),
      );
      return Item;
    } catch (error) {
      throw storeError(operation, error);
    }
  }

  /** Queries every page (or until `limit` items passed the filter). */
  async #query(
    operation: string,
    input: Omit<QueryCommandInput, "TableName" | "ExclusiveStartKey" | "Limit">,
    limit = Number.POSITIVE_INFINITY,
  ): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      // Limit counts items read before the filter, so a filtered query just reads whole pages.
      const pageLimit = input.FilterExpression || !Number.isFinite(limit) ? undefined : limit - items.length;
      try {
        const page = await this.#doc.send(
          new QueryCommand({
            ...input,
            TableName: this.#table,
            ...(startKey && { ExclusiveStartKey: startKey }),
            ...(pageLimit !== undefined && { Limit: pageLimit }),
          }),
        );
        items.push(...(page.Items ?? []));
        startKey = page.LastEvaluatedKey;
      } catch (error) {
        throw storeError(operation, error);
      }
    } while (startKey && items.length < limit);
    return items.slice(0, limit);
  }
}

/** The outcome fields that carry a value (the status travels separately). */
function definedOutcome(fields: Partial<RunOutcome>): Partial<Omit<RunOutcome, "status">> {
  return Object.fromEntries(
    OUTCOME_FIELDS.filter((f) => fields[f] !== undefined).map((f) => [f, fields[f]]),
  ) as Partial<Omit<RunOutcome, "status">>;
}

function encodeCursor(sort: string): string {
  return Buffer.from(JSON.stringify({ before: sort }), "utf8").toString("base64url");
}

function decodeCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { before?: unknown };
    if (typeof parsed.before === "string" && parsed.before) return parsed.before;
  } catch {
    // fall through: not one of ours
  }
  throw new RangeError("listRunsPage: not a cursor this store returned");
}

function withoutDesign(item: Record<string, unknown>): Record<string, unknown> {
  const record = { ...item };
  for (const name of DESIGN_ATTRIBUTES) delete record[name];
  return record;
}

function toRun(item: Record<string, unknown>): RunRecord {
  return RunRecordSchema.parse(withoutDesign(item));
}

/**
 * Creates the table with its three indexes, on demand (for dynalite, DynamoDB Local and tests; the
 * cloud table comes from CDK, built from the same constants). False when the table exists already.
 * Does not wait for the table to be active.
 */
export async function createTable(client: DynamoDBClient, tableName: string): Promise<boolean> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: KEY_ATTRIBUTES.map((name) => ({ AttributeName: name, AttributeType: "S" })),
        KeySchema: [
          { AttributeName: PARTITION_KEY, KeyType: "HASH" },
          { AttributeName: SORT_KEY, KeyType: "RANGE" },
        ],
        GlobalSecondaryIndexes: Object.values(INDEXES).map((index) => ({
          IndexName: index.indexName,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: "HASH" },
            { AttributeName: index.sortKey, KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: INDEX_PROJECTION },
        })),
      }),
    );
    return true;
  } catch (error) {
    if (awsErrorName(error) === "ResourceInUseException") return false;
    throw storeError("createTable", error);
  }
}
