import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import {
  BATCHES_PARTITION,
  batchItemKeys,
  INDEXES,
  PARTITION_KEY,
  SORT_KEY,
  storeError,
  TTL_ATTRIBUTE,
} from "../../contracts/table.js";
import { type BatchRecord, BatchRecordSchema } from "../../shared/batch/record.js";
import type { RoundRecord } from "../../shared/batch/rounds.js";
import type { BatchFinish } from "../../shared/batch/steps.js";

/**
 * The batch records in the runs table (their keys and index partition: contracts/table.ts), read and
 * summed up by λ batch and read by `redraft batches` / `show`.
 */
export class DynamoBatchStore {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;

  readonly #ttlDays: number | undefined;

  constructor(options: { client: DynamoDBClient; tableName: string; ttlDays?: number | undefined }) {
    this.#doc = DynamoDBDocumentClient.from(options.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
    this.#table = options.tableName;
    this.#ttlDays = options.ttlDays;
  }

  async get(batchId: string): Promise<BatchRecord | undefined> {
    try {
      const out = await this.#doc.send(
        new GetCommand({ TableName: this.#table, Key: batchItemKeys(batchId), ConsistentRead: true }),
      );
      return out.Item ? fromItem(out.Item) : undefined;
    } catch (error) {
      throw storeError(`get batch ${batchId}`, error);
    }
  }

  /** See {@link recordRounds}. */
  recordRounds(batchId: string, rounds: readonly RoundRecord[]): Promise<void> {
    return recordRounds(this.#doc, this.#table, batchId, rounds);
  }

  /** Newest first. */
  async list(limit = 100): Promise<BatchRecord[]> {
    try {
      const { indexName, partitionKey } = INDEXES.byCreated;
      const page = await this.#doc.send(
        new QueryCommand({
          TableName: this.#table,
          IndexName: indexName,
          KeyConditionExpression: "#pk = :pk",
          ExpressionAttributeNames: { "#pk": partitionKey },
          ExpressionAttributeValues: { ":pk": BATCHES_PARTITION },
          ScanIndexForward: false,
          Limit: limit,
        }),
      );
      const keys = (page.Items ?? []).map((k) => ({
        [PARTITION_KEY]: k[PARTITION_KEY],
        [SORT_KEY]: k[SORT_KEY],
      }));
      if (keys.length === 0) return [];
      const got = await this.#doc.send(
        new BatchGetCommand({ RequestItems: { [this.#table]: { Keys: keys } } }),
      );
      const byId = new Map(
        (got.Responses?.[this.#table] ?? []).map((item) => [String(item[PARTITION_KEY]), fromItem(item)]),
      );
      return keys.flatMap((k) => byId.get(String(k[PARTITION_KEY])) ?? []);
    } catch (error) {
      throw storeError("list batches", error);
    }
  }

  /**
   * Writes the summary once the Map has ended; a retried aggregate writes the same values again.
   * `onlyIfRunning` (the finalizer of a stopped execution) leaves a batch that already ended alone:
   * false then.
   */
  async finish(
    batchId: string,
    finish: BatchFinish,
    options: { onlyIfRunning?: boolean } = {},
  ): Promise<boolean> {
    try {
      await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: batchItemKeys(batchId),
          ConditionExpression: options.onlyIfRunning
            ? "attribute_exists(#pk) AND #status = :running"
            : "attribute_exists(#pk)",
          UpdateExpression: `SET #status = :status, endedAt = :endedAt, #items = :items, counts = :counts, reasons = :reasons, tokens = :tokens, costUsd = :cost, rejected = :rejected, resultsRef = :results, mapResultsRef = :map, #error = :error, #ttl = :ttl${finish.pricing ? ", pricing = :pricing" : ""}${finish.rounds ? ", #rounds = :rounds" : ""}${finish.priceClasses ? ", priceClasses = :classes" : ""}`,
          ExpressionAttributeNames: {
            "#pk": PARTITION_KEY,
            "#ttl": TTL_ATTRIBUTE,
            "#status": "status",
            "#items": "items",
            "#error": "error",
            ...(finish.rounds && { "#rounds": "rounds" }),
          },
          ExpressionAttributeValues: {
            ":status": finish.status,
            ...(finish.pricing && { ":pricing": finish.pricing }),
            ...(finish.rounds && { ":rounds": finish.rounds }),
            ...(finish.priceClasses && { ":classes": finish.priceClasses }),
            ...(options.onlyIfRunning && { ":running": "running" }),
            ":endedAt": finish.endedAt,
            ":items": finish.summary.items,
            ":counts": finish.summary.counts,
            ":reasons": finish.summary.reasons,
            ":tokens": finish.summary.tokens,
            ":cost": finish.summary.costUsd,
            ":rejected": finish.summary.rejected,
            ":results": finish.resultsRef,
            ":map": finish.mapResultsRef ?? null,
            ":error": finish.error ?? null,
            // Kept as long as its runs (retentionDays after it ended); null locally, where nothing expires.
            ":ttl":
              this.#ttlDays === undefined
                ? null
                : Math.floor(Date.parse(finish.endedAt) / 1000) + this.#ttlDays * 86_400,
          },
        }),
      );
      return true;
    } catch (error) {
      if (options.onlyIfRunning && (error as Error).name === "ConditionalCheckFailedException") return false;
      throw storeError(`finish batch ${batchId}`, error);
    }
  }
}

/**
 * A batch-priced batch's rounds so far, written as each round is submitted and collected, so that
 * `redraft show` and the console's record show a batch's progress while it waits. The whole list
 * each time: a retried step writes the same list again.
 */
async function recordRounds(
  doc: DynamoDBDocumentClient,
  tableName: string,
  batchId: string,
  rounds: readonly RoundRecord[],
): Promise<void> {
  try {
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: batchItemKeys(batchId),
        ConditionExpression: "attribute_exists(#pk)",
        UpdateExpression: "SET #rounds = :rounds, pricing = :batch",
        ExpressionAttributeNames: { "#pk": PARTITION_KEY, "#rounds": "rounds" },
        ExpressionAttributeValues: { ":rounds": rounds, ":batch": "batch" },
      }),
    );
  } catch (error) {
    throw storeError(`record the rounds of batch ${batchId}`, error);
  }
}

/** The stored item as a record: the manifest reference is kept as the JSON text CreateBatch wrote. */
function fromItem(item: Record<string, unknown>): BatchRecord {
  const { manifest, mapResultsRef, error, [TTL_ATTRIBUTE]: _ttl, ...rest } = item;
  return BatchRecordSchema.parse({
    ...rest,
    manifestRef: typeof manifest === "string" ? JSON.parse(manifest) : manifest,
    ...(mapResultsRef ? { mapResultsRef } : {}),
    ...(error ? { error } : {}),
  });
}
