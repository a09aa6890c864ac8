// The run page's execution parts, as the Step Functions console shows them: the summary (start, end,
// duration), each state entry with its duration and tries, and the event history table, filterable.
// Everything enters the page as text.
import type { RunDetail, Timeline } from "../api-types.js";
import { type Child, fill, formatDuration, headRow, h as historyEl, listen } from "./dom.js";

type StateEntry = Timeline["entries"][number];
type TimelineEvent = Timeline["events"][number];

const clockTime = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : "—");

/**
 * A run of a deployed stack: its execution ARN and a link to it in the Step Functions console
 * (`consoleUrl`, built by the server from the ARN); a local run has neither.
 */
function consoleRow(d: RunDetail): Child[] | null {
  if (!d.executionArn) return null;
  return [
    historyEl("span", { className: "muted" }, "Execution"),
    historyEl(
      "span",
      { "data-field": "execution-arn" },
      d.consoleUrl
        ? historyEl(
            "a",
            { className: "console-link", href: d.consoleUrl, target: "_blank", rel: "noopener noreferrer" },
            "Open in the Step Functions console",
          )
        : null,
      historyEl("code", { className: "muted arn" }, ` ${d.executionArn}`),
    ),
  ];
}

/** Start, end and duration of the execution, with its status and end state. */
function executionSummary(d: RunDetail, execution: NonNullable<RunDetail["execution"]>, t: Timeline) {
  const pairs: [string, string][] = [
    ["Status", execution.status],
    ["Ended in", execution.terminalState || "—"],
    ["Started", clockTime(t.startedAt)],
    ["Ended", t.endedAt ? clockTime(t.endedAt) : "still running"],
    ["Duration", formatDuration(t.durationMs)],
    ["Events", String(t.events.length)],
  ];
  if (execution.error) pairs.push(["Error", `${execution.error.error}: ${execution.error.cause}`]);
  return historyEl(
    "div",
    { className: "kv execution-summary" },
    pairs.map(([k, v]) => [
      historyEl("span", { className: "muted" }, k),
      historyEl("span", { "data-field": k.toLowerCase().replace(" ", "-") }, v),
    ]),
    consoleRow(d),
  );
}

function triesText(entry: StateEntry): string {
  if (entry.tries.length <= 1) return "1";
  return entry.tries
    .map((t) => `#${t.attempt} ${formatDuration(t.durationMs)} ${t.outcome}${t.error ? ` (${t.error})` : ""}`)
    .join("; ");
}

/** One row per state entry: when, how long, how it ended, and each try under a Retry policy. */
function durationsTable(entries: readonly StateEntry[]): HTMLElement {
  return historyEl(
    "div",
    { className: "table-wrap" },
    historyEl(
      "table",
      { className: "durations" },
      historyEl("caption", { className: "muted" }, `${entries.length} state entries, in order`),
      headRow(["State", "Entry", "Entered", "Duration", "Outcome", "Tries"], [1, 3]),
      historyEl(
        "tbody",
        {},
        entries.map((e) =>
          historyEl(
            "tr",
            { "data-state": e.state, "data-outcome": e.outcome },
            historyEl(
              "td",
              {},
              e.state,
              e.stateType ? historyEl("span", { className: "muted" }, ` ${e.stateType}`) : null,
            ),
            historyEl("td", { className: "num" }, String(e.entry)),
            historyEl("td", {}, clockTime(e.enteredAt)),
            historyEl("td", { className: "num" }, formatDuration(e.durationMs)),
            historyEl("td", { className: `outcome ${e.outcome}` }, e.outcome),
            historyEl("td", {}, triesText(e)),
          ),
        ),
      ),
    ),
  );
}

const historyFilters = new WeakMap<HTMLElement, string>();

/** The event history table; the filter keeps its text across the page's refreshes. */
function eventsTable(el: HTMLElement, events: readonly TimelineEvent[]): HTMLElement[] {
  const filter = historyFilters.get(el) ?? "";
  const body = historyEl("tbody", {});
  const count = historyEl("span", { className: "muted", role: "status" });
  const apply = (text: string) => {
    historyFilters.set(el, text);
    const needle = text.trim().toLowerCase();
    let shown = 0;
    for (const row of body.rows) {
      const match = !needle || (row.textContent ?? "").toLowerCase().includes(needle);
      row.hidden = !match;
      if (match) shown += 1;
    }
    count.textContent = `${shown} of ${events.length} events`;
  };
  for (const e of events) {
    body.append(
      historyEl(
        "tr",
        { "data-type": e.type },
        historyEl("td", { className: "num" }, String(e.id + 1)),
        historyEl("td", {}, e.type),
        historyEl("td", {}, e.state ?? ""),
        historyEl("td", {}, clockTime(e.at)),
        historyEl("td", { className: "num" }, formatDuration(e.elapsedMs)),
        historyEl("td", {}, e.detail ?? ""),
      ),
    );
  }
  const input = historyEl("input", {
    type: "search",
    name: "event-filter",
    value: filter,
    autocomplete: "off",
    oninput: listen<HTMLInputElement>((ev) => apply(ev.currentTarget.value)),
  });
  const table = historyEl(
    "div",
    { className: "table-wrap" },
    historyEl(
      "table",
      { className: "events" },
      headRow(["#", "Type", "Step", "Timestamp", "Elapsed", "Detail"], [0, 4]),
      body,
    ),
  );
  apply(filter);
  return [historyEl("label", { className: "event-filter" }, "Filter events ", input, " ", count), table];
}

/** Fills the run page's execution section; called by run.js on each new version of the run. */
export function renderExecution(el: HTMLElement, d: RunDetail): void {
  const focused = (document.activeElement as HTMLInputElement | null)?.name === "event-filter";
  const t = d.execution?.timeline;
  if (!d.execution || !t) {
    fill(
      el,
      historyEl("h2", { id: "history-title" }, "Execution"),
      historyEl(
        "p",
        { className: "muted" },
        d.executionArn
          ? "The execution's history is not available (still running, or no longer kept by Step Functions)."
          : "The execution is still running; its history appears when it ends.",
      ),
      d.executionArn ? historyEl("div", { className: "kv execution-summary" }, consoleRow(d)) : null,
    );
    return;
  }
  fill(
    el,
    historyEl("h2", { id: "history-title" }, "Execution"),
    executionSummary(d, d.execution, t),
    historyEl("h3", {}, "Duration per state entry"),
    durationsTable(t.entries),
    historyEl("h3", {}, "Event history"),
    ...eventsTable(el, t.events),
  );
  if (focused) el.querySelector<HTMLInputElement>('input[name="event-filter"]')?.focus();
}
