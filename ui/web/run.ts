// One run's page: its head (status, reason, cost, repairs), the review box, the flowchart, the
// execution (summary, durations, events), the attempts and the final draft. Polled; each part is
// redrawn only when the run's version changes.
import type { RunDetail, Waiting } from "../api-types.js";
import { renderAttempts } from "./attempts.js";
import { repairsTable } from "./diff.js";
import { cost, fill, getJson, h, json, queueDepthText, statusBadge, time } from "./dom.js";
import { type GraphChoices, renderGraph, renderStates } from "./graph.js";
import { renderExecution } from "./history.js";
import { renderReview } from "./review.js";
import { renderSource } from "./source.js";
import type { View } from "./view.js";

const FINAL = new Set(["validated", "needs_manual_review", "rejected", "failed"]);

export function runView(main: HTMLElement, runId: string): View {
  const head = h("section", { "aria-label": "Run" });
  const reviewBox = h("section", { "aria-label": "Review" });
  const sourceBox = h("section", { "aria-labelledby": "source-title", hidden: true });
  const graphBox = h("section", { "aria-labelledby": "graph-title" });
  const historyBox = h("section", { "aria-labelledby": "history-title", className: "execution" });
  const attemptsBox = h("section", { "aria-labelledby": "attempts-title" });
  const finalBox = h("section", { "aria-labelledby": "final-title" });
  main.append(head, reviewBox, sourceBox, graphBox, historyBox, attemptsBox, finalBox);
  let version = "";
  let reviewStatus = "";
  // What the person chose in the flowchart stays chosen across refreshes.
  const graphState: GraphChoices = { selected: "", view: "", catches: false, drawn: "" };
  let stopped = false;

  async function refresh(): Promise<void> {
    const detail = await getJson<RunDetail>(`/api/runs/${runId}`);
    // A waiting run's record does not change while it waits: its wait's age is part of the version.
    const next = `${detail.version}|${detail.waiting?.ageSeconds ?? ""}`;
    if (stopped || next === version) return;
    version = next;
    renderHead(head, detail);
    if (detail.run.status !== reviewStatus) {
      reviewStatus = detail.run.status;
      renderReview(reviewBox, detail, () => {
        version = "";
        return refresh();
      });
    }
    const drawn = detail.graph.mermaid + (detail.graph.views.path ?? "");
    if (graphState.drawn !== drawn || !graphBox.hasChildNodes()) {
      graphState.drawn = drawn;
      await renderGraph(graphBox, detail, graphState);
    } else {
      renderStates(graphBox, detail, graphState);
    }
    renderSource(sourceBox, detail);
    renderExecution(historyBox, detail);
    renderAttempts(attemptsBox, detail);
    renderFinal(finalBox, detail);
  }
  return {
    refresh,
    stop: () => {
      stopped = true;
    },
  };
}

/**
 * A run under way that waits for a model slot says so under its title, with how long it has
 * waited (and its place in the queue when the runtime knows it, or for a stack's run how deep its
 * queue is), as `redraft show` does.
 */
function waitingLine(waiting: Waiting | undefined): HTMLElement | null {
  if (!waiting) return null;
  const place = waiting.position === undefined ? "" : `, number ${waiting.position} in the queue`;
  const queue = queueDepthText(waiting);
  return h(
    "p",
    { className: "waiting", role: "status", "data-field": "waiting" },
    h("span", { className: "waiting-badge" }, "waiting"),
    ` Waiting for a model slot since ${time(waiting.since)} (${waiting.ageSeconds} s${place})`,
    queue ? `; ${queue}` : "",
  );
}

function renderHead(el: HTMLElement, d: RunDetail): void {
  const r = d.run;
  const t = r.tokens;
  fill(
    el,
    h(
      "p",
      {},
      h("a", { href: "#/" }, "← All runs"),
      d.batchId ? [" · ", h("a", { href: `#/batch/${d.batchId}` }, `Batch ${d.batchId}`)] : null,
    ),
    h("h1", {}, `Draft ${r.draftId} `, statusBadge(r.status, d.repairs.length)),
    waitingLine(d.waiting),
    h(
      "div",
      { className: "kv" },
      h("span", { className: "muted" }, "Run"),
      h("span", {}, r.runId),
      h("span", { className: "muted" }, "Kind"),
      h("span", {}, r.kind),
      h("span", { className: "muted" }, "Reason"),
      h("span", {}, r.reason ?? "—", r.message ? ` — ${r.message}` : ""),
      h("span", { className: "muted" }, "Errors per attempt"),
      h("span", {}, r.violationsPerAttempt.join(" → ") || "—"),
      h("span", { className: "muted" }, "Tokens"),
      h(
        "span",
        {},
        `${t.total} (in ${t.input}, out ${t.output}, cache read ${t.cacheRead}, cache write ${t.cacheWrite})`,
      ),
      h("span", { className: "muted" }, "Cost"),
      h("span", {}, cost(r.cost)),
      r.parentRunId
        ? [
            h("span", { className: "muted" }, "Edited from"),
            h("a", { href: `#/run/${r.parentRunId}` }, r.parentRunId),
          ]
        : null,
      r.review
        ? [
            h("span", { className: "muted" }, "Review"),
            h(
              "span",
              { "data-review": r.review.decision },
              `${r.review.decision} by ${r.review.reviewer ?? "?"} at ${time(r.review.at)}${r.review.note ? ` — ${r.review.note}` : ""}`,
              r.review.newRunId ? [" → ", h("a", { href: `#/run/${r.review.newRunId}` }, "new run")] : null,
            ),
          ]
        : null,
    ),
    d.repairs.length
      ? [
          h("h2", { id: "repairs-title" }, `Repairs (${d.repairs.length}, no model)`),
          h(
            "p",
            { className: "muted" },
            "Deterministic fixes behind the final draft, made before or between the model's corrections.",
          ),
          repairsTable(d.repairs),
        ]
      : null,
    h("h2", {}, "Tokens and cost by purpose"),
    h(
      "div",
      { className: "table-wrap" },
      h(
        "table",
        { className: "purposes" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Purpose", "Calls", "Tokens", "Cost"].map((c, i) =>
              h("th", { scope: "col", className: i ? "num" : "" }, c),
            ),
          ),
        ),
        h(
          "tbody",
          {},
          Object.entries(d.purposes).map(([name, p]) =>
            h(
              "tr",
              {},
              h("td", {}, name),
              h("td", { className: "num" }, String(p.calls)),
              h("td", { className: "num" }, String(p.tokens)),
              h("td", { className: "num" }, p.calls ? cost(p.cost) : "—"),
            ),
          ),
        ),
      ),
    ),
  );
}

function renderFinal(el: HTMLElement, d: RunDetail): void {
  fill(
    el,
    h("h2", { id: "final-title" }, "Final (best) draft"),
    d.finalDraft
      ? [
          h(
            "p",
            {},
            h(
              "a",
              {
                className: "button",
                href: `/api/runs/${d.run.runId}/final.json`,
                download: `${d.run.draftId}.final.json`,
              },
              "Download final draft",
            ),
          ),
          h("pre", { className: "final" }, json(d.finalDraft)),
        ]
      : h("p", { className: "muted" }, FINAL.has(d.run.status) ? "This run has no final draft." : "Not yet."),
  );
}
