import { Annotations, Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { COST_METRIC, OUTCOME_METRICS, SERVICE_NAME } from "../../functions/lib/metric-names.js";
import { environments } from "../../infra/config.js";
import { liveAlias } from "../../infra/constructs/functions.js";
import { METRIC_NAMESPACE } from "../../infra/constructs/observability.js";
import { OUTCOME_EVENT_SOURCE, OutcomeEvents } from "../../shared/events.js";
import { logicalId, synthesize } from "./synth.js";

/** A synthesized resource's properties, read as the JSON they are. */
type Json = ReturnType<typeof JSON.parse>;

const OPS = "ops@redraft.dev";
const EXTERNAL_TOPIC = "arn:aws:sns:eu-west-1:123456789012:oncall";
const { stack, template } = synthesize("dev", { alarmEmail: OPS });
const topicRef = { Ref: logicalId(stack.observability.alarmTopic) };

type AlarmProps = {
  AlarmDescription: string;
  MetricName?: string;
  Namespace?: string;
  Dimensions?: { Name: string; Value: unknown }[];
  Threshold: number;
  Metrics?: {
    Id: string;
    Expression?: string;
    MetricStat?: { Metric: { MetricName: string; Dimensions?: unknown[] } };
  }[];
  AlarmActions: unknown[];
};
const alarmsOf = (t: typeof template) =>
  Object.entries(t.findResources("AWS::CloudWatch::Alarm")).map(([id, r]) => ({
    id,
    ...(r as { Properties: AlarmProps }).Properties,
  }));
const alarms = alarmsOf(template);
const stateMachineDimension = [
  { Name: "StateMachineArn", Value: { Ref: logicalId(stack.workflow.stateMachine) } },
];

describe("observability: where alarms go", () => {
  it("sends every alarm to one SSL-only topic, subscribed with the configured e-mail", () => {
    template.hasResourceProperties("AWS::SNS::Subscription", {
      Protocol: "email",
      Endpoint: OPS,
      TopicArn: topicRef,
    });
    template.hasResourceProperties("AWS::SNS::TopicPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
        ]),
      },
    });
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([topicRef]);
  });

  it("also notifies an existing topic when its ARN is configured", () => {
    const { template: t } = synthesize("prod", { alarmTopicArn: EXTERNAL_TOPIC });
    for (const alarm of alarmsOf(t)) expect(alarm.AlarmActions).toContainEqual(EXTERNAL_TOPIC);
    t.resourceCountIs("AWS::SNS::Subscription", 0);
  });

  it.each(["dev", "staging", "prod"] as const)(
    "%s configures no placeholder address: no subscription, and a warning at synth",
    (env) => {
      expect(environments[env].alarmEmail ?? "").not.toMatch(/example\.com$/);
      const { stack: s, template: t } = synthesize(env);
      t.resourceCountIs("AWS::SNS::Subscription", 0);
      Annotations.fromStack(s).hasWarning(
        `/${s.stackName}/Observability/AlarmTopic`,
        Match.stringLikeRegexp("no alarmEmail or alarmTopicArn is configured"),
      );
    },
  );

  it("refuses an example.com address", () => {
    expect(() => synthesize("prod", { alarmEmail: "redraft-alerts@example.com" })).toThrow(/placeholder/);
  });
});

describe("observability: the alarms that matter", () => {
  it.each(["ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted", "ExecutionThrottled"])(
    "alarms on %s of the state machine",
    (metricName) => {
      template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/States",
        MetricName: metricName,
        Dimensions: stateMachineDimension,
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
      });
    },
  );

  it("alarms on errors and throttles of every function, the starter, outcome counter and finalizer included", () => {
    const fns = [
      ...Object.values({ ...stack.functions }).filter(
        (f) => typeof f === "object" && f && "functionName" in f,
      ),
      stack.triggers.starter,
      stack.finalizer.function,
      stack.batches.function,
      stack.batches.rounds.function,
    ];
    expect(fns.length).toBe(9);
    for (const fn of fns) {
      for (const metricName of ["Errors", "Throttles"]) {
        template.hasResourceProperties("AWS::CloudWatch::Alarm", {
          Namespace: "AWS/Lambda",
          MetricName: metricName,
          Dimensions: [{ Name: "FunctionName", Value: { Ref: logicalId(fn) } }],
          Threshold: 1,
        });
      }
    }
  });

  it("alarms on DynamoDB throttled requests of the table", () => {
    const alarm = alarms.find((a) => a.id.startsWith("ObservabilityTableThrottled"));
    const stats = alarm?.Metrics?.flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric.MetricName] : []));
    expect(new Set(stats)).toEqual(new Set(["ThrottledRequests"]));
    expect(alarm?.Threshold).toBe(1);
  });

  it("alarms on trigger dead letters", () => {
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      Namespace: "AWS/SQS",
      MetricName: "ApproximateNumberOfMessagesVisible",
      Dimensions: [
        {
          Name: "QueueName",
          Value: { "Fn::GetAtt": [logicalId(stack.triggers.deadLetterQueue), "QueueName"] },
        },
      ],
      Threshold: 1,
    });
  });

  it("alarms on a rising manual-review rate: NeedsReview / (Validated + NeedsReview) from the handlers' metrics", () => {
    const alarm = alarms.find((a) =>
      a.Metrics?.some((m) => m.MetricStat?.Metric.MetricName === OUTCOME_METRICS.needs_manual_review),
    );
    expect(alarm?.Threshold).toBe(environments.dev.alarms.reviewRateThreshold);
    const ids = Object.fromEntries(
      (alarm?.Metrics ?? []).flatMap((m) => (m.MetricStat ? [[m.MetricStat.Metric.MetricName, m.Id]] : [])),
    );
    const [review, validated] = [ids[OUTCOME_METRICS.needs_manual_review], ids[OUTCOME_METRICS.validated]];
    expect(alarm?.Metrics?.find((m) => m.Expression)?.Expression).toBe(
      `IF((FILL(${validated}, 0) + FILL(${review}, 0)) >= ${environments.dev.alarms.reviewRateMinRuns}, ` +
        `FILL(${review}, 0) / (FILL(${validated}, 0) + FILL(${review}, 0)), 0)`,
    );
    for (const m of alarm?.Metrics ?? []) {
      if (m.MetricStat)
        expect(m.MetricStat.Metric.Dimensions).toEqual([{ Name: "service", Value: SERVICE_NAME }]);
    }
  });

  it("alarms on the model cost of one hour over the environment's budget", () => {
    const cost = alarms.find((a) => a.Metrics?.some((m) => m.MetricStat?.Metric.MetricName === COST_METRIC));
    expect(cost?.Threshold).toBe(environments.dev.alarms.hourlyCostUsd);
    expect(cost?.id).toMatch(/^ObservabilityHourlyModelCost/);
  });
});

describe("observability: outcomes are embedded metrics, not log filters", () => {
  it("derives no metric from any log", () => {
    template.resourceCountIs("AWS::Logs::MetricFilter", 0);
  });

  it("sends the outcome events, reviewers' decisions and stopped executions to λ outcome", () => {
    const outcome = { Ref: logicalId(liveAlias(stack.functions.outcome)) };
    template.hasResourceProperties("AWS::Events::Rule", {
      EventBusName: { Ref: logicalId(stack.projectBus.bus) },
      EventPattern: {
        source: [OUTCOME_EVENT_SOURCE],
        "detail-type": [OutcomeEvents.Validated, OutcomeEvents.NeedsReview, OutcomeEvents.Reviewed],
      },
      Targets: [Match.objectLike({ Arn: outcome })],
    });
    template.hasResourceProperties("AWS::Events::Rule", {
      EventBusName: Match.absent(),
      EventPattern: {
        source: ["aws.states"],
        detail: {
          stateMachineArn: [{ Ref: logicalId(stack.workflow.stateMachine) }],
          status: ["FAILED", "TIMED_OUT", "ABORTED"],
        },
      },
      Targets: [Match.objectLike({ Arn: outcome })],
    });
  });

  it("has a dashboard with outcomes by kind and reason, review rate, attempts, tokens and cost", () => {
    const dashboards = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(
      (dashboards[0] as { Properties: { DashboardBody: unknown } }).Properties.DashboardBody,
    );
    for (const title of [
      "Outcomes per hour",
      "Outcomes per kind and reason",
      "Manual-review rate",
      "Correction attempts per kind",
      "Tokens",
      "Model cost (USD)",
    ]) {
      expect(body).toContain(title);
    }
    for (const metric of [
      "CorrectionAttempts",
      "InputTokens",
      "OutputTokens",
      COST_METRIC,
      ...Object.values(OUTCOME_METRICS),
    ]) {
      expect(body).toContain(metric);
    }
    expect(body).toContain(METRIC_NAMESPACE);
  });

  it("keeps Lambda and Step Functions logs for the environment's retention", () => {
    const groups = template.findResources("AWS::Logs::LogGroup") as Record<
      string,
      { Properties: { RetentionInDays?: number } }
    >;
    const resources = template.toJSON().Resources as Record<string, { Properties: Json }>;
    // Each function's own log group, named: a new function cannot log to nowhere or keep logs forever.
    const { validate, correct, revalidate, judge, outcome } = stack.functions;
    const fns = [
      validate,
      correct,
      revalidate,
      judge,
      outcome,
      stack.triggers.starter,
      stack.finalizer.function,
      stack.batches.function,
      stack.batches.rounds.function,
    ];
    const fnGroups = fns.map((fn) => resources[logicalId(fn)]?.Properties.LoggingConfig.LogGroup.Ref);
    // And each state machine's (per-draft, batch).
    const machineGroups = [stack.workflow.stateMachine, stack.batches.stateMachine].map(
      (sm) =>
        resources[logicalId(sm)]?.Properties.LoggingConfiguration.Destinations[0].CloudWatchLogsLogGroup
          .LogGroupArn["Fn::GetAtt"][0],
    );
    const owned = [...fnGroups, ...machineGroups];
    expect(new Set(owned).size).toBe(fns.length + 2);
    expect(Object.keys(groups).sort()).toEqual([...owned].sort());
    for (const id of owned) expect(groups[id]?.Properties.RetentionInDays).toBe(7);
  });
});

describe("observability: reviewers' decisions", () => {
  it("λ outcome hears Draft Reviewed and may put only Draft Validated (source redraft) on the project bus", () => {
    template.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: Match.objectLike({
        "detail-type": [OutcomeEvents.Validated, OutcomeEvents.NeedsReview, OutcomeEvents.Reviewed],
      }),
    });
    const role = stack.functions.outcome.role?.node.defaultChild;
    const policies = Object.values(template.findResources("AWS::IAM::Policy")) as Json[];
    const mine = policies.filter((p) =>
      p.Properties.Roles.some(
        (r: Json) => r.Ref === (role && logicalId(stack.functions.outcome.role as never)),
      ),
    );
    const puts = mine
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((s: Json) => [s.Action].flat().includes("events:PutEvents"));
    expect(puts).toEqual([
      expect.objectContaining({
        Condition: {
          StringEquals: {
            "events:detail-type": OutcomeEvents.Validated,
            "events:source": OUTCOME_EVENT_SOURCE,
          },
        },
      }),
    ]);
  });
});
