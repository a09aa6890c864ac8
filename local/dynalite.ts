import { mkdir } from "node:fs/promises";
import type { Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { DescribeTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createTable } from "../functions/lib/dynamo-store.js";

/** The part of dynalite's options redraft uses (the package ships no types). */
interface DynaliteOptions {
  path?: string;
  createTableMs?: number;
  deleteTableMs?: number;
  updateTableMs?: number;
}
const dynalite = createRequire(import.meta.url)("dynalite") as (options: DynaliteOptions) => Server;

export interface LocalDynamo {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  client: DynamoDBClient;
  /** Destroys the client and stops the server (flushing the data folder, when there is one). */
  close(): Promise<void>;
}

/** Any credentials and region do locally; the SDK only insists that there are some. */
export function localDynamoClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

/**
 * Starts dynalite in this process on 127.0.0.1 and a free port. Tables are created (and deleted)
 * at once rather than after dynalite's default half second.
 *
 * @param options.path folder that keeps the data between runs; in memory when absent
 */
export async function startDynalite(options: { path?: string } = {}): Promise<LocalDynamo> {
  if (options.path) await mkdir(options.path, { recursive: true });
  const server = dynalite({
    ...(options.path && { path: options.path }),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localDynamoClient(endpoint);
  return {
    endpoint,
    client,
    close: async () => {
      client.destroy();
      // Keep-alive sockets from other clients would hold close() open until they time out: idle
      // ones go now, busy ones after a second (their clients retry elsewhere; writes are conditional).
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), 1000);
      try {
        await new Promise<void>((resolve, reject) =>
          server.close((error) => (error ? reject(error) : resolve())),
        );
      } finally {
        clearTimeout(force);
      }
    },
  };
}

/**
 * Creates the table (with its indexes) unless it exists, then waits until it and its indexes are
 * active. Safe to call on every start: a table found active costs one request.
 */
export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  options: { timeoutMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  const active = async () => {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    return (
      Table?.TableStatus === "ACTIVE" &&
      (Table.GlobalSecondaryIndexes ?? []).every((index) => index.IndexStatus === "ACTIVE")
    );
  };
  const found = await active().catch((error: Error) => {
    if (error.name === "ResourceNotFoundException") return false;
    throw error;
  });
  if (found) return;
  await createTable(client, tableName);
  while (!(await active())) {
    if (Date.now() > deadline) throw new Error(`table ${tableName} is not active after waiting`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
