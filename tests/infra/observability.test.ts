import { App } from "aws-cdk-lib";
import { Annotations, Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { loadPlanData } from "../../cli/plan.js";
import { OUTCOME_EVENT_SOURCE, OutcomeEvents } from "../../contracts/events.js";
import { COST_METRIC, OUTCOME_METRICS, SERVICE_NAME } from "../../contracts/metric-names.js";
import { environments, loadConfig } from "../../infra/config.js";
import { liveAlias } from "../../infra/constructs/functions.js";
import { METRIC_NAMESPACE } from "../../infra/constructs/observability.js";
import { expectedHourlyModelCostUsd } from "../../infra/expected-cost.js";
import { RedraftStack } from "../../infra/stack.js";
import { plan } from "../../shared/plan/planner.js";
import { logicalId, synthesize } from "./synth.js";

/** A synthesized resource's properties, read as the JSON they are. */
type Json = ReturnType<typeof JSON.parse>;

const planData = await loadPlanData();
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
  OKActions?: unknown[];
  EvaluationPeriods: number;
  DatapointsToAlarm?: number;
  ComparisonOperator: string;
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
    for (const alarm of alarms) {
      expect(alarm.AlarmActions).toEqual([topicRef]);
      // …and says so again when it is over.
      expect(alarm.OKActions).toEqual([topicRef]);
    }
  });

  it("also notifies an existing topic when its ARN is configured", () => {
    const { template: t } = synthesize("prod", { alarmTopicArn: EXTERNAL_TOPIC });
    for (const alarm of alarmsOf(t)) expect(alarm.AlarmActions).toContainEqual(EXTERNAL_TOPIC);
    t.resourceCountIs("AWS::SNS::Subscription", 0);
  });

  it.each(["dev", "staging"] as const)(
    "%s may synthesize without a destination: no subscription, and one line at synth that alarms reach nobody",
    (env) => {
      expect(environments[env].alarmEmail ?? "").not.toMatch(/example\.com$/);
      const { stack: s, template: t } = synthesize(env);
      t.resourceCountIs("AWS::SNS::Subscription", 0);
      const warnings = Annotations.fromStack(s).findWarning(
        `/${s.stackName}/Default/Observability/AlarmTopic`,
        Match.stringLikeRegexp("no alarmEmail or alarmTopicArn is configured, so alarms reach nobody"),
      );
      expect(warnings).toHaveLength(1);
      expect(String(warnings[0]?.entry.data)).not.toContain("\n");
    },
  );

  it("prod does not synthesize without an alarm destination, and does with an e-mail or a topic", () => {
    expect(environments.prod.alarmEmail).toBeUndefined();
    expect(environments.prod.alarmTopicArn).toBeUndefined();
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    expect(() => new RedraftStack(app, "Redraft-prod", { config: loadConfig("prod") })).toThrow(
      /alarms need somewhere to go: deploy with -c alarmEmail=<address> or -c alarmTopicArn=/,
    );
    const byEmail = synthesize("prod", { alarmEmail: OPS });
    byEmail.template.hasResourceProperties("AWS::SNS::Subscription", { Protocol: "email", Endpoint: OPS });
    const byTopic = synthesize("prod", { alarmTopicArn: EXTERNAL_TOPIC });
    for (const alarm of alarmsOf(byTopic.template)) expect(alarm.AlarmActions).toContainEqual(EXTERNAL_TOPIC);
    for (const s of [byEmail.stack, byTopic.stack])
      expect(
        Annotations.fromStack(s).findWarning("*", Match.stringLikeRegexp("alarms reach nobody")),
      ).toEqual([]);
  });

  it("refuses an example.com address", () => {
    expect(() => synthesize("prod", { alarmEmail: "redraft-alerts@example.com" })).toThrow(/placeholder/);
  });
});

describe("observability: the alarms that matter", () => {
  it.each(["ExecutionsTimedOut", "ExecutionsAborted"])(
    "alarms on %s of the state machine (never part of normal load)",
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

  it("has no alarm that fires by design under load: no throttle alarm, no single failed execution or Lambda error", () => {
    const metricsOf = (a: (typeof alarms)[number]) => [
      a.MetricName,
      ...(a.Metrics ?? []).map((m) => m.MetricStat?.Metric.MetricName),
    ];
    for (const a of alarms) {
      expect(metricsOf(a)).not.toContain("Throttles");
      expect(metricsOf(a)).not.toContain("ExecutionThrottled");
      // A batch that fails its tolerance is alarmed on; a per-draft run only as a share (FailureRate).
      if (JSON.stringify(a.Dimensions ?? a.Metrics).includes(logicalId(stack.workflow.stateMachine)))
        expect(metricsOf(a)).not.toContain("ExecutionsFailed");
      // A Lambda's errors only as a share of its invocations.
      if (metricsOf(a).includes("Errors")) expect(metricsOf(a)).toContain("Invocations");
    }
  });

  it("alarms on each function's error rate, sustained 15 minutes: the starter, outcome counter and finalizer included", () => {
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
      const ref = { Ref: logicalId(fn) };
      const alarm = alarms.find((a) =>
        a.Metrics?.some(
          (m) =>
            m.MetricStat?.Metric.MetricName === "Errors" &&
            JSON.stringify(m.MetricStat.Metric.Dimensions) ===
              JSON.stringify([{ Name: "FunctionName", Value: ref }]),
        ),
      );
      expect(alarm?.Metrics?.find((m) => m.Expression)?.Expression).toMatch(
        /^IF\(FILL\(\w+, 0\) >= 20, FILL\(\w+, 0\) \/ \w+, 0\)$/,
      );
      expect(alarm?.Threshold).toBe(0.05);
      expect([alarm?.EvaluationPeriods, alarm?.DatapointsToAlarm]).toEqual([3, 3]);
    }
  });

  it("alarms on DynamoDB throttled requests of the table only when they last 15 minutes", () => {
    const alarm = alarms.find((a) => a.id.startsWith("ObservabilityTableThrottled"));
    const stats = alarm?.Metrics?.flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric.MetricName] : []));
    expect(new Set(stats)).toEqual(new Set(["ThrottledRequests"]));
    expect(alarm?.Threshold).toBe(1);
    expect([alarm?.EvaluationPeriods, alarm?.DatapointsToAlarm]).toEqual([3, 3]);
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

  it("alarms on the share of runs that failed in an hour, from the handlers' outcome metrics", () => {
    const alarm = alarms.find((a) => a.id.startsWith("ObservabilityFailureRate"));
    expect(alarm?.Threshold).toBe(environments.dev.alarms.failureRateThreshold);
    expect(alarm?.ComparisonOperator).toBe("GreaterThanThreshold");
    const ids = Object.fromEntries(
      (alarm?.Metrics ?? []).flatMap((m) => (m.MetricStat ? [[m.MetricStat.Metric.MetricName, m.Id]] : [])),
    );
    expect(Object.keys(ids).sort()).toEqual(Object.values(OUTCOME_METRICS).sort());
    const failed = ids[OUTCOME_METRICS.failed];
    expect(alarm?.Metrics?.find((m) => m.Expression)?.Expression).toMatch(
      new RegExp(`>= ${environments.dev.alarms.reviewRateMinRuns}, FILL\\(${failed}, 0\\) / \\(`),
    );
  });

  it("alarms on a rising manual-review rate: NeedsReview / (Validated + NeedsReview) from the handlers' metrics", () => {
    const alarm = alarms.find((a) => a.id.startsWith("ObservabilityManualReviewRate"));
    expect(alarm?.Threshold).toBe(environments.dev.alarms.reviewRateThreshold);
    expect(alarm?.ComparisonOperator).toBe("GreaterThanThreshold");
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

  it.each(["dev", "staging", "prod"] as const)(
    "%s alarms on the model cost of one hour at a multiple of what its expected volume spends",
    (env) => {
      const { template: t } = synthesize(env);
      const cost = alarmsOf(t).find((a) =>
        a.Metrics?.some((m) => m.MetricStat?.Metric.MetricName === COST_METRIC),
      );
      const { expectedDraftsPerDay, costHeadroom } = environments[env].alarms;
      const expected = expectedHourlyModelCostUsd(env, expectedDraftsPerDay);
      expect(cost?.Threshold).toBeCloseTo(expected * costHeadroom, 9);
      expect(cost?.id).toMatch(/^ObservabilityHourlyModelCost/);
      // The plan's model cost per draft × the drafts of an hour.
      const p = plan({ draftsPerDay: expectedDraftsPerDay, env }, planData.counts, planData.prices);
      const perDraft = p.components.find((c) => c.name.startsWith("Model ("))?.costPerDraftUsd ?? 0;
      expect(expected).toBeCloseTo((perDraft * expectedDraftsPerDay) / 24, 9);
    },
  );

  it("prod's hourly-cost alarm is sized for a million drafts a day, not a fixed $25", () => {
    const { template: t } = synthesize("prod");
    const cost = alarmsOf(t).find((a) => a.id.startsWith("ObservabilityHourlyModelCost"));
    expect(environments.prod.alarms.expectedDraftsPerDay).toBe(1_000_000);
    expect(cost?.Threshold).toBeGreaterThan(500);
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

describe("observability: λ outcome's dead-letter path (a run awaiting review is never left unheld)", () => {
  const retries = logicalId(stack.observability.outcomeRetries);
  const deadLetters = logicalId(stack.observability.outcomeDeadLetters);
  const alias = logicalId(liveAlias(stack.functions.outcome));

  it("sends a failed invocation of λ outcome's alias to the retry queue, after Lambda's two retries", () => {
    template.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
      FunctionName: { Ref: logicalId(stack.functions.outcome) },
      // The alias's name, taken from its ARN: the qualifier the rules invoke.
      Qualifier: { "Fn::Select": [7, { "Fn::Split": [":", { Ref: alias }] }] },
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": [retries, "Arn"] } } },
    });
  });

  it("sends an event the rules could not deliver to the same queue", () => {
    const rules = Object.values(template.findResources("AWS::Events::Rule")).filter((r) =>
      JSON.stringify(r).includes(alias),
    ) as Json[];
    expect(rules).toHaveLength(2);
    for (const rule of rules)
      expect(rule.Properties.Targets[0].DeadLetterConfig).toEqual({
        Arn: { "Fn::GetAtt": [retries, "Arn"] },
      });
  });

  it("consumes the retry queue with λ outcome, one message at a time, reporting each failure", () => {
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      EventSourceArn: { "Fn::GetAtt": [retries, "Arn"] },
      FunctionName: {
        "Fn::Join": ["", [{ "Fn::Select": [6, { "Fn::Split": [":", { Ref: alias }] }] }, ":live"]],
      },
      BatchSize: 1,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
    });
  });

  it("retries for a day, then keeps what failed 14 days in a dead-letter queue that is alarmed on, as is the retry's age", () => {
    const queues = template.toJSON().Resources as Record<string, { Properties: Json }>;
    const redrive = queues[retries]?.Properties.RedrivePolicy;
    expect(redrive.deadLetterTargetArn).toEqual({ "Fn::GetAtt": [deadLetters, "Arn"] });
    const visibility = queues[retries]?.Properties.VisibilityTimeout;
    expect(redrive.maxReceiveCount * visibility).toBeGreaterThanOrEqual(24 * 3600);
    expect(queues[deadLetters]?.Properties.MessageRetentionPeriod).toBe(14 * 24 * 3600);
    const onQueue = (name: string, metric: string) =>
      alarms.find(
        (a) =>
          a.MetricName === metric &&
          JSON.stringify(a.Dimensions) ===
            JSON.stringify([{ Name: "QueueName", Value: { "Fn::GetAtt": [name, "QueueName"] } }]),
      );
    expect(onQueue(deadLetters, "ApproximateNumberOfMessagesVisible")?.Threshold).toBe(1);
    expect(onQueue(retries, "ApproximateAgeOfOldestMessage")?.Threshold).toBe(3600);
  });
});
