import { describe, expect, it, vi } from "vitest";
import { OUTCOME_METRICS, REPAIRS_METRIC } from "../../contracts/metric-names.js";
import { metrics } from "../../functions/lib/observability.js";
import { createOutcomeHandler } from "../../functions/outcome.js";
import { MemoryRunStore } from "../../shared/store/memory.js";
import { makeRun } from "../stores/fixtures.js";

/**
 * The metrics `run` published, each as its name and dimensions. The test environment disables
 * Powertools' output (vitest.config.ts), so the single metrics are recorded where they are made.
 */
async function emf(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const published: Record<string, unknown>[] = [];
  const spy = vi.spyOn(metrics, "singleMetric").mockImplementation(() => {
    const dimensions: Record<string, string> = {};
    return {
      addDimensions: (d: Record<string, string>) => Object.assign(dimensions, d),
      addMetric: (name: string, _unit: unknown, value: number) =>
        published.push({ ...dimensions, [name]: value }),
    } as unknown as ReturnType<typeof metrics.singleMetric>;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return published;
}

const counted = (docs: Record<string, unknown>[], metric: string) =>
  docs
    .filter((d) => d[metric] === 1)
    .map((d) => ({ kind: d.kind, reason: d.reason }))
    .sort((a, b) => String(a.kind).localeCompare(String(b.kind)));

describe("λ outcome: outcomes as embedded metrics", () => {
  const runs = new MemoryRunStore();
  const held: string[] = [];
  const tagged: unknown[] = [];
  const announced: { detailType: string; detail: Record<string, unknown> }[] = [];
  const handler = createOutcomeHandler(() => ({
    announce: async (detailType: string, detail: Record<string, unknown>) => {
      announced.push({ detailType, detail });
    },
    runs: {
      getRun: (runId: string) => runs.getRun(runId),
      holdForReview: async (runId: string) => {
        held.push(runId);
      },
    },
    blobs: {
      retain: async (...args: unknown[]) => {
        tagged.push(args);
      },
    },
  }));

  it("holds a run needing review (items and objects) and counts it once in total and once by kind and reason", async () => {
    const docs = await emf(() =>
      handler({
        source: "redraft",
        "detail-type": "Draft Needs Review",
        detail: {
          runId: "r1",
          draftId: "d1",
          kind: "mcq",
          status: "needs_manual_review",
          reason: "stuck",
          resultRef: "results/d1/r1.json",
        },
      }),
    );
    expect(held).toEqual(["r1"]);
    expect(tagged).toEqual([["runs/r1/", ["results/d1/r1.json"], "review"]]);
    expect(counted(docs, OUTCOME_METRICS.needs_manual_review)).toEqual([
      { kind: "mcq", reason: "stuck" },
      { kind: undefined, reason: undefined },
    ]);
  });

  it("counts a Draft Validated with no reason as reason none", async () => {
    const docs = await emf(() =>
      handler({ source: "redraft", "detail-type": "Draft Validated", detail: { runId: "r1", kind: "json" } }),
    );
    expect(counted(docs, OUTCOME_METRICS.validated)).toContainEqual({ kind: "json", reason: "none" });
  });

  it("counts the repairs a Draft Validated announces, by kind, and none when there were none", async () => {
    const repaired = await emf(() =>
      handler({
        source: "redraft",
        "detail-type": "Draft Validated",
        detail: { runId: "r2", kind: "json", repairs: 3 },
      }),
    );
    expect(repaired.filter((d) => REPAIRS_METRIC in d)).toEqual([{ kind: "json", [REPAIRS_METRIC]: 3 }]);
    const clean = await emf(() =>
      handler({
        source: "redraft",
        "detail-type": "Draft Validated",
        detail: { runId: "r3", kind: "json", repairs: 0 },
      }),
    );
    expect(clean.filter((d) => REPAIRS_METRIC in d)).toEqual([]);
  });

  it("counts a failed execution with the kind and reason its run record holds", async () => {
    await runs.createRun(makeRun("r-failed", { kind: "code", status: "failed", reason: "model_error" }));
    const docs = await emf(() =>
      handler({ source: "aws.states", detail: { name: "r-failed", status: "FAILED" } }),
    );
    expect(counted(docs, OUTCOME_METRICS.failed)).toContainEqual({ kind: "code", reason: "model_error" });
  });

  it("counts a timed-out execution as failed / timed_out, even without a run record", async () => {
    const docs = await emf(() =>
      handler({ source: "aws.states", detail: { name: "r-unknown", status: "TIMED_OUT" } }),
    );
    expect(counted(docs, OUTCOME_METRICS.failed)).toContainEqual({ kind: "unknown", reason: "timed_out" });
  });

  it("counts a reviewer's decision, and announces an approval the run item holds as Draft Validated, counted once", async () => {
    await runs.createRun(
      makeRun("r-approved", { status: "validated", reason: "approved", resultRef: "results/d/r.json" }),
    );
    await runs.createRun(makeRun("r-forged", { status: "needs_manual_review", reason: "max_attempts" }));
    const reviewed = (runId: string, decision: string) => ({
      source: "redraft",
      "detail-type": "Draft Reviewed",
      detail: {
        runId,
        draftId: "draft-1",
        kind: "mcq",
        status: "validated",
        reason: "approved",
        decision,
        reviewer: "ada",
      },
    });
    const docs = await emf(async () => {
      await handler(reviewed("r-approved", "approve"));
      // A Draft Reviewed the table does not bear out announces nothing.
      await handler(reviewed("r-forged", "approve"));
      await handler(reviewed("r-forged", "reject"));
    });
    expect(docs.filter((d) => d.ReviewDecisions === 1).map((d) => [d.kind, d.decision])).toEqual([
      ["mcq", "approve"],
      ["mcq", "approve"],
      ["mcq", "reject"],
    ]);
    expect(announced).toEqual([
      {
        detailType: "Draft Validated",
        detail: {
          runId: "r-approved",
          draftId: "draft-1",
          kind: "mcq",
          status: "validated",
          reason: "approved",
          resultRef: "results/d/r.json",
        },
      },
    ]);
    // That Draft Validated comes back through the same rule: not a second outcome of the run.
    const again = await emf(() =>
      handler({ source: "redraft", "detail-type": "Draft Validated", detail: announced[0]?.detail }),
    );
    expect(again).toEqual([]);
  });

  it("refuses any other event", async () => {
    await expect(
      handler({ source: "aws.states", detail: { name: "r", status: "SUCCEEDED" } }),
    ).rejects.toThrow();
  });
});
