import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { SubmissionEvent } from "../../contracts/events.js";
import { liveAlias } from "../../infra/constructs/functions.js";
import { logicalId, synthesize } from "./synth.js";

const { stack, template } = synthesize("dev");
const stateMachineRef = { Ref: logicalId(stack.workflow.stateMachine) };
const dlqArn = { "Fn::GetAtt": [logicalId(stack.triggers.deadLetterQueue), "Arn"] };

describe("triggers", () => {
  const starterArn = { Ref: logicalId(liveAlias(stack.triggers.starter)) };

  it("sends each upload under drafts/ to λ start (S3 → default bus → rule), the whole event as input", () => {
    template.hasResourceProperties("AWS::Events::Rule", {
      EventBusName: Match.absent(),
      EventPattern: {
        source: ["aws.s3"],
        "detail-type": ["Object Created"],
        detail: {
          bucket: { name: [{ Ref: logicalId(stack.storage.bucket) }] },
          object: { key: [{ prefix: "drafts/" }] },
        },
      },
      Targets: [
        Match.objectLike({
          Arn: starterArn,
          InputTransformer: Match.absent(),
          DeadLetterConfig: { Arn: dlqArn },
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 8 }),
        }),
      ],
    });
  });

  it("sends each Draft Submitted event on the project's bus to λ start", () => {
    template.hasResourceProperties("AWS::Events::EventBus", { Name: "redraft-dev" });
    template.hasResourceProperties("AWS::Events::Rule", {
      EventBusName: { Ref: logicalId(stack.projectBus.bus) },
      EventPattern: { source: [SubmissionEvent.source], "detail-type": [SubmissionEvent.detailType] },
      Targets: [
        Match.objectLike({
          Arn: starterArn,
          DeadLetterConfig: { Arn: dlqArn },
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 8 }),
        }),
      ],
    });
  });

  it("gives λ start the state machine and its failed invocations to the same dead-letter queue", () => {
    const props = template.toJSON().Resources[logicalId(stack.triggers.starter)].Properties;
    expect(props.Environment.Variables.STATE_MACHINE_ARN).toEqual(stateMachineRef);
    expect(props.DeadLetterConfig).toEqual({ TargetArn: dlqArn });
    template.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
      FunctionName: { Ref: logicalId(stack.triggers.starter) },
      MaximumRetryAttempts: 2,
    });
  });

  it("puts events that cannot start a run in an encrypted, SSL-only queue that EventBridge may write", () => {
    template.hasResourceProperties("AWS::SQS::Queue", {
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 1_209_600,
    });
    template.hasResourceProperties("AWS::SQS::QueuePolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
          Match.objectLike({
            Effect: "Allow",
            Action: "sqs:SendMessage",
            Principal: { Service: "events.amazonaws.com" },
          }),
        ]),
      },
    });
  });

  it("lets only λ start start executions, besides the batch state machine starting its children", () => {
    const starters = Object.values(template.findResources("AWS::IAM::Policy")).filter((p) =>
      JSON.stringify(p).includes("states:StartExecution"),
    );
    const roles = starters.map((p) =>
      JSON.stringify((p as { Properties: { Roles: unknown } }).Properties.Roles),
    );
    const batchRole = logicalId(stack.batches.stateMachine.role);
    expect(roles.filter((r) => !r.includes(batchRole))).toEqual([
      expect.stringContaining(logicalId(stack.triggers.starter.role ?? stack.triggers.starter)),
    ]);
  });

  it("keeps exactly the four triggers, plus the two outcome-counting rules and the two finalizers'", () => {
    const rules = Object.values(template.findResources("AWS::Events::Rule"));
    expect(rules).toHaveLength(8);
    const starting = rules.filter((r) =>
      JSON.stringify(r).includes(logicalId(liveAlias(stack.triggers.starter))),
    );
    // drafts/ and Draft Submitted, batches/ and Batch Submitted.
    expect(starting).toHaveLength(4);
  });
});
