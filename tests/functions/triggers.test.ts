import { Readable } from "node:stream";
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  PutObjectTaggingCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import { sdkStreamMixin } from "@smithy/util-stream";
import { type AwsClientStub, mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BatchEvents } from "../../contracts/events.js";
import { RETENTION_TAG, STANDARD_TAGGING } from "../../contracts/retention.js";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import { createStartHandler, startFor } from "../../functions/start.js";
import { createValidateHandler } from "../../functions/steps/validate.js";
import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import { PackRegistry } from "../../shared/registry.js";
import { DRAFTS_PREFIX } from "../../shared/store/bucket-layout.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";
import { DRAFT_WITH_ERRORS } from "../fixtures/seed004.js";

const BUCKET = "redraft-drafts";
const uploadEvent = (key: string, version: string, id = `evt-${version}`) => ({
  id,
  source: "aws.s3",
  "detail-type": "Object Created",
  detail: {
    bucket: { name: BUCKET },
    object: { key, size: 512, "version-id": version, etag: "same-etag", sequencer: "0001" },
  },
});
const submissionEvent = (id: string) => ({
  id,
  source: "redraft.client",
  "detail-type": "Draft Submitted",
  detail: { draft: DRAFT_WITH_ERRORS },
});

describe("λ start: one execution per delivery", () => {
  const sfn = mockClient(SFNClient);
  afterEach(() => sfn.reset());
  afterAll(() => sfn.restore());
  const start = createStartHandler({
    client: new SFNClient({ region: "eu-west-1" }),
    stateMachineArn: "arn:aws:states:eu-west-1:123456789012:stateMachine:redraft-dev",
  });

  it("names an upload after bucket, key and version id: the same delivery, the same name", () => {
    const first = startFor(uploadEvent("drafts/q1.json", "v1") as never);
    // A redelivery carries another event id but the same object version.
    const again = startFor(uploadEvent("drafts/q1.json", "v1", "evt-redelivered") as never);
    expect(again.name).toBe(first.name);
    expect(first.name).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    expect(first.input).toEqual({
      draftRef: { bucket: BUCKET, key: "drafts/q1.json", versionId: "v1", keyForm: "notification" },
    });
  });

  it("gives a new version of the same key (an identical re-upload) a name of its own", () => {
    expect(startFor(uploadEvent("drafts/q1.json", "v2") as never).name).not.toBe(
      startFor(uploadEvent("drafts/q1.json", "v1") as never).name,
    );
    expect(startFor(uploadEvent("drafts/q2.json", "v1") as never).name).not.toBe(
      startFor(uploadEvent("drafts/q1.json", "v1") as never).name,
    );
  });

  it("names a Draft Submitted after its event id and passes its detail as the input", () => {
    const started = startFor(submissionEvent("e-123") as never);
    expect(started.name).toBe(startFor(submissionEvent("e-123") as never).name);
    expect(started.name).not.toBe(startFor(submissionEvent("e-124") as never).name);
    expect(started.name).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    expect(started.input).toEqual({ draft: DRAFT_WITH_ERRORS });
  });

  it("starts the execution with that name, and takes ExecutionAlreadyExists for success", async () => {
    sfn
      .on(StartExecutionCommand)
      .resolvesOnce({ executionArn: "arn:1", startDate: new Date() })
      .rejects(Object.assign(new Error("Execution already exists"), { name: "ExecutionAlreadyExists" }));
    const event = uploadEvent("drafts/q1.json", "v1");
    await expect(start(event)).resolves.toMatchObject({ started: true });
    await expect(start(event)).resolves.toMatchObject({ started: false });
    const [a, b] = sfn.commandCalls(StartExecutionCommand).map((c) => c.args[0].input);
    expect(a?.name).toBe(b?.name);
    expect(JSON.parse(a?.input ?? "{}")).toEqual(startFor(event as never).input);
  });

  it("fails the invocation on any other error, so that Lambda retries it and then dead-letters it", async () => {
    sfn
      .on(StartExecutionCommand)
      .rejects(Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" }));
    await expect(start(uploadEvent("drafts/q1.json", "v1"))).rejects.toThrow("Rate exceeded");
  });

  it("refuses an event that is neither an upload nor a submission", async () => {
    await expect(start({ source: "aws.s3", detail: {} })).rejects.toThrow();
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });
});

describe("λ start: a Batch Submitted event says how its batch is priced", () => {
  // Mocked when this block runs, not when it is collected: the block above restores its own mock.
  let sfn: AwsClientStub<SFNClient>;
  beforeAll(() => {
    sfn = mockClient(SFNClient);
  });
  afterEach(() => sfn.reset());
  afterAll(() => sfn.restore());
  const start = createStartHandler({
    client: new SFNClient({ region: "eu-west-1" }),
    stateMachineArn: "arn:aws:states:eu-west-1:123456789012:stateMachine:redraft-dev",
    batchStateMachineArn: "arn:aws:states:eu-west-1:123456789012:stateMachine:redraft-dev-batch",
  });
  const manifestRef = { bucket: BUCKET, key: "batches/questions.jsonl", versionId: "v1" };
  const batchSubmitted = (detail: Record<string, unknown>, id = "evt-batch") => ({
    id,
    source: "redraft.client",
    "detail-type": BatchEvents.submitted,
    detail,
  });
  const startedInputs = () =>
    sfn.commandCalls(StartExecutionCommand).map((c) => ({
      stateMachineArn: c.args[0].input.stateMachineArn,
      input: JSON.parse(c.args[0].input.input ?? "{}") as Record<string, unknown>,
    }));

  it.each(["batch", "on_demand"] as const)(
    "forwards pricing %j to the batch state machine's input",
    async (pricing) => {
      sfn.on(StartExecutionCommand).resolves({ executionArn: "arn:1", startDate: new Date() });
      await expect(start(batchSubmitted({ manifestRef, pricing }))).resolves.toMatchObject({ started: true });
      const [started] = startedInputs();
      expect(started?.stateMachineArn).toMatch(/redraft-dev-batch$/);
      expect(started?.input).toEqual({ batchId: expect.any(String), manifestRef, pricing });
    },
  );

  it("leaves pricing out when the event names none: the deployment's batchPricing.default applies", async () => {
    sfn.on(StartExecutionCommand).resolves({ executionArn: "arn:1", startDate: new Date() });
    await start(batchSubmitted({ manifestRef }));
    expect(startedInputs()[0]?.input).toEqual({ batchId: expect.any(String), manifestRef });
  });

  it("names the batch after its manifest, whatever the pricing: a redelivery asking otherwise is the same batch", () => {
    const named = (detail: Record<string, unknown>) => startFor(batchSubmitted(detail) as never).name;
    expect(named({ manifestRef, pricing: "batch" })).toBe(named({ manifestRef }));
  });

  it.each([
    ["a pricing no batch knows", { manifestRef, pricing: "cheap" }],
    ["a spelling that is not the contract's", { manifestRef, pricing: "on-demand" }],
    ["a pricing that is not a string", { manifestRef, pricing: { batch: true } }],
    ["no manifest", { pricing: "batch" }],
    [
      "another batch's results as its manifest",
      { manifestRef: { ...manifestRef, key: "batch-results/b-1/items.jsonl" } },
    ],
    [
      "another batch's item as its manifest",
      { manifestRef: { ...manifestRef, key: "batch-items/b-1/line-3.json" } },
    ],
    ["a run's blob as its manifest", { manifestRef: { ...manifestRef, key: "runs/r-1/original.json" } }],
  ])("refuses a Batch Submitted with %s, starting no execution of either machine", async (_, detail) => {
    await expect(start(batchSubmitted(detail))).rejects.toThrow();
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });
});

describe("an identical re-upload (a new version, the same content) is a re-submission", () => {
  it("gets its own run, which Validate rejects as a duplicate within the dedupe window", async () => {
    const blobs = new MemoryBlobStore();
    await blobs.put("drafts/q1.json", JSON.stringify(DRAFT_WITH_ERRORS));
    const deps: LoopDeps = {
      registry: new PackRegistry(),
      runs: new MemoryRunStore(),
      blobs,
      modelAvailable: true,
      dedupeWindowMs: 15 * 60_000,
    };
    const validate = createValidateHandler(async () => deps);
    const first = startFor(uploadEvent("drafts/q1.json", "v1") as never);
    const second = startFor(uploadEvent("drafts/q1.json", "v2") as never);
    const a = await validate({ runId: first.name, input: first.input });
    const b = await validate({ runId: second.name, input: second.input });
    expect(a.decision).toBe("correct");
    expect(b).toMatchObject({ decision: "duplicate", reason: "duplicate", duplicateOf: first.name });
  });
});

describe("size before download", () => {
  const s3 = mockClient(S3Client);
  afterEach(() => s3.reset());
  afterAll(() => s3.restore());
  const limit = 1024;
  const blobs = new S3BlobStore({
    client: new S3Client({ region: "eu-west-1" }),
    bucket: BUCKET,
    uploads: { prefix: DRAFTS_PREFIX, maxBytes: limit },
  });

  it("reads uploads under the prefix the README documents, the one the infrastructure grants and triggers on", () => {
    expect(DRAFTS_PREFIX).toBe("drafts/");
  });

  it("rejects an oversized upload as rejected / too_large from HeadObject alone: no GetObject", async () => {
    s3.on(HeadObjectCommand).resolves({ ContentLength: limit + 1 });
    const runs = new MemoryRunStore();
    const validate = createValidateHandler(async () => ({ registry: new PackRegistry(), runs, blobs }), {
      bucketName: BUCKET,
    });
    const state = await validate({
      runId: "run-big",
      input: { draftRef: { bucket: BUCKET, key: "drafts/big.json", versionId: "v1" } },
    });
    expect(state).toMatchObject({ decision: "rejected", reason: "too_large" });
    await expect(runs.getRun("run-big")).resolves.toMatchObject({ status: "rejected", reason: "too_large" });
    expect(s3.commandCalls(HeadObjectCommand)[0]?.args[0].input).toEqual({
      Bucket: BUCKET,
      Key: "drafts/big.json",
      VersionId: "v1",
    });
    expect(s3.commandCalls(GetObjectCommand)).toHaveLength(0);
  });

  it("reads an upload within the limit after sizing it", async () => {
    const body = JSON.stringify(DRAFT_WITH_ERRORS);
    s3.on(HeadObjectCommand).resolves({ ContentLength: body.length });
    s3.on(GetObjectCommand).resolves({ Body: sdkStreamMixin(Readable.from([body])) });
    await expect(blobs.get("drafts/ok.json", "v1")).resolves.toBe(body);
    expect(s3.commandCalls(GetObjectCommand)).toHaveLength(1);
  });

  it("writes every object tagged for the lifecycle, and re-tags a held run's objects for review", async () => {
    s3.on(PutObjectCommand).resolves({});
    await blobs.put("runs/r1/attempts/0/draft.json", "{}");
    expect(s3.commandCalls(PutObjectCommand)[0]?.args[0].input.Tagging).toBe(STANDARD_TAGGING);
    s3.on(ListObjectsV2Command)
      .resolvesOnce({ Contents: [{ Key: "runs/r1/original.json" }], NextContinuationToken: "t" })
      .resolves({ Contents: [{ Key: "runs/r1/attempts/0/draft.json" }] });
    s3.on(PutObjectTaggingCommand).resolves({});
    await blobs.retain("runs/r1/", ["results/d1/r1.json"], "review");
    expect(s3.commandCalls(ListObjectsV2Command)[1]?.args[0].input).toMatchObject({
      Prefix: "runs/r1/",
      ContinuationToken: "t",
    });
    expect(s3.commandCalls(PutObjectTaggingCommand).map((c) => c.args[0].input)).toEqual(
      ["results/d1/r1.json", "runs/r1/original.json", "runs/r1/attempts/0/draft.json"].map((Key) => ({
        Bucket: BUCKET,
        Key,
        Tagging: { TagSet: [{ Key: RETENTION_TAG, Value: "review" }] },
      })),
    );
  });

  it("does not size the run's own objects", async () => {
    s3.on(GetObjectCommand).resolves({ Body: sdkStreamMixin(Readable.from(["{}"])) });
    await expect(blobs.get("runs/r1/original.json")).resolves.toBe("{}");
    expect(s3.commandCalls(HeadObjectCommand)).toHaveLength(0);
  });

  it("takes a 403 (no s3:ListBucket) for a missing upload: the input is rejected, the run does not fail", async () => {
    s3.on(HeadObjectCommand).rejects(
      Object.assign(new Error("Forbidden"), { name: "Forbidden", $metadata: { httpStatusCode: 403 } }),
    );
    const runs = new MemoryRunStore();
    const validate = createValidateHandler(async () => ({ registry: new PackRegistry(), runs, blobs }));
    const state = await validate({ runId: "run-missing", input: { draftRef: { key: "drafts/gone.json" } } });
    expect(state).toMatchObject({ decision: "rejected", reason: "invalid_input" });
  });
});
