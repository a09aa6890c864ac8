import { Duration } from "aws-cdk-lib";
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
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import { FilterPattern, type LogGroup, MetricFilter } from "aws-cdk-lib/aws-logs";
import { Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import type { StateMachine } from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { acknowledge } from "../nag.js";
import { StateNames } from "../state-names.js";

/** The namespace of every redraft metric: the Lambdas' EMF metrics and the metric filters below. */
export const METRIC_NAMESPACE = "Redraft";

/**
 * Outcome metrics, counted from the state machine's own log (the terminal state each run entered),
 * so they need no Lambda at the end of the workflow and carry no dimension an alarm would have to name.
 */
export const OutcomeMetrics = {
  Validated: {
    metricName: "RunsValidated",
    eventType: "SucceedStateEntered",
    state: StateNames.DraftValidated,
  },
  NeedsReview: {
    metricName: "RunsNeedingReview",
    eventType: "SucceedStateEntered",
    state: StateNames.DraftNeedsReview,
  },
  Rejected: { metricName: "RunsRejected", eventType: "SucceedStateEntered", state: StateNames.InputRejected },
  Duplicate: {
    metricName: "RunsDuplicate",
    eventType: "SucceedStateEntered",
    state: StateNames.DuplicateIgnored,
  },
  Failed: { metricName: "RunsFailed", eventType: "FailStateEntered", state: StateNames.CorrectionFailed },
} as const;

/** Model spend of all kinds together (micro-USD), summed from revalidate's EMF `CostMicroUsd` lines. */
export const TOTAL_COST_METRIC = "TotalCostMicroUsd";

/** Per-kind EMF metrics the Lambdas emit (Powertools adds the `service` dimension). */
const EMF_DIMENSIONS = "{Redraft,kind,service}";

export interface ObservabilityProps {
  readonly envName: string;
  readonly stateMachine: StateMachine;
  /** The state machine's execution log (level ALL). */
  readonly stateMachineLogs: LogGroup;
  readonly functions: Record<"validate" | "correct" | "revalidate" | "judge", LambdaFunction>;
  /** The trigger rules' dead-letter queue. */
  readonly deadLetterQueue: Queue;
  readonly alarmEmail: string;
  /** Alarm when NeedsReview / (Validated + NeedsReview) over an hour is above this share… */
  readonly reviewRateThreshold: number;
  /** …and at least this many runs finished in that hour. */
  readonly reviewRateMinRuns: number;
  /** Alarm when the model spend of one day is above this. */
  readonly dailyCostUsd: number;
}

/**
 * Metrics, a dashboard and alarms for one environment. Alarms go to one SNS topic with the
 * environment's e-mail subscription: failed or timed-out executions, a rising manual-review rate,
 * a day's model spend over budget, and trigger events that could not start a run.
 */
export class Observability extends Construct {
  readonly alarmTopic: Topic;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];
  readonly outcomeMetrics: Record<keyof typeof OutcomeMetrics, Metric>;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const { stateMachine } = props;

    this.alarmTopic = new Topic(this, "AlarmTopic", {
      displayName: `redraft ${props.envName} alarms`,
      enforceSSL: true,
    });
    this.alarmTopic.addSubscription(new EmailSubscription(props.alarmEmail));
    acknowledge(this.alarmTopic, {
      id: "AwsSolutions-SNS2",
      reason:
        "Alarm notifications carry alarm names and states only; CloudWatch cannot publish to a topic " +
        "encrypted with the AWS-managed SNS key, and a customer key for this alone is not worth its cost.",
    });

    const hourly = Duration.hours(1);
    const outcome = (key: keyof typeof OutcomeMetrics): Metric => {
      const def = OutcomeMetrics[key];
      new MetricFilter(this, `${def.metricName}Filter`, {
        logGroup: props.stateMachineLogs,
        filterPattern: FilterPattern.all(
          FilterPattern.stringValue("$.type", "=", def.eventType),
          FilterPattern.stringValue("$.details.name", "=", def.state),
        ),
        metricNamespace: METRIC_NAMESPACE,
        metricName: def.metricName,
        metricValue: "1",
        defaultValue: 0,
      });
      return new Metric({
        namespace: METRIC_NAMESPACE,
        metricName: def.metricName,
        statistic: "Sum",
        period: hourly,
      });
    };
    this.outcomeMetrics = {
      Validated: outcome("Validated"),
      NeedsReview: outcome("NeedsReview"),
      Rejected: outcome("Rejected"),
      Duplicate: outcome("Duplicate"),
      Failed: outcome("Failed"),
    };

    // Spend happens in two places: corrections (counted when revalidated) and judge rounds.
    for (const [id, fn] of [
      ["TotalCostFilter", props.functions.revalidate],
      ["JudgeCostFilter", props.functions.judge],
    ] as const) {
      new MetricFilter(this, id, {
        logGroup: fn.logGroup,
        filterPattern: FilterPattern.numberValue("$.CostMicroUsd", ">=", 0),
        metricNamespace: METRIC_NAMESPACE,
        metricName: TOTAL_COST_METRIC,
        metricValue: "$.CostMicroUsd",
      });
    }
    const costUsd = (period: Duration) =>
      new MathExpression({
        expression: "FILL(micro, 0) / 1000000",
        usingMetrics: {
          micro: new Metric({
            namespace: METRIC_NAMESPACE,
            metricName: TOTAL_COST_METRIC,
            statistic: "Sum",
            period,
          }),
        },
        label: "Model cost (USD)",
        period,
      });

    const reviewRate = new MathExpression({
      expression: `IF((FILL(v, 0) + FILL(r, 0)) >= ${props.reviewRateMinRuns}, FILL(r, 0) / (FILL(v, 0) + FILL(r, 0)), 0)`,
      usingMetrics: { v: this.outcomeMetrics.Validated, r: this.outcomeMetrics.NeedsReview },
      label: "NeedsReview / (Validated + NeedsReview)",
      period: hourly,
    });

    // ── Alarms ────────────────────────────────────────────────────────────────────────────────
    const fiveMinutes = Duration.minutes(5);
    const alarm = (name: string, metric: IMetric, threshold: number, description: string) => {
      const created = new Alarm(this, name, {
        alarmDescription: `redraft ${props.envName}: ${description}`,
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(new SnsAction(this.alarmTopic));
      this.alarms.push(created);
      return created;
    };
    alarm(
      "ExecutionsFailed",
      stateMachine.metricFailed({ period: fiveMinutes, statistic: "Sum" }),
      1,
      "a correction run failed (RecordFailure wrote why on the run record)",
    );
    alarm(
      "ExecutionsTimedOut",
      stateMachine.metricTimedOut({ period: fiveMinutes, statistic: "Sum" }),
      1,
      "a correction run hit the state machine's timeout",
    );
    const reviewRateAlarm = alarm(
      "ManualReviewRate",
      reviewRate,
      props.reviewRateThreshold,
      `more than ${Math.round(props.reviewRateThreshold * 100)}% of finished runs needed manual review in the last hour`,
    );
    const costAlarm = alarm(
      "DailyModelCost",
      costUsd(Duration.days(1)),
      props.dailyCostUsd,
      `model spend over ${props.dailyCostUsd} USD in a day`,
    );
    alarm(
      "TriggerDeadLetters",
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: fiveMinutes,
        statistic: "Maximum",
      }),
      1,
      "submitted or uploaded drafts could not start a run (see the trigger DLQ)",
    );

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
        markdown: `# redraft ${props.envName}\nOutcomes are counted from the state machine's log; attempts, tokens and cost from the Lambdas' EMF metrics (namespace \`${METRIC_NAMESPACE}\`).`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Outcomes per hour",
        left: [
          this.outcomeMetrics.Validated.with({ label: "validated" }),
          this.outcomeMetrics.NeedsReview.with({ label: "needs manual review" }),
          this.outcomeMetrics.Rejected.with({ label: "rejected (bad input)" }),
          this.outcomeMetrics.Failed.with({ label: "failed" }),
          this.outcomeMetrics.Duplicate.with({ label: "duplicate delivery" }),
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
        ],
        width,
      }),
      new GraphWidget({
        title: "Correction attempts per kind",
        left: [perKind("CorrectionAttempts")],
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
        title: "Trigger dead letters",
        left: [props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes })],
        width,
      }),
    );
    this.dashboard.addWidgets(new AlarmStatusWidget({ title: "Alarms", alarms: this.alarms, width: 24 }));
  }
}
