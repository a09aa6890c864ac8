import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  attemptKey,
  CREATED_SHARDS,
  claimKey,
  createdPartition,
  expiresAt,
  INDEXES,
  RUN_KEY_PREFIX,
  RUN_SORT_KEY,
  runIndexKeys,
  runKey,
  statusUpdate,
  statusUpdateValues,
  timeSortKey,
} from "../../contracts/table.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { ensureTable, type LocalDynamo, localDynamoClient, startDynalite } from "../../local/dynalite.js";
import { at, makeAttempt, makeRun } from "./fixtures.js";
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
      byCreatedPk: createdPartition("r1"),
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

describe(`DynamoRunStore on ${engine}: retention`, () => {
  let tableName: string;
  let store: DynamoRunStore;
  let doc: DynamoDBDocumentClient;
  const ttlOf = async (runId: string) =>
    (await doc.send(new GetCommand({ TableName: tableName, Key: runKey(runId), ConsistentRead: true }))).Item
      ?.ttl;

  beforeEach(async () => {
    tableName = await freshTable();
    store = new DynamoRunStore({ client, tableName, ttlDays: 7 });
    doc = DynamoDBDocumentClient.from(client);
  });

  it("keeps a run awaiting review without a ttl, and starts it again from the decision", async () => {
    await store.createRun(makeRun("r1", { status: "correcting" }));
    expect(await ttlOf("r1")).toBe(expiresAt(at(0), 7));
    await store.setStatus("r1", "needs_manual_review", at(10));
    expect(await ttlOf("r1")).toBeUndefined();
    await store.setStatus("r1", "validated", at(60 * 24 * 30));
    expect(await ttlOf("r1")).toBe(expiresAt(at(60 * 24 * 30), 7));
  });

  it("holds a run's attempts while it awaits review, and lets them expire from the decision", async () => {
    const attemptTtl = async (n: number) =>
      (
        await doc.send(
          new GetCommand({ TableName: tableName, Key: attemptKey("r1", n), ConsistentRead: true }),
        )
      ).Item?.ttl;
    await store.createRun(makeRun("r1", { status: "correcting" }));
    await store.putAttempt(makeAttempt("r1", 1));
    await store.putAttempt(makeAttempt("r1", 2));
    expect(await attemptTtl(2)).toBe(expiresAt(at(2), 7));
    // What λ outcome does on Draft Needs Review, after the state machine's MarkNeedsReview.
    await store.holdForReview("r1");
    await store.holdForReview("r1");
    expect([await attemptTtl(1), await attemptTtl(2)]).toEqual([undefined, undefined]);
    const decided = at(60 * 24 * 40);
    await store.setStatus("r1", "rejected", decided);
    expect([await attemptTtl(1), await attemptTtl(2)]).toEqual([
      expiresAt(decided, 7),
      expiresAt(decided, 7),
    ]);
  });

  it("removes the ttl when the state machine's MarkNeedsReview update moves the run", async () => {
    await store.createRun(makeRun("r1", { status: "correcting" }));
    const update = statusUpdate("needs_manual_review");
    expect(update.UpdateExpression).toMatch(/ REMOVE #ttl$/);
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: runKey("r1"),
        UpdateExpression: update.UpdateExpression,
        ConditionExpression: update.ConditionExpression,
        ExpressionAttributeNames: update.ExpressionAttributeNames,
        ExpressionAttributeValues: statusUpdateValues(update, { runId: "r1", at: at(3) }),
      }),
    );
    expect(await ttlOf("r1")).toBeUndefined();
  });
});

describe(`DynamoRunStore on ${engine}: listing thousands of runs across the byCreated shards`, () => {
  const RUNS = 2_500;
  let store: DynamoRunStore;
  /** Run ids newest first, as every listing must return them. */
  let newestFirst: string[];

  beforeAll(async () => {
    const tableName = await freshTable();
    // Small query pages, so that every shard is read over many pages and merged page by page.
    store = new DynamoRunStore({ client, tableName, pageSize: 37 });
    const ids = Array.from({ length: RUNS }, (_, i) => `run-${String(i).padStart(5, "0")}`);
    // Several runs share a second (ties are broken by run id), and they arrive out of order.
    const createdAt = (i: number) => new Date(Date.parse(at(0)) + Math.floor(i / 3) * 1000).toISOString();
    const shuffled = [...ids].sort((a, b) =>
      a.split("").reverse().join("") < b.split("").reverse().join("") ? -1 : 1,
    );
    for (let i = 0; i < shuffled.length; i += 25) {
      await Promise.all(
        shuffled
          .slice(i, i + 25)
          .map((id) => store.createRun(makeRun(id, { createdAt: createdAt(ids.indexOf(id)) }))),
      );
    }
    newestFirst = [...ids].reverse();
  }, 120_000);

  it("spreads the runs over every shard", () => {
    const perShard = new Map<string, number>();
    for (const id of newestFirst)
      perShard.set(createdPartition(id), (perShard.get(createdPartition(id)) ?? 0) + 1);
    expect(perShard.size).toBe(CREATED_SHARDS);
    for (const count of perShard.values()) expect(count).toBeGreaterThan(RUNS / CREATED_SHARDS / 2);
  });

  it("lists every run newest first", async () => {
    const runs = await store.listRuns();
    expect(runs.map((r) => r.runId)).toEqual(newestFirst);
  });

  it("pages with a cursor: each run once, in order, whatever the page size", async () => {
    for (const pageSize of [1, 7, 100, 999]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.listRunsPage({ limit: pageSize }, cursor);
        expect(page.runs.length).toBeLessThanOrEqual(pageSize);
        seen.push(...page.runs.map((r) => r.runId));
        cursor = page.cursor;
        pages++;
        if (pageSize === 1 && pages >= 60) break;
      } while (cursor);
      expect(seen).toEqual(pageSize === 1 ? newestFirst.slice(0, 60) : newestFirst);
    }
  }, 60_000);

  it("honours a limit with the newest runs", async () => {
    await expect(store.listRuns({ limit: 5 }).then((rs) => rs.map((r) => r.runId))).resolves.toEqual(
      newestFirst.slice(0, 5),
    );
  });

  it("still lists runs written before the sharding, under the one RUNS partition, in order", async () => {
    const tableName = await freshTable();
    const legacy = new DynamoRunStore({ client, tableName, pageSize: 3 });
    const doc = DynamoDBDocumentClient.from(client);
    for (const [id, minute] of [
      ["old-1", 1],
      ["old-2", 3],
    ] as const) {
      const run = makeRun(id, { createdAt: at(minute) });
      await doc.send(
        new PutCommand({
          TableName: tableName,
          Item: { ...run, ...runKey(id), ...runIndexKeys(run), [INDEXES.byCreated.partitionKey]: "RUNS" },
        }),
      );
    }
    await legacy.createRun(makeRun("new-1", { createdAt: at(2) }));
    await legacy.createRun(makeRun("new-2", { createdAt: at(4) }));
    await expect(legacy.listRuns().then((rs) => rs.map((r) => r.runId))).resolves.toEqual([
      "new-2",
      "old-2",
      "new-1",
      "old-1",
    ]);
  });

  it("refuses a cursor it did not issue", async () => {
    await expect(store.listRunsPage({ limit: 5 }, "not-a-cursor")).rejects.toBeInstanceOf(RangeError);
  });
});
