import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { OUTCOME_EVENT_SOURCE, OutcomeEvents } from "../../contracts/events.js";
import { liveAlias } from "../../infra/constructs/functions.js";
import { logicalId, synthesize } from "./synth.js";

const { stack, template } = synthesize("prod");
const finalizer = stack.finalizer;
const finalizeArn = { Ref: logicalId(liveAlias(finalizer.function)) };
const dlqArn = { "Fn::GetAtt": [logicalId(finalizer.deadLetterQueue), "Arn"] };

describe("finalizer: stopped executions finish their runs", () => {
  it("matches this state machine's FAILED, TIMED_OUT and ABORTED executions on the default bus", () => {
    template.hasResourceProperties("AWS::Events::Rule", {
      EventBusName: Match.absent(),
      EventPattern: {
        source: ["aws.states"],
        "detail-type": ["Step Functions Execution Status Change"],
        detail: {
          stateMachineArn: [{ Ref: logicalId(stack.workflow.stateMachine) }],
          status: ["FAILED", "TIMED_OUT", "ABORTED"],
        },
      },
      Targets: [
        Match.objectLike({
          Arn: finalizeArn,
          // The whole event: λ finalize parses the documented detail itself.
          InputTransformer: Match.absent(),
          DeadLetterConfig: { Arn: dlqArn },
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 8 }),
        }),
      ],
    });
  });

  it("has a dead-letter queue of its own, for the rule and for Lambda's asynchronous retries", () => {
    expect(finalizer.deadLetterQueue).not.toBe(stack.triggers.deadLetterQueue);
    template.hasResourceProperties("AWS::Lambda::Function", {
      Description: Match.stringLikeRegexp("Fail the run of a failed, timed-out or aborted execution"),
      DeadLetterConfig: { TargetArn: dlqArn },
      Environment: {
        Variables: Match.objectLike({
          TABLE_NAME: { Ref: logicalId(stack.storage.table) },
          EVENT_BUS_NAME: { Ref: logicalId(stack.projectBus.bus) },
        }),
      },
    });
    template.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
      FunctionName: { Ref: logicalId(finalizer.function) },
      MaximumRetryAttempts: 2,
    });
  });

  it("alarms when an event lands in its dead-letter queue", () => {
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      Namespace: "AWS/SQS",
      MetricName: "ApproximateNumberOfMessagesVisible",
      Dimensions: [
        { Name: "QueueName", Value: { "Fn::GetAtt": [logicalId(finalizer.deadLetterQueue), "QueueName"] } },
      ],
      Statistic: "Maximum",
      Threshold: 1,
    });
  });

  it("announces Draft Failed from the source the other outcomes use, which λ outcome does not count twice", () => {
    expect(OutcomeEvents.Failed).toBe("Draft Failed");
    const outcomeRule = Object.values(template.findResources("AWS::Events::Rule")).find((r) =>
      JSON.stringify(r).includes(OutcomeEvents.Validated),
    ) as { Properties: { EventPattern: { source: string[]; "detail-type": string[] } } };
    expect(outcomeRule.Properties.EventPattern.source).toEqual([OUTCOME_EVENT_SOURCE]);
    expect(outcomeRule.Properties.EventPattern["detail-type"]).not.toContain(OutcomeEvents.Failed);
  });
});
