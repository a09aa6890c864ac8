// Shared helpers of the viewer's modules: building elements (everything a draft or a model wrote
// enters the page as text, never as markup), money, times, statuses and the JSON fetch.

export const token = document.querySelector('meta[name="redraft-token"]')?.getAttribute("content") ?? "";

/** Builds an element: attributes (on* are listeners), then children (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
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
export function fill(el, ...children) {
  el.replaceChildren(
    ...children.flat(Number.POSITIVE_INFINITY).filter((c) => c !== undefined && c !== null && c !== false),
  );
}

export const usd = (n) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/** A cost with no price behind it says so rather than showing $0.00. */
export function cost(c) {
  if (c.priced) return usd(c.usd);
  return c.usd > 0 ? `${usd(c.usd)} + unpriced` : "unpriced";
}

export const json = (value) => (value === undefined ? "(none)" : JSON.stringify(value, null, 2));
/** A time for a person; one that is no date (a record written before batches carried their start) says so. */
export const time = (iso) => {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "unknown" : date.toLocaleString();
};

/** A duration as a person reads it: 840 ms, 2.35 s, 3 min 4 s. */
export function formatDuration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/**
 * A status badge; a run whose draft was repaired without a model says so beside it
 * (`validated · 2 repairs`, as `redraft runs` prints it), so a repaired run never reads as clean.
 */
export function statusBadge(status, repairs = 0) {
  const badge = h("span", { className: `status ${status}` }, status.replaceAll("_", " "));
  if (!repairs) return badge;
  return h(
    "span",
    { className: "status-with-repairs" },
    badge,
    h("span", { className: "repairs-count" }, ` · ${repairs} repair${repairs === 1 ? "" : "s"}`),
  );
}

export async function getJson(url) {
  const res = await fetch(url, { headers: { accept: "application/json" } });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ?? `${res.status}`);
  return body;
}

export function setLive(ok) {
  const live = document.getElementById("live");
  if (!live) return;
  live.textContent = ok
    ? `Live · updated ${new Date().toLocaleTimeString()}`
    : "Server unreachable — retrying";
}

/** `<thead>` with numeric columns right-aligned. */
export function headRow(names, numeric = []) {
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
