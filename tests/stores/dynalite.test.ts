import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import { afterEach, describe, expect, it } from "vitest";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { INDEXES } from "../../functions/lib/table.js";
import { ensureTable, type LocalDynamo, startDynalite } from "../../local/dynalite.js";
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
});
