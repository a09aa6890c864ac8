import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SELF } from "../../local/lock.js";
import { LOCK_FILE } from "../../local/shared-db.js";
import { SQLITE_FILE, SqliteBlobStore, SqliteDb } from "../../local/sqlite-store.js";
import { redraft as inProcess, spawnCli } from "../helpers/run-cli.js";

const ROOT = join(import.meta.dirname, "..", "..");
const DRAFTS = 60;
let work: string;
let draftsFile: string;

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Starts the real command line as a person would; `done` settles when it exits. What these tests
 * are about needs real processes: one killed with SIGKILL, two writing one data folder at once.
 */
/** How many batch items' executions have ended and been kept in the folder's store (read beside the writer: WAL). */
function itemExecutions(dataDir: string): number {
  if (!existsSync(join(dataDir, SQLITE_FILE))) return 0;
  const db = SqliteDb.open(dataDir);
  try {
    return Number(db.get("SELECT count(*) AS n FROM executions WHERE name GLOB 'b-*-[0-9]*'")?.n ?? 0);
  } finally {
    db.close();
  }
}

function start(args: string[]) {
  const started = spawnCli(args);
  return { child: started.child, out: () => started.out.stdout, done: started.done };
}

const spawned = (args: string[]) => start(args).done;

/**
 * The command that comes after (lists, re-runs, reviews, the second of two processes): the same
 * command line called in this process, which is itself another process than the spawned ones, and
 * opens the data folder afresh at each call as a new command would.
 */
async function redraft(args: string[]): Promise<Finished> {
  return { ...(await inProcess(args)), signal: null };
}

const lines = (out: string) =>
  out
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

const runArgs = (dataDir: string, ...extra: string[]) => [
  "run",
  draftsFile,
  "--json",
  "--llm",
  "none",
  "--data-dir",
  dataDir,
  ...extra,
];

async function listRuns(dataDir: string): Promise<Record<string, unknown>[]> {
  const out = await redraft(["runs", "--json", "--limit", "1000", "--data-dir", dataDir]);
  expect(out.code, out.stderr).toBe(0);
  return lines(out.stdout);
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-durability-"));
  // As in the spawned commands: no model key from the environment chooses a live model.
  vi.stubEnv("ANTHROPIC_API_KEY", "");
  // The examples, copied under distinct ids: some validate, some go to review without a model.
  const folder = join(ROOT, "examples", "drafts");
  const examples = (await readdir(folder)).filter((f) => f.endsWith(".json")).sort();
  const drafts: string[] = [];
  for (let i = 0; i < DRAFTS; i++) {
    const example = JSON.parse(await readFile(join(folder, examples[i % examples.length] ?? ""), "utf8"));
    drafts.push(JSON.stringify({ ...example, id: `${example.id}-${i}` }));
  }
  draftsFile = join(work, "drafts.jsonl");
  await writeFile(draftsFile, drafts.join("\n"));
}, 180_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await rm(work, { recursive: true, force: true });
});

describe("two runs and a poller on one data folder", () => {
  it("both exit 0, every draft has exactly one run, and nobody sees a closed database", async () => {
    const dataDir = join(work, "concurrent");
    const first = start(runArgs(dataDir, "--concurrency", "2"));
    const second = start(runArgs(dataDir, "--concurrency", "2"));
    let running = true;
    const both = Promise.all([first.done, second.done]).finally(() => {
      running = false;
    });
    const polls: Finished[] = [];
    // Each poll a process of its own, starting and stopping while the two runs hold the folder.
    while (running) polls.push(await spawned(["runs", "--json", "--limit", "5", "--data-dir", dataDir]));
    const [a, b] = await both;

    for (const out of [a, b, ...polls]) {
      expect(out.code, out.stderr).toBe(0);
      expect(out.stderr).not.toMatch(/Database is closed|system failure/);
    }
    expect(polls.length).toBeGreaterThan(0);
    const printed = [...lines(a.stdout), ...lines(b.stdout)];
    expect(lines(a.stdout)).toHaveLength(DRAFTS);
    expect(lines(b.stdout)).toHaveLength(DRAFTS);
    // Each draft ran once, in one process or the other; the other reprinted that run as a duplicate.
    const ran = printed.filter((r) => r.duplicate !== true);
    const duplicates = printed.filter((r) => r.duplicate === true);
    expect(ran).toHaveLength(DRAFTS);
    expect(new Set(ran.map((r) => r.draftId)).size).toBe(DRAFTS);
    expect(new Set(duplicates.map((r) => r.runId))).toEqual(new Set(ran.map((r) => r.runId)));

    const runs = await listRuns(dataDir);
    expect(runs).toHaveLength(DRAFTS);
    expect(new Set(runs.map((r) => r.draftId)).size).toBe(DRAFTS);
    expect(runs.every((r) => r.status === "validated" || r.status === "needs_manual_review")).toBe(true);
    expect(existsSync(join(dataDir, LOCK_FILE)), "the last process out leaves no lock").toBe(false);
  }, 300_000);
});

describe("a run killed mid-way", () => {
  it("leaves no run unfinished: the next command finishes them as interrupted, and a re-run runs only the rest", async () => {
    const dataDir = join(work, "killed");
    const doomed = start(runArgs(dataDir, "--concurrency", "4"));
    const deadline = Date.now() + 120_000;
    while (lines(doomed.out()).length < 5 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    doomed.child.kill("SIGKILL");
    const killed = await doomed.done;
    expect(killed.signal).toBe("SIGKILL");
    expect(lines(killed.stdout).length).toBeLessThan(DRAFTS);
    // SQLite's own locks go with the killed process: nothing is left for the next command to clear.
    expect(existsSync(join(dataDir, LOCK_FILE)), "no lock file of dynalite's").toBe(false);

    const before = await listRuns(dataDir);
    expect(before.filter((r) => r.status === "draft" || r.status === "correcting")).toEqual([]);
    const failed = before.filter((r) => r.status === "failed");
    for (const r of failed) {
      expect(r).toMatchObject({ reason: "interrupted" });
      expect(String(r.message)).toMatch(/^interrupted: redraft process \d+ ended/);
    }
    // What the killed process printed had finished, so it is no interrupted run.
    const finished = new Set(before.filter((r) => r.status !== "failed").map((r) => r.draftId));
    for (const r of lines(killed.stdout)) expect(finished.has(r.draftId)).toBe(true);

    const again = await redraft(runArgs(dataDir));
    expect(again.code, again.stderr).toBe(0);
    const results = lines(again.stdout);
    expect(results).toHaveLength(DRAFTS);
    for (const r of results)
      expect(r.duplicate === true, String(r.draftId)).toBe(finished.has(String(r.draftId)));

    const after = await listRuns(dataDir);
    expect(after.filter((r) => r.status === "draft" || r.status === "correcting")).toEqual([]);
    // One finished run per draft; the interrupted ones stay, reviewable, beside their re-runs.
    const done = after.filter((r) => r.status !== "failed");
    expect(done).toHaveLength(DRAFTS);
    expect(new Set(done.map((r) => r.draftId)).size).toBe(DRAFTS);
    expect(after.filter((r) => r.status === "failed")).toHaveLength(failed.length);

    const rerun = await redraft(runArgs(dataDir, "--rerun"));
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(lines(rerun.stdout).filter((r) => r.duplicate === true)).toEqual([]);
  }, 300_000);

  it("an interrupted run can be reviewed like any other", async () => {
    const dataDir = join(work, "killed");
    const failed = (await listRuns(dataDir)).filter((r) => r.reason === "interrupted");
    const [first] = failed;
    if (!first) return;
    const approved = await redraft([
      "review",
      String(first.runId),
      "approve",
      "--override",
      "--data-dir",
      dataDir,
    ]);
    expect(approved.code, approved.stderr).toBe(0);
    expect((await listRuns(dataDir)).find((r) => r.runId === first.runId)).toMatchObject({
      status: "validated",
      reason: "approved",
    });
  }, 120_000);
});

describe("an orphaned lock of a folder kept by dynalite", () => {
  beforeAll(() => {
    process.env.REDRAFT_LOCAL_STORE = "dynalite";
  });
  afterAll(() => {
    delete process.env.REDRAFT_LOCAL_STORE;
  });
  it("naming a dead process is taken over by the next command", async () => {
    const dataDir = join(work, "orphan");
    await redraft(runArgs(dataDir));
    const dead = Number(
      spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout,
    );
    await writeFile(join(dataDir, LOCK_FILE), JSON.stringify({ ...SELF, pid: dead, port: 9, at: "x" }));
    const listed = await redraft(["runs", "--json", "--limit", "1000", "--data-dir", dataDir]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(lines(listed.stdout)).toHaveLength(DRAFTS);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  }, 120_000);
});

describe("a batch killed mid-way", () => {
  it("is resumed by the next `redraft batch` of its manifest: the items cut short run again, the others not", async () => {
    const dataDir = join(work, "batch-killed");
    const batchArgs = ["batch", draftsFile, "--json", "--llm", "none", "--data-dir", dataDir];
    const doomed = start([...batchArgs, "--concurrency", "4"]);
    // Killed once some children have run and been recorded.
    const deadline = Date.now() + 120_000;
    const ran = async () => itemExecutions(dataDir);
    while ((await ran()) < 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    doomed.child.kill("SIGKILL");
    expect((await doomed.done).signal).toBe("SIGKILL");

    const resumed = await redraft(batchArgs);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/had been interrupted; it was resumed/);
    const printed = lines(resumed.stdout);
    const summary = printed.at(-1) as { items: number; counts: Record<string, number>; status: string };
    expect(summary.status).toBe("completed");
    expect(summary.items).toBe(DRAFTS);
    expect(Object.values(summary.counts).reduce((a, b) => a + b, 0)).toBe(DRAFTS);
    expect(printed).toHaveLength(DRAFTS + 1);
    // The finished runs were not run again; each run the kill cut short stays, finished as failed /
    // interrupted (never left under way), and its item ran once more under its rerun id.
    const runs = await listRuns(dataDir);
    const interrupted = runs.filter((r) => r.status === "failed" && r.reason === "interrupted");
    expect(runs).toHaveLength(DRAFTS + interrupted.length);
    expect(new Set(runs.map((r) => r.runId)).size).toBe(runs.length);
    expect((summary as { rerun?: number }).rerun).toBe(interrupted.length);
    expect(summary.counts.failed ?? 0).toBe(0);
    expect(runs.filter((r) => r.status === "draft" || r.status === "correcting")).toEqual([]);
  }, 240_000);
});

describe("a batch-priced batch killed while its batch request is out", () => {
  it("is resumed priced as it began, collects the request the killed process sent, and ends every item as an uninterrupted batch does", async () => {
    // The examples under their own ids, so that the example cassette answers their corrections.
    const folder = join(ROOT, "examples", "drafts");
    const examples = (await readdir(folder)).filter((f) => f.endsWith(".json")).sort();
    const manifest = join(work, "examples.jsonl");
    await writeFile(
      manifest,
      (
        await Promise.all(
          examples.map(async (f) => JSON.stringify(JSON.parse(await readFile(join(folder, f), "utf8")))),
        )
      ).join("\n"),
    );
    const llm = `replay:${join(ROOT, "examples", "example.cassette.json")}`;
    const dataDir = join(work, "batch-priced-killed");
    const doomed = start([
      ...["batch", manifest, "--json", "--llm", llm, "--data-dir", dataDir],
      ...["--pricing", "batch", "--batch-latency", "5"],
    ]);
    // Killed once round 1's batch request is out (its jobs are listed), before it is collected.
    const deadline = Date.now() + 120_000;
    const jobsOfRound1 = async () => {
      if (!existsSync(join(dataDir, SQLITE_FILE))) return undefined;
      const db = SqliteDb.open(dataDir);
      try {
        const key = db.get("SELECT key FROM blobs WHERE key GLOB 'batch-results/*/rounds/1/jobs.json'")?.key;
        if (typeof key !== "string") return undefined;
        const jobs = await new SqliteBlobStore(db).get(key);
        return { batchId: key.split("/")[1] as string, jobs: JSON.parse(jobs) as string[] };
      } finally {
        db.close();
      }
    };
    let sent = await jobsOfRound1();
    while (!sent && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      sent = await jobsOfRound1();
    }
    doomed.child.kill("SIGKILL");
    expect((await doomed.done).signal).toBe("SIGKILL");
    expect(sent?.jobs.length).toBeGreaterThan(0);

    // Resumed by the same command without --pricing: the default would run every item on demand.
    const resumed = await redraft(["batch", manifest, "--json", "--llm", llm, "--data-dir", dataDir]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/had been interrupted; it was resumed/);
    // The parked items were the batch's to go on with, not runs interrupted by the kill.
    expect(resumed.stderr).not.toMatch(/finished as failed \(interrupted\)/);
    const printed = lines(resumed.stdout);
    const summary = printed.at(-1) as {
      status: string;
      pricing: string;
      costUsd: number;
      priceClasses: { on_demand: { costUsd: number } };
    };
    expect(summary).toMatchObject({ status: "completed", pricing: "batch" });
    expect(summary.priceClasses.on_demand.costUsd).toBe(0);
    const shown = await redraft(["show", sent?.batchId ?? "", "--json", "--data-dir", dataDir]);
    const record = JSON.parse(shown.stdout) as { rounds: { round: number; jobs: string[] }[] };
    expect(record.rounds[0]?.jobs).toEqual(sent?.jobs);

    // The same manifest uninterrupted, on demand: the same item by item, at twice the cost.
    const onDemand = await redraft([
      "batch",
      manifest,
      "--json",
      "--llm",
      llm,
      "--data-dir",
      join(work, "od"),
    ]);
    expect(onDemand.code, onDemand.stderr).toBe(0);
    const outcome = (l: Record<string, unknown>) => [l.line, l.status, l.reason, l.attempts, l.logicAttempts];
    const expected = lines(onDemand.stdout);
    expect(printed.slice(0, -1).map(outcome)).toEqual(expected.slice(0, -1).map(outcome));
    expect(summary.costUsd).toBeCloseTo((expected.at(-1)?.costUsd as number) / 2, 6);
  }, 240_000);
});

describe("two processes on one batch", () => {
  it("runs it once: the second delivery finds it running in the other process and runs nothing", async () => {
    const dataDir = join(work, "batch-twice");
    const batchArgs = ["batch", draftsFile, "--json", "--llm", "none", "--data-dir", dataDir];
    const first = start(batchArgs);
    const deadline = Date.now() + 120_000;
    const started = async () => itemExecutions(dataDir) > 0;
    while (!(await started()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const second = await redraft(batchArgs);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/is running in another process/);
    expect(lines(second.stdout).at(-1)).toMatchObject({ duplicate: true, status: "running" });
    const done = await first.done;
    expect(done.code, done.stderr).toBe(0);
    expect(lines(done.stdout).at(-1)).toMatchObject({ status: "completed", items: DRAFTS });
    const runs = await listRuns(dataDir);
    expect(runs).toHaveLength(DRAFTS);
  }, 240_000);
});
