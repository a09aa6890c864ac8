import { beforeEach, describe, expect, it } from "vitest";
import { RunNotFoundError } from "../../shared/errors.js";
import type { RunStore } from "../../shared/store/types.js";
import { at, makeAttempt, makeRun } from "./fixtures.js";

const WINDOW_MS = 15 * 60_000;
const HASH = "a".repeat(64);

/**
 * The RunStore contract, run against every implementation: each case is a write that can happen
 * twice, or an ordering a caller relies on. `fresh` returns an empty store for every test.
 */
export function describeRunStoreContract(label: string, fresh: () => Promise<RunStore>): void {
  describe(`${label}: RunStore contract`, () => {
    let store: RunStore;
    beforeEach(async () => {
      store = await fresh();
    });

    describe("createRun / getRun", () => {
      it("stores a run and reads back exactly what was written", async () => {
        const run = makeRun("r1", {
          parentRunId: "r0",
          overrides: ["skipJudge"],
          model: "claude-sonnet-4-5",
        });
        await expect(store.createRun(run)).resolves.toBe(true);
        await expect(store.getRun("r1")).resolves.toEqual(run);
      });

      it("returns undefined for a run that does not exist", async () => {
        await expect(store.getRun("nope")).resolves.toBeUndefined();
      });

      it("refuses a second registration of the same run id and keeps the first", async () => {
        await store.createRun(makeRun("r1", { kind: "mcq" }));
        await expect(store.createRun(makeRun("r1", { kind: "json" }))).resolves.toBe(false);
        await expect(store.getRun("r1")).resolves.toMatchObject({ kind: "mcq" });
      });
    });

    describe("claimContent", () => {
      it("gives a new claim to the caller", async () => {
        await expect(store.claimContent(HASH, "r1", at(0), WINDOW_MS)).resolves.toBe("r1");
      });

      it("answers a duplicate delivery within the window with the holder", async () => {
        await store.claimContent(HASH, "r1", at(0), WINDOW_MS);
        await expect(store.claimContent(HASH, "r2", at(5), WINDOW_MS)).resolves.toBe("r1");
        await expect(store.claimContent(HASH, "r2", at(15), WINDOW_MS)).resolves.toBe("r1");
      });

      it("lets the holder claim again (a retried task)", async () => {
        await store.claimContent(HASH, "r1", at(0), WINDOW_MS);
        await expect(store.claimContent(HASH, "r1", at(3), WINDOW_MS)).resolves.toBe("r1");
      });

      it("hands a stale claim to the next run, which then holds it", async () => {
        await store.claimContent(HASH, "r1", at(0), WINDOW_MS);
        await expect(store.claimContent(HASH, "r2", at(16), WINDOW_MS)).resolves.toBe("r2");
        await expect(store.claimContent(HASH, "r1", at(17), WINDOW_MS)).resolves.toBe("r2");
      });

      it("keeps claims on different content apart", async () => {
        await store.claimContent(HASH, "r1", at(0), WINDOW_MS);
        await expect(store.claimContent("b".repeat(64), "r2", at(1), WINDOW_MS)).resolves.toBe("r2");
      });

      it("hands a live claim to a run that replaces its holder, and to no other", async () => {
        await store.claimContent(HASH, "r1", at(0), WINDOW_MS);
        await expect(store.claimContent(HASH, "r3", at(1), WINDOW_MS, "r2")).resolves.toBe("r1");
        await expect(store.claimContent(HASH, "r2", at(2), WINDOW_MS, "r1")).resolves.toBe("r2");
        await expect(store.claimContent(HASH, "r1", at(3), WINDOW_MS)).resolves.toBe("r2");
      });

      it("counts the window from the latest claim, not the first", async () => {
        await store.claimContent(HASH, "r1", at(0), WINDOW_MS);
        await store.claimContent(HASH, "r2", at(16), WINDOW_MS);
        await expect(store.claimContent(HASH, "r3", at(30), WINDOW_MS)).resolves.toBe("r2");
        await expect(store.claimContent(HASH, "r3", at(32), WINDOW_MS)).resolves.toBe("r3");
      });

      it("refuses a time that is not a timestamp, which would make a claim that never expires", async () => {
        await expect(store.claimContent(HASH, "r1", "yesterday", WINDOW_MS)).rejects.toBeInstanceOf(
          RangeError,
        );
        await expect(store.claimContent(HASH, "r2", at(0), WINDOW_MS)).resolves.toBe("r2");
      });
    });

    describe("setStatus", () => {
      it("moves the run, stamps updatedAt, appends the transition and writes the outcome", async () => {
        await store.createRun(makeRun("r1"));
        await store.setStatus("r1", "correcting", at(1));
        await store.setStatus("r1", "needs_manual_review", at(2), {
          reason: "circuit_breaker",
          message: "mcq.single-correct failed in every attempt",
          finalRef: "runs/r1/attempts/2/draft.json",
          resultRef: "results/draft-1/r1.json",
          circuitBreakerRules: ["mcq.single-correct"],
          persistentRules: ["mcq.single-correct"],
          resolvedRules: [],
          violationsPerAttempt: [2, 1, 1],
          attempts: 2,
          logicAttempts: 0,
        });
        const run = await store.getRun("r1");
        expect(run).toMatchObject({
          status: "needs_manual_review",
          updatedAt: at(2),
          createdAt: at(0),
          reason: "circuit_breaker",
          finalRef: "runs/r1/attempts/2/draft.json",
          resultRef: "results/draft-1/r1.json",
          circuitBreakerRules: ["mcq.single-correct"],
          violationsPerAttempt: [2, 1, 1],
          attempts: 2,
        });
        expect(run?.transitions).toEqual([
          { status: "draft", at: at(0) },
          { status: "correcting", at: at(1) },
          { status: "needs_manual_review", at: at(2) },
        ]);
      });

      it("is idempotent: a repeated move appends no transition and changes nothing", async () => {
        await store.createRun(makeRun("r1"));
        await store.setStatus("r1", "validated", at(1), { resultRef: "results/draft-1/r1.json" });
        await store.setStatus("r1", "validated", at(2), { resultRef: "elsewhere.json", reason: "stuck" });
        const run = await store.getRun("r1");
        expect(run?.transitions).toEqual([
          { status: "draft", at: at(0) },
          { status: "validated", at: at(1) },
        ]);
        expect(run).toMatchObject({ updatedAt: at(1), resultRef: "results/draft-1/r1.json" });
        expect(run?.reason).toBeUndefined();
      });

      it("throws RunNotFoundError for a missing run", async () => {
        await expect(store.setStatus("ghost", "failed", at(1))).rejects.toBeInstanceOf(RunNotFoundError);
      });
    });

    describe("updateRun", () => {
      it("records progress without touching status, updatedAt or transitions", async () => {
        const run = makeRun("r1", { status: "correcting" });
        await store.createRun(run);
        await store.updateRun("r1", {
          violationsPerAttempt: [3, 1],
          attempts: 1,
          finalRef: "runs/r1/attempts/1/draft.json",
          persistentRules: ["a"],
        });
        await expect(store.getRun("r1")).resolves.toEqual({
          ...run,
          violationsPerAttempt: [3, 1],
          attempts: 1,
          finalRef: "runs/r1/attempts/1/draft.json",
          persistentRules: ["a"],
        });
      });

      it("throws RunNotFoundError for a missing run", async () => {
        await expect(store.updateRun("ghost", { attempts: 1 })).rejects.toBeInstanceOf(RunNotFoundError);
      });
    });

    describe("putAttempt / listAttempts", () => {
      it("lists a run's attempts in attempt order, whatever order they were written in", async () => {
        const attempts = [3, 1, 2].map((n) =>
          makeAttempt("r1", n, { phase: n === 3 ? "logic" : "execution" }),
        );
        for (const attempt of attempts) await expect(store.putAttempt(attempt)).resolves.toBe(true);
        const listed = await store.listAttempts("r1");
        expect(listed.map((a) => a.attempt)).toEqual([1, 2, 3]);
        expect(listed[0]).toEqual(attempts[1]);
      });

      it("writes an attempt once: a retried task neither overwrites nor duplicates it", async () => {
        await store.putAttempt(makeAttempt("r1", 1, { analysis: "first" }));
        await expect(store.putAttempt(makeAttempt("r1", 1, { analysis: "retry" }))).resolves.toBe(false);
        const listed = await store.listAttempts("r1");
        expect(listed).toHaveLength(1);
        expect(listed[0]?.analysis).toBe("first");
      });

      it("keeps the attempts of runs whose ids share a prefix apart", async () => {
        await store.putAttempt(makeAttempt("r1", 1));
        await store.putAttempt(makeAttempt("r10", 1));
        await store.putAttempt(makeAttempt("r10", 2));
        await expect(store.listAttempts("r1")).resolves.toHaveLength(1);
        await expect(store.listAttempts("r10")).resolves.toHaveLength(2);
        await expect(store.listAttempts("r2")).resolves.toEqual([]);
      });

      it("returns every attempt even when they fill more than one 1 MB query page", async () => {
        const big = "x".repeat(150_000);
        for (let n = 1; n <= 9; n++) await store.putAttempt(makeAttempt("r1", n, { analysis: big }));
        const listed = await store.listAttempts("r1");
        expect(listed.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      });
    });

    describe("addUsage", () => {
      const usage = { input: 1000, output: 200, cacheRead: 800, cacheWrite: 100, total: 2100 };

      it("adds each attempt's tokens and cost to the run's totals", async () => {
        await store.createRun(makeRun("r1"));
        await expect(store.addUsage("r1", 1, usage, 0.0123)).resolves.toBe(true);
        await expect(store.addUsage("r1", 2, usage, 0.0000003)).resolves.toBe(true);
        const run = await store.getRun("r1");
        expect(run?.tokens).toEqual({
          input: 2000,
          output: 400,
          cacheRead: 1600,
          cacheWrite: 200,
          total: 4200,
        });
        expect(run?.costUsd).toBeCloseTo(0.0123003, 10);
      });

      it("counts an attempt once when the task is retried", async () => {
        await store.createRun(makeRun("r1"));
        await store.addUsage("r1", 1, usage, 0.01);
        await expect(store.addUsage("r1", 1, usage, 0.01)).resolves.toBe(false);
        const run = await store.getRun("r1");
        expect(run?.tokens.total).toBe(2100);
        expect(run?.costUsd).toBeCloseTo(0.01, 10);
      });

      it("throws RunNotFoundError for a missing run", async () => {
        await expect(store.addUsage("ghost", 1, usage, 0.01)).rejects.toBeInstanceOf(RunNotFoundError);
      });
    });

    describe("listRuns", () => {
      /** Created at minutes 0..4 but registered out of order; d1 has r0, r2, r4; d2 has r1, r3. */
      async function seed(): Promise<void> {
        for (const i of [3, 0, 4, 1, 2]) {
          await store.createRun(makeRun(`r${i}`, { draftId: i % 2 === 0 ? "d1" : "d2", createdAt: at(i) }));
        }
        // Moved in creation order, so "newest" means the same by creation and by status change.
        for (const i of [0, 1, 2, 3, 4]) {
          await store.setStatus(`r${i}`, i === 4 ? "validated" : "needs_manual_review", at(10 + i), {
            reason: "max_attempts",
          });
        }
      }

      it("lists every run newest first, up to the limit", async () => {
        await seed();
        const all = await store.listRuns();
        expect(all.map((r) => r.runId)).toEqual(["r4", "r3", "r2", "r1", "r0"]);
        await expect(store.listRuns({ limit: 2 }).then((rs) => rs.map((r) => r.runId))).resolves.toEqual([
          "r4",
          "r3",
        ]);
      });

      it("lists the review queue: one status, newest first", async () => {
        await seed();
        const queue = await store.listRuns({ status: "needs_manual_review" });
        expect(queue.map((r) => r.runId)).toEqual(["r3", "r2", "r1", "r0"]);
        expect(queue.every((r) => r.status === "needs_manual_review")).toBe(true);
        await expect(
          store.listRuns({ status: "validated" }).then((rs) => rs.map((r) => r.runId)),
        ).resolves.toEqual(["r4"]);
        await expect(store.listRuns({ status: "failed" })).resolves.toEqual([]);
      });

      it("lists the runs of one draft, newest first", async () => {
        await seed();
        const runs = await store.listRuns({ draftId: "d1" });
        expect(runs.map((r) => r.runId)).toEqual(["r4", "r2", "r0"]);
        await expect(store.listRuns({ draftId: "d3" })).resolves.toEqual([]);
      });

      it("filters one draft's runs by status and applies the limit after the filter", async () => {
        await seed();
        // d1's newest run (r4) is validated: a limit applied before the filter would return nothing.
        const runs = await store.listRuns({ draftId: "d1", status: "needs_manual_review", limit: 1 });
        expect(runs.map((r) => r.runId)).toEqual(["r2"]);
      });

      it("returns whole records", async () => {
        await seed();
        const [newest] = await store.listRuns({ limit: 1 });
        expect(newest).toEqual(await store.getRun("r4"));
      });
    });

    describe("setReview", () => {
      it("stores the reviewer's decision on the run", async () => {
        await store.createRun(makeRun("r1", { status: "needs_manual_review" }));
        const review = {
          decision: "edit" as const,
          reviewer: "ana",
          note: "fixed stem",
          at: at(30),
          newRunId: "r2",
        };
        await store.setReview("r1", review);
        await expect(store.getRun("r1")).resolves.toMatchObject({ review, status: "needs_manual_review" });
      });

      it("throws RunNotFoundError for a missing run", async () => {
        await expect(store.setReview("ghost", { decision: "approve", at: at(1) })).rejects.toBeInstanceOf(
          RunNotFoundError,
        );
      });
    });

    describe("claimReview", () => {
      const REVIEWABLE = ["needs_manual_review", "failed"] as const;
      const ada = { decision: "edit" as const, reviewer: "ada", at: at(40) };
      const bob = { decision: "approve" as const, reviewer: "bob", at: at(41) };

      it("gives a run to exactly one of two reviewers deciding at once", async () => {
        await store.createRun(makeRun("r1", { status: "needs_manual_review" }));
        const won = await Promise.all([
          store.claimReview("r1", REVIEWABLE, ada, at(0)),
          store.claimReview("r1", REVIEWABLE, bob, at(0)),
        ]);
        expect(won.filter(Boolean)).toHaveLength(1);
        const winner = won[0] ? ada : bob;
        await expect(store.getRun("r1")).resolves.toMatchObject({
          review: winner,
          status: "needs_manual_review",
        });
      });

      it("refuses a run that is not in one of the statuses given", async () => {
        await store.createRun(makeRun("r1", { status: "validated" }));
        await expect(store.claimReview("r1", REVIEWABLE, ada, at(0))).resolves.toBe(false);
        expect((await store.getRun("r1"))?.review).toBeUndefined();
      });

      it("takes over a claim made before staleBefore, and a released one", async () => {
        await store.createRun(makeRun("r1", { status: "failed" }));
        await expect(store.claimReview("r1", REVIEWABLE, ada, at(0))).resolves.toBe(true);
        await expect(store.claimReview("r1", REVIEWABLE, bob, at(40))).resolves.toBe(false);
        await expect(store.claimReview("r1", REVIEWABLE, bob, at(41))).resolves.toBe(true);
        // Ada's release no longer matches the claim Bob holds: it stays.
        await store.releaseReview("r1", ada);
        await expect(store.getRun("r1")).resolves.toMatchObject({ review: bob });
        await store.releaseReview("r1", bob);
        expect((await store.getRun("r1"))?.review).toBeUndefined();
        await expect(store.claimReview("r1", REVIEWABLE, ada, at(0))).resolves.toBe(true);
      });

      it("throws RunNotFoundError for a missing run", async () => {
        await expect(store.claimReview("ghost", REVIEWABLE, ada, at(0))).rejects.toBeInstanceOf(
          RunNotFoundError,
        );
      });
    });
  });
}
