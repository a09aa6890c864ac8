// The redraft viewer: a page over the JSON APIs of ui/server.ts. Everything a draft or a model wrote
// enters the page as text (textContent), never as markup.
/* global mermaid, renderExecution */

const POLL_MS = 1000;
const FINAL = new Set(["validated", "needs_manual_review", "rejected", "failed"]);
const token = document.querySelector('meta[name="redraft-token"]')?.getAttribute("content") ?? "";
const main = document.getElementById("main");
const live = document.getElementById("live");

/** Builds an element: attributes (on* are listeners), then children (strings become text). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "className") el.className = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Number.POSITIVE_INFINITY)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replaces an element's children; arrays (from map) are spread, empty values skipped. */
function fill(el, ...children) {
  el.replaceChildren(
    ...children.flat(Number.POSITIVE_INFINITY).filter((c) => c !== undefined && c !== null && c !== false),
  );
}

const usd = (n) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;
/** A cost with no price behind it says so rather than showing $0.00. */
function cost(c) {
  if (c.priced) return usd(c.usd);
  return c.usd > 0 ? `${usd(c.usd)} + unpriced` : "unpriced";
}
const json = (value) => (value === undefined ? "(none)" : JSON.stringify(value, null, 2));
const time = (iso) => (iso ? new Date(iso).toLocaleString() : "");
const statusBadge = (status) => h("span", { className: `status ${status}` }, status.replaceAll("_", " "));

async function getJson(url) {
  const res = await fetch(url, { headers: { accept: "application/json" } });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ?? `${res.status}`);
  return body;
}

function setLive(ok) {
  live.textContent = ok
    ? `Live · updated ${new Date().toLocaleTimeString()}`
    : "Server unreachable — retrying";
}

/* ---------- routing and polling ---------- */

let view = { refresh: async () => {}, stop: () => {} };
let timer;

function parseRoute() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = hash.split("?");
  const run = /^\/run\/([A-Za-z0-9-]+)$/.exec(path);
  return run ? { name: "run", runId: run[1] } : { name: "runs", params: new URLSearchParams(query) };
}

async function tick() {
  try {
    await view.refresh();
    setLive(true);
  } catch (error) {
    setLive(false);
    console.warn(error);
  }
  timer = setTimeout(tick, POLL_MS);
}

function navigate() {
  clearTimeout(timer);
  view.stop();
  const route = parseRoute();
  fill(main);
  view = route.name === "run" ? runView(route.runId) : runsView(route.params);
  tick();
}

window.addEventListener("hashchange", () => {
  navigate();
  main.focus();
});

/* ---------- runs list ---------- */

function runsView(params) {
  const filters = {
    status: params.get("status") ?? "",
    reason: params.get("reason") ?? "",
    kind: params.get("kind") ?? "",
    q: params.get("q") ?? "",
  };
  const summary = h("section", { className: "summary", "aria-label": "Totals" });
  const form = h("form", { className: "filters", role: "search", onsubmit: (e) => e.preventDefault() });
  const table = h("div", { className: "table-wrap" });
  main.append(h("h1", {}, "Runs"), summary, form, table);
  let facetsKey = "";

  function buildForm(facets) {
    const key = JSON.stringify(facets);
    if (key === facetsKey) return;
    facetsKey = key;
    const select = (name, label, options) =>
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
      form,
      select("status", "Status", statuses),
      select("reason", "Reason", facets.reasons),
      select("kind", "Kind", facets.kinds),
      h(
        "label",
        {},
        "Draft id contains",
        h("input", { type: "search", name: "q", value: filters.q, oninput: apply, autocomplete: "off" }),
      ),
    );
  }

  function apply() {
    for (const name of Object.keys(filters)) filters[name] = form.elements[name]?.value ?? "";
    const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== "")).toString();
    history.replaceState(null, "", `#/${query ? `?${query}` : ""}`);
    view.refresh().catch(() => setLive(false));
  }

  async function refresh() {
    const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ""));
    const data = await getJson(`/api/runs?${query}`);
    buildForm(data.facets);
    renderSummary(summary, data, filters.status);
    renderTable(table, data.runs);
  }
  return { refresh, stop: () => {} };
}

function card(label, value, extra) {
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
function outcomeCards(t, status) {
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

function renderSummary(el, data, status) {
  const t = data.totals;
  const cards = h(
    "div",
    { className: "cards" },
    card(
      "Drafts",
      String(t.drafts),
      h("div", { className: "muted" }, `${t.runs} run${t.runs === 1 ? "" : "s"}`),
    ),
    outcomeCards(t, status),
    card(
      "Needs review",
      String(t.needsReview),
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
    cards,
    h("div", {}, h("h2", { id: "rules-title" }, "Rules failing most often"), bars(data.topRules)),
  );
}

/** A horizontal bar chart of rule failures, in plain SVG. */
function bars(rules) {
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

function renderTable(el, runs) {
  if (runs.length === 0) {
    fill(el, h("p", { className: "muted" }, "No runs match."));
    return;
  }
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
      h("caption", { className: "muted" }, `${runs.length} runs, newest first`),
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
              h("div", { className: "muted hide-narrow" }, r.shortId),
            ),
            h("td", { className: "c-kind" }, r.kind),
            h("td", { className: "c-status" }, statusBadge(r.status)),
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
  );
}

/* ---------- one run ---------- */

function runView(runId) {
  const head = h("section", { "aria-label": "Run" });
  const reviewBox = h("section", { "aria-label": "Review" });
  const graphBox = h("section", { "aria-labelledby": "graph-title" });
  const historyBox = h("section", { "aria-labelledby": "history-title", className: "execution" });
  const attemptsBox = h("section", { "aria-labelledby": "attempts-title" });
  const finalBox = h("section", { "aria-labelledby": "final-title" });
  main.append(head, reviewBox, graphBox, historyBox, attemptsBox, finalBox);
  let version = "";
  let reviewStatus = "";
  let graphText = "";
  let selected = "";
  let stopped = false;

  async function refresh() {
    const detail = await getJson(`/api/runs/${runId}`);
    if (stopped || detail.version === version) return;
    version = detail.version;
    renderHead(head, detail);
    if (detail.run.status !== reviewStatus) {
      reviewStatus = detail.run.status;
      renderReview(reviewBox, detail, () => {
        version = "";
        return refresh();
      });
    }
    if (detail.graph.mermaid !== graphText || !graphBox.hasChildNodes()) {
      graphText = detail.graph.mermaid;
      await renderGraph(
        graphBox,
        detail,
        () => selected,
        (s) => (selected = s),
      );
    } else {
      renderStates(
        graphBox,
        detail,
        () => selected,
        (s) => (selected = s),
      );
    }
    renderExecution(historyBox, detail);
    renderAttempts(attemptsBox, detail);
    renderFinal(finalBox, detail);
  }
  return { refresh, stop: () => (stopped = true) };
}

function renderHead(el, d) {
  const r = d.run;
  const t = r.tokens;
  fill(
    el,
    h("p", {}, h("a", { href: "#/" }, "← All runs")),
    h("h1", {}, `Draft ${r.draftId} `, statusBadge(r.status)),
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

function renderReview(el, d, reload) {
  // The statuses `redraft review` accepts: a draft waiting for review, or a run that failed.
  if (d.run.status !== "needs_manual_review" && d.run.status !== "failed") {
    fill(el);
    return;
  }
  const message = h("div", { className: "message", role: "status", "aria-live": "polite" });
  const note = h("textarea", { id: "review-note", rows: 2, maxlength: 2000 });
  const editor = h("textarea", { id: "review-draft", rows: 14, spellcheck: "false" });
  editor.value = JSON.stringify(d.finalDraft, null, 2);
  const editBox = h(
    "div",
    { hidden: true },
    h("label", { for: "review-draft" }, "Edited draft (JSON)"),
    editor,
    h(
      "div",
      { className: "actions" },
      h(
        "button",
        { type: "button", className: "primary", onclick: () => send("edit") },
        "Resubmit edited draft",
      ),
    ),
  );
  async function send(decision) {
    message.className = "message";
    message.textContent = "Sending…";
    try {
      const res = await fetch(`/api/runs/${d.run.runId}/review`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-redraft-token": token },
        body: JSON.stringify({
          decision,
          ...(note.value.trim() && { note: note.value.trim() }),
          ...(decision === "edit" && { draft: editor.value }),
        }),
      });
      const body = await res.json();
      if (!res.ok) throw new Error(body.error);
      message.textContent = body.message;
      await reload();
    } catch (error) {
      message.className = "message error";
      message.textContent = error.message;
    }
  }
  fill(
    el,
    h(
      "div",
      { className: "review" },
      h("h2", {}, "Review"),
      h(
        "p",
        {},
        d.run.status === "failed"
          ? "This run failed; a person can still approve, reject or edit its best draft. The page writes the same record as "
          : "This draft needs a person's decision. The page writes the same record as ",
        h("code", {}, "redraft review"),
        ".",
      ),
      d.reasonExplained
        ? h("p", { className: "reason" }, h("b", {}, `${d.run.reason}: `), d.reasonExplained)
        : null,
      d.finalViolations.length
        ? h(
            "ul",
            { className: "remaining", "aria-label": "Violations that remain" },
            d.finalViolations.map((v) =>
              h(
                "li",
                {},
                h("code", {}, v.ruleId),
                ` ${v.severity}${v.path ? ` at ${v.path}` : ""}: ${v.message}`,
              ),
            ),
          )
        : null,
      h("label", { for: "review-note" }, "Note (why)"),
      note,
      h(
        "div",
        { className: "actions" },
        h("button", { type: "button", className: "primary", onclick: () => send("approve") }, "Approve"),
        h("button", { type: "button", className: "danger", onclick: () => send("reject") }, "Reject"),
        h(
          "button",
          {
            type: "button",
            "aria-expanded": "false",
            onclick: (e) => {
              editBox.hidden = !editBox.hidden;
              e.currentTarget.setAttribute("aria-expanded", String(!editBox.hidden));
              if (!editBox.hidden) editor.focus();
            },
          },
          "Edit and resubmit…",
        ),
      ),
      editBox,
      message,
    ),
  );
}

/** Each time the execution entered a state: its input, its output, and any error on the way. */
function stateEntries(history, state) {
  const entries = [];
  for (const e of history ?? []) {
    if (e.state !== state) continue;
    if (e.type === "StateEntered") entries.push({ at: e.at, input: e.input, events: [] });
    const last = entries.at(-1);
    if (!last) continue;
    if (e.type === "StateExited") last.output = e.output;
    else if (e.error) last.events.push(`${e.type}: ${e.error}${e.cause ? ` — ${e.cause}` : ""}`);
    else if (e.type === "StateRetried") last.events.push(`retried (attempt ${e.retry?.attempt ?? "?"})`);
  }
  return entries;
}

let graphCounter = 0;

async function renderGraph(el, d, getSelected, setSelected) {
  const title = h("h2", { id: "graph-title" }, "State machine and this run's path");
  const picture = h("div", { className: "graph", role: "group", "aria-label": "State machine flowchart" });
  const states = h("div", { className: "state-list-box" });
  const zoom = h("div", { className: "zoom", role: "group", "aria-label": "Zoom" });
  const inspector = h(
    "aside",
    { className: "inspector", "aria-live": "polite", id: "inspector" },
    h("p", { className: "muted" }, "Choose a state to see its input and output."),
  );
  const note = d.execution
    ? h(
        "p",
        { className: "muted" },
        `Execution ${d.execution.status}, ended in ${d.execution.terminalState}. Highlighted: the states entered (×count) and the transitions taken.`,
      )
    : h("p", { className: "muted" }, "The execution is still running; its path appears when it ends.");
  fill(
    el,
    title,
    note,
    h("div", { className: "graph-layout" }, h("div", {}, zoom, picture, states), inspector),
  );
  graphCounter += 1;
  const { svg } = await mermaid.render(`flow${graphCounter}`, d.graph.mermaid);
  picture.innerHTML = svg;
  zoomable(picture, zoom);
  const first = picture.querySelector("g.node.visited");
  if (first) centerOn(picture, first);
  for (const node of picture.querySelectorAll("g.node")) {
    const id = /flowchart-([A-Za-z0-9_]+)-\d+$/.exec(node.id)?.[1];
    const state = id && d.graph.nodes[id];
    if (!state) continue;
    node.dataset.state = state;
    node.classList.add("clickable");
    node.setAttribute("tabindex", "0");
    node.setAttribute("role", "button");
    node.setAttribute(
      "aria-label",
      `${state}${d.graph.entered[state] ? `, entered ${d.graph.entered[state]} times` : ", not entered"}`,
    );
    node.addEventListener("click", () => select(state));
    node.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        select(state);
      }
    });
  }
  function select(state) {
    setSelected(state);
    showState(el, d, state);
  }
  renderStates(el, d, getSelected, setSelected);
}

/** Zoom buttons for the flowchart: the whole machine is wider than a window, its labels need ~60 %. */
function zoomable(picture, controls) {
  const svg = picture.querySelector("svg");
  const natural = svg?.viewBox.baseVal.width || svg?.getBoundingClientRect().width || 0;
  if (!svg || !natural) return;
  const fitScale = () => Math.min(1, (picture.clientWidth - 20) / natural);
  let scale = Math.min(1, Math.max(fitScale(), 0.6));
  const apply = () => {
    svg.style.width = `${Math.round(natural * scale)}px`;
    svg.style.height = "auto";
    label.textContent = `${Math.round(scale * 100)}%`;
  };
  const label = h("span", { className: "muted" });
  const button = (text, name, next) =>
    h(
      "button",
      {
        type: "button",
        "aria-label": name,
        onclick: () => {
          scale = Math.min(2, Math.max(0.1, next()));
          apply();
        },
      },
      text,
    );
  fill(
    controls,
    button("−", "Zoom out", () => scale / 1.25),
    button("+", "Zoom in", () => scale * 1.25),
    button("Fit", "Fit to width", fitScale),
    button("100%", "Actual size", () => 1),
    label,
  );
  apply();
}

function renderStates(el, d, getSelected, setSelected) {
  const box = el.querySelector(".state-list-box");
  if (!box) return;
  const entered = Object.entries(d.graph.entered);
  fill(
    box,
    h("h3", {}, "States entered"),
    entered.length
      ? h(
          "div",
          { className: "state-list" },
          entered.map(([state, n]) =>
            h(
              "button",
              {
                type: "button",
                "data-state": state,
                "aria-pressed": String(getSelected() === state),
                onclick: () => {
                  setSelected(state);
                  showState(el, d, state);
                },
              },
              `${state} ×${n}`,
            ),
          ),
        )
      : h("p", { className: "muted" }, "None yet."),
  );
  if (getSelected()) showState(el, d, getSelected());
}

/** Scrolls the picture (not the page) so that a node is in the middle of it. */
function centerOn(picture, node) {
  const box = picture.getBoundingClientRect();
  const r = node.getBoundingClientRect();
  picture.scrollLeft += r.left - box.left - box.width / 2 + r.width / 2;
  picture.scrollTop += r.top - box.top - box.height / 3 + r.height / 2;
}

function showState(el, d, state) {
  for (const node of el.querySelectorAll("g.node")) {
    node.classList.toggle("selected", node.dataset.state === state);
    if (node.dataset.state === state) centerOn(el.querySelector(".graph"), node);
  }
  for (const b of el.querySelectorAll(".state-list button"))
    b.setAttribute("aria-pressed", String(b.dataset.state === state));
  const inspector = el.querySelector("#inspector");
  const entries = stateEntries(d.execution?.history, state);
  fill(
    inspector,
    h("h3", {}, state),
    entries.length === 0
      ? h("p", { className: "muted" }, "This run did not enter this state.")
      : entries.map((entry, i) =>
          h(
            "div",
            { className: "entry" },
            h(
              "h4",
              {},
              `Entry ${i + 1} of ${entries.length}`,
              h("span", { className: "muted" }, ` at ${time(entry.at)}`),
            ),
            entry.events.map((text) => h("p", { className: "sev-error" }, text)),
            h("div", {}, h("strong", {}, "Input"), h("pre", { className: "state-input" }, json(entry.input))),
            h(
              "div",
              {},
              h("strong", {}, "Output"),
              h("pre", { className: "state-output" }, json(entry.output)),
            ),
          ),
        ),
  );
}

function violationList(vs, empty = "none") {
  if (!vs || vs.length === 0) return h("p", { className: "muted" }, empty);
  return h(
    "ul",
    { className: "violations" },
    vs.map((v) =>
      h(
        "li",
        {},
        h("span", { className: `sev-${v.severity}` }, v.severity),
        " ",
        h("code", {}, v.ruleId),
        v.path ? h("span", { className: "muted" }, ` ${v.path}`) : null,
        `: ${v.message}`,
      ),
    ),
  );
}

function repairList(repairs) {
  if (!repairs || repairs.length === 0) return h("p", { className: "muted" }, "none");
  return h(
    "ul",
    { className: "violations" },
    repairs.map((r) => h("li", {}, h("code", {}, r.action), ` ${r.path} (${r.ruleId}): ${r.message}`)),
  );
}

function diffTable(a) {
  if (a.diff.length === 0) return h("p", { className: "muted" }, "No change to the draft.");
  return h(
    "div",
    { className: "table-wrap" },
    h(
      "table",
      { className: "diff" },
      h(
        "caption",
        { className: "muted" },
        `From the best draft so far (attempt ${a.baseAttempt}) to attempt ${a.attempt}`,
      ),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "Change"),
          h("th", { scope: "col" }, "Old"),
          h("th", { scope: "col" }, "New"),
        ),
      ),
      h(
        "tbody",
        {},
        a.diff.map((row) =>
          h(
            "tr",
            {},
            h("td", {}, h("code", {}, row.op), " ", row.path, row.from ? ` from ${row.from}` : ""),
            h("td", { className: "old" }, h("pre", {}, "old" in row ? json(row.old) : "—")),
            h("td", { className: "new" }, h("pre", {}, "new" in row ? json(row.new) : "(removed)")),
          ),
        ),
      ),
    ),
  );
}

function renderAttempts(el, d) {
  const initial = d.initial
    ? h(
        "article",
        { className: "attempt", "data-attempt": "0" },
        h(
          "header",
          {},
          h("h3", {}, "Attempt 0 — initial validation"),
          h("span", { className: "muted" }, `score ${d.initial.score.toFixed(3)}`),
        ),
        h("h4", {}, "Repairs (no model)"),
        repairList(d.initial.repairs),
        h("h4", {}, "Violations"),
        violationList(d.initial.violations),
      )
    : null;
  const attempts = d.attempts.map((a) =>
    h(
      "article",
      { className: "attempt", "data-attempt": String(a.attempt) },
      h(
        "header",
        {},
        h("h3", {}, `Attempt ${a.attempt} — ${a.phase}`),
        h("span", {}, `${a.errorCount} error(s) left, score ${a.score.toFixed(3)}`),
        h("strong", {}, a.isBest ? "new best" : "rolled back"),
        h(
          "span",
          { className: "muted" },
          `${a.model}, ${a.latencyMs} ms, tokens in ${a.tokens.input} / out ${a.tokens.output} / cache read ${a.tokens.cacheRead} / cache write ${a.tokens.cacheWrite}, ${cost(a.cost)}`,
        ),
      ),
      a.failure ? h("p", { className: "sev-error" }, `Answer not used: ${a.failure}`) : null,
      h(
        "div",
        { className: "cols" },
        h("div", {}, h("h4", {}, "Violations before"), violationList(a.inputViolations)),
        h("div", {}, h("h4", {}, "Violations after"), violationList(a.outputViolations)),
      ),
      h("h4", {}, "Repairs"),
      repairList(a.repairs),
      h("h4", {}, "Diff"),
      diffTable(a),
      a.analysis ? [h("h4", {}, "Model's analysis"), h("p", { className: "analysis" }, a.analysis)] : null,
      a.fixDescription ? [h("h4", {}, "Fix"), h("p", {}, a.fixDescription)] : null,
    ),
  );
  const judge = d.judge.map((j) =>
    h(
      "article",
      { className: "attempt judge" },
      h(
        "header",
        {},
        h("h3", {}, `Judge round ${j.round}`),
        h(
          "span",
          { className: "muted" },
          `${j.model}, threshold ${j.threshold}, tokens ${j.tokens.total}, ${cost(j.cost)}`,
        ),
      ),
      j.failure ? h("p", { className: "sev-error" }, j.failure) : null,
      j.findings.length === 0
        ? h("p", { className: "muted" }, "No findings.")
        : h(
            "div",
            { className: "table-wrap" },
            h(
              "table",
              {},
              h(
                "thead",
                {},
                h(
                  "tr",
                  {},
                  ["Rule", "Severity", "Confidence", "Blocked", "Finding"].map((c) =>
                    h("th", { scope: "col" }, c),
                  ),
                ),
              ),
              h(
                "tbody",
                {},
                j.findings.map((f) =>
                  h(
                    "tr",
                    {},
                    h("td", {}, h("code", {}, f.ruleId)),
                    h("td", { className: `sev-${f.severity}` }, f.severity),
                    h("td", { className: "num" }, f.confidence === undefined ? "—" : f.confidence.toFixed(2)),
                    h(
                      "td",
                      { className: f.blocked ? "blocked" : "" },
                      f.blocked ? "blocked" : "kept as warning",
                    ),
                    h("td", {}, f.message, f.path ? h("span", { className: "muted" }, ` (${f.path})`) : null),
                  ),
                ),
              ),
            ),
          ),
      j.accepted.length ? h("p", {}, `Accepted by the draft: ${j.accepted.join(", ")}`) : null,
    ),
  );
  fill(
    el,
    h("h2", { id: "attempts-title" }, "Attempts"),
    initial,
    attempts,
    judge.length ? [h("h2", {}, "Judge"), judge] : null,
    h("h2", {}, "Final violations"),
    violationList(d.finalViolations),
  );
}

function renderFinal(el, d) {
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

mermaid.initialize({
  startOnLoad: false,
  securityLevel: "strict",
  theme: "default",
  flowchart: { htmlLabels: false, useMaxWidth: false },
});
navigate();
