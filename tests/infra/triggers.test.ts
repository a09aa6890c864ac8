import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { SubmissionEvent } from "../../infra/state-names.js";
import { logicalId, synthesize } from "./synth.js";

const { stack, template } = synthesize("dev");
const stateMachineRef = { Ref: logicalId(stack.workflow.stateMachine) };
const dlqArn = { "Fn::GetAtt": [logicalId(stack.triggers.deadLetterQueue), "Arn"] };

describe("triggers", () => {
  it("starts a run for each upload under drafts/ (S3 → default bus → rule)", () => {
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
          Arn: stateMachineRef,
          InputTransformer: {
            InputPathsMap: {
              "detail-bucket-name": "$.detail.bucket.name",
              "detail-object-key": "$.detail.object.key",
              "detail-object-version-id": "$.detail.object.version-id",
              "detail-object-etag": "$.detail.object.etag",
            },
            InputTemplate:
              '{"draftRef":{"bucket":<detail-bucket-name>,"key":<detail-object-key>,"versionId":<detail-object-version-id>},"submissionId":<detail-object-etag>}',
          },
          DeadLetterConfig: { Arn: dlqArn },
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 8 }),
        }),
      ],
    });
  });

  it("starts a run for each Draft Submitted event on the project's bus, with the detail as input", () => {
    template.hasResourceProperties("AWS::Events::EventBus", { Name: "redraft-dev" });
    template.hasResourceProperties("AWS::Events::Rule", {
      EventBusName: { Ref: logicalId(stack.projectBus.bus) },
      EventPattern: { source: [SubmissionEvent.source], "detail-type": [SubmissionEvent.detailType] },
      Targets: [
        Match.objectLike({
          Arn: stateMachineRef,
          InputPath: "$.detail",
          DeadLetterConfig: { Arn: dlqArn },
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 8 }),
        }),
      ],
    });
  });

  it("puts events that cannot start a run in an encrypted, SSL-only queue that EventBridge alone may write", () => {
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

  it("lets only the rules' role start executions", () => {
    template.hasResourceProperties("AWS::IAM::Policy", {
      PolicyDocument: {
        Statement: [Match.objectLike({ Action: "states:StartExecution", Resource: stateMachineRef })],
      },
    });
  });

  it("keeps exactly the two triggers", () => {
    expect(Object.keys(template.findResources("AWS::Events::Rule"))).toHaveLength(2);
  });
});
