// Shared helpers of the viewer's modules: building elements (everything a draft or a model wrote
// enters the page as text, never as markup), money, times, statuses and the JSON fetch.
import type { ApiError, Cost, Waiting } from "../api-types.js";

export const token = document.querySelector('meta[name="redraft-token"]')?.getAttribute("content") ?? "";

/** What an element is built with: attributes, and `on…` listeners (`onclick`, `oninput`…). */
export type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;
/** A child: an element, text (a number shown as text), nothing, or a list of them (from map). */
export type Child = Node | string | number | null | undefined | false | readonly Child[];

/**
 * An event listener whose event's `currentTarget` is the element it was set on, typed as `T`:
 * `listen<HTMLInputElement>((event) => event.currentTarget.value)`.
 */
export const listen =
  <T extends Element, E extends Event = Event>(
    handler: (event: E & { currentTarget: T }) => void,
  ): EventListener =>
  (event) =>
    handler(event as E & { currentTarget: T });

/** Builds an element: attributes (on* are listeners), then children (strings become text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") {
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    } else if (key === "className") el.className = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  el.append(...nodes(children));
  return el;
}

/** The children given, lists spread, empty values left out: what `append` takes. */
function nodes(children: readonly Child[], out: (Node | string)[] = []): (Node | string)[] {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) nodes(child, out);
    else out.push(child instanceof Node ? child : String(child));
  }
  return out;
}

/** Replaces an element's children; arrays (from map) are spread, empty values skipped. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren(...nodes(children));
}

export const usd = (n: number) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/** A cost with no price behind it says so rather than showing $0.00. */
export function cost(c: Cost): string {
  if (c.priced) return usd(c.usd);
  return c.usd > 0 ? `${usd(c.usd)} + unpriced` : "unpriced";
}

export const json = (value: unknown) => (value === undefined ? "(none)" : JSON.stringify(value, null, 2));
/** A time for a person; one that is no date (a record written before batches carried their start) says so. */
export const time = (iso: string | null | undefined) => {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "unknown" : date.toLocaleString();
};

/** A duration as a person reads it: 840 ms, 2.35 s, 3 min 4 s. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/**
 * A status badge; a run whose draft was repaired without a model says so beside it
 * (`validated · 2 repairs`, as `redraft runs` prints it), so a repaired run never reads as clean.
 */
export function statusBadge(status: string, repairs = 0): HTMLSpanElement {
  const badge = h("span", { className: `status ${status}` }, status.replaceAll("_", " "));
  if (!repairs) return badge;
  return h(
    "span",
    { className: "status-with-repairs" },
    badge,
    h("span", { className: "repairs-count" }, ` · ${repairs} repair${repairs === 1 ? "" : "s"}`),
  );
}

/**
 * A GET of the API, read as the type its route answers with (ui/api-types.ts, which the server's
 * handlers return); a refusal's `error` becomes the thrown message.
 */
export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { accept: "application/json" } });
  const body: unknown = await res.json();
  if (!res.ok) throw new Error((body as Partial<ApiError>).error ?? `${res.status}`);
  return body as T;
}

export function setLive(ok: boolean): void {
  const live = document.getElementById("live");
  if (!live) return;
  live.textContent = ok
    ? `Live · updated ${new Date().toLocaleTimeString()}`
    : "Server unreachable — retrying";
}

/** `<thead>` with numeric columns right-aligned. */
export function headRow(names: readonly string[], numeric: readonly number[] = []): HTMLTableSectionElement {
  return h(
    "thead",
    {},
    h(
      "tr",
      {},
      names.map((n, i) => h("th", { scope: "col", className: numeric.includes(i) ? "num" : "" }, n)),
    ),
  );
}

/**
 * A stack's waiting run: how deep the model queue it waits in is, as `redraft show --stack` says it
 * (no position: a standard SQS queue keeps no order); empty for a run without one.
 */
export function queueDepthText(waiting: Waiting): string {
  const q = waiting.queue;
  if (!q) return "";
  if (q.depth === null) return `λ ${q.name}'s queue: depth unknown (${q.unknown ?? "not readable"})`;
  return `λ ${q.name}'s queue holds about ${q.depth} (${q.waiting ?? 0} waiting for a slot, ${q.inFlight ?? 0} in a model call; in no order)`;
}
