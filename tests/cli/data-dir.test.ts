import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LocalStoreError, SQLITE_FILE, SqliteBlobStore } from "../../local/sqlite-store.js";
import { jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

/**
 * Every fault of a data folder is one line: a path that cannot be one is a usage error (exit 2)
 * before anything is opened; a full disk, a damaged table file, a database lock held elsewhere
 * are exit 1 with what to do, never a stack, and what was stored stays.
 */

let work: string;
let drafts: string;
const clean = JSON.parse(
  await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"),
) as Record<string, unknown> & { content: { vignette: string } };

/** `n` distinct clean questions as one JSONL file. */
async function writeDrafts(file: string, n: number): Promise<void> {
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      ...clean,
      id: `q${i}`,
      content: { ...clean.content, vignette: `${clean.content.vignette} ${i}.` },
    }),
  );
  await writeFile(file, `${lines.join("\n")}\n`);
}

/**
 * What a person reads on stderr, the model notice aside, and Node's own process warnings too: the
 * suite runs its files in one process (isolate: false), so a warning about a handle another file left
 * to the garbage collector ("(node:PID) Warning: Closing file descriptor …") can land in the stderr
 * this file captures (seen once in CI under load).
 */
const problemLines = (stderr: string) =>
  stderr
    .split("\n")
    .filter(
      (line) =>
        line.trim() !== "" &&
        !line.startsWith("Model: ") &&
        !/^\(node:\d+\) /.test(line) &&
        !line.startsWith("(Use `node --trace-warnings"),
    );

const noStack = (stderr: string) => expect(stderr).not.toMatch(/^\s+at /m);

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-data-dir-"));
  drafts = join(work, "drafts.jsonl");
  await writeDrafts(drafts, 40);
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("a path that cannot be a data folder", () => {
  it.each([
    ["a file", async () => join(work, "a-file"), /is a file, not a folder/],
    ["a path under a file", async () => join(work, "a-file", "sub"), /cannot be made: .*a-file is a file/],
    ["a path under /proc", async () => `/proc/redraft-nope-${process.pid}`, /on proc, a virtual file system/],
    ["a path under /sys", async () => `/sys/redraft-nope-${process.pid}`, /on sysfs, a virtual file system/],
  ])("%s: exit 2, one line saying why, nothing made", async (_name, path, why) => {
    await writeFile(join(work, "a-file"), "not a folder");
    const dataDir = await path();
    for (const args of [["runs"], ["show", "abc"], ["run", drafts, "--llm", "none"]]) {
      const out = await redraft(["--data-dir", dataDir, ...args]);
      expect(out.code, `${args[0]}: ${out.stderr}`).toBe(2);
      expect(problemLines(out.stderr), `${args[0]}: ${out.stderr}`).toHaveLength(1);
      expect(out.stderr).toMatch(why);
      expect(out.stdout).toBe("");
    }
    expect(existsSync(join(dataDir, "dynamodb.lock"))).toBe(false);
    expect(await readFile(join(work, "a-file"), "utf8")).toBe("not a folder");
  });
});

describe("a data folder in use that fails", () => {
  it("a full disk (ENOSPC from the store): exit 1, one line naming it and what to do, the runs before it kept", async () => {
    const dataDir = join(work, "enospc");
    const first = await redraft(["--data-dir", dataDir, "run", drafts, "--llm", "none", "--json"]);
    expect(first.code).toBe(0);
    await writeDrafts(join(work, "more.jsonl"), 45);
    let uploads = 0;
    // What the SQLite store makes of SQLITE_FULL (a real one: tests/stores/sqlite-store.test.ts).
    const full = vi.spyOn(SqliteBlobStore.prototype, "putIfAbsent").mockImplementation(async function (
      this: SqliteBlobStore,
    ) {
      uploads += 1;
      throw new LocalStoreError(
        "full",
        join(dataDir, SQLITE_FILE),
        "database or disk is full (database or disk is full)",
      );
    });
    try {
      const out = await redraft([
        "--data-dir",
        dataDir,
        "run",
        join(work, "more.jsonl"),
        "--llm",
        "none",
        "--json",
      ]);
      expect(out.code).toBe(1);
      expect(problemLines(out.stderr)).toHaveLength(1);
      expect(out.stderr).toMatch(/the disk holding .* is full .*free some space/);
      noStack(out.stderr);
      expect(uploads).toBeGreaterThan(0);
    } finally {
      full.mockRestore();
    }
    const listed = await redraft(["--data-dir", dataDir, "runs", "--json", "--limit", "1000"]);
    expect(listed.code).toBe(0);
    const statuses = jsonLines(listed.stdout).map((r) => r.status);
    expect(statuses.filter((s) => s === "validated")).toHaveLength(40);
  }, 120_000);

  const tmpfs = join(tmpdir(), `redraft-tmpfs-${process.pid}`);
  const mounted = (() => {
    if (process.platform !== "linux" || process.getuid?.() !== 0) return false;
    try {
      execFileSync("mkdir", ["-p", tmpfs]);
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", tmpfs], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  })();
  afterAll(() => {
    if (mounted) execFileSync("umount", [tmpfs]);
    execFileSync("rm", ["-rf", tmpfs]);
  });

  // A real full disk where this machine lets a test mount one (root on Linux); the injected one above everywhere.
  it.runIf(mounted)(
    "a real full disk (a 1 MiB tmpfs): exit 1 in one line, then runs again once there is room",
    async () => {
      const dataDir = join(tmpfs, "data");
      await writeDrafts(join(work, "many.jsonl"), 300);
      const out = await redraft([
        "--data-dir",
        dataDir,
        "run",
        join(work, "many.jsonl"),
        "--llm",
        "none",
        "--json",
      ]);
      expect(out.code).toBe(1);
      expect(problemLines(out.stderr)).toHaveLength(1);
      expect(out.stderr).toMatch(/the disk holding .* is full/);
      noStack(out.stderr);
      const printed = jsonLines(out.stdout).map((r) => r.runId as string);
      // Room again: every run whose result was printed is still there, finished.
      execFileSync("mount", ["-o", "remount,size=64m", tmpfs]);
      for (const runId of printed.slice(0, 5)) {
        const shown = await redraft(["--data-dir", dataDir, "show", runId, "--json"]);
        expect(shown.code, shown.stderr).toBe(0);
      }
      const again = await redraft([
        "--data-dir",
        dataDir,
        "run",
        join(work, "many.jsonl"),
        "--llm",
        "none",
        "--json",
      ]);
      expect(again.code, again.stderr).toBe(0);
      expect(jsonLines(again.stdout)).toHaveLength(300);
    },
    300_000,
  );

  it("a damaged database file: exit 1, one line naming it and doctor --repair; doctor --repair keeps a copy and saves what it can read", async () => {
    const dataDir = join(work, "damaged-sqlite");
    expect((await redraft(["--data-dir", dataDir, "run", drafts, "--llm", "none", "--json"])).code).toBe(0);
    const file = join(dataDir, SQLITE_FILE);
    const size = (await stat(file)).size;
    // The header's first bytes overwritten: SQLite no longer knows the file for a database.
    const bytes = await readFile(file);
    bytes.write("this is no longer SQLite", 0);
    await writeFile(file, bytes);
    for (const args of [["runs"], ["show", "abc"], ["run", drafts, "--llm", "none"]]) {
      const out = await redraft(["--data-dir", dataDir, ...args]);
      expect(out.code, out.stderr).toBe(1);
      expect(problemLines(out.stderr)).toHaveLength(1);
      expect(out.stderr).toMatch(/the database .*redraft\.db is damaged .*redraft doctor --repair/);
      noStack(out.stderr);
    }
    expect(await readFile(file), "nothing removed or rewritten").toEqual(bytes);
    const repaired = await redraft(["--data-dir", dataDir, "doctor", "--repair"]);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stdout).toMatch(/reads whole/);
    const copies = (await readdir(dataDir)).filter((name) => /^redraft\.db\.before-repair-[^.]*$/.test(name));
    expect(copies).toHaveLength(1);
    expect((await stat(join(dataDir, copies[0] as string))).size).toBe(size);
    expect((await redraft(["--data-dir", dataDir, "runs"])).code).toBe(0);
    // The drafts run again into the rebuilt file.
    const again = await redraft(["--data-dir", dataDir, "run", drafts, "--llm", "none", "--json"]);
    expect(again.code, again.stderr).toBe(0);
  }, 120_000);

  it("a truncated table file of a folder kept by dynalite: exit 1, one line naming it and doctor --repair; doctor --repair keeps a copy", async () => {
    process.env.REDRAFT_LOCAL_STORE = "dynalite";
    const dataDir = join(work, "damaged");
    expect((await redraft(["--data-dir", dataDir, "run", drafts, "--llm", "none", "--json"])).code).toBe(0);
    // Opening again turns the log into a table file.
    expect((await redraft(["--data-dir", dataDir, "runs"])).code).toBe(0);
    const db = join(dataDir, "dynamodb");
    const table = (await readdir(db)).find((name) => name.endsWith(".ldb"));
    expect(table).toBeDefined();
    const size = (await stat(join(db, table as string))).size;
    await truncate(join(db, table as string), Math.floor(size / 2));
    for (const args of [["runs"], ["show", "abc"]]) {
      const out = await redraft(["--data-dir", dataDir, ...args]);
      expect(out.code, out.stderr).toBe(1);
      expect(problemLines(out.stderr)).toHaveLength(1);
      expect(out.stderr).toMatch(/the database in .*dynamodb is damaged .*\.ldb.*redraft doctor --repair/);
      noStack(out.stderr);
    }
    expect((await stat(join(db, table as string))).size, "nothing removed or rewritten").toBe(
      Math.floor(size / 2),
    );
    const repaired = await redraft(["--data-dir", dataDir, "doctor", "--repair"]);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stdout).toMatch(/reads whole/);
    const copies = (await readdir(dataDir)).filter((name) => name.startsWith("dynamodb.before-repair-"));
    expect(copies).toHaveLength(1);
    expect((await stat(join(dataDir, copies[0] as string, table as string))).size).toBe(Math.floor(size / 2));
    expect((await redraft(["--data-dir", dataDir, "runs"])).code).toBe(0);
    delete process.env.REDRAFT_LOCAL_STORE;
  }, 120_000);

  it("a database lock of a folder kept by dynalite held by a process that does not serve it: exit 1, one line naming the lock", async () => {
    process.env.REDRAFT_LOCAL_STORE = "dynalite";
    const dataDir = join(work, "locked");
    expect((await redraft(["--data-dir", dataDir, "runs"])).code).toBe(0);
    const fromDynalite = createRequire(createRequire(import.meta.url).resolve("dynalite"));
    const { ClassicLevel } = fromDynalite("classic-level") as {
      ClassicLevel: new (path: string) => { open(): Promise<void>; close(): Promise<void> };
    };
    const holder = new ClassicLevel(join(dataDir, "dynamodb"));
    await holder.open();
    try {
      const out = await redraft(["--data-dir", dataDir, "runs"]);
      expect(out.code, out.stderr).toBe(1);
      expect(problemLines(out.stderr)).toHaveLength(1);
      expect(out.stderr).toMatch(/is locked by another process .*stop that process/);
      noStack(out.stderr);
      expect(existsSync(join(dataDir, "dynamodb.lock")), "the folder's own lock given back").toBe(false);
    } finally {
      await holder.close();
    }
    expect((await redraft(["--data-dir", dataDir, "runs"])).code).toBe(0);
    delete process.env.REDRAFT_LOCAL_STORE;
  }, 60_000);
});

describe("reading what a fault said", () => {
  it("names permission faults inside the folder, and leaves other errors alone", async () => {
    const { dataDirFault } = await import("../../local/data-dir.js");
    const denied = Object.assign(new Error("EACCES: permission denied, open '/d/blobs/x'"), {
      code: "EACCES",
      path: "/d/blobs/x",
    });
    expect(dataDirFault(denied, "/d")).toMatch(/^\/d\/blobs\/x cannot be written .*write access to \/d/);
    expect(dataDirFault(new Error("something else"), "/d")).toBeUndefined();
    const unavailable = Object.assign(
      new Error("the database in /d is held by process 7, which did not answer within 60 s"),
      {
        name: "DatabaseUnavailableError",
      },
    );
    expect(dataDirFault(unavailable, "/d")).toMatch(/held by process 7.*remove \/d\/dynamodb\.lock/);
  });
});
