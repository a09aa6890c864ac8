import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { type AwsClientStub, mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OutcomeEvents } from "../../contracts/events.js";
import type { StoppedStatus } from "../../contracts/state-names.js";
import { runKey } from "../../contracts/table.js";
import { createFinalizeHandler, type FinalizeEvent, handler } from "../../functions/finalize.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import type { FinalizerDeps } from "../../functions/lib/finalizer.js";
import { createValidateHandler } from "../../functions/steps/validate.js";
import { ensureTable, type LocalDynamo, startDynalite } from "../../local/dynalite.js";
import { ErrorNames, RunFinishedError } from "../../shared/errors.js";
import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";
import { ACTIVE_STATUSES, type RunStatus } from "../../shared/store/types.js";
import { DRAFT_WITH_ERRORS } from "../fixtures/seed004.js";
import { makeRun } from "../stores/fixtures.js";

const TABLE = "finalize-test";
const MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:redraft-dev";
const STOP_DATE = Date.parse("2026-11-23T12:00:00.000Z");

/** The event AWS documents for an execution status change, with this run id as execution name. */
function stopped(runId: string, status: StoppedStatus, extra: Partial<FinalizeEvent["detail"]> = {}) {
  return {
    version: "0",
    id: `event-${runId}-${status}`,
    "detail-type": "Step Functions Execution Status Change",
    source: "aws.states",
    account: "123456789012",
    time: "2026-11-23T12:00:00Z",
    region: "eu-west-1",
    resources: [`arn:aws:states:eu-west-1:123456789012:execution:redraft-dev:${runId}`],
    detail: {
      executionArn: `arn:aws:states:eu-west-1:123456789012:execution:redraft-dev:${runId}`,
      stateMachineArn: MACHINE,
      name: runId,
      status,
      startDate: STOP_DATE - 60_000,
      stopDate: STOP_DATE,
      input: JSON.stringify({ draft: { id: `draft-of-${runId}`, kind: "mcq" } }),
      inputDetails: { included: true },
      output: null,
      outputDetails: null,
      error: status === "FAILED" ? "States.Runtime" : null,
      cause: status === "FAILED" ? "An error occurred while executing the state 'Validate'" : null,
      ...extra,
    },
  };
}

describe("λ finalize against dynalite: stopped executions finish their runs once", () => {
  let db: LocalDynamo;
  let runs: DynamoRunStore;
  const announced: { detailType: string; detail: Record<string, unknown> }[] = [];
  const deps = (): FinalizerDeps => ({
    runs,
    announce: async (detailType, detail) => {
      announced.push({ detailType, detail });
    },
    now: () => "2026-11-23T13:00:00.000Z",
  });
  const finalize = createFinalizeHandler(deps);

  beforeAll(async () => {
    db = await startDynalite();
    await ensureTable(db.client, TABLE);
    runs = new DynamoRunStore({ client: db.client, tableName: TABLE, ttlDays: 7 });
  });
  afterAll(async () => db.close());
  beforeEach(() => {
    announced.length = 0;
  });

  const cases: [RunStatus, StoppedStatus, string][] = [
    ["draft", "TIMED_OUT", "timed_out"],
    ["draft", "ABORTED", "aborted"],
    ["draft", "FAILED", "execution_failed"],
    ["correcting", "TIMED_OUT", "timed_out"],
    ["correcting", "ABORTED", "aborted"],
    ["correcting", "FAILED", "execution_failed"],
  ];
  it.each(cases)(
    "a %s run of a %s execution becomes failed / %s, announced once",
    async (from, status, reason) => {
      const runId = `active-${from}-${status}`;
      await runs.createRun(makeRun(runId, { status: from }));
      const result = await finalize(stopped(runId, status));
      expect(result).toEqual({ action: "failed", runId, status: "failed", announced: true });
      const run = await runs.getRun(runId);
      expect(run).toMatchObject({ status: "failed", reason });
      expect(run?.message).toBe(
        `execution arn:aws:states:eu-west-1:123456789012:execution:redraft-dev:${runId} ${status}` +
          (status === "FAILED"
            ? ": States.Runtime: An error occurred while executing the state 'Validate'"
            : ""),
      );
      expect(run?.transitions.map((t) => t.status)).toEqual([from, "failed"]);
      expect(run?.updatedAt).toBe(new Date(STOP_DATE).toISOString());
      expect(announced).toEqual([
        {
          detailType: OutcomeEvents.Failed,
          detail: expect.objectContaining({
            runId,
            draftId: "draft-1",
            kind: "mcq",
            status: "failed",
            reason,
          }),
        },
      ]);

      // A redelivered event finds the run failed: no second transition, only the (idempotent) announcement.
      const again = await finalize(stopped(runId, status));
      expect(again.action).toBe("untouched");
      expect((await runs.getRun(runId))?.transitions).toHaveLength(2);
    },
  );

  it.each(["validated", "needs_manual_review", "rejected"] as const)(
    "leaves a %s run untouched and announces nothing",
    async (outcome) => {
      const runId = `terminal-${outcome}`;
      const before = makeRun(runId, {
        status: outcome,
        reason: outcome === "rejected" ? "duplicate" : "stuck",
      });
      await runs.createRun(before);
      for (const status of ["TIMED_OUT", "ABORTED", "FAILED"] as const) {
        const result = await finalize(stopped(runId, status));
        expect(result).toEqual({ action: "untouched", runId, status: outcome, announced: false });
      }
      expect(await runs.getRun(runId)).toEqual(before);
      expect(announced).toEqual([]);
    },
  );

  it("keeps the reason RecordFailure wrote, and announces the failure the state machine did not", async () => {
    const runId = "recorded-failure";
    const before = makeRun(runId, {
      status: "failed",
      reason: "model_error",
      message: "Model.Overloaded: 529",
    });
    await runs.createRun(before);
    const result = await finalize(stopped(runId, "FAILED"));
    expect(result).toEqual({ action: "untouched", runId, status: "failed", announced: true });
    expect(await runs.getRun(runId)).toEqual(before);
    expect(announced[0]?.detail).toMatchObject({ reason: "model_error", message: "Model.Overloaded: 529" });
  });

  it("registers a failed run for an execution that died before Validate registered it", async () => {
    const result = await finalize(
      stopped("never-registered", "TIMED_OUT", {
        input: JSON.stringify({ draftRef: { bucket: "b", key: "drafts/q1.json", versionId: "v1" } }),
      }),
    );
    expect(result).toEqual({
      action: "registered",
      runId: "never-registered",
      status: "failed",
      announced: true,
    });
    expect(await runs.getRun("never-registered")).toMatchObject({
      runId: "never-registered",
      draftId: "unknown",
      kind: "unknown",
      status: "failed",
      reason: "timed_out",
      uploadRef: "drafts/q1.json",
      transitions: [{ status: "failed", at: new Date(STOP_DATE).toISOString() }],
    });
  });

  it("names the draft of an inline input, and survives an input it cannot read", async () => {
    await finalize(stopped("inline-input", "ABORTED"));
    expect(await runs.getRun("inline-input")).toMatchObject({
      draftId: "draft-of-inline-input",
      kind: "mcq",
    });
    await finalize(stopped("no-input", "ABORTED", { input: null, stopDate: null }));
    expect(await runs.getRun("no-input")).toMatchObject({
      draftId: "unknown",
      reason: "aborted",
      createdAt: "2026-11-23T13:00:00.000Z",
    });
    await finalize(stopped("bad-input", "ABORTED", { input: "{not json" }));
    expect(await runs.getRun("bad-input")).toMatchObject({ draftId: "unknown", status: "failed" });
  });

  it("frees the content: a resubmission of a timed-out run's draft is corrected, not a duplicate", async () => {
    const model = ReplayModelClient.fromCassette({ version: 1, responses: [] });
    const loopDeps: LoopDeps = {
      registry: new PackRegistry(),
      runs,
      blobs: new MemoryBlobStore(),
      model,
      dedupeWindowMs: 60 * 60_000,
    };
    const validate = createValidateHandler(async () => loopDeps);
    const draft = { ...DRAFT_WITH_ERRORS, id: "resubmitted" };
    const first = await validate({ runId: "first-submission", input: { draft } });
    expect(first.decision).toBe("correct");
    // Without the finalizer the run would hold its claim for the whole window.
    const refused = await validate({ runId: "too-early", input: { draft } });
    expect(refused.decision).toBe("duplicate");

    await finalize(stopped("first-submission", "TIMED_OUT"));
    const resubmitted = await validate({ runId: "second-submission", input: { draft } });
    expect(resubmitted.decision).toBe("correct");
  });

  it("keeps the finalizer's failed when a Validate that outlived its aborted execution moves on", async () => {
    const loopDeps: LoopDeps = {
      registry: new PackRegistry(),
      runs,
      blobs: new MemoryBlobStore(),
      model: ReplayModelClient.fromCassette({ version: 1, responses: [] }),
    };
    const validate = createValidateHandler(async () => loopDeps);
    const input = { draft: { ...DRAFT_WITH_ERRORS, id: "outlived" } };
    expect((await validate({ runId: "outlived", input })).decision).toBe("correct");
    await finalize(stopped("outlived", "ABORTED"));
    const failed = await runs.getRun("outlived");
    expect(failed).toMatchObject({ status: "failed", reason: "aborted" });

    // The invocation still running when the execution was aborted ends with its own setStatus.
    const late = validate({ runId: "outlived", input });
    await expect(late).rejects.toThrow(RunFinishedError);
    await expect(late).rejects.toMatchObject({ name: ErrorNames.RunFinished });
    await expect(runs.setStatus("outlived", "correcting", "2026-11-23T14:00:00.000Z")).rejects.toThrow(
      "run outlived is failed already and cannot move back to correcting",
    );
    expect(await runs.getRun("outlived")).toEqual(failed);
    expect(failed?.transitions.map((t) => t.status)).toEqual(["draft", "correcting", "failed"]);
  });

  it.each(["validated", "needs_manual_review", "rejected", "failed"] as const)(
    "never moves a %s run back under way, in dynalite and in memory alike",
    async (outcome) => {
      const memory = new MemoryRunStore();
      for (const store of [runs, memory]) {
        const runId = `sticky-${outcome}`;
        const before = makeRun(runId, { status: outcome });
        await store.createRun(before);
        for (const active of ACTIVE_STATUSES)
          await expect(store.setStatus(runId, active, "2026-11-23T14:00:00.000Z")).rejects.toMatchObject({
            name: ErrorNames.RunFinished,
          });
        expect(await store.getRun(runId)).toEqual(before);
      }
    },
  );

  it("still lets a reviewer decide on a run in review or a failed one", async () => {
    for (const from of ["needs_manual_review", "failed"] as const) {
      const runId = `reviewed-${from}`;
      await runs.createRun(makeRun(runId, { status: from }));
      await runs.setStatus(runId, "validated", "2026-11-23T14:00:00.000Z", { reason: "approved" });
      expect(await runs.getRun(runId)).toMatchObject({ status: "validated", reason: "approved" });
    }
  });

  it("refuses an event that is not a stopped execution", async () => {
    await expect(finalize({ ...stopped("x", "TIMED_OUT"), source: "redraft" })).rejects.toThrow();
    const running = stopped("x", "TIMED_OUT");
    await expect(
      finalize({ ...running, detail: { ...running.detail, status: "SUCCEEDED" } }),
    ).rejects.toThrow();
  });
});

describe("λ finalize against aws-sdk-client-mock: the deployed handler's writes and event", () => {
  // Created here, not at collection: the mock patches the client classes the dynalite tests use too.
  let ddb: AwsClientStub<DynamoDBDocumentClient>;
  let events: AwsClientStub<EventBridgeClient>;
  const saved = { ...process.env };
  beforeAll(() => {
    ddb = mockClient(DynamoDBDocumentClient);
    events = mockClient(EventBridgeClient);
    Object.assign(process.env, {
      TABLE_NAME: "runs",
      EVENT_BUS_NAME: "redraft-dev",
      AWS_REGION: "eu-west-1",
      AWS_ACCESS_KEY_ID: "x",
      AWS_SECRET_ACCESS_KEY: "x",
    });
  });
  afterEach(() => {
    ddb.reset();
    events.reset();
  });
  afterAll(() => {
    ddb.restore();
    events.restore();
    process.env = saved;
  });

  it("fails an active run with a write conditioned on its status, and puts Draft Failed on the bus", async () => {
    const failed = makeRun("r1", { status: "failed", reason: "timed_out" });
    ddb.on(UpdateCommand).resolves({});
    ddb.on(GetCommand).resolves({ Item: { ...failed, ...runKey("r1") } });
    events.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: "e1" }] });

    await expect(handler(stopped("r1", "TIMED_OUT"))).resolves.toMatchObject({ action: "failed" });

    const update = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(update?.Key).toEqual(runKey("r1"));
    expect(update?.ConditionExpression).toBe("attribute_exists(pk) AND #status IN (:from0, :from1)");
    expect(update?.ExpressionAttributeValues).toMatchObject({
      ":from0": "draft",
      ":from1": "correcting",
      ":status": "failed",
      ":reason": "timed_out",
    });
    const entry = events.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries?.[0];
    expect(entry).toMatchObject({
      EventBusName: "redraft-dev",
      Source: "redraft",
      DetailType: OutcomeEvents.Failed,
    });
    expect(JSON.parse(entry?.Detail ?? "{}")).toMatchObject({
      runId: "r1",
      status: "failed",
      reason: "timed_out",
    });
  });

  it("throws when the bus refuses the event, so Lambda retries and then dead-letters it", async () => {
    const failed = makeRun("r2", { status: "failed", reason: "aborted" });
    ddb.on(UpdateCommand).resolves({});
    ddb.on(GetCommand).resolves({ Item: { ...failed, ...runKey("r2") } });
    events.on(PutEventsCommand).resolves({
      FailedEntryCount: 1,
      Entries: [{ ErrorCode: "InternalFailure", ErrorMessage: "try again" }],
    });
    await expect(handler(stopped("r2", "ABORTED"))).rejects.toThrow(/InternalFailure/);
  });
});
