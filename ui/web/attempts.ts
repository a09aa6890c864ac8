// The run's attempts as a timeline: the first validation, each correction (violations before and
// after, repairs, the patch, the model's analysis and cost), the judge's rounds, what still fails.
import type { RunDetail } from "../api-types.js";
import { diffTable, repairList, violationList } from "./diff.js";
import { cost, fill, h } from "./dom.js";

export function renderAttempts(el: HTMLElement, d: RunDetail): void {
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
