import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { createCorrectHandler } from "../../functions/steps/correct.js";
import { createRevalidateHandler } from "../../functions/steps/revalidate.js";
import { createValidateHandler } from "../../functions/steps/validate.js";
import { ensureTable, type LocalDynamo, startDynalite } from "../../local/dynalite.js";
import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryBlobStore } from "../../shared/store/memory.js";
import { loopState } from "../fixtures/loop-state.js";
import { DRAFT_WITH_ERRORS, FULLY_CORRECTED_DRAFT } from "../fixtures/seed004.js";
import { answer } from "../loop/harness.js";

const TABLE = "handlers-test";

describe("handlers against aws-sdk-client-mock: error paths keep names the state machine matches", () => {
  const ddb = mockClient(DynamoDBDocumentClient);
  afterEach(() => ddb.reset());
  // The mock patches the client class itself: undo it, or the dynalite tests below would hit it.
  afterAll(() => ddb.restore());

  function deps(): LoopDeps {
    const client = DynamoDBDocumentClient.from(
      new DynamoDBClient({ region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } }),
    );
    return {
      registry: new PackRegistry(),
      runs: new DynamoRunStore({ client, tableName: TABLE }),
      blobs: new MemoryBlobStore(),
      modelAvailable: true,
    };
  }

  it("reports DynamoDB throttling as StoreUnavailableError, which Validate's Retry matches", async () => {
    const throttled = Object.assign(new Error("Rate exceeded"), {
      name: "ProvisionedThroughputExceededException",
      $metadata: { httpStatusCode: 400 },
    });
    ddb.on(PutCommand).rejects(throttled);
    const handler = createValidateHandler(async () => deps());
    await expect(handler({ runId: "r1", input: { draft: DRAFT_WITH_ERRORS } })).rejects.toMatchObject({
      name: "StoreUnavailableError",
    });
  });

  it("reports any other DynamoDB failure as StoreRequestFailedError (not retried)", async () => {
    ddb.on(PutCommand).rejects(
      Object.assign(new Error("no such table"), {
        name: "ResourceNotFoundException",
        $metadata: { httpStatusCode: 400 },
      }),
    );
    const handler = createValidateHandler(async () => deps());
    await expect(handler({ runId: "r1", input: { draft: DRAFT_WITH_ERRORS } })).rejects.toMatchObject({
      name: "StoreRequestFailedError",
    });
  });

  it("rejects an event that is not what the state machine sends, naming the field", async () => {
    const handler = createValidateHandler(async () => deps());
    await expect(handler({ input: {} })).rejects.toThrow(/runId/);
  });

  it("lets a transient model error out of Correct under its own name", async () => {
    const memory = deps();
    const blobs = memory.blobs as MemoryBlobStore;
    await blobs.put("runs/r/attempts/0/draft.json", JSON.stringify(DRAFT_WITH_ERRORS));
    await blobs.put(
      "runs/r/attempts/0/report.json",
      JSON.stringify({
        violations: [],
        counts: { error: 1, warning: 0, info: 0 },
        rulesApplied: [],
        passed: false,
        score: 0.5,
        repairs: [],
      }),
    );
    const model = ReplayModelClient.fromCassette({
      version: 1,
      responses: [{ draftId: DRAFT_WITH_ERRORS.id, purpose: "correct", error: "rate_limited" }],
    });
    const handler = createCorrectHandler(async () => ({ ...memory, model }));
    const state = loopState({ draftId: DRAFT_WITH_ERRORS.id }, 1, "r");
    await expect(handler(state)).rejects.toMatchObject({ name: "ModelRateLimitedError" });
  });
});

describe("handlers against dynalite: a retried task writes nothing twice", () => {
  let db: LocalDynamo;
  beforeAll(async () => {
    db = await startDynalite();
    await ensureTable(db.client, TABLE);
  });
  afterAll(async () => db.close());

  it("a retried Validate registers one run with one transition", async () => {
    const runs = new DynamoRunStore({ client: db.client, tableName: TABLE });
    const model = ReplayModelClient.fromCassette({ version: 1, responses: [] });
    const deps: LoopDeps = { registry: new PackRegistry(), runs, blobs: new MemoryBlobStore(), model };
    const validate = createValidateHandler(async () => deps);
    const event = { runId: "retried-validate", input: { draft: DRAFT_WITH_ERRORS } };
    const first = await validate(event);
    const second = await validate(event);
    expect(second.decision).toBe(first.decision);
    const run = await runs.getRun("retried-validate");
    expect(run?.transitions.map((t) => t.status)).toEqual(["draft", "correcting"]);
  });

  it("a retried Revalidate writes one attempt record and counts its tokens once", async () => {
    const runs = new DynamoRunStore({ client: db.client, tableName: TABLE });
    const blobs = new MemoryBlobStore();
    const model = ReplayModelClient.fromCassette({
      version: 1,
      responses: [
        answer("revalidate-1", FULLY_CORRECTED_DRAFT.content, { input_tokens: 1200, output_tokens: 800 }),
      ],
    });
    const deps: LoopDeps = { registry: new PackRegistry(), runs, blobs, model };
    const validate = createValidateHandler(async () => deps);
    const correct = createCorrectHandler(async () => deps);
    const revalidate = createRevalidateHandler(async () => deps);
    let state = await validate({
      runId: "retried-revalidate",
      input: { draft: { ...DRAFT_WITH_ERRORS, id: "revalidate-1" } },
    });
    state = await correct(state);
    state = { ...state, counters: { ...state.counters, execution: 1 } };
    const once = await revalidate(state);
    const twice = await revalidate(state);
    expect(twice.verdict).toEqual(once.verdict);
    expect(await runs.listAttempts("retried-revalidate")).toHaveLength(1);
    expect((await runs.getRun("retried-revalidate"))?.tokens).toMatchObject({
      input: 1200,
      output: 800,
      total: 2000,
    });
  });
});
