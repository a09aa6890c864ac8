import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type DynamoDBClient,
  PutItemCommand,
  ScanCommand,
  type ScanCommandOutput,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, QueryCommand, type QueryCommandOutput } from "@aws-sdk/lib-dynamodb";
import { CREATED_PARTITIONS, INDEXES, PARTITION_KEY, RUN_KEY_PREFIX } from "../contracts/table.js";
import { DynamoBatchStore } from "../functions/lib/batch-store.js";
import { DynamoRunStore } from "../functions/lib/dynamo-store.js";
import { matchesFilter, TotalsFold } from "../shared/store/totals.js";
import type { RunRecord } from "../shared/store/types.js";
import { dynamoDbIntegrationError, ENTERED_TIME_MARKER } from "./asl-interpreter.js";
import type { LocalBackend } from "./backend.js";
import { ensureTable } from "./dynalite.js";
import { FsBlobStore } from "./fs-blobs.js";
import { writeAtomic } from "./lock.js";
import { SharedDynamo } from "./shared-db.js";
import { LOCAL_TABLE } from "./state-machine.js";

/** Stamps the real time where the state machine's input carries `$$.State.EnteredTime`'s marker. */
const stamped = <T>(value: T): T =>
  JSON.parse(JSON.stringify(value ?? {}).replaceAll(ENTERED_TIME_MARKER, new Date().toISOString())) as T;

/**
 * A data folder kept as before SQLite: dynalite (LevelDB) served to the folder's processes by one of
 * them (local/shared-db.ts), blobs as files under `blobs/`, one JSON file per execution under
 * `executions/`. Folders made by earlier versions keep it; `REDRAFT_LOCAL_STORE=dynalite` chooses it
 * for a new folder (the bench's before). The state machines' DynamoDB integrations are sent to
 * dynalite as they are, so DynamoDB's own condition expressions decide them.
 */
export async function openDynaliteBackend(
  dataDir: string,
  options: { onWait?: (message: string) => void; dbTimeoutMs?: number } = {},
): Promise<LocalBackend> {
  await mkdir(join(dataDir, "executions"), { recursive: true });
  const db = await SharedDynamo.open(dataDir, {
    ...(options.onWait && { onWait: options.onWait }),
    ...(options.dbTimeoutMs !== undefined && { timeoutMs: options.dbTimeoutMs }),
  });
  try {
    await ensureTable(db.client, LOCAL_TABLE);
  } catch (error) {
    await db.close();
    throw error;
  }
  const runs = new DynamoRunStore({ client: db.client, tableName: LOCAL_TABLE });
  const historyFile = (name: string) => join(dataDir, "executions", `${name}.json`);
  return {
    kind: "dynalite",
    runs,
    blobs: new FsBlobStore(join(dataDir, "blobs")),
    batches: new DynamoBatchStore({ client: db.client, tableName: LOCAL_TABLE }),
    dynamo: db.client,
    updateItem: async (input) => {
      try {
        const out = await db.client.send(
          new UpdateItemCommand({
            ...input,
            ExpressionAttributeValues: stamped(input.ExpressionAttributeValues),
            TableName: LOCAL_TABLE,
          }),
        );
        return { Attributes: out.Attributes };
      } catch (error) {
        throw dynamoDbIntegrationError(error);
      }
    },
    putItem: async (input) => {
      try {
        await db.client.send(
          new PutItemCommand({ ...input, Item: stamped(input.Item), TableName: LOCAL_TABLE }),
        );
        return {};
      } catch (error) {
        const named = new Error((error as Error).message);
        named.name = `DynamoDB.${(error as Error).name}`;
        throw named;
      }
    },
    listPage: async (query) => {
      // DynamoDB's listing has no cursor of this shape: the page is cut from a listing up to it.
      const { after, ...rest } = query;
      if (!after) return runs.listRuns(rest);
      const { limit: _all, ...unlimited } = rest;
      const all = await runs.listRuns(unlimited);
      const time = (r: { createdAt: string; updatedAt: string }) =>
        query.status ? r.updatedAt : r.createdAt;
      const start = all.findIndex(
        (r) => time(r) < after.at || (time(r) === after.at && r.runId < after.runId),
      );
      return start < 0 ? [] : all.slice(start, query.limit === undefined ? undefined : start + query.limit);
    },
    // DynamoDB adds nothing up: the table is read whole, one run at a time into the counts.
    runTotals: async (filter) => {
      const fold = new TotalsFold(filter);
      for (const run of await runs.listRuns()) fold.add(run);
      return { totals: fold.totals, facets: fold.facets };
    },
    filteredPage: async (filter, limit, after) => {
      const time = (r: RunRecord) => (filter.status ? r.updatedAt : r.createdAt);
      const all = await runs.listRuns(filter.status ? { status: filter.status } : {});
      return all
        .filter(
          (r) =>
            matchesFilter(r, filter) &&
            (!after || time(r) < after.at || (time(r) === after.at && r.runId < after.runId)),
        )
        .slice(0, limit);
    },
    runIds: () => tableRunIds(db.client),
    // Atomic: `redraft show` in another process may read it while it is written.
    saveHistory: (name, summary) => writeAtomic(historyFile(name), JSON.stringify(summary, null, 2)),
    history: async (name) => {
      try {
        return JSON.parse(await readFile(historyFile(name), "utf8"));
      } catch {
        return undefined;
      }
    },
    check: async () => {
      let items = 0;
      let start: ScanCommandOutput["LastEvaluatedKey"];
      do {
        const page: ScanCommandOutput = await db.client.send(
          new ScanCommand({ TableName: LOCAL_TABLE, ExclusiveStartKey: start, Select: "COUNT" }),
        );
        items += page.Count ?? 0;
        start = page.LastEvaluatedKey;
      } while (start);
      return items;
    },
    close: () => db.close(),
  };
}

/**
 * Every run id in the table, read from the `byCreated` index alone (its entries are keys only),
 * without reading a run record: what a table needs to know which prefixes are unique.
 */
async function tableRunIds(client: DynamoDBClient): Promise<string[]> {
  const doc = DynamoDBDocumentClient.from(client);
  const pages = await Promise.all(
    CREATED_PARTITIONS.map(async (partition) => {
      const ids: string[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page: QueryCommandOutput = await doc.send(
          new QueryCommand({
            TableName: LOCAL_TABLE,
            IndexName: INDEXES.byCreated.indexName,
            KeyConditionExpression: "#p = :p",
            ExpressionAttributeNames: { "#p": INDEXES.byCreated.partitionKey, "#k": PARTITION_KEY },
            ExpressionAttributeValues: { ":p": partition },
            ProjectionExpression: "#k",
            ...(start && { ExclusiveStartKey: start }),
          }),
        );
        for (const item of page.Items ?? []) {
          const key = item[PARTITION_KEY];
          if (typeof key === "string" && key.startsWith(RUN_KEY_PREFIX))
            ids.push(key.slice(RUN_KEY_PREFIX.length));
        }
        start = page.LastEvaluatedKey;
      } while (start);
      return ids;
    }),
  );
  return [...new Set(pages.flat())];
}
