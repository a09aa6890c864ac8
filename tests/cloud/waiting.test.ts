import { readFile } from "node:fs/promises";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { HistoryEvent as SfnEvent } from "@aws-sdk/client-sfn";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelSlotWait, queueOfWait } from "../../cli/cloud/waiting.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";
import { isActiveStatus } from "../../shared/store/types.js";
import { redraft } from "../helpers/run-cli.js";
import {
  BUCKET,
  type Deployment,
  MODEL_QUEUES,
  STACK_WITHOUT_QUEUE_OUTPUTS,
  startDeployment,
} from "./deployment.js";

/**
 * Issue 33: a deployed run that waits for a model slot says so in `redraft --stack S show`, as a
 * local one does. Step Functions' history is all `show` reads: a model state's queued send
 * (`sqs:sendMessage.waitForTaskToken`, infra/constructs/model-queue.ts) scheduled and not closed.
 */

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);
const at = (s: number) => new Date(T0 + s * 1000);
let id = 0;
const ev = (type: string, s: number, extra: Partial<SfnEvent> = {}): SfnEvent => ({
  id: ++id,
  previousEventId: id - 1,
  type: type as SfnEvent["type"],
  timestamp: at(s),
  ...extra,
});
const entered = (name: string, s: number) =>
  ev("TaskStateEntered", s, { stateEnteredEventDetails: { name } });
const queued = (s: number) => [
  ev("TaskScheduled", s, {
    taskScheduledEventDetails: {
      resourceType: "sqs",
      resource: "sendMessage.waitForTaskToken",
      region: "eu-west-1",
      parameters: "{}",
    },
  }),
  ev("TaskStarted", s, {
    taskStartedEventDetails: { resourceType: "sqs", resource: "sendMessage.waitForTaskToken" },
  }),
  ev("TaskSubmitted", s + 1, {
    taskSubmittedEventDetails: { resourceType: "sqs", resource: "sendMessage.waitForTaskToken" },
  }),
];
const start = () => [
  ev("ExecutionStarted", 0, { executionStartedEventDetails: {} }),
  entered("Validate", 1),
  ev("LambdaFunctionScheduled", 1),
  ev("LambdaFunctionSucceeded", 2),
  ev("TaskStateExited", 2, { stateExitedEventDetails: { name: "Validate" } }),
];

describe("modelSlotWait over Step Functions histories", () => {
  it("an open queued task: waiting at that state since the work was submitted to the queue", () => {
    const events = [...start(), entered("CorrectExecution", 3), ...queued(3)];
    expect(modelSlotWait(events, T0 + 64_000)).toEqual({
      state: "waiting_for_model_slot",
      since: at(4).toISOString(),
      ageSeconds: 60,
      stateName: "CorrectExecution",
    });
  });

  it("a task scheduled but not yet submitted counts from its scheduling", () => {
    const events = [...start(), entered("Judge", 3), ...queued(3).slice(0, 2)];
    expect(modelSlotWait(events, T0 + 13_000)).toMatchObject({ since: at(3).toISOString(), ageSeconds: 10 });
  });

  it("a closed task (its token answered, the state exited) is no wait", () => {
    const events = [
      ...start(),
      entered("CorrectExecution", 3),
      ...queued(3),
      ev("TaskSucceeded", 30, {
        taskSucceededEventDetails: { resourceType: "sqs", resource: "sendMessage.waitForTaskToken" },
      }),
      ev("TaskStateExited", 30, { stateExitedEventDetails: { name: "CorrectExecution" } }),
      entered("Revalidate", 31),
    ];
    expect(modelSlotWait(events, T0 + 60_000)).toBeUndefined();
  });

  it("a failed task is no wait; its retry, re-queued, waits again from the re-queue", () => {
    const failed = [
      ...start(),
      entered("Judge", 3),
      ...queued(3),
      ev("TaskFailed", 20, {
        taskFailedEventDetails: {
          resourceType: "sqs",
          resource: "sendMessage.waitForTaskToken",
          error: "Model.RateLimited",
        },
      }),
    ];
    expect(modelSlotWait(failed, T0 + 21_000)).toBeUndefined();
    const retried = [...failed, ...queued(40)];
    expect(modelSlotWait(retried, T0 + 51_000)).toMatchObject({
      stateName: "Judge",
      since: at(41).toISOString(),
      ageSeconds: 10,
    });
  });

  it("a timed-out task, an ended execution, a Lambda task and an empty history are no wait", () => {
    const open = [...start(), entered("CorrectExecution", 3), ...queued(3)];
    for (const end of ["TaskTimedOut", "ExecutionAborted", "ExecutionTimedOut", "ExecutionFailed"])
      expect(modelSlotWait([...open, ev(end, 9)]), end).toBeUndefined();
    expect(
      modelSlotWait([...start(), entered("Revalidate", 3), ev("LambdaFunctionScheduled", 3)]),
    ).toBeUndefined();
    expect(modelSlotWait([])).toBeUndefined();
  });

  it("the queue a wait is in: the QueueUrl its task's parameters name, else the one its state sends to", () => {
    const urls = { correct: "https://sqs/q-correct", judge: "https://sqs/q-judge" };
    const sent = (state: string, parameters: string) => [
      ...start(),
      entered(state, 3),
      ev("TaskScheduled", 3, {
        taskScheduledEventDetails: {
          resourceType: "sqs",
          resource: "sendMessage.waitForTaskToken",
          region: "eu-west-1",
          parameters,
        },
      }),
    ];
    const named = modelSlotWait(sent("CorrectLogic", JSON.stringify({ QueueUrl: urls.judge })), T0 + 9_000);
    expect(named?.queueUrl).toBe(urls.judge);
    // The parameters win over the state's name (a history is the truth of where the message went).
    expect(named && queueOfWait(named, urls)).toBe("judge");
    // A history without parameters, or parameters that are not JSON: the state says which queue.
    for (const parameters of ["{}", "not json", JSON.stringify({ QueueUrl: 7 })]) {
      const judge = modelSlotWait(sent("Judge", parameters), T0 + 9_000);
      expect(judge?.queueUrl, parameters).toBeUndefined();
      expect(judge && queueOfWait(judge, urls)).toBe("judge");
      const correct = modelSlotWait(sent("CorrectExecution", parameters), T0 + 9_000);
      expect(correct && queueOfWait(correct, urls)).toBe("correct");
    }
    // A URL no output names (another stack's queue) does not pick a queue by itself.
    const other = modelSlotWait(sent("Judge", JSON.stringify({ QueueUrl: "https://sqs/other" })), T0);
    expect(other && queueOfWait(other, urls)).toBe("judge");
  });

  it("a clock behind the history gives age 0, never negative", () => {
    const events = [...start(), entered("CorrectExecution", 3), ...queued(3)];
    expect(modelSlotWait(events, T0)?.ageSeconds).toBe(0);
  });
});

const draftFile = JSON.parse(
  await readFile(new URL("../../examples/drafts/json-corrected.json", import.meta.url), "utf8"),
) as { id: string; content: Record<string, unknown> };

/** A model whose calls wait until released, so that a run stays under way at its model state. */
class HeldModel implements ModelClient {
  readonly provider = "test";
  readonly model = "claude-sonnet-5-5";
  calls = 0;
  #release!: () => void;
  readonly released = new Promise<void>((resolve) => {
    this.#release = resolve;
  });
  release() {
    this.#release();
  }
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.calls += 1;
    await this.released;
    const content = (request.subject?.content ?? {}) as Record<string, unknown>;
    return {
      output: { content: { ...content, year: 2025 }, analysis: "year missing", fixDescription: "added year" },
      usage: { input: 10, output: 10, cacheRead: 0, cacheWrite: 0 },
      model: this.model,
      latencyMs: 1,
    };
  }
}

describe("redraft --stack S show of a run waiting for a model slot (emulated stack)", () => {
  let deployment: Deployment;
  const model = new HeldModel();
  let held: Promise<unknown>;
  let runId: string;

  beforeAll(async () => {
    // Uploaded as a person would; detached, the upload answers while its run is under way (as S3 does).
    deployment = await startDeployment({ model, detached: true });
    await deployment.s3.client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: "drafts/held-1.json",
        Body: JSON.stringify({ ...draftFile, id: "held-1" }),
      }),
    );
    held = deployment.idle();
    // The run is under way once its model call has started and is held.
    while (model.calls === 0) {
      if (deployment.failedDeliveries.count > 0) throw new Error("the upload started no run");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    runId = deployment.started[0] as string;
  }, 240_000);

  afterAll(async () => {
    model.release();
    await held;
    await deployment?.close();
  });

  /** The run's history as Step Functions gives it while `state`'s queued send waits, since `since`. */
  const holdAt = (state: string, since: Date, parameters = "{}") =>
    deployment.histories.set(runId, [
      { id: 1, type: "ExecutionStarted", timestamp: since, executionStartedEventDetails: {} },
      { id: 2, type: "TaskStateEntered", timestamp: since, stateEnteredEventDetails: { name: state } },
      {
        id: 3,
        type: "TaskScheduled",
        timestamp: since,
        taskScheduledEventDetails: {
          resourceType: "sqs",
          resource: "sendMessage.waitForTaskToken",
          region: "eu-west-1",
          parameters,
        },
      },
    ]);
  const showJson = async (stack = "redraft-test") => {
    const shown = await redraft(["show", runId, "--json", "--stack", stack]);
    expect(shown.code, shown.stderr).toBe(0);
    return JSON.parse(shown.stdout).waiting;
  };

  it("with the depth of the model queue it waits in: waiting + in flight, read with GetQueueAttributes", async () => {
    const since = new Date(Date.now() - 30_000);
    holdAt("Judge", since, JSON.stringify({ QueueUrl: MODEL_QUEUES.judge, MessageBody: {} }));
    deployment.queueAttributes.set(MODEL_QUEUES.judge, { visible: 41, notVisible: 3 });
    deployment.queueAttributes.set(MODEL_QUEUES.correct, { visible: 5, notVisible: 5 });
    deployment.queueReads.length = 0;
    const waiting = await showJson();
    expect(waiting.queue).toEqual({ name: "judge", depth: 44, waiting: 41, inFlight: 3 });
    expect(deployment.queueReads).toEqual([
      {
        QueueUrl: MODEL_QUEUES.judge,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
      },
    ]);
    const text = await redraft(["show", runId, "--stack", "redraft-test"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /^Queue: λ judge's queue holds about 44 \(41 waiting for a slot, 3 in a model call; in no order\); its oldest has waited at least (29|3\d) s$/m,
    );
    // No position is claimed: a standard queue keeps no order.
    expect(text.stdout).not.toMatch(/ahead|position|number \d+ in/i);

    // An empty queue reads 0 (its own message may be between a consumer's answer and its delete).
    deployment.queueAttributes.delete(MODEL_QUEUES.judge);
    expect((await showJson()).queue).toEqual({ name: "judge", depth: 0, waiting: 0, inFlight: 0 });
  });

  it("a reviewer policy without GetQueueAttributes, a stack without the queue outputs, SQS refusing: depth unknown and why, show still works", async () => {
    const since = new Date(Date.now() - 30_000);
    holdAt("CorrectExecution", since);
    deployment.queueAttributes.set(MODEL_QUEUES.correct, "AccessDenied");
    const denied = await showJson();
    expect(denied).toMatchObject({ state: "waiting_for_model_slot", since: since.toISOString() });
    expect(denied.queue).toEqual({
      name: "correct",
      depth: null,
      unknown: expect.stringMatching(/may not read the queue \(sqs:GetQueueAttributes/),
    });
    const text = await redraft(["show", runId, "--stack", "redraft-test"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^Queue: λ correct's queue: depth unknown \(this identity may not read/m);
    deployment.queueAttributes.set(MODEL_QUEUES.correct, "AWS.SimpleQueueService.NonExistentQueue");
    expect((await showJson()).queue).toMatchObject({ depth: null, unknown: "the queue does not exist" });
    deployment.queueAttributes.delete(MODEL_QUEUES.correct);

    // A stack deployed before the outputs: nothing to read, and nothing is read.
    deployment.queueReads.length = 0;
    const old = await showJson(STACK_WITHOUT_QUEUE_OUTPUTS);
    expect(old.queue).toEqual({
      name: "correct",
      depth: null,
      unknown: "the stack has no CorrectQueueUrl output (deployed before it was added)",
    });
    expect(deployment.queueReads).toEqual([]);
    const oldText = await redraft(["show", runId, "--stack", STACK_WITHOUT_QUEUE_OUTPUTS]);
    expect(oldText.code, oldText.stderr).toBe(0);
    expect(oldText.stdout).toMatch(/^Waiting: for a model slot since /m);
    expect(oldText.stdout).toMatch(
      /^Queue: λ correct's queue: depth unknown \(the stack has no CorrectQueueUrl/m,
    );

    // Any other refusal of SQS: show still tells the run, and names what SQS answered.
    deployment.queueAttributes.set(MODEL_QUEUES.correct, "RequestThrottled");
    const throttled = await showJson();
    expect(throttled).toMatchObject({ state: "waiting_for_model_slot", since: since.toISOString() });
    expect(throttled.queue).toEqual({
      name: "correct",
      depth: null,
      unknown: expect.stringMatching(/^SQS answered RequestThrottled: /),
    });
    deployment.queueAttributes.delete(MODEL_QUEUES.correct);
  });

  it("a run held at a queued model state shows Waiting; once finished, it does not", async () => {
    const run = await deployment.runs.getRun(runId);
    expect(isActiveStatus(run?.status), run?.status).toBe(true);
    const since = new Date(Date.now() - 90_000);
    deployment.histories.set(runId, [
      { id: 1, type: "ExecutionStarted", timestamp: since, executionStartedEventDetails: {} },
      { id: 2, type: "TaskStateEntered", timestamp: since, stateEnteredEventDetails: { name: "Validate" } },
      { id: 3, type: "TaskStateExited", timestamp: since, stateExitedEventDetails: { name: "Validate" } },
      {
        id: 4,
        type: "TaskStateEntered",
        timestamp: since,
        stateEnteredEventDetails: { name: "CorrectExecution" },
      },
      {
        id: 5,
        type: "TaskScheduled",
        timestamp: since,
        taskScheduledEventDetails: {
          resourceType: "sqs",
          resource: "sendMessage.waitForTaskToken",
          region: "eu-west-1",
          parameters: "{}",
        },
      },
      {
        id: 6,
        type: "TaskSubmitted",
        timestamp: since,
        taskSubmittedEventDetails: { resourceType: "sqs", resource: "sendMessage.waitForTaskToken" },
      },
    ]);
    const text = await redraft(["show", runId, "--stack", "redraft-test"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      new RegExp(`Waiting: for a model slot since ${since.toISOString()} \\((9\\d|1\\d\\d) s\\)`),
    );
    const json = await redraft(["show", runId, "--json", "--stack", "redraft-test"]);
    expect(json.code, json.stderr).toBe(0);
    const shown = JSON.parse(json.stdout);
    expect(shown.waiting).toMatchObject({ state: "waiting_for_model_slot", since: since.toISOString() });
    expect(shown.waiting.ageSeconds).toBeGreaterThanOrEqual(90);
    // Extended, not renamed: the local fields, then the queue's depth (an empty queue here).
    expect(Object.keys(shown.waiting).sort()).toEqual(["ageSeconds", "queue", "since", "state"]);
    expect(shown.waiting.queue).toEqual({ name: "correct", depth: 0, waiting: 0, inFlight: 0 });

    // Released, the run ends; a finished run does not wait, even with its last history still open.
    model.release();
    await held;
    expect(isActiveStatus((await deployment.runs.getRun(runId))?.status)).toBe(false);
    const after = await redraft(["show", runId, "--json", "--stack", "redraft-test"]);
    expect(after.code, after.stderr).toBe(0);
    expect(JSON.parse(after.stdout).waiting).toBeUndefined();
    expect((await redraft(["show", runId, "--stack", "redraft-test"])).stdout).not.toMatch(/Waiting:/);
    deployment.histories.delete(runId);
    expect(
      JSON.parse((await redraft(["show", runId, "--json", "--stack", "redraft-test"])).stdout).waiting,
    ).toBeUndefined();
  });
});
