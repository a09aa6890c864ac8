import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { COUNTS_FILE, countsFile } from "../../scripts/plan/counts-file.js";
import { CountsFileSchema, OUTCOME_PATHS } from "../../shared/plan/counts.js";

// The plan reads shared/plan/data/counts.json instead of executing the machine at every call: this
// executes the committed state machine over the corpus again and requires the same counts, so the
// plan cannot drift from the machine (nor from infra/config.ts). `npm run plan:counts` rewrites it.
describe("the committed counts", () => {
  it("are what executing the committed state machine over the corpus measures now", async () => {
    const committed = CountsFileSchema.parse(JSON.parse(await readFile(COUNTS_FILE, "utf8")));
    const fresh = await countsFile();
    expect(fresh.environments).toEqual(committed.environments);
    expect(fresh.corpus).toEqual(committed.corpus);
    expect(fresh.paths).toEqual(committed.paths);
  }, 120_000);

  it("cover every outcome path, each ending as its name says", async () => {
    const committed = CountsFileSchema.parse(JSON.parse(await readFile(COUNTS_FILE, "utf8")));
    expect(committed.paths.map((p) => p.path)).toEqual([...OUTCOME_PATHS]);
    const ended = (path: string) => committed.corpus.filter((d) => d.path === path);
    for (const d of ended("validated_at_once")) expect(d.statesEntered.CorrectExecution).toBeUndefined();
    for (const d of ended("corrected_twice")) expect(d.statesEntered.CorrectExecution).toBe(2);
    for (const d of ended("judge_loop")) expect(d.statesEntered.Judge).toBeGreaterThan(1);
    for (const d of ended("needs_review")) expect(d.terminal).toBe("DraftNeedsReview");
    for (const d of ended("rejected")) expect(d.terminal).toBe("InputRejected");
    // Every path that reaches an outcome announces it once; a rejection is counted by Validate.
    for (const d of committed.corpus) expect(d.events.putEvents).toBe(d.path === "rejected" ? 0 : 1);
  });
});
