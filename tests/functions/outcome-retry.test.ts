import { DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attemptKey } from "../../contracts/table.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { createOutcomeHandler } from "../../functions/outcome.js";
import { ensureTable, type LocalDynamo, startDynalite } from "../../local/dynalite.js";
import { makeAttempt, makeRun } from "../stores/fixtures.js";

/**
 * A run that needs review is held by λ outcome (its attempts lose their ttl, its objects are
 * re-tagged `review`). When that hold fails, the run must not expire unheld: the invocation fails,
 * Lambda sends its event to the retry queue (λ outcome's on-failure destination, which
 * tests/infra/observability.test.ts finds in the template), and λ outcome, consuming that queue,
 * holds the run once the store answers again; a message that fails again stays in the queue.
 * The real DynamoRunStore on dynalite; only the store's outage is staged.
 */
let local: LocalDynamo;
let doc: DynamoDBDocumentClient;
let store: DynamoRunStore;
const tableName = `redraft-outcome-retry-${process.pid}`;

beforeAll(async () => {
  local = await startDynalite();
  await ensureTable(local.client, tableName);
  store = new DynamoRunStore({ client: local.client, tableName, ttlDays: 7 });
  doc = DynamoDBDocumentClient.from(local.client);
});
afterAll(async () => {
  await local.close();
});

const attemptTtl = async (runId: string, n: number) =>
  (await doc.send(new GetCommand({ TableName: tableName, Key: attemptKey(runId, n), ConsistentRead: true })))
    .Item?.ttl;

const needsReview = (runId: string) => ({
  version: "0",
  id: `event-${runId}`,
  source: "redraft",
  "detail-type": "Draft Needs Review",
  detail: {
    runId,
    draftId: `d-${runId}`,
    kind: "json",
    status: "needs_manual_review",
    reason: "stuck",
    resultRef: `results/d-${runId}/${runId}.json`,
  },
});

/** What Lambda sends to an on-failure destination once an asynchronous invocation's retries are spent. */
const onFailureRecord = (event: unknown) => ({
  version: "1.0",
  timestamp: "2026-11-28T02:40:00.000Z",
  requestContext: {
    requestId: "0b7d2a6e-5d8e-4a63-9b51-0c5a5a0f1f00",
    functionArn: "arn:aws:lambda:us-east-1:123456789012:function:outcome:live",
    condition: "RetriesExhausted",
    approximateInvokeCount: 3,
  },
  requestPayload: event,
  responseContext: { statusCode: 200, executedVersion: "7", functionError: "Unhandled" },
  responsePayload: { errorType: "StoreUnavailable", errorMessage: "the store did not answer" },
});

const sqs = (...bodies: unknown[]) => ({
  Records: bodies.map((body, i) => ({
    messageId: `m${i + 1}`,
    receiptHandle: `h${i + 1}`,
    body: JSON.stringify(body),
    attributes: {},
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:us-east-1:123456789012:outcome-retries",
    awsRegion: "us-east-1",
  })),
});

/** λ outcome on the real store, whose holds fail while `down` is true. */
function outcomeWithOutage() {
  const state = { down: true, tagged: [] as unknown[] };
  const handler = createOutcomeHandler(() => ({
    runs: {
      getRun: (runId) => store.getRun(runId),
      holdForReview: async (runId) => {
        if (state.down)
          throw Object.assign(new Error("the store did not answer"), { name: "StoreUnavailable" });
        await store.holdForReview(runId);
      },
    },
    blobs: {
      retain: async (...args: unknown[]) => {
        state.tagged.push(args);
      },
    },
    announce: async () => {},
  }));
  return { handler, state };
}

describe("λ outcome: a run awaiting review is never left to expire unheld", () => {
  it("a failed hold fails the invocation; the retry queue's message holds the run once the store answers", async () => {
    await store.createRun(makeRun("r1", { status: "correcting" }));
    await store.putAttempt(makeAttempt("r1", 1));
    const { handler, state } = outcomeWithOutage();
    const event = needsReview("r1");

    // The rule's invocation (and Lambda's two retries of it) fail: nothing is held yet.
    await expect(handler(event)).rejects.toThrow(/did not answer/);
    expect(await attemptTtl("r1", 1)).toBeTypeOf("number");

    // The on-failure record reaches the retry queue; the store is still down: the message stays.
    const message = sqs(onFailureRecord(event));
    expect(await handler(message)).toEqual({ batchItemFailures: [{ itemIdentifier: "m1" }] });
    expect(await attemptTtl("r1", 1)).toBeTypeOf("number");

    // The queue delivers it again once the store answers: held, objects re-tagged for review.
    state.down = false;
    expect(await handler(message)).toEqual({ batchItemFailures: [] });
    expect(await attemptTtl("r1", 1)).toBeUndefined();
    expect(state.tagged).toEqual([["runs/r1/", ["results/d-r1/r1.json"], "review"]]);
  });

  it("an event EventBridge could not deliver (the rules' dead letter, the event itself) is handled the same way", async () => {
    await store.createRun(makeRun("r2", { status: "correcting" }));
    await store.putAttempt(makeAttempt("r2", 1));
    const { handler, state } = outcomeWithOutage();
    state.down = false;
    expect(await handler(sqs(needsReview("r2")))).toEqual({ batchItemFailures: [] });
    expect(await attemptTtl("r2", 1)).toBeUndefined();
  });

  it("a message that is no outcome event is never dropped: it fails, for the dead-letter queue and its alarm", async () => {
    const { handler, state } = outcomeWithOutage();
    state.down = false;
    const result = await handler(sqs({ hello: "world" }, onFailureRecord({ source: "elsewhere" })));
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: "m1" }, { itemIdentifier: "m2" }] });
  });
});
