// The runs list: totals (the loop's outcomes apart from people's decisions), the rules failing
// most often, filters kept in the address, and the table of runs.
import type { RunFacets, RunRow, RunsFirstPage, RunsPage, RunTotals } from "../api-types.js";
import { type Child, cost, fill, getJson, h, queueDepthText, setLive, statusBadge, time } from "./dom.js";
import type { View } from "./view.js";

type FilterName = "status" | "reason" | "kind" | "q";

export function runsView(main: HTMLElement, params: URLSearchParams): View {
  const filters: Record<FilterName, string> = {
    status: params.get("status") ?? "",
    reason: params.get("reason") ?? "",
    kind: params.get("kind") ?? "",
    q: params.get("q") ?? "",
  };
  const summary = h("section", { className: "summary", "aria-label": "Totals" });
  const form = h("form", {
    className: "filters",
    role: "search",
    onsubmit: (e: Event) => e.preventDefault(),
  });
  const table = h("div", { className: "table-wrap" });
  main.append(h("h1", {}, "Runs"), summary, form, table);
  let facetsKey = "";
  // The selects are rebuilt when the facets change; the search box is built once, so that what
  // is being typed into it is never replaced under the typing.
  const selects = h("div", { className: "facets" });
  form.append(
    selects,
    h(
      "label",
      {},
      "Draft id contains",
      h("input", { type: "search", name: "q", value: filters.q, oninput: apply, autocomplete: "off" }),
    ),
  );

  function buildForm(facets: RunFacets): void {
    const key = JSON.stringify(facets);
    if (key === facetsKey) return;
    facetsKey = key;
    const select = (name: FilterName, label: string, options: readonly string[]) =>
      h(
        "label",
        {},
        label,
        h(
          "select",
          { name, onchange: apply },
          h("option", { value: "" }, "any"),
          options.map((o) => h("option", { value: o, selected: filters[name] === o }, o)),
        ),
      );
    const statuses = ["draft", "correcting", "validated", "needs_manual_review", "rejected", "failed"];
    fill(
      selects,
      select("status", "Status", statuses),
      select("reason", "Reason", facets.reasons),
      select("kind", "Kind", facets.kinds),
    );
  }

  /** One filter changed: the element that changed says which and to what (the form may be rebuilding). */
  function apply(event: Event): void {
    const { name, value } = event.currentTarget as HTMLInputElement | HTMLSelectElement;
    if (name in filters) filters[name as FilterName] = value;
    // Other filters, another list: it starts again at its first page.
    pages = 1;
    const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== "")).toString();
    history.replaceState(null, "", `#/${query ? `?${query}` : ""}`);
    refresh().catch(() => setLive(false));
  }

  // A poll sent before the filters changed can answer after the one sent on the change: only the
  // newest request's answer is drawn, so the table never goes back to the old filters.
  let sent = 0;
  // The list is read a page at a time: the pages shown so far are read again at each poll, one
  // request each, and "Show more" adds one. The first page's answer carries the store's totals.
  let pages = 1;
  async function refresh(): Promise<void> {
    const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ""));
    const mine = ++sent;
    const first = await getJson<RunsPage>(`/api/runs?${query}`);
    if (mine !== sent) return;
    const runs = [...first.runs];
    let next = first.next;
    for (let page = 1; page < pages && next; page++) {
      query.set("after", next);
      const more = await getJson<RunsPage>(`/api/runs?${query}`).catch(
        (): Pick<RunsPage, "runs" | "next"> => ({ runs: [], next: null }),
      );
      if (mine !== sent) return;
      runs.push(...more.runs.filter((r) => !runs.some((s) => s.runId === r.runId)));
      next = more.next;
    }
    // Only a first page (no `after`) carries the totals and facets.
    if (first.totals === undefined) return;
    buildForm(first.facets);
    renderSummary(summary, first, filters.status);
    renderTable(table, runs, first.totals.runs, next, first.totalsCut, () => {
      pages += 1;
      refresh().catch(() => setLive(false));
    });
  }
  return { refresh, stop: () => {} };
}

export function card(label: string, value: string, extra?: Child): HTMLDivElement {
  return h(
    "div",
    { className: "card" },
    h("div", { className: "label" }, label),
    h("div", { className: "value" }, value),
    extra,
  );
}

/**
 * The loop's outcome apart from people's decisions: an approval is not the loop validating a draft.
 * A list filtered on one status has no rate to show (the review queue would read "0 %").
 */
function outcomeCards(t: RunTotals, status: string): Child[] {
  const o = t.outcomes;
  const d = t.decisions;
  const rate = o.finished ? `${Math.round((o.validated / o.finished) * 100)}%` : "—";
  const decided = d.approved + d.rejected + d.edited;
  return [
    status
      ? null
      : card(
          "Validated by the loop",
          rate,
          h("div", { className: "muted" }, `${o.validated} of ${o.finished} finished`),
        ),
    card(
      "Loop outcomes",
      String(o.finished),
      h(
        "div",
        { className: "muted outcomes" },
        `${o.validated} validated · ${o.sentToReview} sent to review · ${o.rejected} rejected · ${o.failed} failed`,
      ),
    ),
    card(
      "Human decisions",
      String(decided),
      h(
        "div",
        { className: "muted decisions" },
        `${d.approved} approved · ${d.rejected} rejected · ${d.edited} edited · ${d.awaiting} awaiting`,
      ),
    ),
  ];
}

function renderSummary(el: HTMLElement, data: RunsFirstPage, status: string): void {
  const t = data.totals;
  const cards = h(
    "div",
    { className: "cards" },
    card(
      "Drafts",
      t.drafts.toLocaleString(),
      h("div", { className: "muted" }, `${t.runs.toLocaleString()} run${t.runs === 1 ? "" : "s"}`),
    ),
    outcomeCards(t, status),
    card(
      "Needs review",
      t.needsReview.toLocaleString(),
      h("a", { href: "#/?status=needs_manual_review" }, "open queue"),
    ),
    card("Tokens", t.tokens.toLocaleString()),
    card(
      "Cost",
      cost(t.cost),
      t.unpricedRuns
        ? h(
            "div",
            { className: "muted" },
            `${t.unpricedRuns} run${t.unpricedRuns === 1 ? "" : "s"} on an unpriced model`,
          )
        : null,
    ),
  );
  fill(
    el,
    data.totalsCut
      ? h(
          "p",
          { className: "message error", role: "note" },
          "These totals count only the newest runs the store lists at once: there are more.",
        )
      : null,
    cards,
    h(
      "div",
      {},
      h("h2", { id: "rules-title" }, "Rules failing most often"),
      data.topRulesOver < t.runs
        ? h("p", { className: "muted" }, `In the newest ${data.topRulesOver.toLocaleString()} runs.`)
        : null,
      bars(data.topRules),
    ),
  );
}

/** A horizontal bar chart of rule failures, in plain SVG. */
function bars(rules: RunsFirstPage["topRules"]): Element {
  if (rules.length === 0) return h("p", { className: "muted" }, "No rule has failed.");
  const ns = "http://www.w3.org/2000/svg";
  const row = 22;
  const max = Math.max(...rules.map((r) => r.runs));
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "bars");
  svg.setAttribute("viewBox", `0 0 400 ${rules.length * row}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-labelledby", "rules-title");
  rules.forEach((r, i) => {
    const y = i * row;
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", "0");
    label.setAttribute("y", String(y + 15));
    label.textContent = r.ruleId.length > 28 ? `${r.ruleId.slice(0, 27)}…` : r.ruleId;
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", "190");
    rect.setAttribute("y", String(y + 4));
    rect.setAttribute("height", "14");
    rect.setAttribute("width", String(Math.max(2, (r.runs / max) * 170)));
    const title = document.createElementNS(ns, "title");
    title.textContent = `${r.ruleId}: failed in ${r.runs} run(s)`;
    rect.append(title);
    const count = document.createElementNS(ns, "text");
    count.setAttribute("x", String(196 + (r.runs / max) * 170));
    count.setAttribute("y", String(y + 15));
    count.textContent = String(r.runs);
    svg.append(label, rect, count);
  });
  return svg;
}

/**
 * The runs shown, and, when they are not all the runs the filters match, how many there are and a
 * button for the next page: a cut list says so.
 */
function renderTable(
  el: HTMLElement,
  runs: readonly RunRow[],
  total: number,
  next: string | null,
  totalsCut: boolean,
  showMore: () => void,
): void {
  if (runs.length === 0) {
    fill(el, h("p", { className: "muted" }, "No runs match."));
    return;
  }
  const of = total.toLocaleString();
  const caption =
    runs.length < total || next
      ? `${runs.length.toLocaleString()} of ${totalsCut ? "at least " : ""}${of} runs, newest first`
      : `${of} runs, newest first`;
  const more = next
    ? h(
        "div",
        { className: "actions more" },
        h(
          "button",
          { type: "button", onclick: showMore },
          `Show ${Math.min(100, total - runs.length) || 100} more`,
        ),
      )
    : null;
  const head = [
    "Draft",
    "Kind",
    "Status",
    "Reason",
    "Attempts",
    "Errors per attempt",
    "Tokens",
    "Cost",
    "Created",
  ];
  fill(
    el,
    h(
      "table",
      { className: "runs" },
      h("caption", { className: "muted", "data-shown": String(runs.length) }, caption),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          head.map((c, i) => h("th", { scope: "col", className: i >= 4 && i <= 7 ? "num" : "" }, c)),
        ),
      ),
      h(
        "tbody",
        {},
        runs.map((r) =>
          h(
            "tr",
            { "data-run": r.runId },
            // Column classes let a narrow window put status and reason first (app.css).
            h(
              "td",
              { className: "c-draft" },
              h("a", { href: `#/run/${r.runId}` }, r.draftId),
              h(
                "div",
                { className: "muted hide-narrow" },
                r.shortId,
                r.batchId
                  ? [" · ", h("a", { href: `#/batch/${r.batchId}`, className: "batch-link" }, "batch")]
                  : null,
              ),
            ),
            h("td", { className: "c-kind" }, r.kind),
            h(
              "td",
              { className: "c-status" },
              statusBadge(r.status, r.repairs),
              // A run under way that waits for a model slot (its page says since when).
              r.waiting
                ? [
                    " ",
                    h(
                      "span",
                      {
                        className: "waiting-badge",
                        title: [
                          `waiting for a model slot since ${time(r.waiting.since)}`,
                          queueDepthText(r.waiting),
                        ]
                          .filter(Boolean)
                          .join("; "),
                      },
                      "waiting",
                    ),
                  ]
                : null,
            ),
            h("td", { className: "c-reason" }, r.reason ?? ""),
            h("td", { className: "num c-attempts", "data-label": "attempts" }, String(r.attempts)),
            h(
              "td",
              { className: "num c-errors", "data-label": "errors" },
              r.violationsPerAttempt.join(" → "),
            ),
            h("td", { className: "num c-tokens", "data-label": "tokens" }, r.tokens.toLocaleString()),
            h("td", { className: "num c-cost" }, cost(r.cost)),
            h("td", { className: "c-created" }, time(r.createdAt)),
          ),
        ),
      ),
    ),
    more,
  );
}
