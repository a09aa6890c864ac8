/**
 * Runs the synthesized ASL itself in aws-local-stepfunctions, with stub tasks standing in for the
 * Lambdas and direct integrations: the Choice conditions, the counter, Retry and Catch behave as the
 * route()/correctDraft() mirror in shared/loop/run.ts says they should. (The real handlers against
 * local stores are the local runtime's tests.)
 */
import { beforeAll, describe, expect, it } from "vitest";
import { StateNames } from "../../infra/state-names.js";
import { ErrorNames } from "../../shared/errors.js";
import type { LoopState } from "../../shared/loop/state.js";
import { getAsl } from "./asl.js";
import { synthesize } from "./synth.js";

// aws-local-stepfunctions 3 calls Promise.withResolvers, which Node 20 lacks.
const promiseStatics = Promise as unknown as { withResolvers?: () => unknown };
promiseStatics.withResolvers ??= () => {
  let resolve: unknown;
  let reject: unknown;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

type LocalSfn = typeof import("aws-local-stepfunctions");
let StateMachine: LocalSfn["StateMachine"];
const asl = getAsl(synthesize("dev").template);

beforeAll(async () => {
  ({ StateMachine } = await import("aws-local-stepfunctions"));
});

const RUN_ID = "run-1";

function loopState(overrides: Partial<LoopState> = {}, errors = 2): LoopState {
  return {
    runId: RUN_ID,
    draftId: "draft-1",
    kind: "mcq",
    decision: "correct",
    phase: "execution",
    counters: { execution: 0, logic: 0 },
    limits: {
      maxAttempts: 2,
      breakerThreshold: 2,
      stuckAfter: 2,
      maxLogicAttempts: 1,
      maxTokens: 0,
      maxCostUsd: 0,
    },
    modelAvailable: true,
    verdict: { errors, warnings: 0, score: 0.9, breakerTripped: false, stuck: false, budgetExhausted: false },
    best: {
      attempt: 0,
      draftRef: `runs/${RUN_ID}/attempts/0/draft.json`,
      reportRef: "r",
      errors,
      score: 0.9,
    },
    originalRef: `runs/${RUN_ID}/original.json`,
    initialErrorRules: [],
    ruleFailures: {},
    sinceBest: 0,
    circuitBreakerRules: [],
    violationsPerAttempt: [errors],
    hints: [],
    tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    costUsd: 0,
    judge: { enabled: false, rounds: 0, blocking: 0, failed: false },
    ...overrides,
  };
}

class NamedError extends Error {
  constructor(name: string, message = name) {
    super(message);
    this.name = name;
  }
}

interface Stubs {
  validate: () => LoopState;
  correct?: (state: LoopState, call: number) => LoopState;
  revalidate?: (state: LoopState, call: number) => LoopState;
}

/** Runs the ASL once; every task call is recorded with its effective input. */
async function run(stubs: Stubs) {
  const calls: { state: string; input: Record<string, unknown> }[] = [];
  const count = (state: string) => calls.filter((c) => c.state === state).length;
  const lambda =
    (state: string, fn: (payload: LoopState, call: number) => LoopState) =>
    async (input: Record<string, unknown>) => {
      calls.push({ state, input });
      return { StatusCode: 200, Payload: fn(input.Payload as LoopState, count(state)) };
    };
  const record = (state: string) => async (input: Record<string, unknown>) => {
    calls.push({ state, input });
    return {};
  };
  const taskResourceLocalHandlers = {
    [StateNames.Validate]: lambda(StateNames.Validate, () => stubs.validate()),
    [StateNames.CorrectExecution]: lambda(StateNames.CorrectExecution, stubs.correct ?? ((s) => s)),
    [StateNames.Revalidate]: lambda(StateNames.Revalidate, stubs.revalidate ?? ((s) => s)),
    ...Object.fromEntries(
      [
        StateNames.PublishCorrectedDraft,
        StateNames.PublishBestDraft,
        StateNames.MarkValidated,
        StateNames.MarkNeedsReview,
        StateNames.RecordFailure,
        StateNames.AnnounceValidated,
        StateNames.AnnounceNeedsReview,
      ].map((name) => [name, record(name)]),
    ),
  };
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
    },
  } as never);
  let output: unknown;
  let error: Error | undefined;
  try {
    output = await execution.result;
  } catch (e) {
    error = e as Error;
  }
  return { output: output as LoopState, error, calls, count, states: calls.map((c) => c.state) };
}

const stillErrors = (s: LoopState): LoopState => ({ ...s, verdict: { ...s.verdict, errors: 1 } });
const fixed = (s: LoopState): LoopState => ({ ...s, verdict: { ...s.verdict, errors: 0 } });
const updateValues = (input: Record<string, unknown>) =>
  input.ExpressionAttributeValues as Record<string, unknown>;

describe("the synthesized workflow, executed", () => {
  it("publishes, records and announces a draft that is clean at once, without a correction", async () => {
    const { states, calls, error } = await run({ validate: () => loopState({}, 0) });
    expect(error).toBeUndefined();
    expect(states).toEqual([
      StateNames.Validate,
      StateNames.PublishCorrectedDraft,
      StateNames.MarkValidated,
      StateNames.AnnounceValidated,
    ]);
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

  it("gives up on a transient error after the retries, recording the failure", async () => {
    const { count, error } = await run({
      validate: () => loopState(),
      correct: () => {
        throw new NamedError(ErrorNames.ModelOverloaded, "overloaded");
      },
    });
    expect(count(StateNames.CorrectExecution)).toBe(5);
    expect(count(StateNames.RecordFailure)).toBe(1);
    // CorrectionFailed re-raises the original error: its name and cause.
    expect((error?.cause as Error | undefined)?.name).toBe(ErrorNames.ModelOverloaded);
    expect(error?.message).toContain("overloaded");
  });

  it("does not retry a terminal model error; the run record says why", async () => {
    const { count, calls, error } = await run({
      validate: () => loopState(),
      correct: () => {
        throw new NamedError(ErrorNames.ModelRequestFailed, "401 invalid x-api-key");
      },
    });
    expect(count(StateNames.CorrectExecution)).toBe(1);
    const record = calls.find((c) => c.state === StateNames.RecordFailure)?.input ?? {};
    expect(record).toMatchObject({ Key: { pk: { S: `RUN#${RUN_ID}` } } });
    expect(updateValues(record)).toMatchObject({
      ":status": { S: "failed" },
      ":reason": { S: "system_error" },
      ":message": { S: `${ErrorNames.ModelRequestFailed}: 401 invalid x-api-key` },
    });
    expect((error?.cause as Error | undefined)?.name).toBe(ErrorNames.ModelRequestFailed);
  });

  it("records a Validate crash against the execution's run id", async () => {
    const { calls, error } = await run({
      validate: () => {
        throw new NamedError("StoreRequestFailedError", "table missing");
      },
    });
    const record = calls.find((c) => c.state === StateNames.RecordFailure)?.input ?? {};
    expect(record).toMatchObject({ Key: { pk: { S: `RUN#${RUN_ID}` } } });
    expect((error?.cause as Error | undefined)?.name).toBe("StoreRequestFailedError");
  });
});
