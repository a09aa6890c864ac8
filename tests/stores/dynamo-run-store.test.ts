import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import {
  claimKey,
  INDEXES,
  RUN_KEY_PREFIX,
  RUN_SORT_KEY,
  runKey,
  statusUpdate,
  timeSortKey,
} from "../../functions/lib/table.js";
import { ensureTable, type LocalDynamo, localDynamoClient, startDynalite } from "../../local/dynalite.js";
import { at, makeRun } from "./fixtures.js";
import { describeRunStoreContract } from "./run-store-contract.js";

/** The fidelity tier (`npm run test:fidelity`) points this at DynamoDB Local; dynalite otherwise. */
const endpoint = process.env.DYNAMODB_ENDPOINT;
const engine = endpoint ? `DynamoDB at ${endpoint}` : "dynalite";

let local: LocalDynamo | undefined;
let client: DynamoDBClient;
let tables = 0;

beforeAll(async () => {
  if (endpoint) client = localDynamoClient(endpoint);
  else {
    local = await startDynalite();
    client = local.client;
  }
});

afterAll(async () => {
  if (local) await local.close();
  else client.destroy();
});

/** A new table per test: the contract's listings assume an empty store. */
async function freshTable(): Promise<string> {
  const tableName = `redraft-test-${process.pid}-${Date.now()}-${++tables}`;
  await ensureTable(client, tableName);
  return tableName;
}

describeRunStoreContract(`DynamoRunStore on ${engine}`, async () => {
  return new DynamoRunStore({ client, tableName: await freshTable() });
});

describe(`DynamoRunStore on ${engine}: the table design`, () => {
  let tableName: string;
  let store: DynamoRunStore;
  let doc: DynamoDBDocumentClient;
  const raw = async (key: { pk: string; sk: string }) =>
    (await doc.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }))).Item;

  beforeEach(async () => {
    tableName = await freshTable();
    store = new DynamoRunStore({ client, tableName, ttlDays: 30 });
    doc = DynamoDBDocumentClient.from(client);
  });

  it("writes the index keys and ttl on the item and strips them from the record", async () => {
    const run = makeRun("r1", { draftId: "d1", createdAt: at(0) });
    await store.createRun(run);
    expect(await raw(runKey("r1"))).toMatchObject({
      pk: "RUN#r1",
      sk: "RUN",
      byDraftPk: "DRAFT#d1",
      byDraftSk: `${at(0)}#r1`,
      byStatusPk: "STATUS#draft",
      byStatusSk: `${at(0)}#r1`,
      byCreatedPk: "RUNS",
      byCreatedSk: `${at(0)}#r1`,
      ttl: Date.parse(at(0)) / 1000 + 30 * 86_400,
    });
    await store.addUsage("r1", 1, { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 }, 0.1);
    await expect(store.getRun("r1")).resolves.toEqual({
      ...run,
      tokens: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
      costUsd: 0.1,
    });
  });

  it("moves the byStatus keys with the status and leaves the others alone", async () => {
    await store.createRun(makeRun("r1", { draftId: "d1" }));
    await store.setStatus("r1", "validated", at(7));
    expect(await raw(runKey("r1"))).toMatchObject({
      byStatusPk: "STATUS#validated",
      byStatusSk: `${at(7)}#r1`,
      byDraftSk: `${at(0)}#r1`,
      byCreatedSk: `${at(0)}#r1`,
    });
  });

  it("orders the review queue by when a run entered the status", async () => {
    await store.createRun(makeRun("older", { createdAt: at(0) }));
    await store.createRun(makeRun("newer", { createdAt: at(1) }));
    await store.setStatus("newer", "needs_manual_review", at(5));
    await store.setStatus("older", "needs_manual_review", at(6));
    const queue = await store.listRuns({ status: "needs_manual_review" });
    expect(queue.map((r) => r.runId)).toEqual(["older", "newer"]);
  });

  it("keeps the byStatus partition in step when updateRun is given a status", async () => {
    await store.createRun(makeRun("r1"));
    await store.updateRun("r1", { status: "failed" });
    await expect(store.listRuns({ status: "failed" }).then((rs) => rs.map((r) => r.runId))).resolves.toEqual([
      "r1",
    ]);
    await expect(store.listRuns({ status: "draft" })).resolves.toEqual([]);
  });

  it("decides a claim's staleness by its time, not by whether TTL removed it", async () => {
    const hash = "c".repeat(64);
    await store.claimContent(hash, "r1", at(0), 60_000);
    expect(await raw(claimKey(hash))).toMatchObject({
      runId: "r1",
      claimedAt: at(0),
      ttl: Date.parse(at(0)) / 1000 + 60,
    });
    // The expired claim is still in the table (dynalite never deletes; AWS deletes late).
    await expect(store.claimContent(hash, "r2", at(2), 60_000)).resolves.toBe("r2");
  });

  it("accepts the status update exactly as the state machine sends it", async () => {
    await store.createRun(makeRun("r1", { status: "correcting" }));
    // What a DynamoDB updateItem state builds from statusUpdate(), with JSONPath resolved by hand.
    const update = statusUpdate("needs_manual_review", ["reason", "finalRef", "resultRef"]);
    const input = { runId: "r1", at: at(9), reason: "stuck", finalRef: "f.json", resultRef: "r.json" };
    const n = update.valueNames;
    const send = () =>
      doc.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { pk: `${RUN_KEY_PREFIX}${input.runId}`, sk: RUN_SORT_KEY },
          UpdateExpression: update.UpdateExpression,
          ConditionExpression: update.ConditionExpression,
          ExpressionAttributeNames: update.ExpressionAttributeNames,
          ExpressionAttributeValues: {
            ...update.fixedValues,
            [n.statusSort]: `${input.at}#${input.runId}`,
            [n.at]: input.at,
            [n.transition]: [{ status: "needs_manual_review", at: input.at }],
            [n.fields.reason as string]: input.reason,
            [n.fields.finalRef as string]: input.finalRef,
            [n.fields.resultRef as string]: input.resultRef,
          },
        }),
      );
    await send();
    // A retried state: the condition refuses it, which the state machine catches as success.
    await expect(send()).rejects.toMatchObject({ name: "ConditionalCheckFailedException" });
    const run = await store.getRun("r1");
    expect(run).toMatchObject({ status: "needs_manual_review", reason: "stuck", resultRef: "r.json" });
    expect(run?.transitions.map((t) => t.status)).toEqual(["correcting", "needs_manual_review"]);
    expect(await raw(runKey("r1"))).toMatchObject({
      [INDEXES.byStatus.partitionKey]: "STATUS#needs_manual_review",
      [INDEXES.byStatus.sortKey]: timeSortKey(at(9), "r1"),
    });
  });
});
