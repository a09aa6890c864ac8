import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { afterEach, describe, expect, it } from "vitest";
import { INDEXES } from "../../contracts/table.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { ensureTable, type LocalDynamo, localDynamoClient, startDynalite } from "../../local/dynalite.js";
import { makeRun } from "./fixtures.js";

describe("local dynalite", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  async function start(options: { path?: string } = {}): Promise<LocalDynamo> {
    const local = await startDynalite(options);
    cleanups.push(() => local.close());
    return local;
  }

  it("listens on 127.0.0.1 and creates the table with its indexes, idempotently", async () => {
    const local = await start();
    expect(local.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await ensureTable(local.client, "runs");
    await ensureTable(local.client, "runs");
    const { Table } = await local.client.send(new DescribeTableCommand({ TableName: "runs" }));
    expect(Table?.TableStatus).toBe("ACTIVE");
    expect(Table?.BillingModeSummary?.BillingMode).toBe("PAY_PER_REQUEST");
    expect(Table?.GlobalSecondaryIndexes?.map((i) => i.IndexName).sort()).toEqual(
      Object.values(INDEXES)
        .map((i) => i.indexName)
        .sort(),
    );
  });

  it("keeps the data in its folder across restarts", async () => {
    const folder = await mkdtemp(path.join(tmpdir(), "redraft-dynalite-"));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const dataPath = path.join(folder, "db");

    const first = await startDynalite({ path: dataPath });
    await ensureTable(first.client, "runs");
    await new DynamoRunStore({ client: first.client, tableName: "runs" }).createRun(makeRun("r1"));
    await first.close();

    const second = await start({ path: dataPath });
    await ensureTable(second.client, "runs");
    const store = new DynamoRunStore({ client: second.client, tableName: "runs" });
    await expect(store.getRun("r1")).resolves.toEqual(makeRun("r1"));
  });

  it("answers its own process without a socket exactly as it answers HTTP: outputs, errors, their names and codes", async () => {
    const local = await start();
    const http = localDynamoClient(local.endpoint);
    cleanups.push(async () => http.destroy());
    await ensureTable(local.client, "runs");
    const item = { pk: { S: "RUN#r1" }, sk: { S: "RUN" }, n: { N: "1" }, note: { S: "Quelle — 首都 🙂" } };
    // Each request runs once per transport, in order, so each meets the state the one before left.
    const requests: [string, (client: DynamoDBClient) => Promise<unknown>][] = [
      ["put", (c) => c.send(new PutItemCommand({ TableName: "runs", Item: item }))],
      [
        "conditional put that fails",
        (c) =>
          c.send(
            new PutItemCommand({
              TableName: "runs",
              Item: item,
              ConditionExpression: "attribute_not_exists(pk)",
            }),
          ),
      ],
      [
        "update",
        (c) =>
          c.send(
            new UpdateItemCommand({
              TableName: "runs",
              Key: { pk: item.pk, sk: item.sk },
              UpdateExpression: "SET n = :two",
              ExpressionAttributeValues: { ":two": { N: "2" } },
              ReturnValues: "ALL_NEW",
            }),
          ),
      ],
      ["get", (c) => c.send(new GetItemCommand({ TableName: "runs", Key: { pk: item.pk, sk: item.sk } }))],
      [
        "query",
        (c) =>
          c.send(
            new QueryCommand({
              TableName: "runs",
              KeyConditionExpression: "pk = :pk",
              ExpressionAttributeValues: { ":pk": item.pk },
            }),
          ),
      ],
      ["missing table", (c) => c.send(new GetItemCommand({ TableName: "nowhere", Key: { pk: item.pk } }))],
      [
        "invalid request",
        (c) =>
          c.send(new UpdateItemCommand({ TableName: "runs", Key: { pk: item.pk }, UpdateExpression: "SET" })),
      ],
    ];
    const outcome = async (send: () => Promise<unknown>) => {
      try {
        const { $metadata, ...output } = (await send()) as { $metadata: { httpStatusCode?: number } };
        return { status: $metadata.httpStatusCode, output };
      } catch (error) {
        const e = error as Error & { $fault?: string; $metadata: { httpStatusCode?: number } };
        return { status: e.$metadata.httpStatusCode, error: [e.name, e.message, e.$fault] };
      }
    };
    const errors: Record<string, unknown> = {};
    for (const [name, send] of requests) {
      const direct = await outcome(() => send(local.client));
      const overHttp = await outcome(() => send(http));
      expect({ name, ...direct }).toEqual({ name, ...overHttp });
      errors[name] = direct.error?.[0];
    }
    expect(errors).toEqual({
      put: undefined,
      "conditional put that fails": "ConditionalCheckFailedException",
      update: undefined,
      get: undefined,
      query: undefined,
      "missing table": "ResourceNotFoundException",
      "invalid request": "ValidationException",
    });
  });
});
