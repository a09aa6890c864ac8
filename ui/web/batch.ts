// Batches: the list, and one batch's page as the console shows a Map Run: its counts by status and
// by reason, its items with links to their runs, and the manifest's lines the loop rejected.

import type { BatchDetail, BatchList } from "../api-types.js";
import { fill, getJson, h, headRow, statusBadge, time, usd } from "./dom.js";
import { card } from "./runs.js";
import type { View } from "./view.js";

/** Outcomes first, then what did not get one, then anything else by name (as `redraft show <batch>`). */
const STATUS_ORDER = ["validated", "needs_manual_review", "rejected", "failed", "not_run"];
const ordered = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .sort(
      ([a], [b]) =>
        (STATUS_ORDER.indexOf(a) + 1 || 99) - (STATUS_ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b),
    );
const countsText = (counts: Record<string, number>) =>
  ordered(counts)
    .map(([s, n]) => `${s.replaceAll("_", " ")} ${n}`)
    .join(" · ");

export function batchesView(main: HTMLElement): View {
  const table = h("div", { className: "table-wrap" });
  main.append(h("h1", {}, "Batches"), table);
  async function refresh(): Promise<void> {
    const { batches } = await getJson<BatchList>("/api/batches");
    if (batches.length === 0) {
      fill(
        table,
        h(
          "p",
          { className: "muted" },
          "No batches yet. ",
          h("code", {}, "redraft batch <manifest.jsonl>"),
          " runs one.",
        ),
      );
      return;
    }
    fill(
      table,
      h(
        "table",
        { className: "batches" },
        h("caption", { className: "muted" }, `${batches.length} batches, newest first`),
        headRow(["Batch", "Status", "Items", "Counts", "Cost", "Started"], [2, 4]),
        h(
          "tbody",
          {},
          batches.map((b) =>
            h(
              "tr",
              { "data-batch": b.batchId },
              h("td", {}, h("a", { href: `#/batch/${b.batchId}` }, b.batchId)),
              h("td", {}, statusBadge(b.status)),
              h("td", { className: "num" }, b.items === null ? "—" : String(b.items)),
              h("td", {}, countsText(b.counts)),
              h("td", { className: "num" }, usd(b.costUsd)),
              h("td", {}, time(b.startedAt)),
            ),
          ),
        ),
      ),
    );
  }
  return { refresh, stop: () => {} };
}

export function batchView(main: HTMLElement, batchId: string): View {
  const head = h("section", { "aria-label": "Batch" });
  const rejected = h("section", { "aria-labelledby": "rejected-title" });
  const items = h("section", { "aria-labelledby": "items-title" });
  main.append(head, rejected, items);
  let version = "";
  let stopped = false;
  async function refresh(): Promise<void> {
    const d = await getJson<BatchDetail>(`/api/batches/${batchId}`);
    const next = JSON.stringify([d.batch, d.itemsTotal, d.items.map((i) => i.status)]);
    if (stopped || next === version) return;
    version = next;
    renderBatchHead(head, d);
    renderRejected(rejected, d);
    renderItems(items, d);
  }
  return {
    refresh,
    stop: () => {
      stopped = true;
    },
  };
}

function renderBatchHead(el: HTMLElement, d: BatchDetail): void {
  const b = d.batch;
  const counts = ordered(b.counts);
  const reasons = Object.entries(b.reasons).sort(([, x], [, y]) => y - x);
  fill(
    el,
    h("p", {}, h("a", { href: "#/batches" }, "← All batches")),
    h("h1", {}, `Batch ${b.batchId} `, statusBadge(b.status)),
    h(
      "div",
      { className: "cards batch-counts", "aria-label": "Items by status" },
      card("Items", String(b.items ?? d.itemsTotal)),
      counts.map(([status, n]) =>
        card(
          status.replaceAll("_", " "),
          String(n),
          h("span", { className: "muted", "data-status": status }, "items"),
        ),
      ),
      card("Cost", usd(b.costUsd), h("div", { className: "muted" }, `${b.tokens.toLocaleString()} tokens`)),
    ),
    h(
      "div",
      { className: "kv" },
      h("span", { className: "muted" }, "Manifest"),
      h("code", {}, b.manifest),
      h("span", { className: "muted" }, "Started"),
      h("span", { "data-field": "started" }, time(b.startedAt)),
      h("span", { className: "muted" }, "Ended"),
      h("span", {}, b.endedAt ? time(b.endedAt) : "still running"),
      b.pricing
        ? [h("span", { className: "muted" }, "Pricing"), h("span", {}, b.pricing.replace("_", " "))]
        : null,
      b.error
        ? [
            h("span", { className: "muted" }, "Failed"),
            h("span", { className: "sev-error" }, `${b.error.error}: ${b.error.cause}`),
          ]
        : null,
      b.resultsKey
        ? [h("span", { className: "muted" }, "Per-item results"), h("code", {}, b.resultsKey)]
        : null,
    ),
    h("h2", {}, "Reasons"),
    reasons.length
      ? h(
          "table",
          { className: "reasons" },
          headRow(["Reason", "Items"], [1]),
          h(
            "tbody",
            {},
            reasons.map(([reason, n]) =>
              h(
                "tr",
                { "data-reason": reason },
                h("td", {}, reason),
                h("td", { className: "num" }, String(n)),
              ),
            ),
          ),
        )
      : h("p", { className: "muted" }, "No item ended with a reason."),
  );
}

function renderRejected(el: HTMLElement, d: BatchDetail): void {
  fill(
    el,
    h("h2", { id: "rejected-title" }, `Rejected lines of the manifest (${d.rejected.length})`),
    d.rejected.length
      ? h(
          "div",
          { className: "table-wrap" },
          h(
            "table",
            { className: "rejected" },
            headRow(["Line", "Reason", "Why"], [0]),
            h(
              "tbody",
              {},
              d.rejected.map((r) =>
                h(
                  "tr",
                  { "data-line": String(r.line) },
                  h("td", { className: "num" }, h("a", { href: `#/run/${r.runId}` }, String(r.line))),
                  h("td", {}, r.reason),
                  h("td", {}, r.message),
                ),
              ),
            ),
          ),
        )
      : h("p", { className: "muted" }, "Every line of the manifest was a draft the loop took."),
  );
}

function renderItems(el: HTMLElement, d: BatchDetail): void {
  fill(
    el,
    h("h2", { id: "items-title" }, "Items"),
    d.items.length === 0
      ? h("p", { className: "muted" }, "No item has run yet.")
      : h(
          "div",
          { className: "table-wrap" },
          h(
            "table",
            { className: "items" },
            h(
              "caption",
              { className: "muted" },
              d.itemsTotal > d.items.length
                ? `The first ${d.items.length} of ${d.itemsTotal} items, in manifest order`
                : `${d.items.length} items, in manifest order`,
            ),
            headRow(["Line", "Run", "Draft", "Status", "Reason", "Attempts", "Tokens", "Cost"], [0, 5, 6, 7]),
            h(
              "tbody",
              {},
              d.items.map((i) =>
                h(
                  "tr",
                  { "data-run": i.runId, "data-status": i.status },
                  h("td", { className: "num" }, String(i.line)),
                  h(
                    "td",
                    {},
                    // An item the Map never started has no run to open.
                    i.status === "not_run" ? i.shortId : h("a", { href: `#/run/${i.runId}` }, i.shortId),
                  ),
                  h("td", {}, i.draftId ?? "—"),
                  h("td", {}, statusBadge(i.status)),
                  h("td", {}, i.reason ?? ""),
                  h("td", { className: "num" }, String(i.attempts)),
                  h("td", { className: "num" }, i.tokens.toLocaleString()),
                  h("td", { className: "num" }, usd(i.costUsd)),
                ),
              ),
            ),
          ),
        ),
  );
}
