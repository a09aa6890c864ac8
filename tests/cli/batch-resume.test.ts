import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SQLITE_FILE, SqliteDb } from "../../local/sqlite-store.js";
import { jsonLines, ROOT, redraft, spawnCli } from "../helpers/run-cli.js";

/**
 * A batch whose process is killed with SIGKILL, then submitted again: the items cut short run again
 * under a rerun id (their interrupted runs stay as history), the finished ones do not, and the
 * summary says so.
 */

let work: string;
const ITEMS = 40;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-batch-resume-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts `redraft batch` in its own process and kills it with SIGKILL as soon as one of its child
 * runs is under way (its owner file is there and its run is not final, read while the process is
 * stopped). Returns whether it was killed before it ended.
 */
async function killDuringBatch(manifest: string, dataDir: string): Promise<boolean> {
  const { child } = spawnCli([
    "--data-dir",
    dataDir,
    "batch",
    manifest,
    "--llm",
    "none",
    "--json",
    "--concurrency",
    "2",
  ]);
  const exited = once(child, "exit");
  let exitedAlready = false;
  void exited.then(() => {
    exitedAlready = true;
  });
  const deadline = Date.now() + 120_000;
  while (!exitedAlready && Date.now() < deadline) {
    // A child in flight, after a few have ended: the kill lands in the middle of the batch. The
    // process is stopped (SIGSTOP) while its owners are read, so that a child seen in flight still
    // is when the kill lands, however loaded the machine; otherwise it goes on (SIGCONT).
    if (endedExecutions(dataDir) >= 3) {
      child.kill("SIGSTOP");
      const owners = await readdir(join(dataDir, "owners")).catch(() => [] as string[]);
      if (owners.some((name) => unfinishedChild(dataDir, name))) {
        child.kill("SIGKILL");
        break;
      }
      child.kill("SIGCONT");
    }
    await sleep(5);
  }
  await exited;
  opened.get(dataDir)?.close();
  opened.delete(dataDir);
  return child.signalCode === "SIGKILL";
}

/**
 * Whether an owner file names a child run not yet final: its owner is written before the run is
 * registered and removed a little after its final status, so the file alone does not say.
 */
function unfinishedChild(dataDir: string, ownerFile: string): boolean {
  const runId = /^(b-.*)\.json$/.exec(ownerFile)?.[1];
  if (runId === undefined) return false;
  endedExecutions(dataDir);
  const status = opened.get(dataDir)?.get("SELECT status FROM runs WHERE run_id = ?", runId)?.status;
  return status === undefined || status === "draft" || status === "correcting";
}

/** How many executions have ended and been kept in the folder's store (read beside the writer: WAL). */
const opened = new Map<string, SqliteDb>();
function endedExecutions(dataDir: string): number {
  if (!existsSync(join(dataDir, SQLITE_FILE))) return 0;
  let db = opened.get(dataDir);
  if (!db) {
    db = SqliteDb.open(dataDir);
    opened.set(dataDir, db);
  }
  return Number(db.get("SELECT count(*) AS n FROM executions")?.n ?? 0);
}

describe("redraft batch after kill -9", () => {
  it("runs the interrupted items again, keeps their interrupted runs, and counts what happened", async () => {
    const clean = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8")) as {
      content: { vignette: string };
    };
    const lines = Array.from({ length: ITEMS }, (_, i) =>
      JSON.stringify({
        ...clean,
        id: `q${i}`,
        content: { ...clean.content, vignette: `${clean.content.vignette} ${i}.` },
      }),
    );
    const manifest = join(work, "m.jsonl");
    await writeFile(manifest, `${lines.join("\n")}\n`);

    // The kill must land while a child runs; on a fast machine a try may miss, and is made again.
    let dataDir = "";
    let interrupted: Record<string, unknown>[] = [];
    for (let attempt = 0; attempt < 5 && interrupted.length === 0; attempt++) {
      dataDir = join(work, `data-${attempt}`);
      if (!(await killDuringBatch(manifest, dataDir))) continue;
      // Opening the folder finishes the runs whose process is gone as failed / interrupted.
      const failed = await redraft([
        "--data-dir",
        dataDir,
        "runs",
        "--status",
        "failed",
        "--json",
        "--limit",
        "1000",
      ]);
      interrupted = jsonLines(failed.stdout).filter((r) => r.reason === "interrupted");
    }
    expect(interrupted.length, "a kill landed while a child ran").toBeGreaterThan(0);

    const again = await redraft(["--data-dir", dataDir, "batch", manifest, "--llm", "none", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/resumed: .* item\(s\) cut short were run again/);
    const out = jsonLines(again.stdout);
    const summary = out.at(-1) as Record<string, unknown>;
    expect(summary).toMatchObject({ status: "completed", items: ITEMS, resumed: true });
    expect(summary.rerun).toBe(interrupted.length);
    expect(summary.counts).toEqual({ validated: ITEMS });
    const items = out.slice(0, -1);
    expect(items).toHaveLength(ITEMS);
    expect(items.every((item) => item.status === "validated")).toBe(true);
    const reruns = items.filter((item) => String(item.runId).includes(".rerun-"));
    expect(reruns.map((item) => String(item.runId).replace(/\.rerun-\d+$/, "")).sort()).toEqual(
      interrupted.map((r) => r.runId).sort(),
    );
    // The interrupted runs stay as history.
    const failedAfter = await redraft([
      "--data-dir",
      dataDir,
      "runs",
      "--status",
      "failed",
      "--json",
      "--limit",
      "1000",
    ]);
    expect(
      jsonLines(failedAfter.stdout)
        .map((r) => r.runId)
        .sort(),
    ).toEqual(interrupted.map((r) => r.runId).sort());
    // A third submission is a duplicate: nothing runs again.
    const third = await redraft(["--data-dir", dataDir, "batch", manifest, "--llm", "none", "--json"]);
    expect(third.code).toBe(0);
    expect(jsonLines(third.stdout).at(-1)).toMatchObject({ duplicate: true, counts: { validated: ITEMS } });
  }, 600_000);
});
