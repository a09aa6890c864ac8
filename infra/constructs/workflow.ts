import { Duration, type RemovalPolicy } from "aws-cdk-lib";
import type { ITable } from "aws-cdk-lib/aws-dynamodb";
import type { IEventBus } from "aws-cdk-lib/aws-events";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import {
  Choice,
  Condition,
  DefinitionBody,
  Fail,
  type IChainable,
  IntegrationPattern,
  JsonPath,
  LogLevel,
  Pass,
  Result,
  StateMachine,
  StateMachineType,
  Succeed,
  TaskInput,
  type TaskStateBase,
  Timeout,
} from "aws-cdk-lib/aws-stepfunctions";
import {
  CallAwsService,
  DynamoAttributeValue,
  DynamoUpdateItem,
  EventBridgePutEvents,
  LambdaInvoke,
  SqsSendMessage,
} from "aws-cdk-lib/aws-stepfunctions-tasks";
import { Construct } from "constructs";
import { OUTCOME_EVENT_SOURCE, OutcomeEvents } from "../../contracts/events.js";
import { StateNames } from "../../contracts/state-names.js";
import { type OutcomeField, RUN_SORT_KEY, runKey, statusUpdate, timeSortKey } from "../../contracts/table.js";
import { ErrorNames } from "../../shared/errors.js";
import type { ModelStep, ModelTask } from "../../shared/loop/model-queue.js";
import type { LoopDecision } from "../../shared/loop/state.js";
import { blobKeys, RESULTS_PREFIX, RUNS_PREFIX } from "../../shared/store/bucket-layout.js";
import { ACTIVE_STATUSES, type RunStatus, type StopReason } from "../../shared/store/types.js";
import { acknowledge, referenceFinding } from "../nag.js";
import {
  CONDITIONAL_CHECK_FAILED,
  DIRECT_TASK_TIMEOUT,
  DYNAMODB_RETRY,
  EVENTBRIDGE_RETRY,
  LAMBDA_TASK_SLACK,
  MODEL_FAILURES,
  MODEL_LOAD_RETRY,
  MODEL_QUEUE_STORE_RETRY,
  MODEL_RETRY,
  modelQueueRetry,
  S3_RETRY,
  SERVICE_RETRY,
  SQS_SEND_RETRY,
} from "../retries.js";
import { liveAlias } from "./functions.js";
import type { ModelQueue } from "./model-queue.js";

export interface CorrectionWorkflowProps {
  readonly validate: LambdaFunction;
  readonly correct: LambdaFunction;
  readonly revalidate: LambdaFunction;
  readonly judge: LambdaFunction;
  readonly table: ITable;
  readonly bucket: IBucket;
  /** Where `Draft Validated` / `Draft Needs Review` are published. */
  readonly bus: IEventBus;
  /** `redraft-<env>`; also names the log group. */
  readonly stateMachineName: string;
  /**
   * A run still going after this is stopped (ExecutionsTimedOut): the loop is bounded by its
   * counters, this bounds it in time.
   * @default Duration.hours(1)
   */
  readonly timeout?: Duration;
  readonly logRetention: RetentionDays;
  /**
   * What the execution log keeps: every state (`ALL`) or failures only (`ERROR`), with or without
   * the states' input and output (drafts and results). Nothing counts outcomes from this log.
   * @default { level: "ERROR", includeExecutionData: false }
   */
  readonly logs?: { level: "ALL" | "ERROR" | "FATAL" | "OFF"; includeExecutionData: boolean };
  readonly removalPolicy: RemovalPolicy;
  /**
   * Model work waits for a slot in this queue (Correct and Judge send it with a task token) instead
   * of invoking the model functions directly; the state machine's timeout grows by its deadline.
   * @default the model states invoke λ correct and λ judge directly
   */
  readonly modelQueue?: ModelQueue;
}

/** `{}` placeholders for `States.Format`, built from the table helpers so the formats cannot drift. */
const runPk = runKey("{}").pk;
const statusSortFormat = timeSortKey("{}", "{}");
const resultKeyFormat = blobKeys.result("{}", "{}");

/**
 * The correction workflow: Validate → HasErrors? → (CorrectExecution → CountExecutionAttempt →
 * Revalidate → NextStep?)* → publish, record and announce the outcome. The loop's stop rules are
 * Choice branches a person can follow in the console; the Lambdas compute verdicts, never routes.
 */
export class CorrectionWorkflow extends Construct {
  readonly stateMachine: StateMachine;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: CorrectionWorkflowProps) {
    super(scope, id);
    const { bucket } = props;

    const graph = new CorrectionGraph(this, "Graph", {
      ...props,
      ...(props.modelQueue && {
        modelQueue: { queues: props.modelQueue.queues, deadline: props.modelQueue.deadline },
      }),
    });
    const definition = graph.start;

    // ── State machine ────────────────────────────────────────────────────────────────────────
    this.logGroup = new LogGroup(this, "Logs", {
      // The vendedlogs prefix keeps CloudWatch Logs' resource policy from growing with every machine.
      logGroupName: `/aws/vendedlogs/states/${props.stateMachineName}`,
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.stateMachine = new StateMachine(this, "StateMachine", {
      stateMachineName: props.stateMachineName,
      stateMachineType: StateMachineType.STANDARD,
      comment:
        "redraft: validate a draft, correct its error-severity violations within bounds, escalate the rest",
      definitionBody: DefinitionBody.fromChainable(definition),
      // The work's own bound, plus the longest its model work may wait for a slot.
      timeout: (props.timeout ?? Duration.hours(1)).plus(props.modelQueue?.deadline ?? Duration.seconds(0)),
      tracingEnabled: true,
      logs: {
        destination: this.logGroup,
        level: LogLevel[props.logs?.level ?? "ERROR"],
        includeExecutionData: props.logs?.includeExecutionData ?? false,
      },
    });

    if ((props.logs?.level ?? "ERROR") !== "ALL") {
      acknowledge(this.stateMachine, {
        id: "AwsSolutions-SF1",
        reason:
          "Per environment on purpose: this one logs failures only, so drafts and results stay out of the log; " +
          "outcomes are counted by the Lambdas' metrics and each run's history is in its run record.",
      });
    }
    acknowledge(
      this.stateMachine,
      {
        id: "AwsSolutions-IAM5[Resource::*]",
        reason:
          "Log delivery (logs:CreateLogDelivery…) and X-Ray actions support no resource-level permissions.",
      },
      {
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, `/${RUNS_PREFIX}*`)}]`,
        reason: "The best draft to publish is any attempt of this run under runs/ (keyed by run id).",
      },
      {
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, `/${RESULTS_PREFIX}*`)}]`,
        reason: "Published drafts go to results/<draftId>/<runId>.json, named at run time.",
      },
    );
    props.modelQueue?.grantTaskResponse(this.stateMachine);
  }
}

export interface CorrectionGraphProps {
  readonly validate: LambdaFunction;
  readonly correct: LambdaFunction;
  readonly revalidate: LambdaFunction;
  readonly judge: LambdaFunction;
  readonly table: ITable;
  readonly bucket: IBucket;
  readonly bus: IEventBus;
  /**
   * Where the run id is, for the failure records. @default `$$.Execution.Name` (a per-draft execution
   * is named after its run)
   */
  readonly runId?: string;
  /** Validate's payload. @default `{ runId: $$.Execution.Name, input: $ }` */
  readonly validatePayload?: Record<string, unknown>;
  /** The payload of the model steps (CorrectExecution, CorrectLogic, Judge). @default the loop state */
  readonly modelStepPayload?: (step: "correct" | "judge") => Record<string, unknown> | undefined;
  /**
   * Whether the model steps retry transient model errors themselves (MODEL_RETRY). Batch pricing
   * retries them in the next round instead. @default true
   */
  readonly retryModelCalls?: boolean;
  /** What follows each model step before the loop goes on (batch pricing: an item parked for its batch). */
  readonly afterModelStep?: (step: string, next: IChainable) => IChainable;
  /**
   * The queues the model states send their work to with a task token, and the run's deadline.
   * @default the model states invoke the functions directly (LambdaInvoke)
   */
  readonly modelQueue?: { queues: Record<ModelStep, IQueue>; deadline: Duration };
  /** Where the graph starts, given its entry states. @default Validate */
  readonly entry?: (states: {
    validate: IChainable;
    correctExecution: IChainable;
    judge: IChainable;
    correctLogic: IChainable;
  }) => IChainable;
}

/**
 * The correction loop's states, from Validate to the outcome: the per-draft state machine's whole
 * definition, and the item processor of a batch-priced round (infra/constructs/batch-rounds.ts),
 * which enters it where an item waits and leaves it where a model call goes into a batch. One graph,
 * so the stop rules' Choice states exist once whichever way a draft is corrected.
 */
export class CorrectionGraph extends Construct {
  /** The first state. */
  readonly start: IChainable;

  constructor(scope: Construct, id: string, props: CorrectionGraphProps) {
    super(scope, id);
    const { table, bucket, bus } = props;

    // ── Failure path ─────────────────────────────────────────────────────────────────────────
    const correctionFailed = new Fail(this, StateNames.CorrectionFailed, {
      comment: "A system or model failure the retries did not cure; the run record says why.",
      errorPath: "$.error.Error",
      causePath: "$.error.Cause",
    });
    // The run id is the execution name, so a failure is recorded even before Validate returned a state,
    // once Validate registered the run. A failure before that finds no item (the condition fails):
    // the execution fails, which the ExecutionsFailed alarm reports, and the logs say why.
    // Only a run still under way is failed here: an outcome already recorded (or the finalizer's
    // `failed`) stands, the condition fails and the execution ends in CorrectionFailed.
    const failureRecord = (name: string, reason: StopReason) => {
      const task = this.statusUpdateTask(name, "failed", table, {
        runId: props.runId ?? JsonPath.executionName,
        from: ACTIVE_STATUSES,
        fields: {
          reason: DynamoAttributeValue.fromString(reason),
          message: DynamoAttributeValue.fromString(
            JsonPath.format("{}: {}", JsonPath.stringAt("$.error.Error"), JsonPath.stringAt("$.error.Cause")),
          ),
        },
      });
      task.addCatch(correctionFailed, { errors: ["States.ALL"], resultPath: "$.recordFailureError" });
      task.next(correctionFailed);
      return task;
    };
    // A model failure that outlived its retries is recorded as such, like the in-process loop does.
    const recordFailure = new Choice(this, StateNames.ClassifyFailure, {
      comment: "A model failure (after its retries) or a system fault: the run record says which.",
    })
      .when(
        Condition.or(...MODEL_FAILURES.map((name) => Condition.stringEquals("$.error.Error", name))),
        failureRecord(StateNames.RecordModelFailure, "model_error"),
      )
      .otherwise(failureRecord(StateNames.RecordFailure, "system_error"));
    const toFailure = { errors: ["States.ALL"], resultPath: "$.error" };
    // Only a graph whose model work waits in a queue can pass its deadline.
    const recordDeadline = props.modelQueue && failureRecord(StateNames.RecordDeadline, "deadline");
    // A model state that waited past the run's deadline: the consumer said so, or the state's own
    // timeout (the deadline) ended the wait. Caught before the catch-all.
    const toDeadline = {
      errors: [ErrorNames.DeadlinePassed, "States.Timeout"],
      resultPath: "$.error",
    };

    // ── Lambda steps ─────────────────────────────────────────────────────────────────────────
    const validate = this.lambdaStep(
      StateNames.Validate,
      props.validate,
      props.validatePayload ?? { runId: JsonPath.executionName, input: JsonPath.entirePayload },
    );
    validate.addRetry(SERVICE_RETRY);
    validate.addCatch(recordFailure, toFailure);

    const modelRetry = props.retryModelCalls ?? true;
    const modelStep = (name: string, fn: LambdaFunction, step: ModelStep): TaskStateBase => {
      const queue = props.modelQueue;
      if (queue && recordDeadline) {
        const task = this.queuedStep(name, step, queue.queues[step], queue.deadline);
        task.addRetry(modelQueueRetry(queue.deadline));
        task.addRetry(MODEL_QUEUE_STORE_RETRY);
        task.addRetry(SQS_SEND_RETRY);
        task.addCatch(recordDeadline, toDeadline);
        task.addCatch(recordFailure, toFailure);
        return task;
      }
      const task = this.lambdaStep(name, fn, props.modelStepPayload?.(step));
      if (modelRetry) task.addRetry(MODEL_RETRY);
      task.addRetry(MODEL_LOAD_RETRY);
      task.addCatch(recordFailure, toFailure);
      return task;
    };
    const correctExecution = modelStep(StateNames.CorrectExecution, props.correct, "correct");

    const countExecutionAttempt = new Pass(this, StateNames.CountExecutionAttempt, {
      comment: "One more execution-phase correction made; the Choice states compare it with the limit.",
      parameters: {
        execution: JsonPath.mathAdd(JsonPath.numberAt("$.counters.execution"), 1),
        logic: JsonPath.numberAt("$.counters.logic"),
      },
      resultPath: "$.counters",
    });

    const revalidate = this.lambdaStep(StateNames.Revalidate, props.revalidate);
    revalidate.addRetry(SERVICE_RETRY);
    revalidate.addCatch(recordFailure, toFailure);

    // Logic phase: its own states and its own counter, so the console shows which loop runs.
    const judge = modelStep(StateNames.Judge, props.judge, "judge");
    const correctLogic = modelStep(StateNames.CorrectLogic, props.correct, "correct");
    const countLogicAttempt = new Pass(this, StateNames.CountLogicAttempt, {
      comment: "One more logic-phase correction made; HasCriticalFindings? compares it with its own limit.",
      parameters: {
        execution: JsonPath.numberAt("$.counters.execution"),
        logic: JsonPath.mathAdd(JsonPath.numberAt("$.counters.logic"), 1),
      },
      resultPath: "$.counters",
    });
    const revalidateLogic = this.lambdaStep(StateNames.RevalidateLogic, props.revalidate);
    revalidateLogic.addRetry(SERVICE_RETRY);
    revalidateLogic.addCatch(recordFailure, toFailure);

    // ── Outcome paths ────────────────────────────────────────────────────────────────────────
    const resultKey = JsonPath.format(
      resultKeyFormat,
      JsonPath.stringAt("$.draftId"),
      JsonPath.stringAt("$.runId"),
    );
    const publishCorrected = this.publishTask(StateNames.PublishCorrectedDraft, bucket, resultKey);
    const publishBest = this.publishTask(StateNames.PublishBestDraft, bucket, resultKey);
    const outcomeFields = {
      finalRef: DynamoAttributeValue.fromString(JsonPath.stringAt("$.best.draftRef")),
      resultRef: DynamoAttributeValue.fromString(resultKey),
    };
    const markValidated = this.statusUpdateTask(StateNames.MarkValidated, "validated", table, {
      runId: JsonPath.stringAt("$.runId"),
      fields: outcomeFields,
    });
    const markNeedsReview = this.statusUpdateTask(StateNames.MarkNeedsReview, "needs_manual_review", table, {
      runId: JsonPath.stringAt("$.runId"),
      fields: { reason: DynamoAttributeValue.fromString(JsonPath.stringAt("$.reason")), ...outcomeFields },
    });
    const announceValidated = this.announceTask(StateNames.AnnounceValidated, bus, OutcomeEvents.Validated, {
      status: "validated" satisfies RunStatus,
      resultRef: resultKey,
    });
    const announceNeedsReview = this.announceTask(
      StateNames.AnnounceNeedsReview,
      bus,
      OutcomeEvents.NeedsReview,
      {
        status: "needs_manual_review" satisfies RunStatus,
        reason: JsonPath.stringAt("$.reason"),
        resultRef: resultKey,
      },
    );

    // A retried Mark* finds the status already in place (the condition fails): that is success.
    // Catchers are tried in order, so this one comes before the catch-all.
    markValidated.addCatch(announceValidated, {
      errors: [CONDITIONAL_CHECK_FAILED],
      resultPath: JsonPath.DISCARD,
    });
    markNeedsReview.addCatch(announceNeedsReview, {
      errors: [CONDITIONAL_CHECK_FAILED],
      resultPath: JsonPath.DISCARD,
    });
    for (const task of [publishCorrected, publishBest, markValidated, markNeedsReview]) {
      task.addCatch(recordFailure, toFailure);
    }
    // The outcome is already recorded when an announcement fails: fail the execution (and alarm)
    // without RecordFailure turning a validated run into a failed one.
    for (const task of [announceValidated, announceNeedsReview]) {
      task.addCatch(correctionFailed, toFailure);
    }

    const validatedPath = publishCorrected
      .next(markValidated)
      .next(announceValidated)
      .next(new Succeed(this, StateNames.DraftValidated, { comment: "No error-severity violation left." }));
    const reviewPath = publishBest
      .next(markNeedsReview)
      .next(announceNeedsReview)
      .next(
        new Succeed(this, StateNames.DraftNeedsReview, {
          comment: "The best draft waits for a person; $.reason says why.",
        }),
      );

    const stopFor = (name: string, reason: StopReason, comment: string) =>
      new Pass(this, name, { comment, result: Result.fromString(reason), resultPath: "$.reason" }).next(
        reviewPath,
      );
    const maxAttemptsReached = stopFor(
      StateNames.MaxAttemptsReached,
      "max_attempts",
      "Every correction the limits allow was made.",
    );

    // ── Routing ──────────────────────────────────────────────────────────────────────────────
    // Errors left are compared with the limit here, visibly: the Lambdas report, the Choices decide.
    const noErrors = Condition.numberEquals("$.verdict.errors", 0);
    const logicUnresolved = stopFor(
      StateNames.LogicUnresolved,
      "logic_unresolved",
      "The judge's critical findings outlived the logic budget (or the judge gave no usable verdict).",
    );
    const budgetExhausted = stopFor(
      StateNames.BudgetExhausted,
      "budget_exhausted",
      "The run's token or cost budget is spent.",
    );
    const hasCriticalFindings = new Choice(this, StateNames.HasCriticalFindings, {
      comment: "Only error findings at or above the confidence threshold, not accepted by the draft, block.",
    })
      .when(Condition.booleanEquals("$.judge.failed", true), logicUnresolved)
      .when(Condition.numberEquals("$.judge.blocking", 0), validatedPath)
      .when(Condition.booleanEquals("$.verdict.budgetExhausted", true), budgetExhausted)
      .when(
        Condition.numberGreaterThanEqualsJsonPath("$.counters.logic", "$.limits.maxLogicAttempts"),
        logicUnresolved,
      )
      .otherwise(correctLogic);
    // The judge needs a model, like any correction; without one the draft is validated as checked.
    const judgeEnabled = new Choice(this, StateNames.JudgeEnabled, {
      comment: "The logic phase runs when the pack, the deployment or the draft turned the judge on.",
    })
      .when(
        Condition.and(
          Condition.booleanEquals("$.judge.enabled", true),
          Condition.booleanEquals("$.modelAvailable", true),
        ),
        judge,
      )
      .otherwise(validatedPath);
    const after = props.afterModelStep ?? ((_step: string, next: IChainable) => next);
    judge.next(after(StateNames.Judge, hasCriticalFindings));
    const attemptsUsedUp = Condition.numberGreaterThanEqualsJsonPath(
      "$.counters.execution",
      "$.limits.maxAttempts",
    );

    const hasErrors = new Choice(this, StateNames.HasErrors, {
      comment: "Severity filter: only error-severity violations go on to correction; warnings pass.",
    })
      .when(
        Condition.stringEquals("$.decision", "rejected" satisfies LoopDecision),
        new Succeed(this, StateNames.InputRejected, {
          comment: "Bad input: Validate recorded the run as rejected with its reason. Nothing to retry.",
        }),
      )
      .when(
        Condition.stringEquals("$.decision", "duplicate" satisfies LoopDecision),
        new Succeed(this, StateNames.DuplicateIgnored, {
          comment: "A repeated delivery of content another run already handles.",
        }),
      )
      .when(noErrors, judgeEnabled)
      .when(
        Condition.booleanEquals("$.modelAvailable", false),
        stopFor(StateNames.NoModelConfigured, "no_model", "Errors to correct but no model configured."),
      )
      .when(attemptsUsedUp, maxAttemptsReached)
      .otherwise(correctExecution);

    const nextStep = new Choice(this, StateNames.NextStep, {
      comment:
        "Stop rules in order: validated, circuit breaker, stuck, budget, attempts used up; else correct again.",
    })
      .when(noErrors, judgeEnabled)
      .when(
        Condition.booleanEquals("$.verdict.breakerTripped", true),
        stopFor(
          StateNames.CircuitBreakerTripped,
          "circuit_breaker",
          "The same rule failed in every attempt.",
        ),
      )
      .when(
        Condition.booleanEquals("$.verdict.stuck", true),
        stopFor(StateNames.StuckNoImprovement, "stuck", "Consecutive attempts did not beat the best so far."),
      )
      .when(Condition.booleanEquals("$.verdict.budgetExhausted", true), budgetExhausted)
      .when(attemptsUsedUp, maxAttemptsReached)
      .otherwise(correctExecution);

    correctExecution.next(after(StateNames.CorrectExecution, countExecutionAttempt));
    countExecutionAttempt.next(revalidate).next(nextStep);
    // After a logic fix the execution checks run again, then NextStep? routes as for any attempt.
    correctLogic.next(after(StateNames.CorrectLogic, countLogicAttempt));
    countLogicAttempt.next(revalidateLogic).next(nextStep);
    validate.next(hasErrors);
    this.start = props.entry?.({ validate, correctExecution, judge, correctLogic }) ?? validate;
  }

  /** A Lambda step whose output is the returned LoopState itself (`$.Payload`). */
  private lambdaStep(name: string, fn: LambdaFunction, payload?: Record<string, unknown>): LambdaInvoke {
    return new LambdaInvoke(this, name, {
      lambdaFunction: liveAlias(fn),
      ...(payload && { payload: TaskInput.fromObject(payload) }),
      // Lambda's own timeout ends the call first in the cloud; an explicit bound keeps runtimes
      // that default Task states to 60 s (aws-local-stepfunctions) from cutting a model call short.
      taskTimeout: Timeout.duration((fn.timeout ?? Duration.minutes(5)).plus(LAMBDA_TASK_SLACK)),
      outputPath: "$.Payload",
      // Retried explicitly (SERVICE_RETRY / MODEL_LOAD_RETRY), with jitter and the store's transient error.
      retryOnServiceExceptions: false,
    });
  }

  /**
   * A model step through the model queue: its loop state sent with a task token to the step's
   * queue, the state's output being what the consumer answers (SendTaskSuccess: the next loop
   * state). The wait, in the queue and in the call, is bounded by the run's deadline.
   */
  private queuedStep(name: string, step: ModelStep, queue: IQueue, deadline: Duration): SqsSendMessage {
    const body: Record<keyof ModelTask, unknown> = {
      taskToken: JsonPath.taskToken,
      step,
      startedAt: JsonPath.stringAt("$$.Execution.StartTime"),
      deadlineSeconds: deadline.toSeconds(),
      state: JsonPath.entirePayload,
    };
    return new SqsSendMessage(this, name, {
      comment: `Waits for a slot of λ ${step} in its queue; the function answers the task token.`,
      queue,
      integrationPattern: IntegrationPattern.WAIT_FOR_TASK_TOKEN,
      messageBody: TaskInput.fromObject(body),
      taskTimeout: Timeout.duration(deadline),
    });
  }

  /** s3:CopyObject of the best draft (under runs/) to `results/<draftId>/<runId>.json`; never the original. */
  private publishTask(name: string, bucket: IBucket, resultKey: string): CallAwsService {
    const task = new CallAwsService(this, name, {
      comment: "Publish the best draft under results/; the upload under drafts/ is never overwritten.",
      service: "s3",
      action: "copyObject",
      parameters: {
        Bucket: bucket.bucketName,
        CopySource: JsonPath.format(`${bucket.bucketName}/{}`, JsonPath.stringAt("$.best.draftRef")),
        Key: resultKey,
      },
      iamAction: "s3:PutObject",
      iamResources: [bucket.arnForObjects(`${RESULTS_PREFIX}*`)],
      additionalIamStatements: [
        new PolicyStatement({
          // The copy keeps the source's retention tag (TaggingDirective COPY), which reads and writes tags.
          actions: ["s3:GetObject", "s3:GetObjectTagging"],
          resources: [bucket.arnForObjects(`${RUNS_PREFIX}*`)],
        }),
        new PolicyStatement({
          actions: ["s3:PutObjectTagging"],
          resources: [bucket.arnForObjects(`${RESULTS_PREFIX}*`)],
        }),
      ],
      resultPath: JsonPath.DISCARD,
      taskTimeout: Timeout.duration(DIRECT_TASK_TIMEOUT),
    });
    task.addRetry(S3_RETRY);
    return task;
  }

  /**
   * The UpdateItem `statusUpdate(status, fields)` from table.ts describes, with its values taken
   * from the state: the run id, the state's entry time as the change's time, and each field.
   */
  private statusUpdateTask(
    name: string,
    status: RunStatus,
    table: ITable,
    values: {
      runId: string;
      fields: Partial<Record<OutcomeField, DynamoAttributeValue>>;
      /** Move the run only from one of these statuses (default: from any other). */
      from?: readonly RunStatus[];
    },
  ): DynamoUpdateItem {
    const update = statusUpdate(status, Object.keys(values.fields) as OutcomeField[], {
      ...(values.from && { from: values.from }),
    });
    const n = update.valueNames;
    const at = JsonPath.stateEnteredTime;
    const attributeValues: Record<string, DynamoAttributeValue> = {
      [n.statusSort]: DynamoAttributeValue.fromString(JsonPath.format(statusSortFormat, at, values.runId)),
      [n.at]: DynamoAttributeValue.fromString(at),
      [n.transition]: DynamoAttributeValue.fromList([
        DynamoAttributeValue.fromMap({
          status: DynamoAttributeValue.fromString(status),
          at: DynamoAttributeValue.fromString(at),
        }),
      ]),
    };
    for (const [placeholder, value] of Object.entries(update.fixedValues)) {
      attributeValues[placeholder] = DynamoAttributeValue.fromString(value);
    }
    for (const [field, placeholder] of Object.entries(n.fields) as [OutcomeField, string][]) {
      const value = values.fields[field];
      if (value) attributeValues[placeholder] = value;
    }
    const task = new DynamoUpdateItem(this, name, {
      table,
      key: {
        pk: DynamoAttributeValue.fromString(JsonPath.format(runPk, values.runId)),
        sk: DynamoAttributeValue.fromString(RUN_SORT_KEY),
      },
      updateExpression: update.UpdateExpression,
      conditionExpression: update.ConditionExpression,
      expressionAttributeNames: update.ExpressionAttributeNames,
      expressionAttributeValues: attributeValues,
      resultPath: JsonPath.DISCARD,
      taskTimeout: Timeout.duration(DIRECT_TASK_TIMEOUT),
    });
    // Never retry a failed condition: the status it wanted is already in place.
    task.addRetry({ errors: [CONDITIONAL_CHECK_FAILED], maxAttempts: 0 });
    task.addRetry(DYNAMODB_RETRY);
    return task;
  }

  /** events:PutEvents of one outcome event on the project's bus. */
  private announceTask(
    name: string,
    bus: IEventBus,
    detailType: string,
    fields: Record<string, unknown>,
  ): EventBridgePutEvents {
    const task = new EventBridgePutEvents(this, name, {
      entries: [
        {
          eventBus: bus,
          source: OUTCOME_EVENT_SOURCE,
          detailType,
          detail: TaskInput.fromObject({
            runId: JsonPath.stringAt("$.runId"),
            draftId: JsonPath.stringAt("$.draftId"),
            kind: JsonPath.stringAt("$.kind"),
            // A repaired run says so where its outcome is announced, not only in its records.
            repairs: JsonPath.numberAt("$.best.repairs"),
            // The last grounding check, bounded: per field whether the source supports it and where.
            grounding: JsonPath.objectAt("$.judge.grounding"),
            ...fields,
          }),
        },
      ],
      resultPath: JsonPath.DISCARD,
      taskTimeout: Timeout.duration(DIRECT_TASK_TIMEOUT),
    });
    task.addRetry(EVENTBRIDGE_RETRY);
    return task;
  }
}
