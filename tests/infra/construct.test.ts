import { Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { AttributeType, BillingMode, ProjectionType, Table } from "aws-cdk-lib/aws-dynamodb";
import { EventBus } from "aws-cdk-lib/aws-events";
import { BlockPublicAccess, Bucket, BucketEncryption } from "aws-cdk-lib/aws-s3";
import { Topic } from "aws-cdk-lib/aws-sns";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { INDEX_PROJECTION, INDEXES, PARTITION_KEY, SORT_KEY } from "../../contracts/table.js";
import { loadConfig } from "../../infra/config.js";
import { acknowledge } from "../../infra/nag.js";
import { Redraft } from "../../infra/redraft.js";
import { unbundledApp } from "./synth.js";

const TEAM_TOPIC = "arn:aws:sns:us-east-1:123456789012:team-oncall";

/** A team's own table with the key schema and indexes contracts/table.ts describes. */
function teamTable(scope: Stack, id: string, indexes = Object.values(INDEXES)): Table {
  const key = (name: string) => ({ name, type: AttributeType.STRING });
  const table = new Table(scope, id, {
    partitionKey: key(PARTITION_KEY),
    sortKey: key(SORT_KEY),
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  });
  for (const index of indexes) {
    table.addGlobalSecondaryIndex({
      indexName: index.indexName,
      partitionKey: key(index.partitionKey),
      sortKey: key(index.sortKey),
      projectionType: ProjectionType[INDEX_PROJECTION],
    });
  }
  return table;
}

/** A team's app: its stack, its own bucket and bus, and redraft dropped in. */
function teamAppWithBucketAndBus() {
  const app = unbundledApp();
  const stack = new Stack(app, "TeamStack");
  const bucket = new Bucket(stack, "TeamBucket", {
    encryption: BucketEncryption.S3_MANAGED,
    blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    versioned: true,
  });
  acknowledge(bucket, {
    id: "AwsSolutions-S1",
    reason: "The team's own bucket: its access logs are the team's.",
  });
  const bus = new EventBus(stack, "TeamBus", { eventBusName: "team-bus" });
  const redraft = new Redraft(stack, "Redraft", {
    config: loadConfig("dev"),
    existingBucket: bucket,
    existingEventBus: bus,
  });
  return { app, stack, bucket, bus, redraft, template: Template.fromStack(stack) };
}

const ref = (stack: Stack, construct: Bucket | EventBus | Table) =>
  stack.getLogicalId(construct.node.defaultChild as never);

/** Every cdk-nag finding on the stack, as "rule @ path". */
function nagFindings(app: ReturnType<typeof unbundledApp>, stack: Stack): string[] {
  return [new AwsSolutionsChecks(app), new ServerlessChecks(app)].flatMap((pack) =>
    pack
      .validateScope(stack)
      .violations.map(
        (v) => `${v.ruleName} @ ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
      ),
  );
}

describe("Redraft in a team's app that brings its own bucket and bus", () => {
  const team = teamAppWithBucketAndBus();
  const { stack, template } = team;
  const bucketId = ref(stack, team.bucket);
  const busId = ref(stack, team.bus);

  it("creates no second bucket and no second bus", () => {
    template.resourceCountIs("AWS::S3::Bucket", 1);
    template.resourceCountIs("AWS::Events::EventBus", 1);
    expect(team.redraft.bucket).toBe(team.bucket);
    expect(team.redraft.bus).toBe(team.bus);
    expect(team.redraft.projectBus).toBeUndefined();
  });

  it("puts the submission rules on the team's bus", () => {
    for (const detailType of ["Draft Submitted", "Batch Submitted"]) {
      template.hasResourceProperties("AWS::Events::Rule", {
        EventBusName: { Ref: busId },
        EventPattern: Match.objectLike({ "detail-type": [detailType] }),
      });
    }
    // Every rule on a custom bus is on the team's: none names another.
    const onBuses = Object.values(template.findResources("AWS::Events::Rule")).filter(
      (r) => (r as { Properties: { EventBusName?: unknown } }).Properties.EventBusName !== undefined,
    );
    expect(onBuses.length).toBeGreaterThanOrEqual(2);
    for (const rule of onBuses)
      expect((rule as { Properties: { EventBusName: unknown } }).Properties.EventBusName).toEqual({
        Ref: busId,
      });
  });

  it("starts runs from uploads to the team's bucket: EventBridge notifications turned on there, rules on its name", () => {
    template.hasResourceProperties("Custom::S3BucketNotifications", {
      BucketName: { Ref: bucketId },
      NotificationConfiguration: { EventBridgeConfiguration: {} },
    });
    for (const prefix of ["drafts/", "batches/"]) {
      template.hasResourceProperties("AWS::Events::Rule", {
        EventPattern: Match.objectLike({
          source: ["aws.s3"],
          detail: { bucket: { name: [{ Ref: bucketId }] }, object: { key: [{ prefix }] } },
        }),
      });
    }
  });

  it("grants the handlers the team's bucket and publishes outcomes on the team's bus", () => {
    const policies = JSON.stringify(template.findResources("AWS::IAM::Policy"));
    expect(policies).toContain(`"${bucketId}","Arn"`);
    expect(policies).toContain(`"${busId}","Arn"`);
  });

  it("is clean under cdk-nag AwsSolutions and Serverless (the team's bucket's access logs acknowledged by the team)", () => {
    expect(nagFindings(team.app, stack)).toEqual([]);
  });
});

describe("Redraft with the team's table and alarm topic", () => {
  function synth(env: "dev" | "prod") {
    const app = unbundledApp();
    const stack = new Stack(app, "TeamStack");
    const table = teamTable(stack, "TeamTable");
    const topic = Topic.fromTopicArn(stack, "TeamTopic", TEAM_TOPIC);
    const redraft = new Redraft(stack, "Redraft", {
      config: loadConfig(env),
      existingTable: table,
      alarmTopic: topic,
    });
    return { app, stack, table, redraft, template: Template.fromStack(stack) };
  }
  const team = synth("prod");

  it("creates no second table, and grants the team's", () => {
    team.template.resourceCountIs("AWS::DynamoDB::Table", 1);
    expect(team.redraft.table).toBe(team.table);
    const tableId = ref(team.stack, team.table);
    expect(JSON.stringify(team.template.findResources("AWS::IAM::Policy"))).toContain(`"${tableId}","Arn"`);
  });

  it("prod synthesizes with the topic as its only alarm destination, and every alarm notifies it", () => {
    const alarms = Object.values(team.template.findResources("AWS::CloudWatch::Alarm")) as {
      Properties: { AlarmActions: unknown[]; OKActions: unknown[] };
    }[];
    expect(alarms.length).toBeGreaterThan(5);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toContainEqual(TEAM_TOPIC);
      expect(alarm.Properties.OKActions).toContainEqual(TEAM_TOPIC);
    }
  });

  it("prod without any alarm destination still refuses to synthesize", () => {
    const stack = new Stack(unbundledApp(), "TeamStack");
    expect(() => new Redraft(stack, "Redraft", { config: loadConfig("prod") })).toThrow(
      /alarms need somewhere to go/,
    );
  });

  it("refuses a table of the app whose keys or indexes do not fit, naming what is missing", () => {
    const stack = new Stack(unbundledApp(), "TeamStack");
    const table = teamTable(stack, "Partial", [INDEXES.byDraft]);
    expect(() => new Redraft(stack, "Redraft", { config: loadConfig("dev"), existingTable: table })).toThrow(
      /existingTable .* does not fit: it needs the index byStatus .*; it needs the index byCreated/,
    );
  });

  it("takes an imported table as documented, creating none", () => {
    const stack = new Stack(unbundledApp(), "TeamStack");
    const table = Table.fromTableAttributes(stack, "Imported", {
      tableName: "team-runs",
      globalIndexes: Object.values(INDEXES).map((i) => i.indexName),
    });
    new Redraft(stack, "Redraft", { config: loadConfig("dev"), existingTable: table });
    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::DynamoDB::Table", 0);
    expect(JSON.stringify(template.findResources("AWS::IAM::Policy"))).toContain("table/team-runs");
  });

  it("is clean under cdk-nag AwsSolutions and Serverless", () => {
    expect(nagFindings(team.app, team.stack)).toEqual([]);
  });
});
