import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { CreateTableCommand, type CreateTableCommandInput } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { GetObjectTaggingCommand } from "@aws-sdk/client-s3";
import { GetExecutionHistoryCommand, SFNClient } from "@aws-sdk/client-sfn";
import { type AwsClientStub, mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cloudReview } from "../../cli/cloud/commands.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { RETENTION_TAG } from "../../functions/lib/retention.js";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import { startFor } from "../../functions/start.js";
import { type LocalDynamo, startDynalite } from "../../local/dynalite.js";
import { correctDraft } from "../../local/in-process.js";
import type { RunResult } from "../../shared/loop/run.js";
import { PackRegistry } from "../../shared/registry.js";
import type { RunRecord } from "../../shared/store/types.js";
import { jsonLines, ROOT, redraft } from "../cli/run-cli.js";
import { synthesize } from "../infra/synth.js";
import { synthesizedAsl } from "../workflow/harness.js";
import { LOCAL_CREDENTIALS, type LocalS3, startS3 } from "./s3.js";

/**
 * The cloud mode end to end with no AWS account: the table as the synthesized template defines it
 * in dynalite, the bucket in s3rver (both reached through the SDK's standard endpoint variables), and
 * the services that only answer (CloudFormation, Step Functions' history, EventBridge) through
 * aws-sdk-client-mock. The deployment's side is the deployed state machine itself run in-process over
 * the handlers' own stores (correctDraft with DynamoRunStore and S3BlobStore), so every record the
 * commands read was written as the deployed handlers write it.
 */
const STACK = "Redraft-test";
const BUCKET = "redraft-test-drafts";
const TABLE = "redraft-test-runs";
const BUS = "redraft-test";
const STATE_MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:redraft-test";

let work: string;
let dynamo: LocalDynamo;
let s3: LocalS3;
let runs: DynamoRunStore;
let blobs: S3BlobStore;
let cfn: AwsClientStub<CloudFormationClient>;
let sfn: AwsClientStub<SFNClient>;
let events: AwsClientStub<EventBridgeClient>;
const bus: PutEventsRequestEntry[] = [];
const savedEnv = { ...process.env };
let stuck: Record<string, unknown>;
/** Runs awaiting review, by draft id. */
const queued = new Map<string, string>();
let validated: RunResult;

/** The stack's side: a Draft Submitted starts the deployed state machine, named as λ start names it. */
async function deployment(detail: { draft: unknown; parentRunId?: string }, eventId: string) {
  const { name } = startFor({
    id: eventId,
    source: "redraft.client",
    "detail-type": "Draft Submitted",
    detail,
  } as never);
  await correctDraft(detail.draft, {
    registry: new PackRegistry(),
    runs,
    blobs,
    runId: name,
    ...(detail.parentRunId && { parentRunId: detail.parentRunId }),
  });
}

const cloudCli = (...args: string[]) => redraft([...args, "--stack", "redraft-test"]);

async function cloudRuns(...filter: string[]): Promise<RunRecord[]> {
  const out = await cloudCli("runs", "--json", ...filter);
  expect(out.code, out.stderr).toBe(0);
  return jsonLines(out.stdout) as unknown as RunRecord[];
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-cloud-"));
  await synthesizedAsl();
  [dynamo, s3] = await Promise.all([startDynalite(), startS3(BUCKET)]);
  // The table exactly as the stack declares it: keys, attribute types, indexes and projections.
  const { template } = synthesize("dev");
  const [table] = Object.values(template.findResources("AWS::DynamoDB::Table")) as {
    Properties: Omit<CreateTableCommandInput, "TableName">;
  }[];
  const { KeySchema, AttributeDefinitions, GlobalSecondaryIndexes } = table?.Properties ?? {};
  await dynamo.client.send(
    new CreateTableCommand({
      TableName: TABLE,
      BillingMode: "PAY_PER_REQUEST",
      KeySchema,
      AttributeDefinitions,
      GlobalSecondaryIndexes,
    }),
  );
  // The SDK's standard endpoint variables: the command line builds its own clients from them.
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_REGION: "eu-west-1",
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
  });
  runs = new DynamoRunStore({ client: dynamo.client, tableName: TABLE, ttlDays: 7 });
  blobs = new S3BlobStore({ client: s3.client, bucket: BUCKET });

  cfn = mockClient(CloudFormationClient);
  // The CDK app's stack is Redraft-<env>: --stack redraft-test finds it by that spelling.
  cfn
    .on(DescribeStacksCommand, { StackName: "redraft-test" })
    .rejects(
      Object.assign(new Error("Stack with id redraft-test does not exist"), { name: "ValidationError" }),
    );
  cfn.on(DescribeStacksCommand, { StackName: STACK }).resolves({
    Stacks: [
      {
        StackName: STACK,
        CreationTime: new Date(),
        StackStatus: "CREATE_COMPLETE",
        Outputs: [
          { OutputKey: "TableName", OutputValue: TABLE },
          { OutputKey: "BucketName", OutputValue: BUCKET },
          { OutputKey: "EventBusName", OutputValue: BUS },
          { OutputKey: "StateMachineArn", OutputValue: STATE_MACHINE },
        ],
      },
    ],
  });
  sfn = mockClient(SFNClient);
  sfn.on(GetExecutionHistoryCommand).callsFake(async ({ executionArn }: { executionArn: string }) => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    return {
      events: [
        { id: 1, type: "ExecutionStarted", timestamp: at(0), executionStartedEventDetails: {} },
        { id: 2, type: "TaskStateEntered", timestamp: at(1), stateEnteredEventDetails: { name: "Validate" } },
        {
          id: 3,
          type: "ChoiceStateEntered",
          timestamp: at(2),
          stateEnteredEventDetails: { name: "HasErrors?" },
        },
        {
          id: 4,
          type: "PassStateEntered",
          timestamp: at(3),
          stateEnteredEventDetails: { name: "NoModelConfigured" },
        },
        { id: 5, type: "ExecutionSucceeded", timestamp: at(4), executionSucceededEventDetails: {} },
      ].map((e) => ({ ...e, previousEventId: 0, executionArn })),
    };
  });
  events = mockClient(EventBridgeClient);
  let eventIds = 0;
  events.on(PutEventsCommand).callsFake(async ({ Entries }: { Entries: PutEventsRequestEntry[] }) => {
    const answered = [];
    for (const entry of Entries) {
      bus.push(entry);
      const EventId = `evt-${++eventIds}`;
      if (entry.DetailType === "Draft Submitted") await deployment(JSON.parse(entry.Detail ?? "{}"), EventId);
      answered.push({ EventId });
    }
    return { FailedEntryCount: 0, Entries: answered };
  });

  // What the deployment holds before anyone looks: drafts left for review (no model configured in
  // this stack), and one validated.
  stuck = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "json-stuck.json"), "utf8"));
  for (let i = 0; i < 4; i++) {
    const draft = { ...stuck, id: `cloud-${i}` };
    const result = await correctDraft(draft, {
      registry: new PackRegistry(),
      runs,
      blobs,
      runId: `u-seed-${i}`,
    });
    expect(result.status).toBe("needs_manual_review");
    // λ outcome keeps a run awaiting review: its objects tagged `review`.
    await blobs.retain(`runs/${result.runId}/`, [], "review");
    queued.set(draft.id, result.runId);
  }
  const valid = {
    ...stuck,
    id: "cloud-valid",
    content: { title: "A paper", authors: [{ name: "Ada" }], year: 2020 },
  };
  validated = await correctDraft(valid, { registry: new PackRegistry(), runs, blobs, runId: "u-seed-valid" });
}, 240_000);

afterAll(async () => {
  cfn?.restore();
  sfn?.restore();
  events?.restore();
  process.env = savedEnv;
  await Promise.all([dynamo?.close(), s3?.close()]);
  await rm(work, { recursive: true, force: true });
});

describe("redraft --stack: reading a deployment", () => {
  it("runs lists the deployment's runs and its review queue, found through the stack's outputs", async () => {
    expect(validated.status).toBe("validated");
    const all = await cloudRuns();
    expect(all.map((r) => r.runId).sort()).toEqual([...queued.values(), validated.runId].sort());
    const queue = await cloudRuns("--status", "needs_manual_review");
    expect(queue.map((r) => r.runId).sort()).toEqual([...queued.values()].sort());
    expect(queue.every((r) => r.reason === "no_model")).toBe(true);
  });

  it("also takes the resources as flags, without a stack", async () => {
    const out = await redraft(["runs", "--json", "--table", TABLE, "--bucket", BUCKET]);
    expect(out.code, out.stderr).toBe(0);
    expect(jsonLines(out.stdout)).toHaveLength(queued.size + 1);
    const bad = await redraft(["runs", "--table", TABLE]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/cloud mode needs --stack <name>, or --table and --bucket/);
  });

  it("show prints the offline timeline, the execution path from its history, and the console link", async () => {
    const runId = queued.get("cloud-0") as string;
    const out = await cloudCli("show", runId.slice(0, 8));
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain("needs_manual_review");
    expect(out.stdout).toMatch(
      /Execution path \(run .*\):\n.*→ Validate \(Task\)\n.*→ HasErrors\? \(Choice\)/,
    );
    expect(out.stdout).toContain(
      `https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/arn:aws:states:eu-west-1:123456789012:execution:redraft-test:${runId}`,
    );
    const json = JSON.parse((await cloudCli("show", runId, "--json")).stdout);
    expect(json).toMatchObject({ runId, status: "needs_manual_review", execution: { status: "SUCCEEDED" } });
    expect(json.consoleUrl).toMatch(/executions\/details\/arn:aws:states:/);
  });

  it("export writes the run's best draft from the bucket", async () => {
    const runId = queued.get("cloud-0") as string;
    const file = join(work, "best.json");
    const out = await cloudCli("export", runId, "--out", file);
    expect(out.code, out.stderr).toBe(0);
    const best = JSON.parse(await readFile(file, "utf8"));
    expect(best).toMatchObject({ id: "cloud-0", kind: "json" });
  });
});

describe("redraft --stack review", () => {
  it("two reviewers deciding one run at once: exactly one wins, every time", async () => {
    for (const draftId of ["cloud-1", "cloud-2"]) {
      const runId = queued.get(draftId) as string;
      const opts = { stack: "redraft-test" };
      const settled = await Promise.allSettled([
        cloudReview(opts, runId, "approve", { reviewer: "ada" }),
        cloudReview(opts, runId, "reject", { reviewer: "bob" }),
      ]);
      const won = settled.filter((s) => s.status === "fulfilled");
      const lost = settled.filter((s): s is PromiseRejectedResult => s.status === "rejected");
      expect(won).toHaveLength(1);
      expect(lost[0]?.reason).toMatchObject({ name: "ReviewConflictError" });
      expect(String(lost[0]?.reason.message)).toMatch(/(ada|bob) decided (approve|reject) at/);
      const run = await runs.getRun(runId);
      expect(run?.status).toBe(run?.review?.decision === "approve" ? "validated" : "rejected");
      // One Draft Reviewed for the run: the loser put nothing on the bus.
      const reviewed = bus.filter((e) => e.DetailType === "Draft Reviewed" && e.Detail?.includes(runId));
      expect(reviewed).toHaveLength(1);
      expect(reviewed[0]).toMatchObject({ Source: "redraft", EventBusName: BUS });
    }
  });

  it("a decision puts the run's objects back under normal retention", async () => {
    const runId = queued.get("cloud-1") as string;
    const { TagSet } = await s3.client.send(
      new GetObjectTaggingCommand({ Bucket: BUCKET, Key: `runs/${runId}/original.json` }),
    );
    expect(TagSet).toEqual([{ Key: RETENTION_TAG, Value: "standard" }]);
    const untouched = queued.get("cloud-3") as string;
    const kept = await s3.client.send(
      new GetObjectTaggingCommand({ Bucket: BUCKET, Key: `runs/${untouched}/original.json` }),
    );
    expect(kept.TagSet).toEqual([{ Key: RETENTION_TAG, Value: "review" }]);
  });

  it("edit submits the edited draft as a Draft Submitted and links the new run to the old", async () => {
    const runId = queued.get("cloud-0") as string;
    const file = join(work, "edited.json");
    await writeFile(
      file,
      JSON.stringify({
        ...stuck,
        id: "cloud-0",
        content: { title: "Fixed", authors: [{ name: "Ada" }], year: 2021 },
      }),
    );
    const out = await cloudCli("review", runId, "edit", file, "--reviewer", "ada");
    expect(out.code, out.stderr).toBe(0);
    const newRunId = /submitted as run (\S+) \(validated\)/.exec(out.stdout)?.[1];
    expect(newRunId, out.stdout).toMatch(/^e-[0-9a-f]{64}$/);
    const [old, fresh] = await Promise.all([runs.getRun(runId), runs.getRun(newRunId as string)]);
    expect(old).toMatchObject({ status: "rejected", reason: "superseded_by_edit", review: { newRunId } });
    expect(fresh).toMatchObject({ status: "validated", parentRunId: runId });
    const again = await cloudCli("review", runId, "approve");
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/ada decided edit at/);
  });
});

describe("redraft --stack run", () => {
  it("submits each draft as a Draft Submitted and prints its outcome as offline", async () => {
    const file = join(work, "two.jsonl");
    const good = {
      ...stuck,
      id: "cloud-run-ok",
      content: { title: "T", authors: [{ name: "A" }], year: 1999 },
    };
    await writeFile(
      file,
      `${JSON.stringify(good)}\n${JSON.stringify({ ...stuck, id: "cloud-run-stuck" })}\n{ not json\n`,
    );
    const out = await cloudCli("run", file, "--json");
    expect(out.code, out.stderr).toBe(0);
    const lines = jsonLines(out.stdout);
    // Sources are named as offline: the file as given, then its line.
    const byDraft = Object.fromEntries(lines.map((l) => [String(l.source).replace(/^.*:/, "line "), l]));
    expect(lines).toHaveLength(3);
    expect(byDraft["line 1"], out.stdout).toMatchObject({ draftId: "cloud-run-ok", status: "validated" });
    expect(byDraft["line 2"]).toMatchObject({ draftId: "cloud-run-stuck", status: "needs_manual_review" });
    expect(byDraft["line 3"]).toMatchObject({ status: "rejected", reason: "invalid_input" });
    for (const line of lines) expect(String(line.runId)).toMatch(/^e-[0-9a-f]{64}$/);
  });

  it("--no-wait prints the run ids it submitted and follows nothing", async () => {
    const file = join(work, "one.json");
    await writeFile(file, JSON.stringify({ ...stuck, id: "cloud-no-wait" }));
    const out = await cloudCli("run", file, "--no-wait");
    expect(out.code, out.stderr).toBe(0);
    const runId = /run (e-[0-9a-f]{64})$/m.exec(out.stdout)?.[1];
    expect(runId, `${out.stdout}|${out.stderr}`).toBeDefined();
    await expect(runs.getRun(runId as string)).resolves.toMatchObject({ draftId: "cloud-no-wait" });
  });
});
