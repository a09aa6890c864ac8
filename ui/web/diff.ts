// What changed in a draft: an attempt's patch old beside new, the deterministic repairs (before
// and after), and lists of violations.
import type { AttemptView, Repair, RunDetail, Violation } from "../api-types.js";
import { h, json } from "./dom.js";

export function violationList(vs: readonly Violation[] | undefined, empty = "none"): HTMLElement {
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

export function repairList(repairs: readonly Repair[] | undefined): HTMLElement {
  if (!repairs || repairs.length === 0) return h("p", { className: "muted" }, "none");
  return h(
    "ul",
    { className: "violations" },
    repairs.map((r) => h("li", {}, h("code", {}, r.action), ` ${r.path} (${r.ruleId}): ${r.message}`)),
  );
}

export function diffTable(a: AttemptView): HTMLElement {
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

/** The repairs behind a run's final draft: rule, where, what was there and what is there now. */
export function repairsTable(repairs: RunDetail["repairs"]): HTMLElement {
  return h(
    "div",
    { className: "table-wrap" },
    h(
      "table",
      { className: "diff repairs" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Repair", "Path", "Before", "After"].map((c) => h("th", { scope: "col" }, c)),
        ),
      ),
      h(
        "tbody",
        {},
        repairs.map((r) =>
          h(
            "tr",
            { "data-path": r.path },
            h("td", {}, h("code", {}, r.action), " ", r.ruleId, h("div", { className: "muted" }, r.message)),
            h("td", { className: "path" }, h("code", {}, r.path)),
            h("td", { className: "old" }, h("pre", {}, "before" in r ? json(r.before) : "—")),
            h("td", { className: "new" }, h("pre", {}, "after" in r ? json(r.after) : "(removed)")),
          ),
        ),
      ),
    ),
  );
}
