import type { Violation } from "../shared/draft.js";
import type { RunResult } from "../shared/loop/run.js";
import { isPriced } from "../shared/model/pricing.js";
import type { RunRecord } from "../shared/store/types.js";
import { type OutputStyle, renderTable, stdoutStyle } from "./output.js";

/** Violations as the `--json` contract shows them: `{ruleId, severity, message, path?, suggestion?}`. */
function publicViolation(v: Violation) {
  return {
    ruleId: v.ruleId,
    severity: v.severity,
    message: v.message,
    ...(v.path !== undefined && { path: v.path }),
    ...(v.suggestion !== undefined && { suggestion: v.suggestion }),
  };
}

/**
 * A run result with the file, array element or line its draft came from: two drafts of one batch
 * may share an id, and the source tells their lines apart.
 */
export type SourcedResult = RunResult & { source?: string };

/** One `--json` line: the core's run result without the per-attempt detail (`redraft show` has it). */
export function jsonLine(result: SourcedResult): string {
  return JSON.stringify({
    draftId: result.draftId,
    ...(result.source !== undefined && { source: result.source }),
    runId: result.runId,
    status: result.status,
    reason: result.reason,
    ...(result.message !== undefined && { message: result.message }),
    attempts: result.attempts,
    logicAttempts: result.logicAttempts,
    initialViolations: result.initialViolations.map(publicViolation),
    finalViolations: result.finalViolations.map(publicViolation),
    repairs: result.repairs.map(({ path, before, after }) => ({ path, before, after })),
    violationsPerAttempt: result.violationsPerAttempt,
    circuitBreakerRules: result.circuitBreakerRules,
    tokens: result.tokens,
    costUsd: result.costUsd,
    finalDraft: result.finalDraft,
  });
}

/** A status with the deterministic repairs behind its draft, so a repaired run never reads as clean: `validated · 2 repairs`. */
const statusText = (status: string, repairs = 0): string =>
  repairs > 0 ? `${status} · ${repairs} repair${repairs === 1 ? "" : "s"}` : status;

export const usd = (n: number) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/**
 * A cost as a person should read it. An unpriced model costs 0 in the records, so tokens spent at
 * no cost, or by a model the price table does not know, say `unpriced` rather than `$0.00`; a run
 * mixing both says `$0.0123 + unpriced`.
 */
export function costText(cost: number, tokens: number, models: readonly string[] = []): string {
  if (tokens === 0) return usd(cost);
  const unpriced = cost === 0 || models.some((m) => !isPriced(m));
  if (!unpriced) return usd(cost);
  return cost === 0 ? "unpriced" : `${usd(cost)} + unpriced`;
}

/**
 * Run ids as short as git shows commits: the first 8 characters, longer where two of the listed
 * ids share them. `redraft show` and `export` take any unique prefix.
 */
function shortIds(ids: readonly string[]): Map<string, string> {
  const unique = [...new Set(ids)];
  let length = 8;
  while (new Set(unique.map((id) => id.slice(0, length))).size < unique.length) length++;
  return new Map(unique.map((id) => [id, id.slice(0, length)]));
}

/** The models that answered a run's corrections (the judge's are in its reports, see `redraft show`). */
const attemptModels = (r: RunResult) =>
  r.attemptsDetail.filter((a) => a.tokens.input + a.tokens.output > 0).map((a) => a.model);

/** The end of a long text (a source's file name and line matter more than its folders). */
const tail = (text: string, width: number): string =>
  text.length <= width ? text : `…${text.slice(text.length - width + 1)}`;

/** Per-draft lines and a summary per status, printed after a run; each table fits `style.width`. */
export function resultsTable(results: readonly SourcedResult[], style: OutputStyle = stdoutStyle()): string {
  const short = shortIds(results.map((r) => r.runId));
  const perDraft = renderTable(
    [
      { head: "draft", wrapTo: 12 },
      { head: "source", wrapTo: 14 },
      { head: "status" },
      { head: "reason", wrapTo: 8 },
      { head: "attempts" },
      { head: "errors per attempt", wrapTo: 9 },
      { head: "tokens" },
      { head: "cost", wrapTo: 8 },
      { head: "run" },
    ],
    results.map((r) => [
      r.draftId,
      tail(r.source ?? "", 14),
      statusText(r.status, r.repairs.length),
      r.reason ?? "",
      r.attempts,
      r.violationsPerAttempt.join(" → "),
      r.tokens.total,
      costText(r.costUsd, r.tokens.total, attemptModels(r)),
      short.get(r.runId) ?? r.runId,
    ]),
    style,
    // Where each draft came from tells apart two drafts with one id: it gives way last.
    ["attempts", "tokens", "errors per attempt", "source"],
  );
  type Sum = { drafts: number; attempts: number; tokens: number; cost: number; unpriced: boolean };
  const add = (s: Sum, r: SourcedResult): Sum => ({
    drafts: s.drafts + 1,
    attempts: s.attempts + r.attempts,
    tokens: s.tokens + r.tokens.total,
    cost: s.cost + r.costUsd,
    unpriced: s.unpriced || costText(r.costUsd, r.tokens.total, attemptModels(r)).includes("unpriced"),
  });
  const empty: Sum = { drafts: 0, attempts: 0, tokens: 0, cost: 0, unpriced: false };
  const byStatus = new Map<string, Sum>();
  for (const r of results) byStatus.set(r.status, add(byStatus.get(r.status) ?? empty, r));
  const total = results.reduce(add, empty);
  const sumCost = (s: Sum) =>
    s.unpriced ? (s.cost === 0 ? "unpriced" : `${usd(s.cost)} + unpriced`) : usd(s.cost);
  const summary = renderTable(
    ["status", "drafts", "attempts", "tokens", "cost"].map((head) => ({ head })),
    [
      ...[...byStatus]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([status, s]) => [status, s.drafts, s.attempts, s.tokens, sumCost(s)]),
      ["total", total.drafts, total.attempts, total.tokens, sumCost(total)],
    ],
    style,
  );
  return `${perDraft}\n${summary}`;
}

/** `redraft runs`: newest first, fitting `style.width` (tokens, then attempts, then the creation time give way). */
export function runsTable(runs: readonly RunRecord[], style: OutputStyle = stdoutStyle()): string {
  const short = shortIds(runs.map((r) => r.runId));
  return renderTable(
    [
      { head: "run" },
      { head: "draft", wrapTo: 12 },
      { head: "kind" },
      { head: "status" },
      { head: "reason", wrapTo: 8 },
      { head: "attempts" },
      { head: "tokens" },
      { head: "cost", wrapTo: 8 },
      { head: "created" },
    ],
    runs.map((r) => [
      short.get(r.runId) ?? r.runId,
      r.draftId,
      r.kind,
      statusText(r.status, r.repairs),
      r.reason ?? "",
      r.attempts,
      r.tokens.total,
      costText(r.costUsd, r.tokens.total),
      r.createdAt.slice(0, 16).replace("T", " "),
    ]),
    style,
    ["tokens", "attempts", "created", "kind"],
  );
}
