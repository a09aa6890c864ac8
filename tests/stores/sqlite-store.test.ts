import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { dataDirFault } from "../../local/data-dir.js";
import {
  LocalStoreError,
  SQLITE_FILE,
  SqliteBlobStore,
  SqliteDb,
  SqliteRunStore,
} from "../../local/sqlite-store.js";
import { RunNotFoundError } from "../../shared/errors.js";
import { at, makeRun } from "./fixtures.js";
import { describeRunStoreContract } from "./run-store-contract.js";

const folders: string[] = [];
const dbs: SqliteDb[] = [];
async function tempFolder(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), "redraft-sqlite-"));
  folders.push(folder);
  return folder;
}
function open(dataDir: string, options?: { busyTimeoutMs?: number }): SqliteDb {
  const db = SqliteDb.open(dataDir, options);
  dbs.push(db);
  return db;
}
afterEach(async () => {
  for (const db of dbs.splice(0)) db.close();
  await Promise.all(folders.splice(0).map((f) => rm(f, { recursive: true, force: true })));
});

describeRunStoreContract("SqliteRunStore", async () => new SqliteRunStore(open(await tempFolder())));

const STORE = resolve("local/sqlite-store.ts");

/** A second process on the same data folder, running `body` with `db`, `runs`, `blobs` in scope. */
function child(dataDir: string, body: string): ChildProcess {
  const script = `
    import { SqliteDb, SqliteRunStore, SqliteBlobStore } from ${JSON.stringify(STORE)};
    const db = SqliteDb.open(${JSON.stringify(dataDir)});
    const runs = new SqliteRunStore(db);
    const blobs = new SqliteBlobStore(db);
    ${body}
  `;
  return spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
}
function ended(proc: ChildProcess): Promise<{ code: number | null; signal: string | null; out: string }> {
  let out = "";
  proc.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  proc.stderr?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((done) => proc.on("close", (code, signal) => done({ code, signal, out })));
}

describe("SqliteDb: one data folder, several processes", () => {
  it("two processes claiming the same contents at once: each content goes to exactly one run", async () => {
    const dataDir = await tempFolder();
    open(dataDir);
    const claims = (who: string) =>
      ended(
        child(
          dataDir,
          `const won = [];
           for (let i = 0; i < 200; i++) {
             const hash = String(i).padStart(64, "0");
             if ((await runs.claimContent(hash, "${who}-" + i, new Date().toISOString(), 3600000)) === "${who}-" + i) won.push(i);
           }
           process.stdout.write(JSON.stringify(won));`,
        ),
      );
    const [a, b] = await Promise.all([claims("a"), claims("b")]);
    expect(a.code, a.out).toBe(0);
    expect(b.code, b.out).toBe(0);
    const wonA: number[] = JSON.parse(a.out);
    const wonB: number[] = JSON.parse(b.out);
    expect(wonA.length + wonB.length).toBe(200);
    expect(new Set([...wonA, ...wonB]).size).toBe(200);
  }, 60_000);

  it("sees the other process's writes at once (WAL readers are not blocked by a writer)", async () => {
    const dataDir = await tempFolder();
    const runs = new SqliteRunStore(open(dataDir));
    await runs.createRun(makeRun("mine"));
    const other = await ended(
      child(
        dataDir,
        `await runs.createRun({ ...(await runs.getRun("mine")), runId: "theirs" });
         process.stdout.write(String((await runs.listRuns()).length));`,
      ),
    );
    expect(other.out).toBe("2");
    expect((await runs.getRun("theirs"))?.draftId).toBe("draft-1");
  }, 60_000);

  it("a process killed with SIGKILL in the middle of its writes leaves every committed write and no torn one", async () => {
    const dataDir = await tempFolder();
    open(dataDir).close();
    const writer = child(
      dataDir,
      `const body = "x".repeat(5000);
       for (let i = 0; ; i++) {
         db.transaction(() => {
           db.run("INSERT INTO blobs (key, body, deflated) VALUES (?, ?, 0)", "k" + i, body);
           db.run("INSERT INTO blobs (key, body, deflated) VALUES (?, ?, 0)", "k" + i + "-pair", body);
         });
         if (i === 50) process.stdout.write("writing\\n");
       }`,
    );
    const done = ended(writer);
    await new Promise<void>((ready) =>
      writer.stdout?.on("data", (chunk: Buffer) => chunk.toString().includes("writing") && ready()),
    );
    await new Promise((wait) => setTimeout(wait, 300));
    writer.kill("SIGKILL");
    expect((await done).signal).toBe("SIGKILL");
    const db = open(dataDir);
    expect(db.integrityCheck()).toEqual(["ok"]);
    const keys = db.all("SELECT key FROM blobs").map((row) => String(row.key));
    expect(keys.length).toBeGreaterThan(100);
    // Both writes of a transaction, or neither.
    for (const key of keys.filter((k) => !k.endsWith("-pair"))) expect(keys).toContain(`${key}-pair`);
    expect(keys.filter((k) => k.endsWith("-pair")).length * 2).toBe(keys.length);
  }, 60_000);

  it("a write that cannot take the lock in time is a LocalStoreError of kind busy, said in one line", async () => {
    const dataDir = await tempFolder();
    open(dataDir).close();
    const holder = child(
      dataDir,
      `db.transaction(() => { process.stdout.write("holding\\n"); const until = Date.now() + 3000; while (Date.now() < until); });`,
    );
    const done = ended(holder);
    await new Promise<void>((ready) =>
      holder.stdout?.on("data", (chunk: Buffer) => chunk.toString().includes("holding") && ready()),
    );
    const runs = new SqliteRunStore(open(dataDir, { busyTimeoutMs: 100 }));
    const error = await runs.createRun(makeRun("r1")).catch((e: unknown) => e);
    await done;
    expect(error).toBeInstanceOf(LocalStoreError);
    expect((error as LocalStoreError).kind).toBe("busy");
    const line = dataDirFault(error, dataDir);
    expect(line).toMatch(/busy|locked/);
    expect(line).not.toContain("\n");
  }, 60_000);
});

describe("SqliteDb: the writes of one turn commit together", () => {
  it("each write resolves once another connection can read it, and a step that fails undoes only itself", async () => {
    const dataDir = await tempFolder();
    const runs = new SqliteRunStore(open(dataDir));
    const other = new SqliteRunStore(open(dataDir));
    await runs.createRun(makeRun("r1"));
    // Asked for in one turn: they run and commit together at its end.
    const outcomes = await Promise.allSettled([
      runs.createRun(makeRun("r2")),
      runs.setStatus("ghost", "validated", at(2)),
      runs.setStatus("r1", "correcting", at(3)),
      runs.claimContent("c".repeat(64), "r1", at(4), 60_000),
      runs.claimContent("c".repeat(64), "r2", at(4), 60_000),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
      "fulfilled",
    ]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(RunNotFoundError);
    // The second claim of the same content found the first one's, made earlier in the same commit.
    expect(outcomes.slice(3).map((o) => (o as PromiseFulfilledResult<string>).value)).toEqual(["r1", "r1"]);
    expect((await other.getRun("r2"))?.runId).toBe("r2");
    expect((await other.getRun("r1"))?.status).toBe("correcting");
    expect(await other.getRun("ghost")).toBeUndefined();
  });

  it("a process killed with SIGKILL while its drafts write leaves whole steps only, every one it was told of", async () => {
    const dataDir = await tempFolder();
    open(dataDir).close();
    // Four writers in flight, as a run's drafts are; each prints a key once its put resolved.
    const writer = child(
      dataDir,
      `const body = "y".repeat(3000);
       const writer = async (w) => {
         for (let i = 0; ; i++) {
           const key = "w" + w + "-" + i;
           await runs.createRun({ ...${JSON.stringify(makeRun("template"))}, runId: key });
           await blobs.put(key, body);
           process.stdout.write(key + "\\n");
         }
       };
       await Promise.all([0, 1, 2, 3].map(writer));`,
    );
    let told = "";
    writer.stdout?.on("data", (chunk: Buffer) => {
      told += chunk.toString();
    });
    const done = ended(writer);
    let over = false;
    void done.then(() => {
      over = true;
    });
    await new Promise<void>((ready) => {
      const poll = setInterval(() => {
        if (over || told.split("\n").length > 200) {
          clearInterval(poll);
          ready();
        }
      }, 20);
    });
    writer.kill("SIGKILL");
    const end = await done;
    expect(end.signal, end.out).toBe("SIGKILL");
    const db = open(dataDir);
    expect(db.integrityCheck()).toEqual(["ok"]);
    const blobKeys = new Set(db.all("SELECT key FROM blobs").map((row) => String(row.key)));
    const runIds = new Set(db.all("SELECT run_id FROM runs").map((row) => String(row.run_id)));
    // Every key the process printed (its put had resolved) is there, with its run.
    const printed = told.split("\n").filter((line) => line !== "");
    expect(printed.length).toBeGreaterThan(200);
    for (const key of printed) {
      expect(blobKeys.has(key)).toBe(true);
      expect(runIds.has(key)).toBe(true);
    }
    // No blob without the run written before it: each step is whole, and in order.
    for (const key of blobKeys) expect(runIds.has(key)).toBe(true);
  }, 60_000);
});

describe("SqliteDb: faults of the database file", () => {
  it("a full disk (SQLITE_FULL) is one line naming the disk, and what was stored before stays", async () => {
    const dataDir = await tempFolder();
    const db = open(dataDir);
    const blobs = new SqliteBlobStore(db);
    await blobs.put("kept", "stored before the disk filled");
    // SQLite's own ceiling on the file stands in for the disk: the same SQLITE_FULL as ENOSPC.
    db.all(`PRAGMA max_page_count = ${db.pragma("page_count") + 2}`);
    const random = (n: number) => Array.from({ length: n }, () => Math.random().toString(36)).join("");
    const error = await blobs.put("big", random(20_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LocalStoreError);
    expect((error as LocalStoreError).kind).toBe("full");
    const line = dataDirFault(error, dataDir);
    expect(line).toMatch(/^the disk holding .* is full/);
    expect(line).not.toContain("\n");
    await expect(blobs.get("kept")).resolves.toBe("stored before the disk filled");
  });

  it("a file that is not a database is one line naming redraft doctor, and the file is left as it was", async () => {
    const dataDir = await tempFolder();
    const file = join(dataDir, SQLITE_FILE);
    await writeFile(file, "this is not a database, and it is long enough to have a header".repeat(20));
    const before = await readFile(file);
    const error = (() => {
      try {
        open(dataDir);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(LocalStoreError);
    expect((error as LocalStoreError).kind).toBe("damaged");
    const line = dataDirFault(error, dataDir);
    expect(line).toContain("redraft doctor");
    expect(line).not.toContain("\n");
    expect(await readFile(file)).toEqual(before);
  });

  it("a truncated database file is reported as damaged when read, in one line", async () => {
    const dataDir = await tempFolder();
    const db = open(dataDir);
    const runs = new SqliteRunStore(db);
    for (let i = 0; i < 300; i++) await runs.createRun(makeRun(`r${i}`, { message: "m".repeat(500) }));
    db.compact();
    db.close();
    dbs.splice(dbs.indexOf(db), 1);
    const file = join(dataDir, SQLITE_FILE);
    await truncate(file, Math.floor((await stat(file)).size / 2));
    const error = await (async () => {
      const reopened = open(dataDir);
      await new SqliteRunStore(reopened).listRuns();
      return reopened.integrityCheck();
    })().catch((e: unknown) => e);
    const line = error instanceof Error ? dataDirFault(error, dataDir) : undefined;
    // Either the read itself fails as damaged, or SQLite's check says what is wrong.
    if (error instanceof Error) {
      expect((error as LocalStoreError).kind).toBe("damaged");
      expect(line).toContain("redraft doctor");
    } else expect(error).not.toEqual(["ok"]);
  });
});

describe("SqliteDb: compaction", () => {
  it("gives the space of deleted rows back to the file system", async () => {
    const dataDir = await tempFolder();
    const db = open(dataDir);
    const blobs = new SqliteBlobStore(db);
    const noise = (i: number) =>
      Array.from({ length: 400 }, (_, j) => ((i * 7919 + j) % 997).toString(36)).join("");
    for (let i = 0; i < 500; i++) await blobs.put(`runs/r${i}/report.json`, noise(i));
    db.compact();
    const file = join(dataDir, SQLITE_FILE);
    const full = (await stat(file)).size;
    db.run("DELETE FROM blobs");
    expect(db.compact()).toBe(true);
    const compacted = (await stat(file)).size;
    expect(compacted).toBeLessThan(full / 4);
    expect((await stat(`${file}-wal`)).size).toBe(0);
  });

  it("a new file keeps its tables in incremental auto-vacuum mode", async () => {
    const db = open(await tempFolder());
    expect(db.pragma("auto_vacuum")).toBe(2);
  });
});

describe("SqliteRunStore beyond the contract", () => {
  it("pages through runs newest first with a cursor, never repeating or skipping one", async () => {
    const runs = new SqliteRunStore(open(await tempFolder()));
    for (let i = 0; i < 25; i++)
      await runs.createRun(makeRun(`r${String(i).padStart(2, "0")}`, { createdAt: at(i % 5) }));
    const seen: string[] = [];
    let after: { at: string; runId: string } | undefined;
    for (;;) {
      const page = runs.listPage({ limit: 7, after });
      if (page.length === 0) break;
      seen.push(...page.map((r) => r.runId));
      const last = page[page.length - 1] as { createdAt: string; runId: string };
      after = { at: last.createdAt, runId: last.runId };
    }
    expect(seen).toEqual((await runs.listRuns()).map((r) => r.runId));
    expect(new Set(seen).size).toBe(25);
  });

  it("finishActive: moves only a run that exists and is in one of `from`, once", async () => {
    const runs = new SqliteRunStore(open(await tempFolder()));
    await runs.createRun(makeRun("r1", { status: "correcting" }));
    await expect(runs.finishActive("none", "failed", [], at(1))).resolves.toBe(false);
    await expect(runs.finishActive("r1", "failed", ["draft"], at(1))).resolves.toBe(false);
    await expect(runs.finishActive("r1", "validated", [], at(1), { finalRef: "f" })).resolves.toBe(true);
    await expect(runs.finishActive("r1", "validated", [], at(2))).resolves.toBe(false);
    const run = await runs.getRun("r1");
    expect(run).toMatchObject({ status: "validated", finalRef: "f", updatedAt: at(1) });
    expect(run?.transitions.map((t) => t.status)).toEqual(["correcting", "validated"]);
  });
});
