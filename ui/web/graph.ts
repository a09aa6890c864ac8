// The flowchart of the run's page, as the Step Functions console draws it: the states this run went
// through in their status colours (passed green, failed red, caught orange), opened on the run's
// path at a size its labels can be read at, with the whole machine and its Catch edges on demand.
// Mermaid (a classic script loaded before the modules) draws it; clicking a state shows its entries.
import type { HistoryEvent, RunDetail } from "../api-types.js";
import { fill, h, json, listen, time } from "./dom.js";
import { mermaid } from "./mermaid.js";

/** What the person chose in the flowchart, kept across the page's refreshes (run.ts). */
export interface GraphChoices {
  /** The state whose entries the inspector shows ("" for none). */
  selected: string;
  /** What the flowchart shows: the run's path, or the whole machine ("" until first drawn). */
  view: "" | "path" | "all";
  /** The whole machine's untaken Catch edges are drawn. */
  catches: boolean;
  /** The Mermaid text last drawn, so that an unchanged picture is not drawn again. */
  drawn: string;
}

/** One entry of the execution into a state. */
interface StateEntryView {
  at: string;
  input: unknown;
  output?: unknown;
  events: string[];
}

/**
 * The smallest scale the picture opens at: Mermaid's labels are 16 px, so 0.7 keeps them above
 * 11 px on screen. A path too tall for the box at that scale scrolls rather than shrinks.
 */
const LEGIBLE_SCALE = 0.7;
/** The whole machine opens no smaller than this, centred on the path (its width needs ~3 screens). */
const WHOLE_MACHINE_SCALE = 0.6;

/** Each time the execution entered a state: its input, its output, and any error on the way. */
function stateEntries(history: readonly HistoryEvent[] | undefined, state: string): StateEntryView[] {
  const entries: StateEntryView[] = [];
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

/**
 * Draws the flowchart section. `ui` keeps the person's choices across refreshes: the view (`path`
 * or `all`), whether untaken Catch edges are drawn, and the selected state.
 */
export async function renderGraph(el: HTMLElement, d: RunDetail, ui: GraphChoices): Promise<void> {
  const views = d.graph.views;
  if (!ui.view || (ui.view === "path" && !views.path)) ui.view = views.path ? "path" : "all";
  const title = h("h2", { id: "graph-title" }, "State machine and this run's path");
  const picture = h("div", { className: "graph", role: "group", "aria-label": "State machine flowchart" });
  const states = h("div", { className: "state-list-box" });
  const controls = h("div", { className: "graph-controls" });
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
        `Execution ${d.execution.status}, ended in ${d.execution.terminalState}. Coloured: the states entered (×count) — green passed, red failed, orange caught by a Catch — and the transitions taken.`,
      )
    : h("p", { className: "muted" }, "The execution is still running; its path appears when it ends.");
  const redraw = () => renderGraph(el, d, ui);
  const viewButton = (view: "path" | "all", text: string) =>
    h(
      "button",
      {
        type: "button",
        "data-view": view,
        "aria-pressed": String(ui.view === view),
        disabled: view === "path" && !views.path,
        onclick: () => {
          if (ui.view === view) return;
          ui.view = view;
          void redraw();
        },
      },
      text,
    );
  fill(
    controls,
    h(
      "div",
      { className: "views", role: "group", "aria-label": "What the flowchart shows" },
      viewButton("path", "This run's path"),
      viewButton("all", `Whole state machine (${d.graph.states} states)`),
    ),
    ui.view === "all"
      ? h(
          "label",
          { className: "catches" },
          h("input", {
            type: "checkbox",
            name: "catches",
            checked: ui.catches,
            onchange: listen<HTMLInputElement>((e) => {
              ui.catches = e.currentTarget.checked;
              void redraw();
            }),
          }),
          " Catch edges not taken",
        )
      : null,
    zoom,
  );
  fill(
    el,
    title,
    note,
    h("div", { className: "graph-layout" }, h("div", {}, controls, picture, states), inspector),
  );
  graphCounter += 1;
  const text = (ui.view === "path" ? views.path : undefined) ?? (ui.catches ? d.graph.mermaid : views.all);
  const { svg } = await mermaid().render(`flow${graphCounter}`, text);
  picture.innerHTML = svg;
  picture.dataset.view = ui.view;
  for (const node of picture.querySelectorAll<SVGGElement>("g.node")) {
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
    node.addEventListener("keydown", (e: KeyboardEvent) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        select(state);
      }
    });
  }
  zoomable(picture, zoom, ui.view);
  function select(state: string): void {
    ui.selected = state;
    showState(el, d, state);
  }
  renderStates(el, d, ui);
}

/** The nodes of the run's path: entered, whatever their outcome. */
const pathNodes = (picture: HTMLElement) => [
  ...picture.querySelectorAll<SVGGElement>("g.node.visited, g.node.failed, g.node.caught"),
];

/**
 * Zoom buttons for the flowchart, and the scale it opens at. The run's path opens fitted to the
 * box, never below LEGIBLE_SCALE; the whole machine opens at the width that fits, never below
 * WHOLE_MACHINE_SCALE, scrolled to the path. Fit frames the run's path (the whole picture when
 * there is none).
 */
function zoomable(picture: HTMLElement, controls: HTMLElement, view: GraphChoices["view"]): void {
  const svg = picture.querySelector("svg");
  const natural = svg?.viewBox.baseVal.width || svg?.getBoundingClientRect().width || 0;
  const naturalHeight = svg?.viewBox.baseVal.height || svg?.getBoundingClientRect().height || 0;
  if (!svg || !natural) return;
  const room = () => ({
    width: Math.max(100, picture.clientWidth - 20),
    height: Math.max(100, boxHeight() - 20),
  });
  let scale = 1;
  const apply = () => {
    svg.style.width = `${Math.round(natural * scale)}px`;
    svg.style.height = "auto";
    label.textContent = `${Math.round(scale * 100)}%`;
  };
  /** The path's bounding box in the picture's own units (as drawn at scale 1). */
  const pathBox = () => {
    const nodes = pathNodes(picture);
    if (nodes.length === 0) return { x: 0, y: 0, width: natural, height: naturalHeight };
    const origin = svg.getBoundingClientRect();
    const now = origin.width / natural;
    const rects = nodes.map((n) => n.getBoundingClientRect());
    const left = Math.min(...rects.map((r) => r.left));
    const top = Math.min(...rects.map((r) => r.top));
    const right = Math.max(...rects.map((r) => r.right));
    const bottom = Math.max(...rects.map((r) => r.bottom));
    return {
      x: (left - origin.left) / now,
      y: (top - origin.top) / now,
      width: (right - left) / now,
      height: (bottom - top) / now,
    };
  };
  const framePath = (floor: number) => {
    // The path view is the path (and its start): framed whole, so choosing a state scrolls nothing.
    const box = view === "path" ? { x: 0, y: 0, width: natural, height: naturalHeight } : pathBox();
    const { width, height } = room();
    const margin = view === "path" ? 0 : 40;
    scale = Math.min(
      1,
      Math.max(floor, Math.min(width / (box.width + margin), height / (box.height + margin))),
    );
    apply();
    // A picture that fits whole shows whole (its start circle too); else the path is framed.
    const fits = naturalHeight * scale <= height && natural * scale <= width;
    picture.scrollLeft = fits ? 0 : Math.max(0, (box.x + box.width / 2) * scale - width / 2);
    picture.scrollTop = fits ? 0 : Math.max(0, box.y * scale - margin / 2);
  };
  const label = h("span", { className: "muted zoom-level" });
  const button = (text: string, name: string, next: () => number | undefined) =>
    h(
      "button",
      {
        type: "button",
        "aria-label": name,
        onclick: () => {
          const wanted = next();
          if (wanted === undefined) return;
          scale = Math.min(2, Math.max(0.1, wanted));
          apply();
        },
      },
      text,
    );
  fill(
    controls,
    button("−", "Zoom out", () => scale / 1.25),
    button("+", "Zoom in", () => scale * 1.25),
    button("Fit", "Fit the run's path", () => {
      framePath(0.1);
      return undefined;
    }),
    button("100%", "Actual size", () => 1),
    label,
  );
  if (view === "path") framePath(LEGIBLE_SCALE);
  else {
    scale = Math.min(1, Math.max(room().width / natural, WHOLE_MACHINE_SCALE));
    apply();
    const first = pathNodes(picture)[0];
    if (first) centerOn(picture, first);
  }
}

/** The picture box's height: its CSS max-height (app.css), which depends on the window. */
function boxHeight(): number {
  return Math.max(320, Math.min(760, window.innerHeight - 150));
}

export function renderStates(el: HTMLElement, d: RunDetail, ui: GraphChoices): void {
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
                "aria-pressed": String(ui.selected === state),
                onclick: () => {
                  ui.selected = state;
                  showState(el, d, state);
                },
              },
              `${state} ×${n}`,
            ),
          ),
        )
      : h("p", { className: "muted" }, "None yet."),
  );
  if (ui.selected) showState(el, d, ui.selected);
}

/** Scrolls the picture (not the page) so that a node is in the middle of it. */
function centerOn(picture: Element, node: Element): void {
  const box = picture.getBoundingClientRect();
  const r = node.getBoundingClientRect();
  picture.scrollLeft += r.left - box.left - box.width / 2 + r.width / 2;
  picture.scrollTop += r.top - box.top - box.height / 3 + r.height / 2;
}

function showState(el: HTMLElement, d: RunDetail, state: string): void {
  const picture = el.querySelector(".graph");
  for (const node of el.querySelectorAll<SVGGElement>("g.node")) {
    node.classList.toggle("selected", node.dataset.state === state);
    if (node.dataset.state === state && picture) centerOn(picture, node);
  }
  for (const b of el.querySelectorAll<HTMLButtonElement>(".state-list button"))
    b.setAttribute("aria-pressed", String(b.dataset.state === state));
  const inspector = el.querySelector("#inspector");
  if (!inspector) return;
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
