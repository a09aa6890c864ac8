import { describe, expect, it } from "vitest";
import type { HistoryEvent } from "../../local/asl-interpreter.js";
import { buildTimeline } from "../../ui/timeline.js";

const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
const ev = (ms: number, type: string, state?: string, extra: Partial<HistoryEvent> = {}): HistoryEvent => ({
  type,
  at: at(ms),
  ...(state && { state, stateType: "Task" }),
  ...extra,
});

describe("buildTimeline", () => {
  it("gives each event its time since the start, and the execution its start, end and duration", () => {
    const t = buildTimeline([
      ev(0, "ExecutionStarted"),
      ev(5, "StateEntered", "A"),
      ev(45, "StateExited", "A"),
      ev(50, "ExecutionSucceeded"),
    ]);
    expect(t.events.map((e) => e.elapsedMs)).toEqual([0, 5, 45, 50]);
    expect(t).toMatchObject({ startedAt: at(0), endedAt: at(50), durationMs: 50 });
    expect(t.entries).toEqual([
      expect.objectContaining({ state: "A", entry: 1, durationMs: 40, outcome: "succeeded" }),
    ]);
    expect(t.entries[0]?.tries).toEqual([
      { attempt: 1, startedAt: at(5), durationMs: 40, outcome: "succeeded", error: null },
    ]);
  });

  it("counts entries of one state apart and splits an entry into its tries at each retry", () => {
    const t = buildTimeline([
      ev(0, "ExecutionStarted"),
      ev(0, "StateEntered", "Call"),
      ev(10, "StateFailed", "Call", { error: "ModelThrottled", cause: "429" }),
      ev(10, "StateRetried", "Call", { retry: { attempt: 1 } }),
      ev(30, "StateExited", "Call"),
      ev(30, "StateEntered", "Call"),
      ev(31, "StateExited", "Call"),
      ev(31, "ExecutionSucceeded"),
    ]);
    expect(t.entries.map((e) => [e.state, e.entry, e.durationMs])).toEqual([
      ["Call", 1, 30],
      ["Call", 2, 1],
    ]);
    expect(t.entries[0]?.tries.map((x) => [x.attempt, x.durationMs, x.outcome, x.error])).toEqual([
      [1, 10, "retried", "ModelThrottled: 429"],
      [2, 20, "succeeded", null],
    ]);
    expect(t.failedStates).toEqual([]);
  });

  it("tells a state whose error a Catch took from one that ended the execution", () => {
    const t = buildTimeline([
      ev(0, "ExecutionStarted"),
      ev(1, "StateEntered", "Correct"),
      ev(2, "StateFailed", "Correct", { error: "States.Timeout" }),
      ev(2, "StateCaught", "Correct"),
      ev(3, "StateEntered", "Publish"),
      ev(9, "StateFailed", "Publish", { error: "S3Error", cause: "denied" }),
      ev(9, "ExecutionFailed", undefined, { error: "S3Error", cause: "denied" }),
    ]);
    expect(t.caughtStates).toEqual(["Correct"]);
    expect(t.failedStates).toEqual(["Publish"]);
    expect(t.entries.map((e) => [e.state, e.outcome, e.tries.at(-1)?.error])).toEqual([
      ["Correct", "caught", "States.Timeout"],
      ["Publish", "failed", "S3Error: denied"],
    ]);
    expect(t.durationMs).toBe(9);
  });

  it("leaves a running execution's end, duration and last entry open", () => {
    const t = buildTimeline([ev(0, "ExecutionStarted"), ev(4, "StateEntered", "Slow")]);
    expect(t).toMatchObject({ endedAt: null, durationMs: null });
    expect(t.entries[0]).toMatchObject({ outcome: "running", durationMs: null });
    expect(t.entries[0]?.tries[0]).toMatchObject({ outcome: "running", durationMs: null });
  });

  it("reads an empty history, and a long one in one pass", () => {
    expect(buildTimeline([])).toMatchObject({ startedAt: null, durationMs: null, events: [], entries: [] });
    const many = [ev(0, "ExecutionStarted")];
    for (let i = 0; i < 20_000; i++)
      many.push(ev(i, "StateEntered", `S${i % 7}`), ev(i, "StateExited", `S${i % 7}`));
    const t = buildTimeline(many);
    expect(t.entries).toHaveLength(20_000);
    // The last entry is S0 (19,999 = 7 × 2,857), entered at i = 0, 7, …, 19,999.
    expect(t.entries.at(-1)).toMatchObject({ state: "S0", entry: 2858 });
  });
});
