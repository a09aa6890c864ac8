import { describe, expect, it } from "vitest";
import { logicalId, synthesize } from "./synth.js";

/**
 * Issue 33: the model queues' depth and their oldest message's age are metrics a person sees, and
 * the age is alarmed (infra/constructs/model-queue.ts). SQS publishes the metrics itself
 * (`AWS/SQS`, by `QueueName`); the stack alarms on them and draws them on its dashboard.
 */

type Json = ReturnType<typeof JSON.parse>;
const { stack, template } = synthesize("prod");
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Json }>;
const topicRef = { Ref: logicalId(stack.observability.alarmTopic) };
const queueName = (id: string) => [{ Name: "QueueName", Value: { "Fn::GetAtt": [id, "QueueName"] } }];
const alarmsOn = (id: string, metric: string) =>
  Object.values(resources)
    .filter((r) => r.Type === "AWS::CloudWatch::Alarm")
    .map((r) => r.Properties)
    .filter(
      (a) =>
        a.Namespace === "AWS/SQS" &&
        a.MetricName === metric &&
        JSON.stringify(a.Dimensions) === JSON.stringify(queueName(id)),
    );

describe("the model queues' metrics", () => {
  for (const step of ["correct", "judge"] as const) {
    const queue = logicalId(stack.modelQueue.queues[step]);

    it(`λ ${step}'s queue: its oldest message's age is alarmed at an hour, 3 periods running, with OK too, to the alarm topic`, () => {
      const [alarm, ...others] = alarmsOn(queue, "ApproximateAgeOfOldestMessage");
      expect(others).toEqual([]);
      expect(alarm).toMatchObject({
        Threshold: 3600,
        EvaluationPeriods: 3,
        Period: 300,
        Statistic: "Maximum",
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        // An idle queue publishes nothing: no data is no backlog.
        TreatMissingData: "notBreaching",
      });
      expect(alarm.AlarmDescription).toMatch(new RegExp(`λ ${step} has waited over 1 hour`));
      expect(alarm.AlarmActions).toContainEqual(topicRef);
      expect(alarm.OKActions).toContainEqual(topicRef);
      // Depth is no alarm: a burst waits by design (issue 33: none that fire under normal load).
      expect(alarmsOn(queue, "ApproximateNumberOfMessagesVisible")).toEqual([]);
    });

    it(`λ ${step}'s queue: the dashboard draws its depth (waiting + in flight) and its oldest message's age`, () => {
      const [dashboard] = Object.values(resources).filter((r) => r.Type === "AWS::CloudWatch::Dashboard");
      const body = JSON.stringify(dashboard?.Properties.DashboardBody);
      const title = `Model queue of λ ${step}: depth and oldest wait`;
      expect(body).toContain(title);
      // The widget's own part of the body: from its title to the next widget's.
      const widget = body.slice(body.indexOf(title), body.indexOf('\\"type\\":', body.indexOf(title)));
      for (const metric of [
        "ApproximateNumberOfMessagesVisible",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateAgeOfOldestMessage",
      ])
        expect(widget, metric).toContain(metric);
      expect(widget).toContain("waiting + inFlight");
      expect(widget).toContain(JSON.stringify({ "Fn::GetAtt": [queue, "QueueName"] }));
      // The age alarm's threshold is drawn beside the age.
      expect(widget).toMatch(/\\"value\\":3600/);
    });
  }

  it("the dead-letter queue of model work that kept failing is alarmed on its first message", () => {
    const [alarm] = alarmsOn(
      logicalId(stack.modelQueue.deadLetterQueue),
      "ApproximateNumberOfMessagesVisible",
    );
    expect(alarm).toMatchObject({ Threshold: 1, EvaluationPeriods: 1 });
    expect(alarm.AlarmActions).toContainEqual(topicRef);
  });
});
