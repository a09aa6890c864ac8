import aslValidator from "asl-validator";
import { Match } from "aws-cdk-lib/assertions";
import type { IConstruct } from "constructs";
import { describe, expect, it } from "vitest";
import { OutcomeEvents } from "../../contracts/events.js";
import {
  ANNOUNCE_STATES,
  LAMBDA_STATES,
  MODEL_STATES,
  PUBLISH_STATES,
  RECORD_STATES,
  StateNames,
} from "../../contracts/state-names.js";
import { RUN_SORT_KEY, runKey, statusUpdate } from "../../contracts/table.js";
import { environments } from "../../infra/config.js";
import {
  CONDITIONAL_CHECK_FAILED,
  DYNAMODB_TRANSIENT_ERRORS,
  EVENTBRIDGE_TRANSIENT_ERRORS,
  LAMBDA_SERVICE_ERRORS,
  MODEL_FAILURES,
  S3_TRANSIENT_ERRORS,
} from "../../infra/retries.js";
import {
  BlobNotFoundError,
  CassetteExhaustedError,
  ErrorNames,
  type ModelError,
  ModelNotConfiguredError,
  ModelOverloadedError,
  ModelRateLimitedError,
  ModelRequestFailedError,
  ModelTimeoutError,
  TRANSIENT_MODEL_ERRORS,
} from "../../shared/errors.js";
import { DEFAULT_RUN_DEADLINE_HOURS } from "../../shared/loop-settings.js";
import { ACTIVE_STATUSES } from "../../shared/store/types.js";
import { choicesOf, getAsl, stateOf } from "./asl.js";
import { logicalId, synthesize } from "./synth.js";

const { stack, template } = synthesize("dev");
// The stack holds two state machines (per draft, batches): this one is the correction workflow.
const asl = getAsl(template, { stateMachineLogicalId: logicalId(stack.workflow.stateMachine) });

type Retrier = {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  BackoffRate?: number;
  MaxAttempts?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: string;
};
type Catcher = { ErrorEquals: string[]; Next: string; ResultPath?: string | null };
const retriesOf = (name: string) => (stateOf(asl, name).Retry ?? []) as Retrier[];
const catchesOf = (name: string) => (stateOf(asl, name).Catch ?? []) as Catcher[];
const params = (name: string) => stateOf(asl, name).Parameters as Record<string, unknown>;
/** The fake ARN getAsl gives a function: its logical id is the name. */
const functionArn = (fn: IConstruct) => `arn:aws:lambda:us-east-1:123456789012:function:${logicalId(fn)}`;
const DEADLINE_SECONDS = DEFAULT_RUN_DEADLINE_HOURS * 3600;
const isModelState = (name: string) => (MODEL_STATES as readonly string[]).includes(name);
/** The steps Step Functions invokes directly; the model states' work goes through the model queue. */
const DIRECT_LAMBDA_STATES = LAMBDA_STATES.filter((name) => !isModelState(name));

describe("correction workflow: shape", () => {
  it("has every named state, and no other", () => {
    expect(Object.keys(asl.States).sort()).toEqual(Object.values(StateNames).sort());
    expect(asl.StartAt).toBe(StateNames.Validate);
  });

  it("is a Standard, JSONPath state machine with X-Ray, ALL-level logs and a timeout", () => {
    expect(asl.QueryLanguage ?? "JSONPath").toBe("JSONPath");
    // The run's own bound, plus the longest its model work may wait for a slot.
    expect(asl.TimeoutSeconds).toBe(environments.dev.executionTimeoutMinutes * 60 + DEADLINE_SECONDS);
    template.hasResourceProperties("AWS::StepFunctions::StateMachine", {
      StateMachineType: "STANDARD",
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: Match.objectLike({ Level: "ALL", IncludeExecutionData: true }),
    });
    template.hasResourceProperties("AWS::Logs::LogGroup", {
      LogGroupName: Match.stringLikeRegexp("^/aws/vendedlogs/states/redraft-dev$"),
    });
  });

  it("uses no JSONata and no Assign anywhere (the local runtime supports neither)", () => {
    for (const state of Object.values(asl.States)) {
      expect(state.QueryLanguage ?? "JSONPath").toBe("JSONPath");
      expect(state).not.toHaveProperty("Assign");
      expect(state).not.toHaveProperty("Arguments");
    }
  });

  it("passes asl-validator", () => {
    // asl-validator annotates the object it checks: give it a copy.
    const result = aslValidator(structuredClone(asl), { checkPaths: true, checkArn: true });
    expect(result.errors).toEqual([]);
    expect(result.isValid).toBe(true);
  });
});

describe("correction workflow: Lambda steps", () => {
  it("invokes validate with the execution name as run id and the whole input", () => {
    const validate = stateOf(asl, StateNames.Validate);
    expect(validate.Resource).toMatch(/^arn:aws:states:::lambda:invoke$/);
    expect(validate.Parameters).toMatchObject({
      Payload: { "runId.$": "$$.Execution.Name", "input.$": "$" },
    });
    expect(validate.OutputPath).toBe("$.Payload");
    expect(validate.Next).toBe(StateNames.HasErrors);
  });

  it("passes the loop state on as it is, and takes the returned state as its own", () => {
    for (const name of DIRECT_LAMBDA_STATES.filter((n) => n !== StateNames.Validate)) {
      expect(params(name)).toMatchObject({ "Payload.$": "$" });
      expect(stateOf(asl, name).OutputPath).toBe("$.Payload");
    }
    // A model state's output is the consumer's answer to its task token: the next loop state.
    for (const name of MODEL_STATES) {
      expect(params(name).MessageBody).toMatchObject({
        "state.$": "$",
        "taskToken.$": "$$.Task.Token",
        "startedAt.$": "$$.Execution.StartTime",
        deadlineSeconds: DEADLINE_SECONDS,
      });
      expect(stateOf(asl, name).OutputPath).toBeUndefined();
      expect(stateOf(asl, name).ResultPath).toBeUndefined();
      expect(stateOf(asl, name).TimeoutSeconds).toBe(DEADLINE_SECONDS);
    }
    expect(stateOf(asl, StateNames.CorrectExecution).Next).toBe(StateNames.CountExecutionAttempt);
    expect(stateOf(asl, StateNames.CountExecutionAttempt).Next).toBe(StateNames.Revalidate);
    expect(stateOf(asl, StateNames.Revalidate).Next).toBe(StateNames.NextStep);
  });

  it("chains the logic phase: Judge → HasCriticalFindings?, CorrectLogic → count → RevalidateLogic → NextStep?", () => {
    expect(stateOf(asl, StateNames.Judge).Next).toBe(StateNames.HasCriticalFindings);
    expect(stateOf(asl, StateNames.CorrectLogic).Next).toBe(StateNames.CountLogicAttempt);
    expect(stateOf(asl, StateNames.CountLogicAttempt).Next).toBe(StateNames.RevalidateLogic);
    // A logic fix may break the format: the execution checks and stop rules apply again.
    expect(stateOf(asl, StateNames.RevalidateLogic).Next).toBe(StateNames.NextStep);
  });

  it("invokes each step's own function: the logic phase reuses correct and revalidate, Judge has its own", () => {
    const { validate, correct, revalidate, judge } = stack.functions;
    const invoked: [string, IConstruct][] = [
      [StateNames.Validate, validate],
      [StateNames.CorrectExecution, correct],
      [StateNames.Revalidate, revalidate],
      [StateNames.Judge, judge],
      [StateNames.CorrectLogic, correct],
      [StateNames.RevalidateLogic, revalidate],
    ];
    expect(invoked.map(([name]) => name).sort()).toEqual([...LAMBDA_STATES].sort());
    for (const [name, fn] of invoked) {
      if (isModelState(name)) {
        // Through the function's own queue, which it consumes (infra/constructs/model-queue.ts).
        expect(stateOf(asl, name).Resource).toBe("arn:aws:states:::sqs:sendMessage.waitForTaskToken");
        const step = fn === correct ? "correct" : "judge";
        expect((params(name).MessageBody as Record<string, unknown>).step).toBe(step);
        expect(JSON.stringify(params(name).QueueUrl)).toContain(logicalId(stack.modelQueue.queues[step]));
      } else {
        expect(stateOf(asl, name).Resource).toBe("arn:aws:states:::lambda:invoke");
        // Through the function's `live` alias: an execution keeps the version it started with.
        expect(params(name).FunctionName).toBe(`${functionArn(fn)}:live`);
      }
    }
  });

  it("counts each correction with States.MathAdd in a Pass state, one counter per phase", () => {
    const count = stateOf(asl, StateNames.CountExecutionAttempt);
    expect(count.Type).toBe("Pass");
    expect(count.Parameters).toEqual({
      "execution.$": "States.MathAdd($.counters.execution, 1)",
      "logic.$": "$.counters.logic",
    });
    expect(count.ResultPath).toBe("$.counters");
    const countLogic = stateOf(asl, StateNames.CountLogicAttempt);
    expect(countLogic.Type).toBe("Pass");
    expect(countLogic.Parameters).toEqual({
      "execution.$": "$.counters.execution",
      "logic.$": "States.MathAdd($.counters.logic, 1)",
    });
    expect(countLogic.ResultPath).toBe("$.counters");
  });

  it.each(MODEL_STATES)(
    "%s puts 429'd work back in the queue until the deadline, and retries nothing else of the model's",
    (name) => {
      const [modelRetry, storeRetry, sendRetry] = retriesOf(name);
      // Without jitter every wait is the longest, so the attempts outlast the deadline at 60 s each.
      expect(modelRetry).toEqual({
        ErrorEquals: [...TRANSIENT_MODEL_ERRORS],
        IntervalSeconds: 2,
        BackoffRate: 2,
        MaxAttempts: DEADLINE_SECONDS / 60 + 6,
        MaxDelaySeconds: 60,
        JitterStrategy: "NONE",
      });
      // The store's transient error inside the consumer sends the work back, as on the other steps.
      expect(storeRetry?.ErrorEquals).toEqual([ErrorNames.StoreUnavailable]);
      expect(sendRetry?.ErrorEquals).toEqual(["SQS.SdkClientException", "SQS.AmazonSQSException"]);
      const retried = retriesOf(name).flatMap((r) => r.ErrorEquals);
      expect(retried).not.toContain("States.ALL");
      expect(retried).not.toContain("States.TaskFailed");
      expect(retried).not.toContain("States.Timeout");
      expect(retried).not.toContain(ErrorNames.ModelRequestFailed);
      expect(retried).not.toContain(ErrorNames.ModelNotConfigured);
      expect(retried).not.toContain(ErrorNames.DeadlinePassed);
      // Nothing invokes the function beyond its reserved concurrency: there is no throttle to retry.
      expect(retried).not.toContain("Lambda.TooManyRequestsException");
    },
  );

  it("retries no model error on the steps that never call the model", () => {
    for (const name of [StateNames.Validate, StateNames.Revalidate, StateNames.RevalidateLogic]) {
      const retried = retriesOf(name).flatMap((r) => r.ErrorEquals);
      expect(retried).toEqual(expect.arrayContaining(LAMBDA_SERVICE_ERRORS));
      expect(retried.filter((e) => !e.startsWith("Lambda."))).toEqual([
        "Sandbox.Timedout",
        "StoreUnavailableError",
      ]);
      for (const retry of retriesOf(name)) expect(retry.JitterStrategy).toBe("FULL");
    }
  });

  it("sends every other Lambda failure to ClassifyFailure? with the error under $.error", () => {
    for (const name of DIRECT_LAMBDA_STATES) {
      expect(catchesOf(name)).toEqual([
        { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: StateNames.ClassifyFailure },
      ]);
    }
    // A model state first records a passed deadline as such (the consumer's error or the state's timeout).
    for (const name of MODEL_STATES) {
      expect(catchesOf(name)).toEqual([
        {
          ErrorEquals: [ErrorNames.DeadlinePassed, "States.Timeout"],
          ResultPath: "$.error",
          Next: StateNames.RecordDeadline,
        },
        { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: StateNames.ClassifyFailure },
      ]);
    }
  });
});

// What each Choice decides is tested by running the ASL, not by copying its rules here:
// tests/infra/workflow-run.test.ts (stub tasks) and tests/workflow/ (real handlers, every rule,
// Default, Catch and Retry taken at least once by tests/workflow/coverage.test.ts).
describe("correction workflow: routing", () => {
  it.each([
    [StateNames.NoModelConfigured, "no_model"],
    [StateNames.CircuitBreakerTripped, "circuit_breaker"],
    [StateNames.StuckNoImprovement, "stuck"],
    [StateNames.BudgetExhausted, "budget_exhausted"],
    [StateNames.MaxAttemptsReached, "max_attempts"],
    [StateNames.LogicUnresolved, "logic_unresolved"],
  ])("%s records reason %s and goes to the review path", (name, reason) => {
    expect(stateOf(asl, name)).toMatchObject({
      Type: "Pass",
      Result: reason,
      ResultPath: "$.reason",
      Next: StateNames.PublishBestDraft,
    });
  });

  it("ends bad input and duplicates cleanly, without a retry", () => {
    expect(stateOf(asl, StateNames.InputRejected).Type).toBe("Succeed");
    expect(stateOf(asl, StateNames.DuplicateIgnored).Type).toBe("Succeed");
  });

  it("ClassifyFailure? records every model failure as model_error, anything else as system_error", () => {
    const rules = choicesOf(asl, StateNames.ClassifyFailure);
    expect(rules).toHaveLength(1);
    expect(rules[0]?.Next).toBe(StateNames.RecordModelFailure);
    const or = (rules[0]?.Or ?? []) as { Variable: string; StringEquals: string }[];
    const matched = or.map((c) => {
      expect(c.Variable).toBe("$.error.Error");
      return c.StringEquals;
    });
    expect(matched).toEqual(MODEL_FAILURES);
    // Every ModelError subclass, and only those, is a model failure.
    const modelErrors: ModelError[] = [
      new ModelRateLimitedError(),
      new ModelOverloadedError(),
      new ModelTimeoutError(),
      new ModelRequestFailedError("401"),
      new ModelNotConfiguredError(),
      new CassetteExhaustedError("draft-1", "correct", 1),
    ];
    expect([...matched].sort()).toEqual(modelErrors.map((e) => e.name).sort());
    expect(matched).not.toContain(new BlobNotFoundError("k").name);
    expect(matched).not.toContain(ErrorNames.InvalidDraft);
    expect(stateOf(asl, StateNames.ClassifyFailure).Default).toBe(StateNames.RecordFailure);
  });
});

describe("correction workflow: outcomes through direct integrations", () => {
  it("publishes the best draft under results/ with an S3 copy, never touching drafts/", () => {
    for (const name of PUBLISH_STATES) {
      const state = stateOf(asl, name);
      expect(state.Resource).toBe("arn:aws:states:::aws-sdk:s3:copyObject");
      expect(state.ResultPath).toBeNull();
      expect(state.Parameters).toEqual({
        Bucket: expect.any(String),
        "CopySource.$": expect.stringMatching(/^States\.Format\('[a-z0-9-]+\/\{\}', \$\.best\.draftRef\)$/),
        "Key.$": "States.Format('results/{}/{}.json', $.draftId, $.runId)",
      });
    }
    expect(stateOf(asl, StateNames.PublishCorrectedDraft).Next).toBe(StateNames.MarkValidated);
    expect(stateOf(asl, StateNames.PublishBestDraft).Next).toBe(StateNames.MarkNeedsReview);
  });

  // Record* fail only a run still under way (`from`): an outcome, or the finalizer's failed, stands.
  it.each([
    [StateNames.MarkValidated, "validated", ["finalRef", "resultRef"], "$.runId", undefined],
    [
      StateNames.MarkNeedsReview,
      "needs_manual_review",
      ["reason", "finalRef", "resultRef"],
      "$.runId",
      undefined,
    ],
    [StateNames.RecordModelFailure, "failed", ["reason", "message"], "$$.Execution.Name", ACTIVE_STATUSES],
    [StateNames.RecordFailure, "failed", ["reason", "message"], "$$.Execution.Name", ACTIVE_STATUSES],
  ] as const)("%s is the UpdateItem statusUpdate(%s) describes", (name, status, fields, runIdPath, from) => {
    const update = statusUpdate(status, fields, from ? { from } : {});
    const state = stateOf(asl, name);
    expect(state.Resource).toBe("arn:aws:states:::dynamodb:updateItem");
    expect(state.ResultPath).toBeNull();
    const p = state.Parameters as Record<string, Record<string, unknown>>;
    expect(p.Key).toEqual({
      pk: { "S.$": `States.Format('${runKey("{}").pk}', ${runIdPath})` },
      sk: { S: RUN_SORT_KEY },
    });
    expect(p.UpdateExpression).toBe(update.UpdateExpression);
    expect(p.ConditionExpression).toBe(update.ConditionExpression);
    expect(p.ExpressionAttributeNames).toEqual(update.ExpressionAttributeNames);
    const values = p.ExpressionAttributeValues as Record<string, unknown>;
    const n = update.valueNames;
    expect(Object.keys(values).sort()).toEqual(
      [
        ...Object.keys(update.fixedValues),
        n.statusSort,
        n.at,
        n.transition,
        ...Object.values(n.fields),
      ].sort(),
    );
    for (const [placeholder, value] of Object.entries(update.fixedValues))
      expect(values[placeholder]).toEqual({ S: value });
    expect(values[n.at]).toEqual({ "S.$": "$$.State.EnteredTime" });
    expect(values[n.statusSort]).toEqual({
      "S.$": `States.Format('{}#{}', $$.State.EnteredTime, ${runIdPath})`,
    });
    expect(values[n.transition]).toEqual({
      L: [{ M: { status: { S: status }, at: { "S.$": "$$.State.EnteredTime" } } }],
    });
  });

  it("records the run's refs and reason from the state", () => {
    const values = (name: string) =>
      (params(name).ExpressionAttributeValues ?? {}) as Record<string, unknown>;
    expect(values(StateNames.MarkValidated)).toMatchObject({
      ":finalRef": { "S.$": "$.best.draftRef" },
      ":resultRef": { "S.$": "States.Format('results/{}/{}.json', $.draftId, $.runId)" },
    });
    expect(values(StateNames.MarkValidated)).not.toHaveProperty(":reason");
    expect(values(StateNames.MarkNeedsReview)).toMatchObject({ ":reason": { "S.$": "$.reason" } });
    expect(values(StateNames.RecordModelFailure)).toMatchObject({
      ":reason": { S: "model_error" },
      ":message": { "S.$": "States.Format('{}: {}', $.error.Error, $.error.Cause)" },
    });
    expect(values(StateNames.RecordFailure)).toMatchObject({
      ":reason": { S: "system_error" },
      ":message": { "S.$": "States.Format('{}: {}', $.error.Error, $.error.Cause)" },
    });
  });

  it("classifies a failed publish or status update like any other failure", () => {
    for (const name of [...PUBLISH_STATES, StateNames.MarkValidated, StateNames.MarkNeedsReview]) {
      expect(catchesOf(name).at(-1)).toEqual({
        ErrorEquals: ["States.ALL"],
        ResultPath: "$.error",
        Next: StateNames.ClassifyFailure,
      });
    }
  });

  it("treats a failed status condition on Mark* as done (a retried task), never retrying it", () => {
    for (const name of RECORD_STATES) {
      const [first] = retriesOf(name);
      expect(first).toEqual({ ErrorEquals: [CONDITIONAL_CHECK_FAILED], MaxAttempts: 0 });
    }
    expect(catchesOf(StateNames.MarkValidated)[0]).toEqual({
      ErrorEquals: [CONDITIONAL_CHECK_FAILED],
      ResultPath: null,
      Next: StateNames.AnnounceValidated,
    });
    expect(catchesOf(StateNames.MarkNeedsReview)[0]).toEqual({
      ErrorEquals: [CONDITIONAL_CHECK_FAILED],
      ResultPath: null,
      Next: StateNames.AnnounceNeedsReview,
    });
  });

  it.each([
    [StateNames.AnnounceValidated, OutcomeEvents.Validated, "validated", StateNames.DraftValidated],
    [
      StateNames.AnnounceNeedsReview,
      OutcomeEvents.NeedsReview,
      "needs_manual_review",
      StateNames.DraftNeedsReview,
    ],
  ])("%s puts %s on the project's bus", (name, detailType, status, next) => {
    const state = stateOf(asl, name);
    expect(state.Resource).toBe("arn:aws:states:::events:putEvents");
    expect(state.ResultPath).toBeNull();
    expect(state.Next).toBe(next);
    expect(stateOf(asl, next).Type).toBe("Succeed");
    const [entry] = (state.Parameters as { Entries: Record<string, unknown>[] }).Entries;
    expect(entry).toMatchObject({
      Source: "redraft",
      DetailType: detailType,
      EventBusName: expect.stringMatching(/event-bus\/redraft-dev$/),
      Detail: {
        "runId.$": "$.runId",
        "draftId.$": "$.draftId",
        "kind.$": "$.kind",
        status,
        "resultRef.$": "States.Format('results/{}/{}.json', $.draftId, $.runId)",
      },
    });
  });

  it("includes the reason in Draft Needs Review", () => {
    const [entry] = (
      params(StateNames.AnnounceNeedsReview) as { Entries: { Detail: Record<string, unknown> }[] }
    ).Entries;
    expect(entry?.Detail["reason.$"]).toBe("$.reason");
  });

  it("fails an announcement without overwriting the recorded outcome", () => {
    for (const name of ANNOUNCE_STATES) {
      expect(catchesOf(name)).toEqual([
        { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: StateNames.CorrectionFailed },
      ]);
    }
  });

  it("ends the failure path in a Fail state that carries the original error", () => {
    for (const name of [StateNames.RecordModelFailure, StateNames.RecordFailure]) {
      expect(stateOf(asl, name).Next).toBe(StateNames.CorrectionFailed);
      expect(catchesOf(name)).toEqual([
        {
          ErrorEquals: ["States.ALL"],
          ResultPath: "$.recordFailureError",
          Next: StateNames.CorrectionFailed,
        },
      ]);
    }
    expect(stateOf(asl, StateNames.CorrectionFailed)).toMatchObject({
      Type: "Fail",
      ErrorPath: "$.error.Error",
      CausePath: "$.error.Cause",
    });
  });

  it("bounds direct integrations in time and retries them a few times, with jitter", () => {
    for (const name of [...PUBLISH_STATES, ...RECORD_STATES, ...ANNOUNCE_STATES]) {
      expect((stateOf(asl, name) as { TimeoutSeconds?: number }).TimeoutSeconds).toBe(20);
      expect(retriesOf(name)).toContainEqual(
        expect.objectContaining({
          MaxAttempts: 3,
          BackoffRate: 2,
          MaxDelaySeconds: 20,
          JitterStrategy: "FULL",
        }),
      );
    }
  });

  it.each([
    ["S3 CopyObject", PUBLISH_STATES, S3_TRANSIENT_ERRORS, "S3.AccessDeniedException"],
    ["DynamoDB UpdateItem", RECORD_STATES, DYNAMODB_TRANSIENT_ERRORS, "DynamoDB.AmazonDynamoDBException"],
    [
      "EventBridge PutEvents",
      ANNOUNCE_STATES,
      EVENTBRIDGE_TRANSIENT_ERRORS,
      "EventBridge.AmazonEventBridgeException",
    ],
  ])(
    "%s retries only the errors of that integration that can pass, never a refusal or a validation error",
    (_, states, transient, base) => {
      for (const name of states) {
        const retried = retriesOf(name)
          .filter((r) => r.MaxAttempts !== 0)
          .flatMap((r) => r.ErrorEquals);
        expect(retried).toEqual([...transient]);
        // A permanent error reaches the Catch at once: the base exception also means AccessDenied.
        for (const permanent of ["States.ALL", "States.TaskFailed", base, CONDITIONAL_CHECK_FAILED])
          expect(retried).not.toContain(permanent);
      }
    },
  );

  it("Publish retries S3's throttling and 5xx (SlowDown and InternalError arrive as S3.S3Exception)", () => {
    for (const name of PUBLISH_STATES)
      expect(retriesOf(name)).toContainEqual(
        expect.objectContaining({ ErrorEquals: expect.arrayContaining(["S3.S3Exception"]), MaxAttempts: 3 }),
      );
  });

  it("retries a crashed or timed-out Lambda (Lambda.Unknown, Sandbox.Timedout) on every Lambda step", () => {
    // The model states' consumer is driven by SQS, which hands a crashed invocation's message over again.
    for (const name of DIRECT_LAMBDA_STATES) {
      const retried = retriesOf(name).flatMap((r) => r.ErrorEquals);
      expect(retried).toEqual(
        expect.arrayContaining([
          "Lambda.Unknown",
          "Sandbox.Timedout",
          "Lambda.ServiceException",
          "Lambda.AWSLambdaException",
          "Lambda.SdkClientException",
          "Lambda.TooManyRequestsException",
        ]),
      );
    }
  });
});
