import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { logicalId, synthesize } from "./synth.js";

const { stack, template } = synthesize("dev");
const bucket = logicalId(stack.storage.bucket);
const table = logicalId(stack.storage.table);
const bus = logicalId(stack.projectBus.bus);

const objects = (prefix: string) => ({
  "Fn::Join": ["", [{ "Fn::GetAtt": [bucket, "Arn"] }, `/${prefix}*`]],
});
const tableArn = { "Fn::GetAtt": [table, "Arn"] };
const busArn = { "Fn::GetAtt": [bus, "Arn"] };
const describeStack = Match.objectLike({
  Sid: "ReadStackOutputs",
  Effect: "Allow",
  Action: "cloudformation:DescribeStacks",
});
const executionsOf = (name: string) =>
  Match.objectLike({ "Fn::Join": ["", Match.arrayWith([`:execution:${name}:*`])] });

/** The one managed policy with this name; its statements must be exactly these (CDK sorts actions and resources). */
function expectPolicy(name: string, statements: unknown[]) {
  template.hasResourceProperties("AWS::IAM::ManagedPolicy", {
    ManagedPolicyName: name,
    PolicyDocument: Match.objectLike({ Statement: statements }),
  });
  const found = template.findResources("AWS::IAM::ManagedPolicy", {
    Properties: { ManagedPolicyName: name },
  });
  expect(Object.keys(found)).toHaveLength(1);
  // Attached to nobody by the stack: an account gives them to its own people.
  const [policy] = Object.values(found) as { Properties: Record<string, unknown> }[];
  expect(policy?.Properties).not.toHaveProperty("Roles");
  expect(policy?.Properties).not.toHaveProperty("Users");
  expect(policy?.Properties).not.toHaveProperty("Groups");
}

describe("the policies people are given", () => {
  it("redraft-dev-reviewer: read runs, attempts, their objects and execution history; write decisions; put Draft Reviewed", () => {
    expectPolicy("redraft-dev-reviewer", [
      describeStack,
      Match.objectLike({
        Sid: "ReadRunsAndAttempts",
        Action: ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query"],
        Resource: [tableArn, { "Fn::Join": ["", [tableArn, "/index/*"]] }],
      }),
      Match.objectLike({
        Sid: "WriteDecisions",
        Action: "dynamodb:UpdateItem",
        Resource: tableArn,
        Condition: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["RUN#*"] } },
      }),
      Match.objectLike({
        Sid: "ReadRunObjects",
        Action: "s3:GetObject",
        Resource: [objects("results/"), objects("runs/")],
      }),
      Match.objectLike({
        Sid: "RetainDecidedRunObjects",
        Action: "s3:PutObjectTagging",
        Resource: [objects("results/"), objects("runs/")],
      }),
      Match.objectLike({
        Sid: "ListRunObjects",
        Action: "s3:ListBucket",
        Resource: { "Fn::GetAtt": [bucket, "Arn"] },
        Condition: { StringLike: { "s3:prefix": ["runs/*"] } },
      }),
      Match.objectLike({
        Sid: "ReadExecutionHistory",
        Action: ["states:DescribeExecution", "states:GetExecutionHistory"],
        Resource: [executionsOf("redraft-dev-batch"), executionsOf("redraft-dev")],
      }),
      Match.objectLike({
        Sid: "AnnounceReviews",
        Action: "events:PutEvents",
        Resource: busArn,
        Condition: { StringEquals: { "events:detail-type": "Draft Reviewed", "events:source": "redraft" } },
      }),
    ]);
  });

  it("redraft-dev-submitter: put under drafts/ and batches/, put Draft Submitted and Batch Submitted", () => {
    expectPolicy("redraft-dev-submitter", [
      describeStack,
      Match.objectLike({
        Sid: "UploadDraftsAndManifests",
        Action: "s3:PutObject",
        Resource: [objects("batches/"), objects("drafts/")],
      }),
      Match.objectLike({
        Sid: "SubmitByEvent",
        Action: "events:PutEvents",
        Resource: busArn,
        Condition: {
          StringEquals: {
            "events:detail-type": ["Draft Submitted", "Batch Submitted"],
            "events:source": "redraft.client",
          },
        },
      }),
    ]);
  });

  it("outputs both policies' ARNs and every resource cloud mode needs", () => {
    const outputs = template.toJSON().Outputs as Record<string, unknown>;
    for (const name of [
      "BucketName",
      "TableName",
      "EventBusName",
      "StateMachineArn",
      "StateMachineName",
      "BatchStateMachineArn",
      "BatchStateMachineName",
      "ReviewerPolicyArn",
      "SubmitterPolicyArn",
    ])
      expect(outputs, name).toHaveProperty(name);
    template.hasOutput("ReviewerPolicyArn", { Value: { Ref: logicalId(stack.access.reviewer) } });
    template.hasOutput("SubmitterPolicyArn", { Value: { Ref: logicalId(stack.access.submitter) } });
  });
});

describe("child executions of a batch", () => {
  it("pass the batch's execution id, so the console links each child to its parent", () => {
    const asl = JSON.stringify(template.toJSON());
    const children = asl.match(/states:::states:startExecution\.sync:2/g) ?? [];
    const linked =
      asl.match(/AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID\.\$\\*":\\*"\$\$\.Execution\.Id/g) ?? [];
    expect(children.length).toBeGreaterThan(0);
    expect(linked).toHaveLength(children.length);
  });
});
