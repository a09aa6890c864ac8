import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunRecord } from "../../shared/store/types.js";
import { redraft as inProcess, jsonLines, ROOT, spawnCli } from "../helpers/run-cli.js";
import { synthesizedAsl } from "../workflow/harness.js";

/** How many runs two reviewers race on: each try is one run decided by two processes at once. */
const TRIES = 6;
let work: string;
let dataDir: string;
let queued: string[];

/** The real command line in its own process: the race is between processes sharing one data folder. */
const spawned = (args: string[]) => spawnCli([...args, "--llm", "none", "--data-dir", dataDir]).done;

const redraft = (...args: string[]) => inProcess([...args, "--llm", "none", "--data-dir", dataDir]);

async function allRuns(): Promise<RunRecord[]> {
  const out = await redraft("runs", "--json", "--limit", "1000");
  expect(out.code, out.stderr).toBe(0);
  return jsonLines(out.stdout) as unknown as RunRecord[];
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-review-race-"));
  dataDir = join(work, "data");
  await synthesizedAsl();
  const stuck = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "json-stuck.json"), "utf8"));
  // One draft per try, each its own id (so each edit is of its own draft), all left for review.
  const drafts = Array.from({ length: TRIES }, (_, i) => ({ ...stuck, id: `race-${i}` }));
  const file = join(work, "queue.jsonl");
  await writeFile(file, `${drafts.map((d) => JSON.stringify(d)).join("\n")}\n`);
  const out = await redraft("run", file, "--json");
  expect(out.code, out.stderr).toBe(0);
  const results = jsonLines(out.stdout);
  expect(results.map((r) => r.status)).toEqual(drafts.map(() => "needs_manual_review"));
  // Results come as runs end, not in file order: try i races on draft race-i's run.
  queued = drafts.map((d) => String(results.find((r) => r.draftId === d.id)?.runId));
  for (let i = 0; i < TRIES; i++) {
    const edited = { ...drafts[i], content: { ...drafts[i].content, title: `edited ${i}` } };
    await writeFile(join(work, `edit-${i}.json`), JSON.stringify(edited));
  }
}, 240_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("two reviewers decide one run at the same moment", () => {
  it(
    `exactly one decision wins, ${TRIES} runs out of ${TRIES}, and the loser is told who won`,
    async () => {
      const outcomes: string[] = [];
      for (let i = 0; i < TRIES; i++) {
        const runId = queued[i] as string;
        const file = join(work, `edit-${i}.json`);
        // Two edits on even tries; an edit against an approve on odd ones (a decision that takes no model).
        const [a, b] = await Promise.all([
          spawned(["review", runId, "edit", file, "--reviewer", "ada"]),
          spawned(
            i % 2 === 0
              ? ["review", runId, "edit", file, "--reviewer", "bob"]
              : ["review", runId, "approve", "--override", "--reviewer", "bob"],
          ),
        ]);
        const won = [a, b].filter((r) => r.code === 0);
        const lost = [a, b].filter((r) => r.code !== 0);
        outcomes.push(`${won.length} won, ${lost.length} lost`);
        expect(won, `${a.stderr}\n${b.stderr}`).toHaveLength(1);
        expect(lost[0]?.code).toBe(2);
        expect(lost[0]?.stderr).toMatch(
          new RegExp(`run ${runId} was not (edited|approved): (ada|bob) decided (edit|approve) at `),
        );
      }
      expect(outcomes).toEqual(queued.map(() => "1 won, 1 lost"));
      const runs = await allRuns();
      for (const runId of queued) {
        const run = runs.find((r) => r.runId === runId);
        const children = runs.filter((r) => r.parentRunId === runId);
        // One decision recorded; an edit that won started one run, an approve none.
        expect(run?.review?.decision).toMatch(/^(edit|approve)$/);
        expect(children).toHaveLength(run?.review?.decision === "edit" ? 1 : 0);
        expect(run?.status).toBe(run?.review?.decision === "edit" ? "rejected" : "validated");
        if (run?.review?.decision === "edit") expect(run.review.newRunId).toBe(children[0]?.runId);
      }
      // One Draft Reviewed event per run: the losers put nothing on the bus.
      const events = (await readFile(join(dataDir, "events.jsonl"), "utf8"))
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { DetailType: string; Detail: { runId: string } });
      const reviewed = events.filter((e) => e.DetailType === "Draft Reviewed").map((e) => e.Detail.runId);
      expect(reviewed.sort()).toEqual([...queued].sort());
    },
    TRIES * 120_000,
  );
});
