import { createHash } from "node:crypto";
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SQLITE_FILE } from "../../local/sqlite-store.js";
import { CASSETTE, jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

/**
 * `redraft doctor --repair` never costs data: on a folder that reads whole it changes nothing (the
 * file's bytes, every run's `show`), on a damaged one every item still readable is kept (each
 * run's `show` as it was), and a SQLite file that is not redraft's is refused by every command,
 * its bytes as they were.
 */

const { DatabaseSync: Sqlite } = createRequire(import.meta.url)(
  "node:sqlite",
) as typeof import("node:sqlite");

let work: string;
const clean = JSON.parse(
  await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"),
) as Record<string, unknown> & { content: { vignette: string } };

const sha256 = async (file: string) =>
  createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
const problemLines = (stderr: string) =>
  stderr.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("Model: "));

/** A folder with runs that have attempts, tokens and costs (a cassette's model), and 40 without. */
async function populatedFolder(name: string): Promise<string> {
  const dataDir = join(work, name);
  const drafts = join(work, `${name}.jsonl`);
  await writeFile(
    drafts,
    `${Array.from({ length: 40 }, (_, i) =>
      JSON.stringify({
        ...clean,
        id: `q${i}`,
        content: { ...clean.content, vignette: `${clean.content.vignette} ${i}.` },
      }),
    ).join("\n")}\n`,
  );
  const modelled = ["mcq-breaker", "json-corrected", "mcq-judged", "mcq-seed004"].map((d) =>
    join(ROOT, "examples", "drafts", `${d}.json`),
  );
  const first = await redraft([
    "--data-dir",
    dataDir,
    "run",
    ...modelled,
    "--llm",
    `replay:${CASSETTE}`,
    "--json",
  ]);
  expect(first.code, first.stderr).toBe(0);
  const second = await redraft(["--data-dir", dataDir, "run", drafts, "--llm", "none", "--json"]);
  expect(second.code, second.stderr).toBe(0);
  return dataDir;
}

async function runIds(dataDir: string): Promise<string[]> {
  const listed = await redraft(["--data-dir", dataDir, "runs", "--json", "--limit", "1000"]);
  expect(listed.code, listed.stderr).toBe(0);
  return jsonLines(listed.stdout).map((run) => String(run.runId));
}

/** Every run's `show --json`, by run id. */
async function shows(dataDir: string, ids: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const id of ids) {
    const shown = await redraft(["--data-dir", dataDir, "show", id, "--json"]);
    expect(shown.code, shown.stderr).toBe(0);
    out.set(id, shown.stdout);
  }
  return out;
}

const readOnly = (file: string): DatabaseSync => new Sqlite(file, { readOnly: true });

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-doctor-"));
});
afterAll(async () => {
  if (!process.env.KEEP) await rm(work, { recursive: true, force: true });
});

describe("redraft doctor --repair", () => {
  it("on a folder that reads whole changes nothing: the file's bytes and every run's show as they were", async () => {
    const dataDir = await populatedFolder("healthy");
    const ids = await runIds(dataDir);
    expect(ids).toHaveLength(44);
    const before = await shows(dataDir, ids);
    // Runs with a model's attempts are among them: what a rebuild that skipped attempts would lose.
    expect([...before.values()].filter((text) => /"attemptsDetail":\[\{/.test(text)).length).toBeGreaterThan(
      2,
    );
    const file = join(dataDir, SQLITE_FILE);
    const hash = await sha256(file);
    const repaired = await redraft(["--data-dir", dataDir, "doctor", "--repair"]);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stderr).toMatch(/not damaged: nothing to repair/);
    expect(repaired.stdout).toMatch(/reads whole/);
    expect((await readdir(dataDir)).filter((name) => name.includes("before-repair"))).toEqual([]);
    expect(await sha256(file)).toBe(hash);
    expect(await shows(dataDir, ids)).toEqual(before);
  }, 240_000);

  it("on a folder kept by dynalite that reads whole changes nothing either: no copy, every run's show as it was", async () => {
    process.env.REDRAFT_LOCAL_STORE = "dynalite";
    try {
      const dataDir = join(work, "healthy-dynalite");
      const modelled = ["mcq-breaker", "mcq-judged"].map((d) =>
        join(ROOT, "examples", "drafts", `${d}.json`),
      );
      const first = await redraft([
        "--data-dir",
        dataDir,
        "run",
        ...modelled,
        "--llm",
        `replay:${CASSETTE}`,
        "--json",
      ]);
      expect(first.code, first.stderr).toBe(0);
      const ids = await runIds(dataDir);
      const before = await shows(dataDir, ids);
      const repaired = await redraft(["--data-dir", dataDir, "doctor", "--repair"]);
      expect(repaired.code, repaired.stderr).toBe(0);
      expect(repaired.stderr).toMatch(/not damaged: nothing to repair/);
      expect((await readdir(dataDir)).filter((name) => name.includes("before-repair"))).toEqual([]);
      expect(await shows(dataDir, ids)).toEqual(before);
    } finally {
      delete process.env.REDRAFT_LOCAL_STORE;
    }
  }, 240_000);

  it("on a damaged folder keeps every item still readable: each run not on the damaged page shows as before", async () => {
    const dataDir = await populatedFolder("damaged");
    const ids = await runIds(dataDir);
    const before = await shows(dataDir, ids);
    const file = join(dataDir, SQLITE_FILE);
    // A leaf page of the runs table in the middle of it, found by SQLite's own page statistics.
    let page: number;
    let pageSize: number;
    let rowids: number[];
    {
      const db = readOnly(file);
      pageSize = Number((db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size);
      const leaves = (
        db
          .prepare("SELECT pageno FROM dbstat WHERE name = 'runs' AND pagetype = 'leaf' ORDER BY pageno")
          .all() as {
          pageno: number;
        }[]
      ).map((row) => Number(row.pageno));
      expect(leaves.length, "runs spread over several leaf pages").toBeGreaterThan(4);
      page = leaves[Math.floor(leaves.length / 2)] as number;
      rowids = (db.prepare("SELECT rowid AS id FROM runs ORDER BY rowid").all() as { id: number }[]).map(
        (r) => Number(r.id),
      );
      db.close();
    }
    const handle = await open(file, "r+");
    await handle.write(Buffer.alloc(pageSize, 0xa5), 0, pageSize, (page - 1) * pageSize);
    await handle.close();
    // What can still be read, row by row, from the damaged file: the oracle the repair is held to.
    const readable = new Set<string>();
    {
      const db = readOnly(file);
      const one = db.prepare("SELECT run_id FROM runs WHERE rowid = ?");
      for (const id of rowids) {
        try {
          const row = one.get(id) as { run_id: string } | undefined;
          if (row) readable.add(String(row.run_id));
        } catch {
          // On the damaged page.
        }
      }
      db.close();
    }
    expect(readable.size).toBeLessThan(ids.length);
    expect(readable.size).toBeGreaterThan(ids.length / 2);

    const repaired = await redraft(["--data-dir", dataDir, "doctor", "--repair"]);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stderr).toMatch(/Rebuilt the database/);
    expect(repaired.stdout).toMatch(/reads whole/);
    expect(
      (await readdir(dataDir)).filter((name) => /^redraft\.db\.before-repair-[^.]*[0-9]Z$/.test(name)),
    ).toHaveLength(1);
    const kept = await runIds(dataDir);
    expect(new Set(kept)).toEqual(readable);
    const after = await shows(dataDir, kept);
    for (const id of kept) expect(after.get(id), `show ${id}`).toBe(before.get(id));
  }, 240_000);
});

describe("a SQLite file that is not redraft's", () => {
  it.each([
    [
      "another program's tables",
      (db: DatabaseSync) => {
        db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); CREATE TABLE tags (name TEXT)");
        for (let i = 0; i < 50; i++) db.prepare("INSERT INTO notes (text) VALUES (?)").run(`note ${i}`);
      },
    ],
    [
      "one table named like redraft's, and a schema version",
      (db: DatabaseSync) => {
        db.exec("CREATE TABLE runs (run_id TEXT PRIMARY KEY, body TEXT); PRAGMA user_version = 1");
        db.prepare("INSERT INTO runs VALUES (?, ?)").run("r1", "theirs");
      },
    ],
    [
      "another application id",
      (db: DatabaseSync) => {
        db.exec("PRAGMA application_id = 1234; CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)");
      },
    ],
  ])(
    "(%s) is refused by every command in one line, its bytes as they were",
    async (name, make) => {
      const dataDir = join(work, `foreign-${name.replace(/\W+/g, "-")}`);
      await rm(dataDir, { recursive: true, force: true });
      await mkdir(dataDir, { recursive: true });
      const file = join(dataDir, SQLITE_FILE);
      const db = new Sqlite(file);
      db.exec("PRAGMA journal_mode = DELETE");
      make(db);
      db.close();
      const hash = await sha256(file);
      const draft = join(ROOT, "examples", "drafts", "mcq-clean.json");
      for (const args of [
        ["runs"],
        ["show", "abc"],
        ["run", draft, "--llm", "none"],
        ["doctor"],
        ["doctor", "--repair"],
      ]) {
        const out = await redraft(["--data-dir", dataDir, ...args]);
        expect(out.code, `${args.join(" ")}: ${out.stderr}`).not.toBe(0);
        expect(problemLines(out.stderr), args.join(" ")).toHaveLength(1);
        expect(out.stderr).toMatch(/is not redraft's database: .*another program's file, left as it was/);
        expect(out.stderr).not.toMatch(/^\s+at /m);
        expect(await sha256(file), `${args.join(" ")} left the file as it was`).toBe(hash);
      }
      const files = await readdir(dataDir);
      expect(files.filter((f) => f.startsWith(SQLITE_FILE))).toEqual([SQLITE_FILE]);
      const check = readOnly(file);
      expect(check.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "delete" });
      check.close();
    },
    120_000,
  );
});
