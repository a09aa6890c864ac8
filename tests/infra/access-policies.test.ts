import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { logicalId, synthesize } from "./synth.js";

const { stack, template } = synthesize("dev");
const bucket = logicalId(stack.storage.bucket);
const table = logicalId(stack.storage.table);
const bus = logicalId(stack.projectBus.bus);
const correctQueue = logicalId(stack.modelQueue.queues.correct);
const judgeQueue = logicalId(stack.modelQueue.queues.judge);

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
        Sid: "ReadBatchResults",
        Action: "s3:GetObject",
        Resource: { "Fn::Join": ["", [{ "Fn::GetAtt": [bucket, "Arn"] }, "/batch-results/*/items.jsonl"]] },
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
        Sid: "ReadModelQueueDepth",
        Action: "sqs:GetQueueAttributes",
        Resource: [{ "Fn::GetAtt": [correctQueue, "Arn"] }, { "Fn::GetAtt": [judgeQueue, "Arn"] }],
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
      "CorrectQueueUrl",
      "JudgeQueueUrl",
    ])
      expect(outputs, name).toHaveProperty(name);
    template.hasOutput("CorrectQueueUrl", { Value: { Ref: correctQueue } });
    template.hasOutput("JudgeQueueUrl", { Value: { Ref: judgeQueue } });
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

/**
 * What `redraft --stack` calls, command by command (cli/cloud/resources.ts, cli/cloud/runtime.ts,
 * cli/batch.ts, functions/lib/dynamo-store.ts, functions/lib/s3-blobs.ts): each AWS action and the
 * resource IAM evaluates it on. Written from the code, not recorded from a run.
 */
const ARN = {
  stack: (name: string) =>
    `arn:aws:cloudformation:us-east-1:123456789012:stack/${name}/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b`,
  table: "arn:aws:dynamodb:us-east-1:123456789012:table/runs",
  index: (name: string) => `arn:aws:dynamodb:us-east-1:123456789012:table/runs/index/${name}`,
  object: (key: string) => `arn:aws:s3:::drafts-bucket/${key}`,
  bucket: "arn:aws:s3:::drafts-bucket",
  bus: "arn:aws:events:us-east-1:123456789012:event-bus/redraft-dev",
  queue: (name: string) => `arn:aws:sqs:us-east-1:123456789012:${name}`,
  execution: (machine: string, name: string) =>
    `arn:aws:states:us-east-1:123456789012:execution:${machine}:${name}`,
};
interface Call {
  action: string;
  resource: string;
  context?: Record<string, string>;
}
const findStack: Call[] = [
  // `--stack redraft-dev` asks for that spelling first, then the stack's own.
  { action: "cloudformation:DescribeStacks", resource: ARN.stack("redraft-dev") },
  { action: "cloudformation:DescribeStacks", resource: ARN.stack("Redraft-dev") },
];
const COMMANDS: Record<string, { policy: "reviewer" | "submitter"; calls: Call[] }> = {
  "runs --stack": {
    policy: "reviewer",
    calls: [...findStack, { action: "dynamodb:Query", resource: ARN.index("byStatus") }],
  },
  "show <run> --stack": {
    policy: "reviewer",
    calls: [
      ...findStack,
      { action: "dynamodb:GetItem", resource: ARN.table },
      { action: "dynamodb:Query", resource: ARN.table },
      { action: "s3:GetObject", resource: ARN.object("runs/r1/attempt-1.json") },
      { action: "s3:GetObject", resource: ARN.object("results/d1/r1.json") },
      { action: "states:GetExecutionHistory", resource: ARN.execution("redraft-dev", "r1") },
      // A run waiting for a model slot: the depth of the queue it waits in (cli/cloud/waiting.ts).
      { action: "sqs:GetQueueAttributes", resource: ARN.queue("correct-queue") },
      { action: "sqs:GetQueueAttributes", resource: ARN.queue("judge-queue") },
    ],
  },
  "review <run> --stack": {
    policy: "reviewer",
    calls: [
      ...findStack,
      { action: "dynamodb:UpdateItem", resource: ARN.table, context: { "dynamodb:LeadingKeys": "RUN#r1" } },
      { action: "s3:ListBucket", resource: ARN.bucket, context: { "s3:prefix": "runs/r1/" } },
      { action: "s3:PutObjectTagging", resource: ARN.object("runs/r1/attempt-1.json") },
      {
        action: "events:PutEvents",
        resource: ARN.bus,
        context: { "events:detail-type": "Draft Reviewed", "events:source": "redraft" },
      },
    ],
  },
  "batch <id> --json --stack": {
    policy: "reviewer",
    calls: [
      ...findStack,
      { action: "dynamodb:GetItem", resource: ARN.table },
      { action: "s3:GetObject", resource: ARN.object("batch-results/b1/items.jsonl") },
    ],
  },
  "run <draft> --stack (submit)": {
    policy: "submitter",
    calls: [...findStack, { action: "s3:PutObject", resource: ARN.object("drafts/d1.json") }],
  },
  "batch <manifest> --stack (submit)": {
    policy: "submitter",
    calls: [
      ...findStack,
      { action: "s3:PutObject", resource: ARN.object("batches/b1.jsonl") },
      {
        action: "events:PutEvents",
        resource: ARN.bus,
        context: { "events:detail-type": "Batch Submitted", "events:source": "redraft.client" },
      },
    ],
  },
};

/** The policy's statements with CloudFormation's references resolved to the ARNs above. */
function resolvedStatements(name: string): { Action: string[]; Resource: string[]; Condition?: Json }[] {
  const [policy] = Object.values(
    template.findResources("AWS::IAM::ManagedPolicy", { Properties: { ManagedPolicyName: name } }),
  ) as { Properties: { PolicyDocument: { Statement: Json[] } } }[];
  const resolve = (v: Json): string => {
    if (typeof v === "string") return v;
    if (v.Ref === "AWS::Partition") return "aws";
    if (v.Ref === "AWS::Region") return "us-east-1";
    if (v.Ref === "AWS::AccountId") return "123456789012";
    if (v["Fn::GetAtt"]?.[0] === bucket) return ARN.bucket;
    if (v["Fn::GetAtt"]?.[0] === table) return ARN.table;
    if (v["Fn::GetAtt"]?.[0] === bus) return ARN.bus;
    if (v["Fn::GetAtt"]?.[0] === correctQueue) return ARN.queue("correct-queue");
    if (v["Fn::GetAtt"]?.[0] === judgeQueue) return ARN.queue("judge-queue");
    if (v["Fn::Join"]) return (v["Fn::Join"][1] as Json[]).map(resolve).join(v["Fn::Join"][0]);
    throw new Error(`unresolved ${JSON.stringify(v)}`);
  };
  return (policy?.Properties.PolicyDocument.Statement ?? []).map((s) => ({
    Action: [s.Action].flat(),
    Resource: [s.Resource].flat().map(resolve),
    ...(s.Condition && { Condition: s.Condition }),
  }));
}
type Json = ReturnType<typeof JSON.parse>;

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
  );

/** Whether an Allow statement of the policy covers the call, its conditions included. */
function allows(statements: ReturnType<typeof resolvedStatements>, call: Call): boolean {
  return statements.some((s) => {
    if (!s.Action.some((a) => glob(a).test(call.action))) return false;
    if (!s.Resource.some((r) => glob(r).test(call.resource))) return false;
    for (const [operator, keys] of Object.entries(s.Condition ?? {}) as [string, Record<string, unknown>][])
      for (const [key, expected] of Object.entries(keys)) {
        const value = call.context?.[key];
        if (value === undefined) return false;
        const wanted = [expected].flat() as string[];
        const ok = operator.endsWith("StringLike")
          ? wanted.some((w) => glob(w).test(value))
          : wanted.includes(value);
        if (!ok) return false;
      }
    return true;
  });
}

describe("the policies allow what `redraft --stack` calls", () => {
  it.each(Object.entries(COMMANDS))("%s", (_command, { policy, calls }) => {
    const statements = resolvedStatements(`redraft-dev-${policy}`);
    const denied = calls.filter((c) => !allows(statements, c)).map((c) => `${c.action} on ${c.resource}`);
    expect(denied).toEqual([]);
  });

  it("and not more: a reviewer writes no batch record, reads no upload, puts no submission; a submitter reads nothing", () => {
    const reviewer = resolvedStatements("redraft-dev-reviewer");
    const submitter = resolvedStatements("redraft-dev-submitter");
    const refused: [typeof reviewer, Call][] = [
      [
        reviewer,
        {
          action: "dynamodb:UpdateItem",
          resource: ARN.table,
          context: { "dynamodb:LeadingKeys": "BATCH#b1" },
        },
      ],
      [reviewer, { action: "s3:GetObject", resource: ARN.object("drafts/d1.json") }],
      // (batch-results/*/items.jsonl also matches a round's list, rounds/<n>/items.jsonl: IAM's `*`
      // crosses slashes, and a batch id is named at run time.)
      [reviewer, { action: "s3:ListBucket", resource: ARN.bucket, context: { "s3:prefix": "drafts/" } }],
      [
        reviewer,
        {
          action: "events:PutEvents",
          resource: ARN.bus,
          context: { "events:detail-type": "Draft Submitted", "events:source": "redraft.client" },
        },
      ],
      [reviewer, { action: "cloudformation:DescribeStacks", resource: ARN.stack("Redraft-prod") }],
      // The model queues' depth, never their messages (a message carries a task token and the draft).
      [reviewer, { action: "sqs:ReceiveMessage", resource: ARN.queue("correct-queue") }],
      [reviewer, { action: "sqs:PurgeQueue", resource: ARN.queue("judge-queue") }],
      [reviewer, { action: "sqs:GetQueueAttributes", resource: ARN.queue("another-queue") }],
      [submitter, { action: "sqs:GetQueueAttributes", resource: ARN.queue("correct-queue") }],
      [submitter, { action: "s3:GetObject", resource: ARN.object("runs/r1/attempt-1.json") }],
      [submitter, { action: "dynamodb:GetItem", resource: ARN.table }],
      [
        submitter,
        {
          action: "events:PutEvents",
          resource: ARN.bus,
          context: { "events:detail-type": "Draft Reviewed", "events:source": "redraft" },
        },
      ],
    ];
    for (const [statements, call] of refused)
      expect(allows(statements, call), `${call.action} ${call.resource}`).toBe(false);
  });
});
