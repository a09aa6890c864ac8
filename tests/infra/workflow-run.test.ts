/**
 * Runs the synthesized ASL itself in aws-local-stepfunctions, with stub tasks standing in for the
 * Lambdas and direct integrations: the Choice conditions, the counters, Retry and Catch route as the
 * stop rules of docs/DESIGN.md §2 say. (The real handlers against local stores are the workflow
 * tests in tests/workflow.)
 */

import { StateMachine } from "aws-local-stepfunctions";
import { describe, expect, it } from "vitest";
import {
  ANNOUNCE_STATES,
  type LAMBDA_STATES,
  MODEL_STATES,
  PUBLISH_STATES,
  RECORD_STATES,
  StateNames,
} from "../../contracts/state-names.js";
import { ErrorNames } from "../../shared/errors.js";
import { NO_GROUNDING } from "../../shared/grounding/check.js";
import type { LoopState } from "../../shared/loop/state.js";
import { loopState } from "../fixtures/loop-state.js";
import { getAsl } from "./asl.js";
import { logicalId, synthesize } from "./synth.js";

const { stack, template } = synthesize("dev");
// The stack holds two state machines (per draft, batches): this one is the correction workflow.
const asl = getAsl(template, { stateMachineLogicalId: logicalId(stack.workflow.stateMachine) });

const RUN_ID = "run-1";

class NamedError extends Error {
  constructor(name: string, message = name) {
    super(message);
    this.name = name;
  }
}

type Step = (state: LoopState, call: number) => LoopState;

/**
 * Stand-ins for the Lambdas; `call` counts the calls of that state (retries included), from 1.
 * CorrectLogic and RevalidateLogic invoke the same functions as CorrectExecution and Revalidate, so
 * they default to the same stubs.
 */
interface Stubs {
  validate: () => LoopState;
  correct?: Step;
  revalidate?: Step;
  judge?: Step;
  correctLogic?: Step;
  revalidateLogic?: Step;
}

const MAX_TASK_CALLS = 50;

/** Runs the ASL once; every task call is recorded with its effective input. */
async function run(stubs: Stubs) {
  const calls: { state: string; input: Record<string, unknown> }[] = [];
  const count = (state: string) => calls.filter((c) => c.state === state).length;
  const lambda = (state: string, fn: Step) => async (input: Record<string, unknown>) => {
    calls.push({ state, input });
    // A loop the Choices fail to bound would spin forever without yielding to the test's timeout.
    if (calls.length > MAX_TASK_CALLS) throw new Error(`more than ${MAX_TASK_CALLS} task calls`);
    return { StatusCode: 200, Payload: fn(input.Payload as LoopState, count(state)) };
  };
  const record = (state: string) => async (input: Record<string, unknown>) => {
    calls.push({ state, input });
    return {};
  };
  const same: Step = (s) => s;
  const lambdas: Record<(typeof LAMBDA_STATES)[number], Step> = {
    [StateNames.Validate]: () => stubs.validate(),
    [StateNames.CorrectExecution]: stubs.correct ?? same,
    [StateNames.Revalidate]: stubs.revalidate ?? same,
    [StateNames.Judge]: stubs.judge ?? same,
    [StateNames.CorrectLogic]: stubs.correctLogic ?? stubs.correct ?? same,
    [StateNames.RevalidateLogic]: stubs.revalidateLogic ?? stubs.revalidate ?? same,
  };
  // A model state sends `{ QueueUrl, MessageBody: { state, … } }` and its output is the answer itself.
  const queued = (state: string, fn: Step) => async (input: Record<string, unknown>) => {
    calls.push({ state, input });
    if (calls.length > MAX_TASK_CALLS) throw new Error(`more than ${MAX_TASK_CALLS} task calls`);
    return fn((input.MessageBody as { state: LoopState }).state, count(state));
  };
  const taskResourceLocalHandlers = {
    ...Object.fromEntries(
      Object.entries(lambdas).map(([name, fn]) => [
        name,
        (MODEL_STATES as readonly string[]).includes(name) ? queued(name, fn) : lambda(name, fn),
      ]),
    ),
    ...Object.fromEntries(
      [...PUBLISH_STATES, ...RECORD_STATES, ...ANNOUNCE_STATES].map((name) => [name, record(name)]),
    ),
  };
  // A Task state without a stand-in would call AWS.
  const tasks = Object.entries(asl.States).filter(([, state]) => state.Type === "Task");
  expect(Object.keys(taskResourceLocalHandlers).sort()).toEqual(tasks.map(([name]) => name).sort());
  const machine = new StateMachine(asl as never);
  const now = new Date().toISOString();
  const execution = machine.run({ draft: { id: "draft-1" } }, {
    overrides: {
      taskResourceLocalHandlers,
      retryIntervalOverrides: Object.fromEntries(Object.keys(asl.States).map((name) => [name, 0])),
    },
    // The context object the local runtime must provide: run id = execution name, and a state time.
    context: {
      Execution: { Name: RUN_ID, Input: {}, StartTime: now },
      State: { EnteredTime: now, Name: "" },
      Task: { Token: "token" },
    },
  } as never);
  let output: unknown;
  let error: Error | undefined;
  try {
    output = await execution.result;
  } catch (e) {
    error = e as Error;
  }
  expect(calls.length, "the Choices let the loop run on").toBeLessThanOrEqual(MAX_TASK_CALLS + 3);
  return { output: output as LoopState, error, calls, count, states: calls.map((c) => c.state) };
}

const stillErrors = (s: LoopState): LoopState => ({ ...s, verdict: { ...s.verdict, errors: 1 } });
const fixed = (s: LoopState): LoopState => ({ ...s, verdict: { ...s.verdict, errors: 0 } });
const updateValues = (input: Record<string, unknown>) =>
  input.ExpressionAttributeValues as Record<string, unknown>;
const inputOf = (calls: { state: string; input: Record<string, unknown> }[], state: string) =>
  calls.find((c) => c.state === state)?.input ?? {};

/** A clean draft with the judge turned on; the logic budget allows `maxLogicAttempts` fixes. */
const judged = (maxLogicAttempts = 1): LoopState =>
  loopState(
    {
      judge: { enabled: true, rounds: 0, blocking: 0, failed: false, grounding: NO_GROUNDING },
      limits: { ...loopState().limits, maxLogicAttempts },
    },
    0,
  );
/** What the judge Lambda returns after one more round with `blocking` findings that block. */
const judgeRound =
  (blocking: number, failed = false): Step =>
  (s) => ({
    ...s,
    phase: blocking > 0 ? "logic" : s.phase,
    judge: {
      enabled: true,
      rounds: s.judge.rounds + 1,
      blocking,
      failed,
      reportRef: "judge.json",
      grounding: NO_GROUNDING,
    },
  });
const VALIDATED_PATH = [
  StateNames.PublishCorrectedDraft,
  StateNames.MarkValidated,
  StateNames.AnnounceValidated,
];
const REVIEW_PATH = [StateNames.PublishBestDraft, StateNames.MarkNeedsReview, StateNames.AnnounceNeedsReview];

describe("the synthesized workflow, executed: the execution phase", () => {
  it("publishes, records and announces a draft that is clean at once, without a correction", async () => {
    const { states, calls, error } = await run({ validate: () => loopState({}, 0) });
    expect(error).toBeUndefined();
    expect(states).toEqual([StateNames.Validate, ...VALIDATED_PATH]);
    expect(calls[0]?.input).toMatchObject({
      Payload: { runId: RUN_ID, input: { draft: { id: "draft-1" } } },
    });
    expect(calls[1]?.input).toMatchObject({ Key: `results/draft-1/${RUN_ID}.json` });
  });

  it("ends a rejected input cleanly, recording nothing more", async () => {
    const { states, error } = await run({
      validate: () => loopState({ decision: "rejected", reason: "invalid_input" }),
    });
    expect(error).toBeUndefined();
    expect(states).toEqual([StateNames.Validate]);
  });

  it("loops until the attempts are used up, counting each one", async () => {
    const { states, count, output, calls } = await run({
      validate: () => loopState(),
      revalidate: stillErrors,
    });
    expect(count(StateNames.CorrectExecution)).toBe(2);
    expect(output.counters.execution).toBe(2);
    expect(output.reason).toBe("max_attempts");
    expect(states.slice(-3)).toEqual([
      StateNames.PublishBestDraft,
      StateNames.MarkNeedsReview,
      StateNames.AnnounceNeedsReview,
    ]);
    const mark = calls.find((c) => c.state === StateNames.MarkNeedsReview);
    expect(updateValues(mark?.input ?? {})).toMatchObject({ ":reason": { S: "max_attempts" } });
  });

  it("stops on the circuit breaker before stuck or max attempts", async () => {
    const { count, output } = await run({
      validate: () => loopState({ limits: { ...loopState().limits, maxAttempts: 5 } }),
      revalidate: (s) => ({
        ...stillErrors(s),
        verdict: { ...stillErrors(s).verdict, breakerTripped: true, stuck: true },
      }),
    });
    expect(count(StateNames.CorrectExecution)).toBe(1);
    expect(output.reason).toBe("circuit_breaker");
  });

  it("goes to review with no_model when no model is configured", async () => {
    const { count, output } = await run({ validate: () => loopState({ modelAvailable: false }) });
    expect(count(StateNames.CorrectExecution)).toBe(0);
    expect(output.reason).toBe("no_model");
  });

  it("goes to review at once when the limits allow no attempt", async () => {
    const { count, output } = await run({
      validate: () => loopState({ limits: { ...loopState().limits, maxAttempts: 0 } }),
    });
    expect(count(StateNames.CorrectExecution)).toBe(0);
    expect(output.reason).toBe("max_attempts");
  });
});

describe("the synthesized workflow, executed: the logic phase", () => {
  it("runs no judge when it is off, or when no model is configured", async () => {
    for (const state of [loopState({}, 0), { ...judged(), modelAvailable: false }]) {
      const { states, error } = await run({ validate: () => state, judge: judgeRound(1) });
      expect(error).toBeUndefined();
      expect(states).toEqual([StateNames.Validate, ...VALIDATED_PATH]);
    }
  });

  it("validates a clean draft the judge passes", async () => {
    const { states, output, error, calls } = await run({ validate: () => judged(), judge: judgeRound(0) });
    expect(error).toBeUndefined();
    expect(states).toEqual([StateNames.Validate, StateNames.Judge, ...VALIDATED_PATH]);
    expect(inputOf(calls, StateNames.Judge)).toMatchObject({
      MessageBody: { step: "judge", state: { runId: RUN_ID, judge: { rounds: 0 } } },
    });
    expect(output.reason).toBeUndefined();
    expect(output.judge).toMatchObject({ rounds: 1, blocking: 0 });
  });

  it("validates when the judge's findings are below the threshold, even with no logic budget left", async () => {
    // Reached from NextStep? after an execution fix; blocking 0 is checked before the logic budget.
    const { states, output } = await run({
      validate: () => ({ ...judged(0), verdict: { ...judged().verdict, errors: 1 } }),
      revalidate: fixed,
      judge: judgeRound(0),
    });
    expect(states).toEqual([
      StateNames.Validate,
      StateNames.CorrectExecution,
      StateNames.Revalidate,
      StateNames.Judge,
      ...VALIDATED_PATH,
    ]);
    expect(output.counters).toEqual({ execution: 1, logic: 0 });
  });

  it("makes one logic correction, counted apart, then validates when the judge passes", async () => {
    const { states, output, calls } = await run({
      validate: () => judged(),
      judge: (s, call) => judgeRound(call === 1 ? 2 : 0)(s, call),
    });
    expect(states).toEqual([
      StateNames.Validate,
      StateNames.Judge,
      StateNames.CorrectLogic,
      StateNames.RevalidateLogic,
      StateNames.Judge,
      ...VALIDATED_PATH,
    ]);
    // CountLogicAttempt runs between the fix and its re-validation.
    expect(inputOf(calls, StateNames.CorrectLogic)).toMatchObject({
      MessageBody: { step: "correct", state: { counters: { logic: 0 } } },
    });
    expect(inputOf(calls, StateNames.RevalidateLogic)).toMatchObject({
      Payload: { counters: { execution: 0, logic: 1 } },
    });
    expect(output.counters).toEqual({ execution: 0, logic: 1 });
    expect(output.reason).toBeUndefined();
  });

  it("goes to review with logic_unresolved when the critical findings outlive the logic budget", async () => {
    const { states, count, output, calls } = await run({ validate: () => judged(1), judge: judgeRound(1) });
    expect(count(StateNames.Judge)).toBe(2);
    expect(count(StateNames.CorrectLogic)).toBe(1);
    expect(output.counters).toEqual({ execution: 0, logic: 1 });
    expect(output.reason).toBe("logic_unresolved");
    expect(states.slice(-3)).toEqual(REVIEW_PATH);
    expect(updateValues(inputOf(calls, StateNames.MarkNeedsReview))).toMatchObject({
      ":reason": { S: "logic_unresolved" },
    });
  });

  it("re-runs the execution loop when a logic fix breaks the format, then judges again", async () => {
    const { states, output } = await run({
      validate: () => ({ ...judged(1), limits: { ...judged(1).limits, maxAttempts: 1 } }),
      judge: (s, call) => judgeRound(call === 1 ? 1 : 0)(s, call),
      revalidateLogic: stillErrors,
      revalidate: fixed,
    });
    expect(states).toEqual([
      StateNames.Validate,
      StateNames.Judge,
      StateNames.CorrectLogic,
      StateNames.RevalidateLogic,
      StateNames.CorrectExecution,
      StateNames.Revalidate,
      StateNames.Judge,
      ...VALIDATED_PATH,
    ]);
    expect(output.counters).toEqual({ execution: 1, logic: 1 });
  });

  it("goes to review with logic_unresolved when the judge gave no usable verdict", async () => {
    const { states, count, output, calls } = await run({
      validate: () => judged(),
      judge: judgeRound(0, true),
    });
    // failed is checked before blocking: an unusable answer is not a pass.
    expect(count(StateNames.CorrectLogic)).toBe(0);
    expect(output.reason).toBe("logic_unresolved");
    expect(states).toEqual([StateNames.Validate, StateNames.Judge, ...REVIEW_PATH]);
    expect(updateValues(inputOf(calls, StateNames.MarkNeedsReview))).toMatchObject({
      ":reason": { S: "logic_unresolved" },
    });
  });
});

describe("the synthesized workflow, executed: retries and failures", () => {
  it("retries a rate-limited model call and carries on", async () => {
    const { count, states, error } = await run({
      validate: () => loopState(),
      correct: (s, call) => {
        if (call < 3) throw new NamedError(ErrorNames.ModelRateLimited);
        return s;
      },
      revalidate: fixed,
    });
    expect(error).toBeUndefined();
    expect(count(StateNames.CorrectExecution)).toBe(3);
    expect(states.at(-1)).toBe(StateNames.AnnounceValidated);
  });

  it("retries a rate-limited judge the same way", async () => {
    const { count, states, error } = await run({
      validate: () => judged(),
      judge: (s, call) => {
        if (call < 3) throw new NamedError(ErrorNames.ModelRateLimited);
        return judgeRound(0)(s, call);
      },
    });
    expect(error).toBeUndefined();
    expect(count(StateNames.Judge)).toBe(3);
    expect(states.at(-1)).toBe(StateNames.AnnounceValidated);
  });

  it("puts a transient model error back in the queue until the deadline, then records reason deadline", async () => {
    const { count, calls, error } = await run({
      validate: () => loopState(),
      // Seven overloads (the direct invoke gave up after four), then the consumer finds the deadline passed.
      correct: (_s, call) => {
        if (call <= 7) throw new NamedError(ErrorNames.ModelOverloaded, "overloaded");
        throw new NamedError(ErrorNames.DeadlinePassed, "the run's deadline passed");
      },
    });
    expect(count(StateNames.CorrectExecution)).toBe(8);
    expect(count(StateNames.RecordDeadline)).toBe(1);
    expect(count(StateNames.RecordModelFailure)).toBe(0);
    expect(updateValues(inputOf(calls, StateNames.RecordDeadline))).toMatchObject({
      ":reason": { S: "deadline" },
    });
    expect(count(StateNames.RecordFailure)).toBe(0);
    // CorrectionFailed re-raises the original error: its name and cause.
    expect((error?.cause as Error | undefined)?.name).toBe(ErrorNames.DeadlinePassed);
    expect(error?.message).toContain("deadline");
  });

  it("does not retry a terminal model error; the run record says it is the model's", async () => {
    const { count, calls, error } = await run({
      validate: () => loopState(),
      correct: () => {
        throw new NamedError(ErrorNames.ModelRequestFailed, "401 invalid x-api-key");
      },
    });
    expect(count(StateNames.CorrectExecution)).toBe(1);
    expect(count(StateNames.RecordFailure)).toBe(0);
    const record = inputOf(calls, StateNames.RecordModelFailure);
    expect(record).toMatchObject({ Key: { pk: { S: `RUN#${RUN_ID}` } } });
    expect(updateValues(record)).toMatchObject({
      ":status": { S: "failed" },
      ":reason": { S: "model_error" },
      ":message": { S: `${ErrorNames.ModelRequestFailed}: 401 invalid x-api-key` },
    });
    expect((error?.cause as Error | undefined)?.name).toBe(ErrorNames.ModelRequestFailed);
  });

  it("records a judge without a model as a model failure", async () => {
    const { count, calls, error } = await run({
      validate: () => judged(),
      judge: () => {
        throw new NamedError(ErrorNames.ModelNotConfigured, "the judge needs a model");
      },
    });
    expect(count(StateNames.Judge)).toBe(1);
    expect(updateValues(inputOf(calls, StateNames.RecordModelFailure))).toMatchObject({
      ":reason": { S: "model_error" },
    });
    expect((error?.cause as Error | undefined)?.name).toBe(ErrorNames.ModelNotConfigured);
  });

  it("records a system failure in the logic phase as system_error, not as the model's", async () => {
    const { count, calls, error } = await run({
      validate: () => judged(),
      judge: judgeRound(1),
      revalidateLogic: () => {
        throw new NamedError(ErrorNames.BlobNotFound, "blob runs/run-1/attempts/1/draft.json not found");
      },
    });
    expect(count(StateNames.RevalidateLogic)).toBe(1);
    expect(count(StateNames.RecordModelFailure)).toBe(0);
    expect(updateValues(inputOf(calls, StateNames.RecordFailure))).toMatchObject({
      ":status": { S: "failed" },
      ":reason": { S: "system_error" },
      ":message": { S: `${ErrorNames.BlobNotFound}: blob runs/run-1/attempts/1/draft.json not found` },
    });
    expect((error?.cause as Error | undefined)?.name).toBe(ErrorNames.BlobNotFound);
  });

  it("records a Validate crash against the execution's run id, as a system failure", async () => {
    const { calls, error } = await run({
      validate: () => {
        throw new NamedError("StoreRequestFailedError", "table missing");
      },
    });
    const record = inputOf(calls, StateNames.RecordFailure);
    expect(record).toMatchObject({ Key: { pk: { S: `RUN#${RUN_ID}` } } });
    expect(updateValues(record)).toMatchObject({ ":reason": { S: "system_error" } });
    expect((error?.cause as Error | undefined)?.name).toBe("StoreRequestFailedError");
  });
});
