import { CreateTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { RunNotFoundError } from "../../shared/errors.js";
import {
  type AttemptRecord,
  AttemptRecordSchema,
  type Review,
  type RunOutcome,
  type RunQuery,
  type RunRecord,
  RunRecordSchema,
  type RunStatus,
  type RunStore,
  type TokenTotals,
} from "../../shared/store/types.js";
import {
  ALL_RUNS_PARTITION,
  ATTEMPT_SORT_KEY_PREFIX,
  attemptKey,
  awsErrorName,
  COUNTED_ATTEMPTS_ATTRIBUTE,
  claimKey,
  DESIGN_ATTRIBUTES,
  draftPartition,
  expiresAt,
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
  StoreRequestFailedError,
  statusPartition,
  statusUpdate,
  statusUpdateValues,
  storeError,
  TTL_ATTRIBUTE,
} from "./table.js";

export interface DynamoRunStoreOptions {
  /**
   * A plain client is wrapped in a document client that drops undefined values. A document client
   * is used as given, so build it with `marshallOptions: { removeUndefinedValues: true }`.
   */
  client: DynamoDBClient | DynamoDBDocumentClient;
  tableName: string;
  /** Days to keep runs and attempts (written as `ttl`). @default undefined: kept until deleted */
  ttlDays?: number | undefined;
}

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

  constructor(options: DynamoRunStoreOptions) {
    this.#doc =
      options.client instanceof DynamoDBDocumentClient
        ? options.client
        : DynamoDBDocumentClient.from(options.client, { marshallOptions: { removeUndefinedValues: true } });
    this.#table = options.tableName;
    this.#ttlDays = options.ttlDays;
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
    const nowMs = Date.parse(now);
    if (Number.isNaN(nowMs)) throw new RangeError(`claimContent: "${now}" is not a timestamp`);
    // Staleness is decided by claimedAtMs, never by the claim having expired: dynalite keeps it forever.
    const item = {
      ...claimKey(contentHash),
      runId,
      claimedAt: now,
      claimedAtMs: nowMs,
      [TTL_ATTRIBUTE]: Math.ceil((nowMs + windowMs) / 1000),
    };
    for (let tries = 0; tries < CLAIM_TRIES; tries++) {
      const claimed = await this.#conditional(
        "claimContent",
        new PutCommand({
          TableName: this.#table,
          Item: item,
          ConditionExpression: `attribute_not_exists(${PARTITION_KEY}) OR #claimedAtMs < :staleBefore OR #runId IN (:runId, :replace)`,
          ExpressionAttributeNames: { "#claimedAtMs": "claimedAtMs", "#runId": "runId" },
          ExpressionAttributeValues: {
            ":staleBefore": nowMs - windowMs,
            ":runId": runId,
            ":replace": replaceHolder ?? runId,
          },
        }),
      );
      if (claimed) return runId;
      const holder = await this.#get("claimContent", claimKey(contentHash));
      if (typeof holder?.runId === "string") return holder.runId;
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
    const update = statusUpdate(status, Object.keys(outcome) as OutcomeField[]);
    for (let tries = 0; tries < STATUS_TRIES; tries++) {
      const moved = await this.#conditional(
        "setStatus",
        new UpdateCommand({
          TableName: this.#table,
          Key: runKey(runId),
          UpdateExpression: update.UpdateExpression,
          ConditionExpression: update.ConditionExpression,
          ExpressionAttributeNames: update.ExpressionAttributeNames,
          ExpressionAttributeValues: statusUpdateValues(update, { runId, at, fields: outcome }),
        }),
      );
      if (moved) return;
      // The condition failed: either there is no such run, or it is in this status already (a retry).
      const current = await this.#get("setStatus", runKey(runId));
      if (!current) throw new RunNotFoundError(runId);
      if (current.status === status) return;
      // It moved to another status between the write and the read: write ours on top, as a later call would.
    }
    throw new StoreRequestFailedError("setStatus", new Error(`run ${runId} kept changing status`));
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

  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    const limit = query.limit ?? Number.POSITIVE_INFINITY;
    if (limit <= 0) return [];
    const [index, partition]: [IndexDefinition, string] = query.draftId
      ? [INDEXES.byDraft, draftPartition(query.draftId)]
      : query.status
        ? [INDEXES.byStatus, statusPartition(query.status)]
        : [INDEXES.byCreated, ALL_RUNS_PARTITION];
    const filterStatus = query.draftId && query.status ? query.status : undefined;
    const items = await this.#query(
      "listRuns",
      {
        IndexName: index.indexName,
        KeyConditionExpression: "#ipk = :ipk",
        ExpressionAttributeNames: {
          "#ipk": index.partitionKey,
          ...(filterStatus && { "#status": "status" }),
        },
        ExpressionAttributeValues: { ":ipk": partition, ...(filterStatus && { ":status": filterStatus }) },
        ...(filterStatus && { FilterExpression: "#status = :status" }),
        ScanIndexForward: false,
      },
      limit,
    );
    return items.map(toRun);
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
          Projection: { ProjectionType: "ALL" },
        })),
      }),
    );
    return true;
  } catch (error) {
    if (awsErrorName(error) === "ResourceInUseException") return false;
    throw storeError("createTable", error);
  }
}
