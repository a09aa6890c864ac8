import { describe, expect, it } from "vitest";
import {
  OverrideRequiredError,
  type ReviewRuntime,
  reviewDecision,
  UNDO_MS,
  undoReview,
} from "../../app/review.js";
import { PackRegistry } from "../../shared/registry.js";
import { blobKeys } from "../../shared/store/bucket-layout.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";
import { newRunRecord, type RunRecord } from "../../shared/store/types.js";

/**
 * Issue 37: a decision a person can take back, and an approval that says when it overrides errors.
 * On the memory store (the contract every store keeps: tests/stores), the events kept.
 */

const submit = async () => {
  throw new Error("no edit here");
};

async function runtimeWith(errors: string[]) {
  const runs = new MemoryRunStore();
  const blobs = new MemoryBlobStore();
  const events: { type: string; detail: Record<string, unknown> }[] = [];
  const run: RunRecord = {
    ...newRunRecord("run-1", "draft-1", "mcq", "2026-01-01T00:00:00.000Z"),
    status: "needs_manual_review",
    reason: "max_attempts",
  };
  await runs.createRun(run);
  await blobs.put(
    blobKeys.attemptReport(run.runId, 0),
    JSON.stringify({
      violations: [
        ...errors.map((ruleId) => ({
          ruleId,
          severity: "error",
          message: "still wrong",
          source: "deterministic",
        })),
        { ruleId: "style.minor", severity: "warning", message: "a warning", source: "deterministic" },
      ],
      repairs: [],
      score: 0,
    }),
  );
  const runtime: ReviewRuntime = {
    runs,
    blobs,
    deps: { registry: new PackRegistry() },
    publish: async (type, detail) => {
      events.push({ type, detail });
    },
  };
  return { runtime, runs, events };
}

describe("approving a draft with error violations", () => {
  it("is refused unless said explicitly, and the run is left as it was", async () => {
    const { runtime, runs, events } = await runtimeWith(["mcq.answer", "mcq.options"]);
    const refused = reviewDecision(runtime, "run-1", "approve", { reviewer: "ann", submit });
    await expect(refused).rejects.toBeInstanceOf(OverrideRequiredError);
    await expect(refused).rejects.toThrow(/mcq\.answer, mcq\.options.*--override/);
    expect(await runs.getRun("run-1")).toMatchObject({
      status: "needs_manual_review",
      reason: "max_attempts",
    });
    expect((await runs.getRun("run-1"))?.review).toBeUndefined();
    expect(events).toEqual([]);
  });

  it("with the override, is approved and the record keeps the rules it overrode", async () => {
    const { runtime, runs } = await runtimeWith(["mcq.answer"]);
    const outcome = await reviewDecision(runtime, "run-1", "approve", {
      reviewer: "ann",
      submit,
      override: true,
    });
    expect(outcome.message).toContain("overridden (mcq.answer)");
    expect(await runs.getRun("run-1")).toMatchObject({
      status: "validated",
      reason: "approved",
      review: { decision: "approve", reviewer: "ann", overriddenRules: ["mcq.answer"] },
    });
  });

  it("needs no override when only warnings remain, and records none", async () => {
    const { runtime, runs } = await runtimeWith([]);
    await reviewDecision(runtime, "run-1", "approve", { reviewer: "ann", submit });
    const run = await runs.getRun("run-1");
    expect(run?.status).toBe("validated");
    expect(run?.review?.overriddenRules).toBeUndefined();
  });

  it("a rejection needs no override", async () => {
    const { runtime, runs } = await runtimeWith(["mcq.answer"]);
    await reviewDecision(runtime, "run-1", "reject", { reviewer: "ann", submit });
    expect((await runs.getRun("run-1"))?.status).toBe("rejected");
  });
});

describe("taking a decision back", () => {
  it("puts the run back where the decision found it, by its reviewer, within the stated time", async () => {
    const { runtime, runs, events } = await runtimeWith([]);
    await reviewDecision(runtime, "run-1", "approve", { reviewer: "ann", submit });
    const decidedAt = Date.parse(String((await runs.getRun("run-1"))?.review?.at));
    const outcome = await undoReview(runtime, "run-1", {
      reviewer: "ann",
      now: () => new Date(decidedAt + UNDO_MS - 1000),
    });
    expect(outcome.message).toContain("approval is taken back");
    const run = await runs.getRun("run-1");
    expect(run).toMatchObject({ status: "needs_manual_review", reason: "max_attempts" });
    expect(run?.review).toBeUndefined();
    expect(run?.transitions.map((t) => t.status)).toEqual(["draft", "validated", "needs_manual_review"]);
    expect(events.at(-1)).toMatchObject({
      type: "Draft Reviewed",
      detail: { runId: "run-1", decision: "undo", undid: "approve", status: "needs_manual_review" },
    });
    // Waiting again: another reviewer may now decide, and nothing is left to take back.
    await expect(undoReview(runtime, "run-1", { reviewer: "ann" })).rejects.toThrow(
      /no decision to take back/,
    );
    await reviewDecision(runtime, "run-1", "reject", { reviewer: "bob", submit });
    expect(await runs.getRun("run-1")).toMatchObject({ status: "rejected", reason: "rejected_by_reviewer" });
  });

  it("is refused to another reviewer, after the stated time, and for an edit", async () => {
    const { runtime, runs } = await runtimeWith([]);
    await reviewDecision(runtime, "run-1", "reject", { reviewer: "ann", submit });
    const decidedAt = Date.parse(String((await runs.getRun("run-1"))?.review?.at));
    await expect(undoReview(runtime, "run-1", { reviewer: "bob" })).rejects.toThrow(/only they can/);
    await expect(
      undoReview(runtime, "run-1", { reviewer: "ann", now: () => new Date(decidedAt + UNDO_MS + 1000) }),
    ).rejects.toThrow(/can no longer be taken back: a decision can be taken back for 5 minutes/);
    expect((await runs.getRun("run-1"))?.status).toBe("rejected");
    const edited = await runs.getRun("run-1");
    await runs.setReview("run-1", { ...(edited?.review ?? { at: "" }), decision: "edit", newRunId: "run-2" });
    await runs.setStatus("run-1", "rejected", "2026-01-01T00:00:01.000Z", { reason: "superseded_by_edit" });
    await expect(undoReview(runtime, "run-1", { reviewer: "ann" })).rejects.toThrow(/cannot be taken back/);
  });
});
