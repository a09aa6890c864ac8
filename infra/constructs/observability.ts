import { Annotations, Duration } from "aws-cdk-lib";
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type HorizontalAnnotation,
  type IMetric,
  MathExpression,
  Metric,
  SingleValueWidget,
  TextWidget,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { ITable } from "aws-cdk-lib/aws-dynamodb";
import { type IEventBus, Rule } from "aws-cdk-lib/aws-events";
import { LambdaFunction as LambdaTarget } from "aws-cdk-lib/aws-events-targets";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import { SqsDestination } from "aws-cdk-lib/aws-lambda-destinations";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { type ITopic, Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import { type IQueue, Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import type { StateMachine } from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { OUTCOME_EVENT_SOURCE, OutcomeEvents } from "../../contracts/events.js";
import {
  COST_METRIC,
  METRIC_NAMESPACE,
  OUTCOME_METRICS,
  type OutcomeStatus,
  SERVICE_NAME,
} from "../../contracts/metric-names.js";
import { acknowledge } from "../nag.js";
import { deadLetterQueue } from "./dead-letter-queue.js";
import { liveAlias } from "./functions.js";

export { METRIC_NAMESPACE };

/** The EMF metrics' dimensions per kind and reason (Powertools adds `service`). */
const EMF_DIMENSIONS = "{Redraft,kind,service}";
const OUTCOME_DIMENSIONS = "{Redraft,kind,reason,service}";

/** A function's error rate alarms above this share of its invocations… */
const ERROR_RATE_THRESHOLD = 0.05;
/** …in a five-minute period with at least this many invocations. */
const ERROR_RATE_MIN_INVOCATIONS = 20;
/** λ outcome's retry queue: how long a message is hidden while one is tried (6 × its 30 s timeout). */
const OUTCOME_RETRY_VISIBILITY = Duration.minutes(3);
/** An outcome waiting this long for its retry is alarmed on, well before its dead letter. */
const OUTCOME_RETRY_AGE_ALARM = Duration.hours(1);

const pct = (share: number): string => `${Math.round(share * 1000) / 10}%`;

/** Table operations the steps and listings send, for the throttled-requests alarm. */
const TABLE_OPERATIONS = ["GetItem", "PutItem", "UpdateItem", "Query", "BatchGetItem"] as const;

export interface ObservabilityProps {
  readonly envName: string;
  readonly stateMachine: StateMachine;
  /** The functions whose errors and throttles are alarmed on, by name. */
  readonly functions: Record<string, LambdaFunction>;
  /** λ outcome: subscribed here to the outcome events and the failed executions. */
  readonly outcome: LambdaFunction;
  /** The project's bus, where `Draft Validated` / `Draft Needs Review` are published. */
  readonly bus: IEventBus;
  readonly table: ITable;
  /** The trigger rules' dead-letter queue. */
  readonly deadLetterQueue: Queue;
  /** λ finalize's dead-letter queue: stopped executions whose run could not be finalized. */
  readonly finalizerDeadLetterQueue: Queue;
  /** The batch state machine and λ batch's dead-letter queue (stopped batches it could not finish). */
  readonly batches?: { stateMachine: StateMachine; deadLetterQueue: Queue } | undefined;
  /** An e-mail subscription on the alarm topic. */
  readonly alarmEmail?: string | undefined;
  /** An existing topic every alarm also notifies. */
  readonly alarmTopicArn?: string | undefined;
  /** A topic of the team's every alarm also notifies (RedraftProps.alarmTopic). */
  readonly alarmTopic?: ITopic | undefined;
  /** Alarm when NeedsReview / (Validated + NeedsReview) over an hour is above this share… */
  readonly reviewRateThreshold: number;
  /** …and at least this many runs finished in that hour. */
  readonly reviewRateMinRuns: number;
  /** Alarm when the model spend of one hour is above this (scaled to the expected volume by the stack). */
  readonly hourlyCostUsd: number;
  /** Alarm when Failed / (every outcome) over an hour is above this share (and reviewRateMinRuns ended). */
  readonly failureRateThreshold: number;
}

/**
 * Metrics, a dashboard and alarms for one environment. Outcomes are counted by the handlers as
 * embedded metrics (λ validate for rejections, λ outcome for the rest), never from the execution
 * log. Every alarm notifies one SSL-only SNS topic whose subscriber comes from the configuration.
 */
export class Observability extends Construct {
  readonly alarmTopic: Topic;
  /** λ outcome's failed invocations (its on-failure destination) and undelivered events, retried by it. */
  readonly outcomeRetries: Queue;
  /** What λ outcome's retry queue could not pass in a day. */
  readonly outcomeDeadLetters: Queue;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];
  readonly outcomeMetrics: Record<OutcomeStatus, Metric>;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const { stateMachine } = props;

    this.alarmTopic = new Topic(this, "AlarmTopic", {
      displayName: `redraft ${props.envName} alarms`,
      enforceSSL: true,
    });
    if (props.alarmEmail) this.alarmTopic.addSubscription(new EmailSubscription(props.alarmEmail));
    const external = props.alarmTopicArn
      ? Topic.fromTopicArn(this, "ExternalAlarmTopic", props.alarmTopicArn)
      : undefined;
    if (!props.alarmEmail && !external && !props.alarmTopic) {
      Annotations.of(this.alarmTopic).addWarningV2(
        "redraft:alarms-unsubscribed",
        `redraft ${props.envName}: no alarmEmail or alarmTopicArn is configured, so alarms reach nobody ` +
          "(set one in infra/config.ts, or -c alarmEmail=… / -c alarmTopicArn=…)",
      );
    }

    // ── λ outcome's retries: a failed count or hold is retried, never dropped ─────────────────
    // An invocation that fails (after Lambda's two retries) goes to the retry queue, which λ outcome
    // consumes one message at a time for a day; what fails all day lands in the dead-letter queue
    // (alarmed), kept 14 days. An event EventBridge could not deliver goes to the same retry queue.
    this.outcomeDeadLetters = deadLetterQueue(this, "OutcomeDeadLetters");
    this.outcomeRetries = new Queue(this, "OutcomeRetries", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(4),
      // Six times the function's timeout, as Lambda's SQS event source asks.
      visibilityTimeout: OUTCOME_RETRY_VISIBILITY,
      deadLetterQueue: {
        queue: this.outcomeDeadLetters,
        maxReceiveCount: Math.ceil(Duration.days(1).toSeconds() / OUTCOME_RETRY_VISIBILITY.toSeconds()),
      },
    });
    const outcome = liveAlias(props.outcome);
    outcome.configureAsyncInvoke({
      onFailure: new SqsDestination(this.outcomeRetries),
      retryAttempts: 2,
      maxEventAge: Duration.hours(6),
    });
    outcome.addEventSource(
      new SqsEventSource(this.outcomeRetries, { batchSize: 1, reportBatchItemFailures: true }),
    );
    acknowledge(outcome, {
      id: "Serverless-LambdaEventSourceMappingDestination",
      reason:
        "An SQS event source takes no on-failure destination: a message that keeps failing is moved by the retry queue's redrive policy to OutcomeDeadLetters, alarmed.",
    });
    const outcomeTarget = () =>
      new LambdaTarget(outcome, { retryAttempts: 8, deadLetterQueue: this.outcomeRetries });

    // ── Outcomes, counted by λ outcome from the events that announce them ────────────────────
    new Rule(this, "OutcomeAnnounced", {
      description: "Count validated and needs-review runs and reviewers' decisions (λ outcome)",
      eventBus: props.bus,
      eventPattern: {
        source: [OUTCOME_EVENT_SOURCE],
        detailType: [OutcomeEvents.Validated, OutcomeEvents.NeedsReview, OutcomeEvents.Reviewed],
      },
      targets: [outcomeTarget()],
    });
    // An approval (a `Draft Reviewed` the run item bears out) is announced as `Draft Validated` by
    // λ outcome: the reviewer policy puts only `Draft Reviewed`.
    props.outcome.addEnvironment("EVENT_BUS_NAME", props.bus.eventBusName);
    props.outcome.addToRolePolicy(
      new PolicyStatement({
        actions: ["events:PutEvents"],
        resources: [props.bus.eventBusArn],
        conditions: {
          StringEquals: {
            "events:detail-type": OutcomeEvents.Validated,
            "events:source": OUTCOME_EVENT_SOURCE,
          },
        },
      }),
    );
    new Rule(this, "ExecutionStopped", {
      description: "Count failed, timed-out and aborted runs (λ outcome)",
      eventPattern: {
        source: ["aws.states"],
        detailType: ["Step Functions Execution Status Change"],
        detail: {
          stateMachineArn: [stateMachine.stateMachineArn],
          status: ["FAILED", "TIMED_OUT", "ABORTED"],
        },
      },
      targets: [outcomeTarget()],
    });

    const hourly = Duration.hours(1);
    const fiveMinutes = Duration.minutes(5);
    // The aggregates carry only Powertools' service dimension: one metric per outcome, every kind.
    const total = (metricName: string, period: Duration) =>
      new Metric({
        namespace: METRIC_NAMESPACE,
        metricName,
        dimensionsMap: { service: SERVICE_NAME },
        statistic: "Sum",
        period,
      });
    this.outcomeMetrics = {
      validated: total(OUTCOME_METRICS.validated, hourly),
      needs_manual_review: total(OUTCOME_METRICS.needs_manual_review, hourly),
      rejected: total(OUTCOME_METRICS.rejected, hourly),
      failed: total(OUTCOME_METRICS.failed, hourly),
    };
    const costUsd = (period: Duration) =>
      new MathExpression({
        expression: "FILL(micro, 0) / 1000000",
        usingMetrics: { micro: total(COST_METRIC, period) },
        label: "Model cost (USD)",
        period,
      });

    const reviewRate = new MathExpression({
      expression: `IF((FILL(v, 0) + FILL(r, 0)) >= ${props.reviewRateMinRuns}, FILL(r, 0) / (FILL(v, 0) + FILL(r, 0)), 0)`,
      usingMetrics: { v: this.outcomeMetrics.validated, r: this.outcomeMetrics.needs_manual_review },
      label: "NeedsReview / (Validated + NeedsReview)",
      period: hourly,
    });

    // ── Alarms ────────────────────────────────────────────────────────────────────────────────
    // Rates and ages, never "one in five minutes": at a million drafts a day single failures are
    // normal and a burst is a backlog (model work waits for a slot), so nothing here fires by design
    // under normal load. Throttles are not alarmed on (they are how reserved concurrency and the
    // Step Functions quotas pace a burst); they stay on the dashboard. Every alarm says OK again too.
    const notify = [
      new SnsAction(this.alarmTopic),
      ...(external ? [new SnsAction(external)] : []),
      ...(props.alarmTopic ? [new SnsAction(props.alarmTopic)] : []),
    ];
    const alarm = (
      name: string,
      metric: IMetric,
      threshold: number,
      description: string,
      sustained: { evaluationPeriods: number; datapointsToAlarm: number } = {
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
      },
      comparisonOperator = ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    ) => {
      const created = new Alarm(this, name, {
        alarmDescription: `redraft ${props.envName}: ${description}`,
        metric,
        threshold,
        ...sustained,
        comparisonOperator,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(...notify);
      created.addOkAction(...notify);
      this.alarms.push(created);
      return created;
    };
    const sum = { period: fiveMinutes, statistic: "Sum" };
    const fifteenMinutes = { evaluationPeriods: 3, datapointsToAlarm: 3 };

    // Outcomes: the share of runs that failed, and the share that needed review, over an hour.
    const outcomes = this.outcomeMetrics;
    alarm(
      "FailureRate",
      new MathExpression({
        expression: `IF((FILL(v, 0) + FILL(r, 0) + FILL(j, 0) + FILL(f, 0)) >= ${props.reviewRateMinRuns}, FILL(f, 0) / (FILL(v, 0) + FILL(r, 0) + FILL(j, 0) + FILL(f, 0)), 0)`,
        usingMetrics: {
          v: outcomes.validated,
          r: outcomes.needs_manual_review,
          j: outcomes.rejected,
          f: outcomes.failed,
        },
        label: "Failed / every outcome",
        period: hourly,
      }),
      props.failureRateThreshold,
      `more than ${pct(props.failureRateThreshold)} of the runs that ended in the last hour failed (failed, timed out or aborted; each run record says why)`,
      undefined,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
    );
    const reviewRateAlarm = alarm(
      "ManualReviewRate",
      reviewRate,
      props.reviewRateThreshold,
      `more than ${pct(props.reviewRateThreshold)} of finished runs needed manual review in the last hour`,
      undefined,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
    );
    const costAlarm = alarm(
      "HourlyModelCost",
      costUsd(hourly),
      props.hourlyCostUsd,
      `model spend over ${props.hourlyCostUsd.toFixed(2)} USD in an hour (a multiple of what the expected volume spends)`,
    );
    // A run stopped by its timeout or by hand is never part of normal load.
    alarm(
      "ExecutionsTimedOut",
      stateMachine.metricTimedOut(sum),
      1,
      "a correction run hit the state machine's timeout",
    );
    alarm(
      "ExecutionsAborted",
      stateMachine.metricAborted(sum),
      1,
      "a correction run was stopped by hand or by a deploy",
    );
    // Each function's error rate, sustained for 15 minutes, once it has had a few invocations.
    for (const [name, fn] of Object.entries(props.functions)) {
      const title = name.charAt(0).toUpperCase() + name.slice(1);
      alarm(
        `${title}ErrorRate`,
        new MathExpression({
          expression: `IF(FILL(n, 0) >= ${ERROR_RATE_MIN_INVOCATIONS}, FILL(e, 0) / n, 0)`,
          usingMetrics: { e: fn.metricErrors(sum), n: fn.metricInvocations(sum) },
          label: `λ ${name} errors / invocations`,
          period: fiveMinutes,
        }),
        ERROR_RATE_THRESHOLD,
        `more than ${pct(ERROR_RATE_THRESHOLD)} of λ ${name}'s invocations failed, 15 minutes in a row`,
        fifteenMinutes,
        ComparisonOperator.GREATER_THAN_THRESHOLD,
      );
    }
    alarm(
      "TableThrottled",
      props.table.metricThrottledRequestsForOperations({
        operations: [...TABLE_OPERATIONS] as never,
        ...sum,
      }),
      1,
      "DynamoDB throttled requests on the runs table, 15 minutes in a row (not a burst's first minutes)",
      fifteenMinutes,
    );
    // Dead letters: their age says how long a delivery has been waiting for a person.
    const deadLetters = (name: string, queue: IQueue, description: string) =>
      alarm(
        name,
        queue.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: "Maximum" }),
        1,
        description,
      );
    deadLetters(
      "TriggerDeadLetters",
      props.deadLetterQueue,
      "submitted or uploaded drafts could not start a run (see the trigger DLQ)",
    );
    deadLetters(
      "FinalizerDeadLetters",
      props.finalizerDeadLetterQueue,
      "a stopped execution's run could not be finalized (see the finalizer DLQ)",
    );
    deadLetters(
      "OutcomeDeadLettersVisible",
      this.outcomeDeadLetters,
      "λ outcome could not count an outcome or hold a run needing review after a day of retries (see the outcome DLQ; redrive it before the run's retention ends)",
    );
    alarm(
      "OutcomeRetriesAge",
      this.outcomeRetries.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: "Maximum" }),
      OUTCOME_RETRY_AGE_ALARM.toSeconds(),
      `an outcome (a run needing review to hold) has waited in λ outcome's retry queue for over ${OUTCOME_RETRY_AGE_ALARM.toHumanString()}`,
    );

    if (props.batches) {
      alarm(
        "BatchesFailed",
        props.batches.stateMachine.metricFailed(sum),
        1,
        "a batch failed: its manifest was refused or more items failed than tolerated (the batch record says which)",
      );
      alarm(
        "BatchesTimedOut",
        props.batches.stateMachine.metricTimedOut(sum),
        1,
        "a batch hit its timeout (batchTimeoutHours); its record is finished as failed / TIMED_OUT",
      );
      deadLetters(
        "BatchDeadLetters",
        props.batches.deadLetterQueue,
        "a stopped batch's record could not be finished (see the batch DLQ)",
      );
    }

    // ── Dashboard ─────────────────────────────────────────────────────────────────────────────
    const search = (metricName: string, label: string, period = fiveMinutes) =>
      new MathExpression({
        expression: `SUM(SEARCH('${EMF_DIMENSIONS} MetricName="${metricName}"', 'Sum', ${period.toSeconds()}))`,
        usingMetrics: {},
        label,
        period,
      });
    const perKind = (metricName: string, period = fiveMinutes) =>
      new MathExpression({
        expression: `SEARCH('${EMF_DIMENSIONS} MetricName="${metricName}"', 'Sum', ${period.toSeconds()})`,
        usingMetrics: {},
        label: "",
        period,
      });
    const fns = Object.values(props.functions);
    const width = 8;

    this.dashboard = new Dashboard(this, "Dashboard", {
      dashboardName: `redraft-${props.envName}`,
      defaultInterval: Duration.days(1),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# redraft ${props.envName}\nOutcomes, attempts, tokens and cost are the Lambdas' embedded metrics (namespace \`${METRIC_NAMESPACE}\`).`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Outcomes per hour",
        left: [
          this.outcomeMetrics.validated.with({ label: "validated" }),
          this.outcomeMetrics.needs_manual_review.with({ label: "needs manual review" }),
          this.outcomeMetrics.rejected.with({ label: "rejected (bad input or duplicate)" }),
          this.outcomeMetrics.failed.with({ label: "failed" }),
        ],
        stacked: true,
        width,
      }),
      new GraphWidget({
        title: "Manual-review rate",
        left: [reviewRate],
        leftAnnotations: [reviewRateAlarm.toAnnotation() as HorizontalAnnotation],
        leftYAxis: { min: 0, max: 1 },
        width,
      }),
      new SingleValueWidget({
        title: "Outcomes (dashboard range)",
        metrics: Object.values(this.outcomeMetrics),
        setPeriodToTimeRange: true,
        width,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Executions",
        left: [
          stateMachine.metricStarted({ period: fiveMinutes }),
          stateMachine.metricSucceeded({ period: fiveMinutes }),
          stateMachine.metricFailed({ period: fiveMinutes }),
          stateMachine.metricTimedOut({ period: fiveMinutes }),
          stateMachine.metricAborted({ period: fiveMinutes }),
          stateMachine.metricThrottled({ period: fiveMinutes }),
        ],
        width,
      }),
      new GraphWidget({
        title: "Correction attempts per kind",
        left: [perKind("CorrectionAttempts")],
        width,
      }),
      new GraphWidget({
        title: "Outcomes per kind and reason",
        left: Object.values(OUTCOME_METRICS).map(
          (name) =>
            new MathExpression({
              expression: `SEARCH('${OUTCOME_DIMENSIONS} MetricName="${name}"', 'Sum', ${hourly.toSeconds()})`,
              usingMetrics: {},
              label: "",
              period: hourly,
            }),
        ),
        width,
      }),
      new GraphWidget({
        title: "Execution time (p50 / p90)",
        left: [
          stateMachine.metricTime({ period: fiveMinutes, statistic: "p50" }),
          stateMachine.metricTime({ period: fiveMinutes, statistic: "p90" }),
        ],
        width,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Tokens",
        left: [
          search("InputTokens", "input"),
          search("OutputTokens", "output"),
          search("CacheReadTokens", "cache read"),
          search("CacheWriteTokens", "cache write"),
        ],
        stacked: true,
        width,
      }),
      new GraphWidget({
        title: "Model cost (USD)",
        left: [costUsd(Duration.hours(1)).with({ label: "per hour" })],
        leftAnnotations: [costAlarm.toAnnotation() as HorizontalAnnotation],
        width,
      }),
      new GraphWidget({
        title: "Drafts received / rejected by Validate",
        left: [
          search("DraftsReceived", "received"),
          search("DraftsRejected", "rejected"),
          search("DuplicateDeliveries", "duplicates"),
        ],
        width,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Lambda errors and throttles",
        left: fns.flatMap((fn) => [
          fn.metricErrors({ period: fiveMinutes, label: `${fn.node.id} errors` }),
          fn.metricThrottles({ period: fiveMinutes, label: `${fn.node.id} throttles` }),
        ]),
        width,
      }),
      new GraphWidget({
        title: "Lambda duration (p90)",
        left: fns.map((fn) =>
          fn.metricDuration({ period: fiveMinutes, statistic: "p90", label: fn.node.id }),
        ),
        width,
      }),
      new GraphWidget({
        title: "Dead letters",
        left: [
          props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period: fiveMinutes,
            label: "triggers",
          }),
          props.finalizerDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period: fiveMinutes,
            label: "finalizer",
          }),
        ],
        width,
      }),
    );
    this.dashboard.addWidgets(new AlarmStatusWidget({ title: "Alarms", alarms: this.alarms, width: 24 }));
  }
}
