import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  DynamoDBServiceException,
  ProvisionedThroughputExceededException,
  ResourceNotFoundException,
} from "@aws-sdk/client-dynamodb";
import {
  CopyObjectCommand,
  GetObjectCommand,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { runKey } from "../../contracts/table.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import {
  BlobNotFoundError,
  RunNotFoundError,
  StoreRequestFailedError,
  StoreUnavailableError,
} from "../../shared/errors.js";
import { at, makeRun } from "./fixtures.js";

const metadata = { $metadata: { httpStatusCode: 400 } };
const conditionFailed = () =>
  new ConditionalCheckFailedException({ message: "The conditional request failed", ...metadata });
const throttled = () =>
  new ProvisionedThroughputExceededException({
    message: "Rate of requests exceeds the allowed throughput",
    ...metadata,
  });

describe("DynamoRunStore error paths (mocked SDK)", () => {
  const ddb = mockClient(DynamoDBDocumentClient);
  const store = new DynamoRunStore({
    client: new DynamoDBClient({ region: "eu-west-1" }),
    tableName: "runs",
  });
  afterEach(() => ddb.reset());
  // The stub is on the class, for every client in the process: the files after this one need the real one.
  afterAll(() => ddb.restore());

  it("answers a failed registration condition with false, not an error", async () => {
    ddb.on(PutCommand).rejects(conditionFailed());
    await expect(store.createRun(makeRun("r1"))).resolves.toBe(false);
    expect(ddb.commandCalls(PutCommand)[0]?.args[0].input).toMatchObject({
      TableName: "runs",
      ConditionExpression: "attribute_not_exists(pk)",
      Item: { pk: "RUN#r1", sk: "RUN", runId: "r1" },
    });
  });

  it("names throttling as StoreUnavailableError, keeping the SDK error as its cause", async () => {
    const error = throttled();
    ddb.on(PutCommand).rejects(error);
    const failure = await store.createRun(makeRun("r1")).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure).toMatchObject({ name: "StoreUnavailableError", cause: error });
  });

  it("names an unknown DynamoDB error as StoreRequestFailedError", async () => {
    ddb
      .on(GetCommand)
      .rejects(new ResourceNotFoundException({ message: "Requested resource not found", ...metadata }));
    await expect(store.getRun("r1")).rejects.toBeInstanceOf(StoreRequestFailedError);
    ddb.on(QueryCommand).rejects(
      new DynamoDBServiceException({
        name: "AccessDeniedException",
        $fault: "client",
        message: "no",
        ...metadata,
      }),
    );
    await expect(store.listRuns()).rejects.toMatchObject({ name: "StoreRequestFailedError" });
  });

  it("does not take a throttled conditional write for a duplicate", async () => {
    ddb.on(UpdateCommand).rejects(throttled());
    await expect(
      store.addUsage("r1", 1, { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 }, 0),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("reads the run after a failed status condition: same status is a no-op, none is RunNotFoundError", async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    ddb
      .on(GetCommand)
      .resolves({ Item: { ...makeRun("r1", { status: "validated" }), pk: "RUN#r1", sk: "RUN" } });
    await expect(store.setStatus("r1", "validated", at(1))).resolves.toBeUndefined();
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(1);

    ddb.on(GetCommand).resolves({});
    await expect(store.setStatus("r1", "validated", at(1))).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it("returns the holder of a claim it could not take", async () => {
    ddb.on(PutCommand).rejects(conditionFailed());
    ddb
      .on(GetCommand)
      .resolves({ Item: { pk: "CONTENT#h", sk: "CLAIM", runId: "holder", claimedAt: at(0) } });
    await expect(store.claimContent("h", "r2", at(1), 60_000)).resolves.toBe("holder");
  });

  it("puts a claim again when the one it could not take has become its own or expired by the time it reads it", async () => {
    ddb.on(PutCommand).rejectsOnce(conditionFailed()).resolves({});
    ddb.on(GetCommand).resolves({ Item: { pk: "CONTENT#h", sk: "CLAIM", runId: "r2", claimedAtMs: 0 } });
    await expect(store.claimContent("h", "r2", at(1), 60_000)).resolves.toBe("r2");
    expect(ddb.commandCalls(PutCommand)).toHaveLength(2);
  });

  it("gives up on a claim that keeps changing under it, as a failed request", async () => {
    ddb.on(PutCommand).rejects(conditionFailed());
    ddb.on(GetCommand).resolves({});
    await expect(store.claimContent("h", "r2", at(1), 60_000)).rejects.toBeInstanceOf(
      StoreRequestFailedError,
    );
    expect(ddb.commandCalls(PutCommand)).toHaveLength(3);
  });

  it("reads an index page by page for the order, then the runs themselves by key", async () => {
    const paged = new DynamoRunStore({
      client: new DynamoDBClient({ region: "eu-west-1" }),
      tableName: "runs",
      pageSize: 1,
    });
    const entry = (id: string) => ({ pk: `RUN#${id}`, sk: "RUN", byDraftSk: `${at(0)}#${id}` });
    ddb
      .on(QueryCommand)
      .resolvesOnce({ Items: [entry("r3")], LastEvaluatedKey: { pk: "RUN#r3" } })
      .resolvesOnce({ Items: [entry("r2")], LastEvaluatedKey: { pk: "RUN#r2" } })
      .resolves({ Items: [entry("r1")] });
    // BatchGet answers in any order; the listing keeps the index's.
    ddb.on(BatchGetCommand).resolves({
      Responses: { runs: ["r2", "r3"].map((id) => ({ ...makeRun(id), pk: `RUN#${id}`, sk: "RUN" })) },
    });
    const runs = await paged.listRuns({ draftId: "d1", limit: 2 });
    expect(runs.map((r) => r.runId)).toEqual(["r3", "r2"]);
    const queries = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(queries[0]).toMatchObject({ IndexName: "byDraft", ScanIndexForward: false, Limit: 1 });
    expect(queries[1]).toMatchObject({ ExclusiveStartKey: { pk: "RUN#r3" } });
    expect(ddb.commandCalls(BatchGetCommand)[0]?.args[0].input).toMatchObject({
      RequestItems: { runs: { Keys: [runKey("r3"), runKey("r2")], ConsistentRead: true } },
    });
  });

  it("filters one draft's runs by status on the items read, not on the keys-only index", async () => {
    ddb.on(QueryCommand).resolves({ Items: [{ pk: "RUN#r1", sk: "RUN", byDraftSk: `${at(0)}#r1` }] });
    ddb
      .on(BatchGetCommand)
      .resolves({ Responses: { runs: [{ ...makeRun("r1"), pk: "RUN#r1", sk: "RUN" }] } });
    await expect(store.listRuns({ draftId: "d1", status: "validated", limit: 5 })).resolves.toEqual([]);
    const input = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ IndexName: "byDraft" });
    expect(input?.FilterExpression).toBeUndefined();
  });

  it("names a BatchGet that keeps keys unprocessed as unavailable", async () => {
    ddb.on(QueryCommand).resolves({ Items: [{ pk: "RUN#r1", sk: "RUN", byDraftSk: `${at(0)}#r1` }] });
    ddb.on(BatchGetCommand).resolves({ UnprocessedKeys: { runs: { Keys: [runKey("r1")] } } });
    await expect(store.listRuns({ draftId: "d1" })).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe("S3BlobStore error paths (mocked SDK)", () => {
  const s3 = mockClient(S3Client);
  const blobs = new S3BlobStore({ client: new S3Client({ region: "eu-west-1" }), bucket: "drafts-bucket" });
  afterEach(() => s3.reset());
  afterAll(() => s3.restore());

  it("reads an object's body as text", async () => {
    s3.on(GetObjectCommand).resolves({ Body: { transformToString: async () => '{"a":1}' } as never });
    await expect(blobs.get("runs/r1/original.json")).resolves.toBe('{"a":1}');
    expect(s3.commandCalls(GetObjectCommand)[0]?.args[0].input).toEqual({
      Bucket: "drafts-bucket",
      Key: "runs/r1/original.json",
    });
  });

  it("reads exactly the uploaded version when given one", async () => {
    s3.on(GetObjectCommand).resolves({ Body: { transformToString: async () => "{}" } as never });
    await blobs.get("drafts/q.json", "v-42");
    expect(s3.commandCalls(GetObjectCommand)[0]?.args[0].input).toEqual({
      Bucket: "drafts-bucket",
      Key: "drafts/q.json",
      VersionId: "v-42",
    });
  });

  it("turns NoSuchKey into BlobNotFoundError", async () => {
    s3.on(GetObjectCommand).rejects(
      new NoSuchKey({ message: "The specified key does not exist.", ...metadata }),
    );
    await expect(blobs.get("missing.json")).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it("writes with If-None-Match: * and answers PreconditionFailed with false", async () => {
    s3.on(PutObjectCommand)
      .resolvesOnce({})
      .rejects(
        new S3ServiceException({
          name: "PreconditionFailed",
          $fault: "client",
          $metadata: { httpStatusCode: 412 },
          message: "At least one of the pre-conditions you specified did not hold",
        }),
      );
    await expect(blobs.putIfAbsent("runs/r1/original.json", "{}")).resolves.toBe(true);
    await expect(blobs.putIfAbsent("runs/r1/original.json", "{}")).resolves.toBe(false);
    expect(s3.commandCalls(PutObjectCommand)[0]?.args[0].input).toMatchObject({
      Bucket: "drafts-bucket",
      Key: "runs/r1/original.json",
      IfNoneMatch: "*",
      ContentType: "application/json",
    });
  });

  it("names throttling and unknown errors", async () => {
    s3.on(PutObjectCommand).rejects(
      new S3ServiceException({
        name: "SlowDown",
        $fault: "server",
        $metadata: { httpStatusCode: 503 },
        message: "slow",
      }),
    );
    await expect(blobs.put("k.json", "{}")).rejects.toBeInstanceOf(StoreUnavailableError);
    s3.on(GetObjectCommand).rejects(
      new S3ServiceException({
        name: "AccessDenied",
        $fault: "client",
        $metadata: { httpStatusCode: 403 },
        message: "no",
      }),
    );
    await expect(blobs.get("k.json")).rejects.toBeInstanceOf(StoreRequestFailedError);
  });

  it("copies inside the bucket with an encoded source, and reports a missing source", async () => {
    s3.on(CopyObjectCommand)
      .resolvesOnce({})
      .rejects(new NoSuchKey({ message: "no", ...metadata }));
    await blobs.copy("runs/r 1/draft.json", "results/d1/r 1.json");
    expect(s3.commandCalls(CopyObjectCommand)[0]?.args[0].input).toEqual({
      Bucket: "drafts-bucket",
      Key: "results/d1/r 1.json",
      CopySource: "drafts-bucket/runs/r%201/draft.json",
    });
    await expect(blobs.copy("gone.json", "x.json")).rejects.toMatchObject({
      name: "BlobNotFoundError",
      message: expect.stringContaining("gone.json"),
    });
  });
});
