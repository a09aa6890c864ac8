import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ListTablesCommand, PutItemCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ensureTable } from "../../local/dynalite.js";
import { isAlive, SELF } from "../../local/lock.js";
import { LOCK_FILE, SharedDynamo } from "../../local/shared-db.js";

/** A pid that certainly ran on this machine and has ended. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}

let dataDir: string;
const opened: SharedDynamo[] = [];
const open = async (options: { timeoutMs?: number; onWait?: (m: string) => void } = {}) => {
  const db = await SharedDynamo.open(dataDir, options);
  opened.push(db);
  return db;
};
const lock = async () => JSON.parse(await readFile(join(dataDir, LOCK_FILE), "utf8"));

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "redraft-shared-"));
});

afterEach(async () => {
  for (const db of opened.splice(0).reverse()) await db.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe("one data folder, many users of its database", () => {
  it("the first serves and writes a lock naming its pid and port; the next connects to it", async () => {
    const first = await open();
    expect(first.serving).toBe(true);
    expect(await lock()).toMatchObject({ pid: process.pid, port: Number(new URL(first.endpoint).port) });
    const second = await open();
    expect(second.serving).toBe(false);
    expect(second.endpoint).toBe(first.endpoint);
    await expect(second.client.send(new ListTablesCommand({}))).resolves.toBeDefined();
  });

  it("the serving process reaches its database without a socket; the others over HTTP", async () => {
    const first = await open();
    const second = await open();
    const connections = vi.spyOn(Agent.prototype, "createConnection");
    try {
      await first.client.send(new ListTablesCommand({}));
      expect(connections).not.toHaveBeenCalled();
      await second.client.send(new ListTablesCommand({}));
      expect(connections).toHaveBeenCalled();
    } finally {
      connections.mockRestore();
    }
  });

  it("switches to the direct path when a client takes the folder over", async () => {
    const first = await open();
    const second = await open();
    await first.close();
    opened.splice(opened.indexOf(first), 1);
    await second.client.send(new ListTablesCommand({}));
    expect(second.serving).toBe(true);
    const connections = vi.spyOn(Agent.prototype, "createConnection");
    try {
      await expect(second.client.send(new ListTablesCommand({}))).resolves.toBeDefined();
      expect(connections).not.toHaveBeenCalled();
    } finally {
      connections.mockRestore();
    }
  });

  it("hands over when the server closes: a client's next request serves the folder itself", async () => {
    const first = await open();
    const second = await open();
    await first.close();
    opened.splice(opened.indexOf(first), 1);
    await expect(second.client.send(new ListTablesCommand({}))).resolves.toBeDefined();
    expect(second.serving).toBe(true);
    expect((await lock()).port).toBe(Number(new URL(second.endpoint).port));
  });

  it("closes under another process's writes without dying: each in flight is answered or its connection dropped and retried", async () => {
    const first = await open();
    const second = await open();
    await ensureTable(second.client, "runs");
    // Writes that touch three indexes each: an action of several LevelDB operations. The holder closes
    // while they are in flight; the client's writes that lose their connection go to the next holder.
    const item = (i: number) => ({
      pk: { S: `RUN#${i}` },
      sk: { S: "RUN" },
      byDraftPk: { S: `DRAFT#${i % 7}` },
      byDraftSk: { S: String(i) },
      byStatusPk: { S: "validated" },
      byStatusSk: { S: String(i) },
      byCreatedPk: { S: `CREATED#${i % 4}` },
      byCreatedSk: { S: String(i) },
    });
    const puts = Array.from({ length: 300 }, (_, i) =>
      second.client.send(new PutItemCommand({ TableName: "runs", Item: item(i) })),
    );
    await new Promise((r) => setTimeout(r, 5));
    await first.close();
    opened.splice(opened.indexOf(first), 1);
    await Promise.all(puts);
    const { Count } = await second.client.send(new ScanCommand({ TableName: "runs", Select: "COUNT" }));
    expect(Count).toBe(300);
  });

  it("takes over a lock whose process is dead", async () => {
    const pid = deadPid();
    expect(isAlive({ ...SELF, pid })).toBe(false);
    await writeFile(join(dataDir, LOCK_FILE), JSON.stringify({ ...SELF, pid, port: 9, at: "x" }));
    const db = await open();
    expect(db.serving).toBe(true);
    expect((await lock()).pid).toBe(process.pid);
  });

  it("takes over a lock nobody can read (a holder killed while writing it), once it is old", async () => {
    await writeFile(join(dataDir, LOCK_FILE), "");
    const old = new Date(Date.now() - 60_000);
    await utimes(join(dataDir, LOCK_FILE), old, old);
    const db = await open();
    expect(db.serving).toBe(true);
  });

  it("waits for a live holder that does not answer, saying which pid, and gives up at the bound", async () => {
    // A live holder (this very process) that wrote its lock and never got as far as a port.
    await writeFile(join(dataDir, LOCK_FILE), JSON.stringify({ ...SELF, at: "x" }));
    const told: string[] = [];
    await expect(open({ timeoutMs: 300, onWait: (m) => told.push(m) })).rejects.toMatchObject({
      name: "DatabaseUnavailableError",
      message: expect.stringContaining(`process ${process.pid}`),
    });
    expect(told).toEqual([expect.stringContaining(`redraft process ${process.pid} holds it`)]);
  });
});
