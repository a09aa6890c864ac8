import { Match, type Template } from "aws-cdk-lib/assertions";
import type { CfnTable } from "aws-cdk-lib/aws-dynamodb";
import type { CfnFunction, IFunction } from "aws-cdk-lib/aws-lambda";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import type { IConstruct } from "constructs";
import { describe, expect, it } from "vitest";
import { INDEXES, PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE } from "../../contracts/table.js";
import { environments } from "../../infra/config.js";
import { foundationModelId, liveAlias } from "../../infra/constructs/functions.js";
import { logicalId, synthesize, synthesizeFresh } from "./synth.js";

const dev = synthesize("dev");
const prod = synthesize("prod");

type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Condition?: unknown };

/** Every Allow statement of the inline policies attached to a role. */
function statementsOf(template: Template, roleLogicalId: string): Statement[] {
  const policies = template.findResources("AWS::IAM::Policy", {
    Properties: { Roles: Match.arrayWith([{ Ref: roleLogicalId }]) },
  });
  return Object.values(policies).flatMap(
    (p) =>
      (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
        .Statement,
  );
}
const actionsOf = (statements: Statement[]) =>
  [...new Set(statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])))].sort();
const roleOf = (fn: IFunction) => {
  if (!fn.role) throw new Error(`${fn.node.path} has no role`);
  return logicalId(fn.role);
};

/** `arn:…:bucket/<prefix>*` as CloudFormation renders it. */
const objectsArn = (bucketId: string, prefix: string) => ({
  "Fn::Join": ["", [{ "Fn::GetAtt": [bucketId, "Arn"] }, `/${prefix}*`]],
});

const XRAY = ["xray:PutTelemetryRecords", "xray:PutTraceSegments"];
const SECRET_READ = ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"];
/** A model function takes its work from its model queue and answers the waiting state's task token. */
const MODEL_QUEUE = [
  "sqs:ChangeMessageVisibility",
  "sqs:DeleteMessage",
  "sqs:GetQueueAttributes",
  "sqs:GetQueueUrl",
  "sqs:ReceiveMessage",
  "states:SendTaskFailure",
  "states:SendTaskHeartbeat",
  "states:SendTaskSuccess",
];

describe("least-privilege IAM per function", () => {
  const { stack, template } = dev;
  const bucketId = logicalId(stack.storage.bucket);
  const tableArn = { "Fn::GetAtt": [logicalId(stack.storage.table), "Arn"] };

  it("validate: the run's items, uploads and runs/ to read, runs/ to write — no secret, no model", () => {
    const statements = statementsOf(template, roleOf(stack.functions.validate));
    expect(actionsOf(statements)).toEqual(
      [
        ...XRAY,
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:PutObject",
        "s3:PutObjectTagging",
      ].sort(),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({ Action: "s3:GetObjectVersion", Resource: objectsArn(bucketId, "drafts/") }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
        Resource: tableArn,
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: "s3:GetObject",
        Resource: expect.arrayContaining([objectsArn(bucketId, "drafts/"), objectsArn(bucketId, "runs/")]),
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ["s3:PutObject", "s3:PutObjectTagging"],
        Resource: objectsArn(bucketId, "runs/"),
      }),
    );
  });

  it("correct: runs/ only, plus the API key (anthropic) — no table access", () => {
    const statements = statementsOf(template, roleOf(stack.functions.correct));
    expect(actionsOf(statements)).toEqual(
      [...XRAY, "s3:GetObject", "s3:PutObject", "s3:PutObjectTagging", ...SECRET_READ, ...MODEL_QUEUE].sort(),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
        Resource: objectsArn(bucketId, "runs/"),
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: SECRET_READ,
        Resource: { Ref: logicalId(stack.redraft.node.findChild("AnthropicApiKey")) },
      }),
    );
  });

  it("correct on Bedrock: InvokeModel on the configured model only, no secret", () => {
    const statements = statementsOf(prod.template, roleOf(prod.stack.functions.correct));
    expect(actionsOf(statements)).toEqual(
      [
        ...XRAY,
        "bedrock:InvokeModel",
        "s3:GetObject",
        "s3:PutObject",
        "s3:PutObjectTagging",
        ...MODEL_QUEUE,
      ].sort(),
    );
    const modelId = environments.prod.model.id;
    const invoke = statements.find((s) => s.Action === "bedrock:InvokeModel");
    const resources = JSON.stringify(invoke?.Resource);
    expect(resources).toContain(`:inference-profile/${modelId}`);
    expect(resources).toContain(`::foundation-model/${foundationModelId(modelId)}`);
    expect(resources).not.toMatch(/foundation-model\/\*|"\*"/);
    prod.template.resourceCountIs("AWS::SecretsManager::Secret", 0);
  });

  it("judge: reads the run, adds its tokens, runs/ to read and write, plus the API key (anthropic)", () => {
    const statements = statementsOf(template, roleOf(stack.functions.judge));
    expect(actionsOf(statements)).toEqual(
      [
        ...XRAY,
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "s3:GetObject",
        "s3:PutObject",
        "s3:PutObjectTagging",
        ...SECRET_READ,
        ...MODEL_QUEUE,
      ].sort(),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({ Action: ["dynamodb:GetItem", "dynamodb:UpdateItem"], Resource: tableArn }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
        Resource: objectsArn(bucketId, "runs/"),
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: SECRET_READ,
        Resource: { Ref: logicalId(stack.redraft.node.findChild("AnthropicApiKey")) },
      }),
    );
  });

  it("judge on Bedrock: InvokeModel on the configured model only, no secret", () => {
    const statements = statementsOf(prod.template, roleOf(prod.stack.functions.judge));
    expect(actionsOf(statements)).toEqual(
      [
        ...XRAY,
        "bedrock:InvokeModel",
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "s3:GetObject",
        "s3:PutObject",
        "s3:PutObjectTagging",
        ...MODEL_QUEUE,
      ].sort(),
    );
    const correctInvoke = statementsOf(prod.template, roleOf(prod.stack.functions.correct)).find(
      (s) => s.Action === "bedrock:InvokeModel",
    );
    expect(statements.find((s) => s.Action === "bedrock:InvokeModel")).toEqual(correctInvoke);
  });

  it("only correct and judge invoke the model; λ rounds, which submits the batches, is the one other reader of the API key", () => {
    const callersOf = (env: typeof dev, action: string) =>
      Object.values(env.template.findResources("AWS::IAM::Policy"))
        .filter((p) =>
          actionsOf(
            (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
              .Statement,
          ).includes(action),
        )
        .flatMap((p) =>
          (p as { Properties: { Roles: { Ref: string }[] } }).Properties.Roles.map((r) => r.Ref),
        )
        .sort();
    const callersIn = (env: typeof dev) =>
      [env.stack.functions.correct, env.stack.functions.judge].map(roleOf).sort();
    const rounds = (env: typeof dev) => roleOf(env.stack.batches.rounds.function);
    expect(callersOf(dev, "secretsmanager:GetSecretValue")).toEqual([...callersIn(dev), rounds(dev)].sort());
    expect(callersOf(dev, "bedrock:InvokeModel")).toEqual([]);
    expect(callersOf(prod, "bedrock:InvokeModel")).toEqual(callersIn(prod));
    expect(callersOf(prod, "secretsmanager:GetSecretValue")).toEqual([]);
    // Bedrock batch jobs: only λ rounds starts them, and only on Bedrock.
    expect(callersOf(prod, "bedrock:CreateModelInvocationJob")).toEqual([rounds(prod)]);
    expect(callersOf(dev, "bedrock:CreateModelInvocationJob")).toEqual([]);
  });

  it("λ rounds (anthropic): the API key, runs/ and its rounds' lists, the run and batch records — no model, no job", () => {
    const statements = statementsOf(template, roleOf(stack.batches.rounds.function));
    expect(actionsOf(statements)).toEqual(
      [
        ...XRAY,
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "s3:GetObject",
        "s3:PutObject",
        "s3:PutObjectTagging",
        ...SECRET_READ,
      ].sort(),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
        // No batch-jobs/: the Message Batches API holds the batches itself.
        Resource: [objectsArn(bucketId, "batch-results/"), objectsArn(bucketId, "runs/")],
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: SECRET_READ,
        Resource: { Ref: logicalId(stack.redraft.node.findChild("AnthropicApiKey")) },
      }),
    );
    expect(stack.batches.rounds.bedrockRole).toBeUndefined();
  });

  it("λ rounds (bedrock) passes the batch role to Bedrock alone, which assumes it only for this account's jobs", () => {
    const rounds = prod.stack.batches.rounds;
    const role = rounds.bedrockRole;
    if (!role) throw new Error("prod (Bedrock) has no batch service role");
    const passRole = statementsOf(prod.template, roleOf(rounds.function)).filter(
      (s) => s.Action === "iam:PassRole",
    );
    expect(passRole).toEqual([
      expect.objectContaining({
        Resource: { "Fn::GetAtt": [logicalId(role), "Arn"] },
        Condition: { StringEquals: { "iam:PassedToService": "bedrock.amazonaws.com" } },
      }),
    ]);
    const trust = (
      prod.template.toJSON().Resources[logicalId(role)] as {
        Properties: { AssumeRolePolicyDocument: { Statement: Statement[] } };
      }
    ).Properties.AssumeRolePolicyDocument.Statement;
    expect(trust).toEqual([
      expect.objectContaining({
        Action: "sts:AssumeRole",
        Principal: { Service: "bedrock.amazonaws.com" },
        Condition: {
          StringEquals: { "aws:SourceAccount": { Ref: "AWS::AccountId" } },
          ArnLike: {
            "aws:SourceArn": {
              "Fn::Join": [
                "",
                [
                  "arn:",
                  { Ref: "AWS::Partition" },
                  ":bedrock:",
                  { Ref: "AWS::Region" },
                  ":",
                  { Ref: "AWS::AccountId" },
                  ":model-invocation-job/*",
                ],
              ],
            },
          },
        },
      }),
    ]);
    // Its own policy: the jobs' files and their listing, nothing of drafts, runs or results.
    const statements = statementsOf(prod.template, logicalId(role));
    expect(actionsOf(statements)).toEqual(["s3:GetObject", "s3:ListBucket", "s3:PutObject"]);
    expect(JSON.stringify(statements)).not.toMatch(/\/(runs|results|drafts|batch-items|batch-results)\//);
  });

  it("revalidate: the run's items and runs/ — no secret, no model", () => {
    const statements = statementsOf(template, roleOf(stack.functions.revalidate));
    expect(actionsOf(statements)).toEqual(
      [
        ...XRAY,
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "s3:GetObject",
        "s3:PutObject",
        "s3:PutObjectTagging",
      ].sort(),
    );
    template.hasResourceProperties("AWS::Lambda::Function", {
      Description: Match.stringLikeRegexp("re-validate"),
      Environment: {
        Variables: Match.objectLike({ MODEL_PROVIDER: "none", ANTHROPIC_SECRET_ARN: Match.absent() }),
      },
    });
  });

  it("state machine: invoke validate and revalidate, queue the model work, UpdateItem, PutEvents, copy runs/ → results/", () => {
    const role = stack.workflow.stateMachine.role;
    const statements = statementsOf(template, logicalId(role));
    const { validate, revalidate } = stack.functions;
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: "lambda:InvokeFunction",
        // Each function's `live` alias, and nothing else: an execution never calls $LATEST.
        Resource: [validate, revalidate]
          .map((fn) => ({ Ref: logicalId(liveAlias(fn)) }))
          .sort((a, b) => a.Ref.localeCompare(b.Ref)),
      }),
    );
    // The model functions are reached through their queues only, never invoked beyond their slots.
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: "sqs:SendMessage",
        Resource: Object.values(stack.modelQueue.queues).map((queue) => ({
          "Fn::GetAtt": [logicalId(queue), "Arn"],
        })),
      }),
    );
    const model = actionsOf(statements).filter(
      (a) => a.startsWith("secretsmanager:") || a.startsWith("bedrock:"),
    );
    expect(model).toEqual([]);
    expect(statements).toContainEqual(expect.objectContaining({ Action: "dynamodb:UpdateItem" }));
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: "events:PutEvents",
        Resource: { "Fn::GetAtt": [logicalId(stack.projectBus.bus), "Arn"] },
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ["s3:GetObject", "s3:GetObjectTagging"],
        Resource: objectsArn(bucketId, "runs/"),
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ["s3:PutObject", "s3:PutObjectTagging"],
        Resource: objectsArn(bucketId, "results/"),
      }),
    );
    const actions = actionsOf(statements);
    expect(actions.filter((a) => a.startsWith("dynamodb:"))).toEqual(["dynamodb:UpdateItem"]);
    expect(actions.filter((a) => a.startsWith("s3:"))).toEqual([
      "s3:GetObject",
      "s3:GetObjectTagging",
      "s3:PutObject",
      "s3:PutObjectTagging",
    ]);
  });

  it("grants no service-wide wildcard actions anywhere", () => {
    const all = Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
      (p) =>
        (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
          .Statement,
    );
    expect(actionsOf(all).filter((a) => a.includes("*"))).toEqual([]);
  });

  it("runs Node.js 22 on ARM64 with X-Ray and the documented environment (why 22: README, Deploying)", () => {
    const { validate, correct, revalidate, judge } = stack.functions;
    for (const fn of [validate, correct, revalidate, judge]) {
      const props = template.toJSON().Resources[logicalId(fn)].Properties;
      expect(props).toMatchObject({
        Runtime: "nodejs22.x",
        Architectures: ["arm64"],
        MemorySize: 1024,
        TracingConfig: { Mode: "Active" },
        LoggingConfig: { LogFormat: "JSON" },
      });
      expect(Object.keys(props.Environment.Variables)).toEqual(
        expect.arrayContaining([
          "TABLE_NAME",
          "BUCKET_NAME",
          "MODEL_PROVIDER",
          "DEPLOYMENT_CONFIG",
          "DEDUPE_WINDOW_MS",
          "POWERTOOLS_SERVICE_NAME",
          "POWERTOOLS_METRICS_NAMESPACE",
          "POWERTOOLS_LOG_LEVEL",
        ]),
      );
      expect(props.Environment.Variables).toMatchObject({
        POWERTOOLS_SERVICE_NAME: "redraft",
        POWERTOOLS_METRICS_NAMESPACE: "Redraft",
      });
      expect(JSON.parse(props.Environment.Variables.DEPLOYMENT_CONFIG)).toEqual(environments.dev.deployment);
    }
    const timeouts = [validate, correct, revalidate, judge].map(
      (fn) => template.toJSON().Resources[logicalId(fn)].Properties.Timeout,
    );
    // The model steps' timeout fits their request (tests/infra/worst-case.test.ts).
    expect(timeouts).toEqual([60, 180, 60, 180]);
  });

  it("gives the model steps the model settings, and validate the provider alone to know one is configured", () => {
    const variables = (fn: IFunction) =>
      template.toJSON().Resources[logicalId(fn)].Properties.Environment.Variables as Record<string, unknown>;
    const { validate, correct, judge } = stack.functions;
    const model = {
      MODEL_PROVIDER: environments.dev.model.provider,
      MODEL_ID: environments.dev.model.id,
      ANTHROPIC_SECRET_ARN: { Ref: logicalId(stack.redraft.node.findChild("AnthropicApiKey")) },
    };
    expect(variables(correct)).toMatchObject(model);
    expect(variables(judge)).toMatchObject(model);
    expect(variables(judge)).toEqual(variables(correct));
    // modelAvailable comes from MODEL_PROVIDER; the key's ARN is there for the environment schema only.
    expect(variables(validate)).toMatchObject({ MODEL_PROVIDER: environments.dev.model.provider });
  });
});

describe("storage security", () => {
  const { stack, template } = dev;

  it("keeps drafts in an encrypted, private, versioned bucket with access logs and SSL enforced", () => {
    const bucket = template.toJSON().Resources[logicalId(stack.storage.bucket)].Properties;
    expect(bucket).toMatchObject({
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      VersioningConfiguration: { Status: "Enabled" },
      LoggingConfiguration: {
        DestinationBucketName: { Ref: logicalId(stack.storage.accessLogsBucket as IConstruct) },
      },
    });
    template.hasResourceProperties("AWS::S3::BucketPolicy", {
      Bucket: { Ref: logicalId(stack.storage.bucket) },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: "Deny",
            Action: "s3:*",
            Condition: { Bool: { "aws:SecureTransport": "false" } },
          }),
        ]),
      },
    });
    template.hasResourceProperties("Custom::S3BucketNotifications", {
      BucketName: { Ref: logicalId(stack.storage.bucket) },
      NotificationConfiguration: { EventBridgeConfiguration: {} },
    });
  });

  it("keeps runs in one on-demand, encrypted table with PITR, TTL and the table.ts indexes", () => {
    template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [
        { AttributeName: PARTITION_KEY, KeyType: "HASH" },
        { AttributeName: SORT_KEY, KeyType: "RANGE" },
      ],
      BillingMode: "PAY_PER_REQUEST",
      SSESpecification: { SSEEnabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      GlobalSecondaryIndexes: Object.values(INDEXES).map((index) =>
        Match.objectLike({
          IndexName: index.indexName,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: "HASH" },
            { AttributeName: index.sortKey, KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "KEYS_ONLY" },
        }),
      ),
    });
  });
});

describe("cdk-nag AwsSolutions and Serverless", () => {
  it.each([
    ["dev", "AwsSolutions", dev],
    ["prod", "AwsSolutions", prod],
    ["dev", "Serverless", dev],
    ["prod", "Serverless", prod],
  ] as const)("%s has no unacknowledged %s finding", (_env, pack, { app, stack }) => {
    const checks = pack === "AwsSolutions" ? new AwsSolutionsChecks(app) : new ServerlessChecks(app);
    const report = checks.validateScope(stack);
    const findings = report.violations.map(
      (v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
    );
    expect(findings).toEqual([]);
    expect(report.success).toBe(true);
  });

  it("catches a finding when one is introduced (the check is live)", () => {
    const { app, stack } = synthesizeFresh("dev");
    (stack.storage.table.node.defaultChild as CfnTable).pointInTimeRecoverySpecification = undefined;
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations.map((v) => v.ruleName)).toContain("AwsSolutions-DDB3");
  });

  it("the Serverless pack catches a finding when one is introduced (the check is live)", () => {
    const { app, stack } = synthesizeFresh("dev");
    (stack.triggers.starter.node.defaultChild as CfnFunction).tracingConfig = undefined;
    const report = new ServerlessChecks(app).validateScope(stack);
    expect(report.violations.map((v) => v.ruleName)).toContain("Serverless-LambdaTracing");
  });
});
