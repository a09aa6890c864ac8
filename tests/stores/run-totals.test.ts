import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteDb, SqliteRunStore } from "../../local/sqlite-store.js";
import { matchesFilter, type RunFilter, TotalsFold } from "../../shared/store/totals.js";
import type { RunRecord, RunStatus, StopReason } from "../../shared/store/types.js";
import { at, makeRun } from "./fixtures.js";

/**
 * Issue 37: the viewer's cards are totals over every run, counted by the store. SQLite counts them
 * in one query; the fold adds them up a run at a time (stores that cannot count). Both must agree,
 * on any mix of runs and filters, and the filtered pages must walk every matching run once.
 */

const dbs: SqliteDb[] = [];
const folders: string[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) db.close();
  await Promise.all(folders.splice(0).map((f) => rm(f, { recursive: true, force: true })));
});

async function store(): Promise<SqliteRunStore> {
  const folder = await mkdtemp(join(tmpdir(), "redraft-totals-"));
  folders.push(folder);
  const db = SqliteDb.open(folder);
  dbs.push(db);
  return new SqliteRunStore(db);
}

const STATUSES: RunStatus[] = [
  "draft",
  "correcting",
  "validated",
  "needs_manual_review",
  "rejected",
  "failed",
];
const REASONS: (StopReason | undefined)[] = [
  undefined,
  "approved",
  "rejected_by_reviewer",
  "superseded_by_edit",
  "invalid_input",
  "max_attempts",
];

const runArb = fc.record({
  status: fc.constantFrom(...STATUSES),
  reason: fc.constantFrom(...REASONS),
  kind: fc.constantFrom("mcq", "json", "code"),
  draft: fc.constantFrom("alpha", "Beta-2", "gamma", "ALPHA-x"),
  tokens: fc.constantFrom(0, 10, 1234),
  cost: fc.constantFrom(0, 0.002, 1.5),
});

type Generated = typeof runArb extends fc.Arbitrary<infer T> ? T : never;

function record(i: number, r: Generated): RunRecord {
  const run = makeRun(`run-${String(i).padStart(4, "0")}`, {
    status: r.status,
    kind: r.kind,
    draftId: r.draft,
    tokens: { input: r.tokens, output: 0, cacheRead: 0, cacheWrite: 0, total: r.tokens },
    costUsd: r.cost,
    createdAt: at(i % 7),
    updatedAt: at((i * 3) % 5),
  });
  if (r.reason) run.reason = r.reason;
  return run;
}

const filterArb: fc.Arbitrary<RunFilter> = fc.record(
  {
    status: fc.constantFrom(...STATUSES),
    reason: fc.constantFrom(...REASONS.filter((r): r is StopReason => r !== undefined)),
    kind: fc.constantFrom("mcq", "json"),
    q: fc.constantFrom("alpha", "ET", " a "),
  },
  { requiredKeys: [] },
);

describe("run totals", () => {
  it("SQLite's counts equal the fold's, and its pages walk every matching run once, newest first", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(runArb, { maxLength: 40 }), filterArb, async (runs, filter) => {
        const runStore = await store();
        const records = runs.map((r, i) => record(i, r));
        for (const r of records) expect(await runStore.createRun(r)).toBe(true);
        const fold = new TotalsFold(filter);
        for (const r of records) fold.add(r);
        const counted = runStore.totals(filter);
        expect(counted.totals).toEqual({ ...fold.totals, cost: expect.any(Object) });
        expect(counted.totals.cost.priced).toBe(fold.totals.cost.priced);
        expect(counted.totals.cost.usd).toBeCloseTo(fold.totals.cost.usd, 9);
        expect(counted.facets).toEqual(fold.facets);
        // Paged three at a time, every matching run comes once, in the listing's order.
        const walked: RunRecord[] = [];
        for (;;) {
          const last = walked.at(-1);
          const page = runStore.filteredPage(
            filter,
            3,
            last && { at: filter.status ? last.updatedAt : last.createdAt, runId: last.runId },
          );
          walked.push(...page);
          if (page.length < 3) break;
        }
        expect(walked.map((r) => r.runId).sort()).toEqual(
          records
            .filter((r) => matchesFilter(r, filter))
            .map((r) => r.runId)
            .sort(),
        );
        expect(walked).toHaveLength(counted.totals.runs);
        const time = (r: RunRecord) => `${filter.status ? r.updatedAt : r.createdAt}|${r.runId}`;
        expect(walked.map(time)).toEqual(walked.map(time).sort().reverse());
        for (const db of dbs.splice(0)) db.close();
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it("counts the loop's outcomes apart from people's decisions", async () => {
    const runStore = await store();
    const make = (i: number, status: RunStatus, reason?: StopReason) => {
      const run = makeRun(`r-${i}`, { status, draftId: `d-${i}` });
      if (reason) run.reason = reason;
      return run;
    };
    for (const run of [
      make(1, "validated"),
      make(2, "validated", "approved"),
      make(3, "rejected", "rejected_by_reviewer"),
      make(4, "needs_manual_review", "max_attempts"),
      make(5, "rejected", "invalid_input"),
      make(6, "correcting"),
    ])
      await runStore.createRun(run);
    const { totals } = runStore.totals({});
    expect(totals).toMatchObject({
      runs: 6,
      drafts: 6,
      finished: 5,
      validated: 2,
      needsReview: 1,
      outcomes: { finished: 5, validated: 1, sentToReview: 3, rejected: 1, failed: 0 },
      decisions: { approved: 1, rejected: 1, edited: 0, awaiting: 1 },
    });
  });
});
