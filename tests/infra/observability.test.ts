import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { environments } from "../../infra/config.js";
import { METRIC_NAMESPACE, OutcomeMetrics, TOTAL_COST_METRIC } from "../../infra/constructs/observability.js";
import { logicalId, synthesize } from "./synth.js";

const { stack, template } = synthesize("dev");
const topicRef = { Ref: logicalId(stack.observability.alarmTopic) };

type AlarmProps = {
  MetricName?: string;
  Namespace?: string;
  Threshold: number;
  Metrics?: { Id: string; Expression?: string; MetricStat?: { Metric: { MetricName: string } } }[];
  AlarmActions: unknown[];
};
const alarms = Object.values(template.findResources("AWS::CloudWatch::Alarm")).map(
  (r) => (r as { Properties: AlarmProps }).Properties,
);

describe("observability", () => {
  it("sends alarms to one SSL-only topic with the environment's e-mail", () => {
    template.hasResourceProperties("AWS::SNS::Subscription", {
      Protocol: "email",
      Endpoint: environments.dev.alarmEmail,
      TopicArn: topicRef,
    });
    template.hasResourceProperties("AWS::SNS::TopicPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
        ]),
      },
    });
    expect(alarms.length).toBeGreaterThanOrEqual(5);
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([topicRef]);
  });

  it("alarms on failed and timed-out executions", () => {
    for (const metricName of ["ExecutionsFailed", "ExecutionsTimedOut"]) {
      template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/States",
        MetricName: metricName,
        Dimensions: [{ Name: "StateMachineArn", Value: { Ref: logicalId(stack.workflow.stateMachine) } }],
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
      });
    }
  });

  it("alarms on a rising manual-review rate: NeedsReview / (Validated + NeedsReview) over the threshold", () => {
    const alarm = alarms.find((a) =>
      a.Metrics?.some((m) => m.MetricStat?.Metric.MetricName === OutcomeMetrics.NeedsReview.metricName),
    );
    expect(alarm?.Threshold).toBe(environments.dev.alarms.reviewRateThreshold);
    const used = alarm?.Metrics?.flatMap((m) =>
      m.MetricStat ? [m.MetricStat.Metric.MetricName] : [],
    ).sort();
    expect(used).toEqual([OutcomeMetrics.NeedsReview.metricName, OutcomeMetrics.Validated.metricName].sort());
    const ids = Object.fromEntries(
      (alarm?.Metrics ?? []).flatMap((m) => (m.MetricStat ? [[m.MetricStat.Metric.MetricName, m.Id]] : [])),
    );
    const [review, validated] = [
      ids[OutcomeMetrics.NeedsReview.metricName],
      ids[OutcomeMetrics.Validated.metricName],
    ];
    const expression = alarm?.Metrics?.find((m) => m.Expression)?.Expression;
    expect(expression).toBe(
      `IF((FILL(${validated}, 0) + FILL(${review}, 0)) >= ${environments.dev.alarms.reviewRateMinRuns}, ` +
        `FILL(${review}, 0) / (FILL(${validated}, 0) + FILL(${review}, 0)), 0)`,
    );
  });

  it("alarms on a day's model spend and on trigger dead letters", () => {
    const cost = alarms.find((a) =>
      a.Metrics?.some((m) => m.MetricStat?.Metric.MetricName === TOTAL_COST_METRIC),
    );
    expect(cost?.Threshold).toBe(environments.dev.alarms.dailyCostUsd);
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      Namespace: "AWS/SQS",
      MetricName: "ApproximateNumberOfMessagesVisible",
      Threshold: 1,
    });
  });

  it("counts each outcome from the state machine's log", () => {
    for (const outcome of Object.values(OutcomeMetrics)) {
      template.hasResourceProperties("AWS::Logs::MetricFilter", {
        LogGroupName: { Ref: logicalId(stack.workflow.logGroup) },
        FilterPattern: Match.stringLikeRegexp(`${outcome.eventType}.*${outcome.state.replace("?", "\\?")}`),
        MetricTransformations: [
          Match.objectLike({
            MetricNamespace: METRIC_NAMESPACE,
            MetricName: outcome.metricName,
            MetricValue: "1",
          }),
        ],
      });
    }
  });

  it.each(["revalidateLogs", "judgeLogs"])(
    "sums model cost from the EMF lines in %s (corrections and judge rounds)",
    (logs) => {
      template.hasResourceProperties("AWS::Logs::MetricFilter", {
        LogGroupName: { Ref: Match.stringLikeRegexp(logs) },
        MetricTransformations: [
          Match.objectLike({
            MetricNamespace: METRIC_NAMESPACE,
            MetricName: TOTAL_COST_METRIC,
            MetricValue: "$.CostMicroUsd",
          }),
        ],
      });
    },
  );

  it("has a dashboard with outcomes, review rate, attempts, tokens and cost", () => {
    const dashboards = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(
      (dashboards[0] as { Properties: { DashboardBody: unknown } }).Properties.DashboardBody,
    );
    for (const title of [
      "Outcomes per hour",
      "Manual-review rate",
      "Correction attempts per kind",
      "Tokens",
      "Model cost (USD)",
    ]) {
      expect(body).toContain(title);
    }
    for (const metric of ["CorrectionAttempts", "InputTokens", "OutputTokens", TOTAL_COST_METRIC]) {
      expect(body).toContain(metric);
    }
  });

  it("graphs errors, throttles and duration of every function, the judge included", () => {
    const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    const body = JSON.stringify(
      (dashboard as { Properties: { DashboardBody: unknown } }).Properties.DashboardBody,
    );
    const { validate, correct, revalidate, judge } = stack.functions;
    for (const fn of [validate, correct, revalidate, judge]) {
      expect(body).toContain(JSON.stringify({ Ref: logicalId(fn) }));
    }
  });

  it("keeps Lambda and Step Functions logs for the environment's retention", () => {
    const groups = Object.values(template.findResources("AWS::Logs::LogGroup")).map(
      (r) => (r as { Properties: { RetentionInDays: number } }).Properties.RetentionInDays,
    );
    // One per function (validate, correct, revalidate, judge) and the state machine's.
    expect(groups).toEqual([7, 7, 7, 7, 7]);
  });
});
