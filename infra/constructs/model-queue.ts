import { Duration } from "aws-cdk-lib";
import {
  Alarm,
  ComparisonOperator,
  GraphWidget,
  type HorizontalAnnotation,
  MathExpression,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import type { StateMachine } from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import type { ModelStep } from "../../shared/loop/model-queue.js";
import { DEFAULT_RUN_DEADLINE_HOURS } from "../../shared/loop-settings.js";
import { acknowledge } from "../nag.js";
import { deadLetterQueue } from "./dead-letter-queue.js";
import { liveAlias, SQS_EVENT_SOURCE_MIN_CONCURRENCY } from "./functions.js";

export interface ModelQueueProps {
  /** The model functions, each with its reserved concurrency: the slots of its queue. */
  readonly functions: Record<ModelStep, LambdaFunction>;
  /** How many messages of each queue are taken at once. One function's slots = its reserved concurrency. */
  readonly slots: Record<ModelStep, number>;
  /**
   * How long a run's model work may wait for a slot, from the execution's start: the model states'
   * timeout and the deadline the consumers check before answering a 429 with a retry.
   * @default Duration.hours(DEFAULT_RUN_DEADLINE_HOURS)
   */
  readonly deadline?: Duration;
  /**
   * Alarm when the oldest message of a queue has waited this long (a backlog not draining).
   * @default Duration.hours(1)
   */
  readonly ageAlarm?: Duration;
  /** `redraft-<env>`, for the alarm's description. */
  readonly name: string;
}

/**
 * Model capacity as a queue: one SQS queue per model function (λ correct, λ judge), which the
 * state machine's model states send their work to with a task token
 * (`sqs:sendMessage.waitForTaskToken`, infra/constructs/workflow.ts) and which the function
 * consumes with `maximumConcurrency` equal to its reserved concurrency. A burst beyond the slots
 * waits in the queue, never throttled, until the run's deadline; the function answers the token
 * (functions/lib/model-queue.ts). The queue's depth and its oldest message's age are SQS's own
 * metrics (`ApproximateNumberOfMessagesVisible`, `ApproximateAgeOfOldestMessage`); the age is alarmed.
 */
export class ModelQueue extends Construct {
  readonly queues: Record<ModelStep, Queue>;
  readonly deadLetterQueue: Queue;
  readonly deadline: Duration;
  readonly alarms: Alarm[] = [];
  /** Each queue's age alarm, drawn on its dashboard graph. */
  readonly #ageAlarms: Partial<Record<ModelStep, Alarm>> = {};
  readonly #functions: LambdaFunction[];

  constructor(scope: Construct, id: string, props: ModelQueueProps) {
    super(scope, id);
    // A queue feeds each model function: fewer slots than SQS's event source takes at once would
    // have the queue throttle its own consumer. Refused here, at synth, with the setting to raise.
    for (const [step, slots] of Object.entries(props.slots)) {
      if (!Number.isInteger(slots) || slots < SQS_EVENT_SOURCE_MIN_CONCURRENCY)
        throw new RangeError(
          `the model queue of λ ${step} has ${slots} slot(s): an SQS event source takes at least ${SQS_EVENT_SOURCE_MIN_CONCURRENCY} at once, so the function needs at least ${SQS_EVENT_SOURCE_MIN_CONCURRENCY} (raise deployment.modelConcurrency in infra/config.ts)`,
        );
    }
    this.#functions = Object.values(props.functions);
    this.deadline = props.deadline ?? Duration.hours(DEFAULT_RUN_DEADLINE_HOURS);
    // A message whose consumer crashed repeatedly (not one answered 429: that one is answered and
    // re-sent by the state machine's Retry) ends here; its run then fails at the deadline.
    this.deadLetterQueue = deadLetterQueue(this, "DeadLetters");
    this.alarms.push(
      new Alarm(this, "DeadLettersAlarm", {
        alarmDescription: `redraft ${props.name}: model work landed in the model queue's dead-letter queue (its consumer kept failing); its run fails at the deadline`,
        metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(5),
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    const queueFor = (step: ModelStep): Queue => {
      const fn = props.functions[step];
      const queue = new Queue(this, step, {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        // A message may wait out the whole deadline before a slot takes it (SQS keeps up to 14 days).
        retentionPeriod: Duration.seconds(Math.max(this.deadline.toSeconds() * 2, 3600)),
        // AWS's rule for a Lambda event source: at least six times the function's timeout, so a
        // message is not handed to a second invocation while the first still runs it.
        visibilityTimeout: Duration.seconds((fn.timeout ?? Duration.minutes(3)).toSeconds() * 6),
        deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: 5 },
      });
      // Through the live alias, like every other invocation: a message runs the version deployed
      // when it is taken, never $LATEST.
      liveAlias(fn).addEventSource(
        new SqsEventSource(queue, {
          batchSize: 1,
          // Equal to the function's reserved concurrency (at least SQS's floor, checked above), so
          // the queue never hands the function more than it may run.
          maxConcurrency: props.slots[step],
          reportBatchItemFailures: true,
        }),
      );
      acknowledge(liveAlias(fn), {
        id: "Serverless-LambdaEventSourceMappingDestination",
        reason:
          "An SQS event source takes no on-failure destination: a message whose consumer keeps failing is moved by the queue's redrive policy to the model queue's DeadLetters, alarmed.",
      });
      const alarm = new Alarm(this, `${step}Age`, {
        alarmDescription: `redraft ${props.name}: model work for λ ${step} has waited over ${(props.ageAlarm ?? Duration.hours(1)).toHumanString()} for a slot`,
        metric: queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(5) }),
        threshold: (props.ageAlarm ?? Duration.hours(1)).toSeconds(),
        evaluationPeriods: 3,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      this.alarms.push(alarm);
      this.#ageAlarms[step] = alarm;
      return queue;
    };
    this.queues = { correct: queueFor("correct"), judge: queueFor("judge") };
  }

  /**
   * The dashboard's graphs of the model queues: each queue's depth (waiting for a slot, and taken by
   * a consumer whose model call is under way) and its oldest message's age against the age alarm's
   * threshold. What a person reads beside `redraft show --stack` (which reads the same depth).
   */
  dashboardWidgets(): GraphWidget[] {
    const period = Duration.minutes(1);
    return (["correct", "judge"] as const).map((step) => {
      const queue = this.queues[step];
      const waiting = queue.metricApproximateNumberOfMessagesVisible({ period, statistic: "Maximum" });
      const inFlight = queue.metricApproximateNumberOfMessagesNotVisible({ period, statistic: "Maximum" });
      const alarm = this.#ageAlarms[step];
      return new GraphWidget({
        title: `Model queue of λ ${step}: depth and oldest wait`,
        left: [
          waiting.with({ label: "waiting for a slot" }),
          inFlight.with({ label: "in a model call" }),
          new MathExpression({
            expression: "waiting + inFlight",
            usingMetrics: { waiting, inFlight },
            label: "depth",
            period,
          }),
        ],
        right: [queue.metricApproximateAgeOfOldestMessage({ period, label: "oldest message's age (s)" })],
        ...(alarm && { rightAnnotations: [alarm.toAnnotation() as HorizontalAnnotation] }),
        width: 12,
      });
    });
  }

  /** Lets the model functions answer the state machine's task tokens (SendTaskSuccess/Failure/Heartbeat). */
  grantTaskResponse(stateMachine: StateMachine): void {
    for (const fn of this.#functions) stateMachine.grantTaskResponse(fn);
  }
}
