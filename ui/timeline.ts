import type { HistoryEvent } from "../local/execution-types.js";

/** One row of the event history table, as the console's: type, step, timestamp, elapsed since start. */
interface TimelineEvent {
  id: number;
  type: string;
  state: string | null;
  at: string;
  elapsedMs: number;
  detail: string | null;
}

/** One try of a state: a Retry policy makes several tries of one entry. */
interface StateTry {
  attempt: number;
  startedAt: string;
  durationMs: number | null;
  /** "retried": this try failed and the Retry policy tried again. */
  outcome: "succeeded" | "failed" | "caught" | "retried" | "running";
  error: string | null;
}

/** One entry into a state, from StateEntered to the state's last event. */
interface StateEntry {
  state: string;
  stateType: string | null;
  /** 1 for the first time the execution entered this state, 2 for the second… */
  entry: number;
  enteredAt: string;
  durationMs: number | null;
  outcome: "succeeded" | "failed" | "caught" | "running";
  tries: StateTry[];
}

export interface Timeline {
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  events: TimelineEvent[];
  entries: StateEntry[];
  /** States whose last entry ended in an error nothing caught, and states whose error a Catch took. */
  failedStates: string[];
  caughtStates: string[];
}

const ms = (iso: string) => Date.parse(iso);
const ENDS = new Set(["ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimeout"]);

function describe(e: HistoryEvent): string | null {
  if (e.error) return `${e.error}${e.cause ? `: ${e.cause}` : ""}`;
  if (e.retry) return `retry ${e.retry.attempt}`;
  return null;
}

/**
 * The execution's history as the console shows it: each event with its time since the start, each
 * state entry with its duration and tries, and the execution's own start, end and duration. The
 * history is the engine's own record (local/asl-interpreter.ts), so nothing here is estimated.
 */
export function buildTimeline(history: readonly HistoryEvent[]): Timeline {
  const first = history[0];
  const start = first ? ms(first.at) : Number.NaN;
  const end = history.find((e) => ENDS.has(e.type));
  const events: TimelineEvent[] = history.map((e, id) => ({
    id,
    type: e.type,
    state: e.state ?? null,
    at: e.at,
    elapsedMs: Math.max(0, ms(e.at) - start),
    detail: describe(e),
  }));
  const entries: StateEntry[] = [];
  const seen = new Map<string, number>();
  let open: { entry: StateEntry; tryStart: string; failure: string | null } | undefined;
  const closeTry = (at: string, outcome: StateTry["outcome"], error: string | null) => {
    if (!open) return;
    open.entry.tries.push({
      attempt: open.entry.tries.length + 1,
      startedAt: open.tryStart,
      durationMs: ms(at) - ms(open.tryStart),
      outcome,
      error,
    });
  };
  for (const e of history) {
    if (e.type === "StateEntered" && e.state) {
      const n = (seen.get(e.state) ?? 0) + 1;
      seen.set(e.state, n);
      const entry: StateEntry = {
        state: e.state,
        stateType: e.stateType ?? null,
        entry: n,
        enteredAt: e.at,
        durationMs: null,
        outcome: "running",
        tries: [],
      };
      entries.push(entry);
      open = { entry, tryStart: e.at, failure: null };
      continue;
    }
    if (!open || (e.state && e.state !== open.entry.state)) continue;
    if (e.type === "StateFailed") open.failure = describe(e);
    else if (e.type === "StateRetried") {
      closeTry(e.at, "retried", open.failure ?? describe(e));
      open.tryStart = e.at;
      open.failure = null;
    } else if (e.type === "StateCaught" || e.type === "StateExited" || ENDS.has(e.type)) {
      const outcome: StateEntry["outcome"] =
        e.type === "StateCaught"
          ? "caught"
          : e.type === "StateExited"
            ? "succeeded"
            : e.type === "ExecutionSucceeded"
              ? "succeeded"
              : "failed";
      const error = outcome === "succeeded" ? null : (open.failure ?? describe(e));
      closeTry(e.at, outcome, error);
      open.entry.outcome = outcome;
      open.entry.durationMs = ms(e.at) - ms(open.entry.enteredAt);
      open = undefined;
    }
  }
  if (open) {
    const { entry, tryStart } = open;
    entry.tries.push({
      attempt: entry.tries.length + 1,
      startedAt: tryStart,
      durationMs: null,
      outcome: "running",
      error: null,
    });
  }
  const last = new Map(entries.map((e) => [e.state, e]));
  const ofOutcome = (o: StateEntry["outcome"]) =>
    [...new Set(entries.filter((e) => e.outcome === o).map((e) => e.state))].filter(
      (s) => o === "caught" || last.get(s)?.outcome === "failed",
    );
  return {
    startedAt: first?.at ?? null,
    endedAt: end?.at ?? null,
    durationMs: first && end ? ms(end.at) - start : null,
    events,
    entries,
    failedStates: ofOutcome("failed"),
    caughtStates: ofOutcome("caught"),
  };
}
