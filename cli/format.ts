import Table from "cli-table3";
import type { ExecutionSummary } from "../local/runtime.js";
import type { Violation } from "../shared/draft.js";
import type { RunResult } from "../shared/loop/run.js";
import type { AttemptRecord, RunRecord } from "../shared/store/types.js";

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
    violationsPerAttempt: result.violationsPerAttempt,
    circuitBreakerRules: result.circuitBreakerRules,
    tokens: result.tokens,
    costUsd: result.costUsd,
    finalDraft: result.finalDraft,
  });
}

export const usd = (n: number) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/** Per-draft lines and a summary per status, printed after a run. */
export function resultsTable(results: readonly SourcedResult[]): string {
  const perDraft = new Table({
    head: ["draft", "source", "status", "reason", "attempts", "errors per attempt", "tokens", "cost", "run"],
  });
  for (const r of results) {
    perDraft.push([
      r.draftId,
      r.source ?? "",
      r.status,
      r.reason ?? "",
      r.attempts,
      r.violationsPerAttempt.join(" → "),
      r.tokens.total,
      usd(r.costUsd),
      r.runId,
    ]);
  }
  const byStatus = new Map<string, { drafts: number; attempts: number; tokens: number; cost: number }>();
  for (const r of results) {
    const s = byStatus.get(r.status) ?? { drafts: 0, attempts: 0, tokens: 0, cost: 0 };
    s.drafts += 1;
    s.attempts += r.attempts;
    s.tokens += r.tokens.total;
    s.cost += r.costUsd;
    byStatus.set(r.status, s);
  }
  const summary = new Table({ head: ["status", "drafts", "attempts", "tokens", "cost"] });
  let total = { drafts: 0, attempts: 0, tokens: 0, cost: 0 };
  for (const [status, s] of [...byStatus].sort()) {
    summary.push([status, s.drafts, s.attempts, s.tokens, usd(s.cost)]);
    total = {
      drafts: total.drafts + s.drafts,
      attempts: total.attempts + s.attempts,
      tokens: total.tokens + s.tokens,
      cost: total.cost + s.cost,
    };
  }
  summary.push(["total", total.drafts, total.attempts, total.tokens, usd(total.cost)]);
  return `${perDraft.toString()}\n${summary.toString()}`;
}

export function runsTable(runs: readonly RunRecord[]): string {
  const table = new Table({
    head: ["run", "draft", "kind", "status", "reason", "attempts", "tokens", "cost", "created"],
  });
  for (const r of runs) {
    table.push([
      r.runId,
      r.draftId,
      r.kind,
      r.status,
      r.reason ?? "",
      r.attempts,
      r.tokens.total,
      usd(r.costUsd),
      r.createdAt,
    ]);
  }
  return table.toString();
}

const listViolations = (vs: readonly Violation[]) =>
  vs.length === 0
    ? "    (none)"
    : vs
        .map((v) => `    ${v.severity.padEnd(7)} ${v.ruleId}${v.path ? ` ${v.path}` : ""}: ${v.message}`)
        .join("\n");

function attemptBlock(a: AttemptRecord): string {
  const lines = [
    `Attempt ${a.attempt} (${a.phase}) at ${a.at}: ${a.errorCount} error(s) left, score ${a.score.toFixed(3)}${a.isBest ? ", new best" : ", rolled back"}`,
    `  model ${a.model}, ${a.latencyMs} ms, tokens in ${a.tokens.input} / out ${a.tokens.output} / cache read ${a.tokens.cacheRead} / cache write ${a.tokens.cacheWrite}, ${usd(a.costUsd)}`,
  ];
  if (a.failure) lines.push(`  answer not used: ${a.failure}`);
  if (a.analysis) lines.push(`  analysis: ${a.analysis}`);
  if (a.fixDescription) lines.push(`  fix: ${a.fixDescription}`);
  lines.push(`  resolved ${a.resolvedCount}, remaining ${a.remainingCount}`);
  if (a.repairs.length) lines.push(`  repaired: ${a.repairs.map((r) => `${r.action} ${r.path}`).join(", ")}`);
  if (a.diffRef) lines.push(`  diff: stored whole at ${a.diffRef}`);
  else if (a.diff.length) {
    lines.push("  diff:");
    for (const op of a.diff) {
      const value = "value" in op ? ` ${JSON.stringify(op.value).slice(0, 160)}` : "";
      lines.push(`    ${String(op.op)} ${String(op.path)}${value}`);
    }
  }
  lines.push("  violations after:");
  lines.push(listViolations(a.outputViolations));
  return lines.join("\n");
}

/** `redraft show`: the attempt timeline and the state-by-state path of the execution. */
export function timeline(result: RunResult, run: RunRecord, execution: ExecutionSummary | undefined): string {
  const out = [
    `Run ${run.runId} — draft ${run.draftId} (${run.kind})`,
    `Status: ${run.status}${run.reason ? ` (${run.reason})` : ""}${run.message ? ` — ${run.message}` : ""}`,
    `Errors per attempt: ${run.violationsPerAttempt.join(" → ") || "-"}`,
    `Tokens: ${run.tokens.total} (in ${run.tokens.input}, out ${run.tokens.output}, cache read ${run.tokens.cacheRead}, cache write ${run.tokens.cacheWrite}); cost ${usd(run.costUsd)}`,
  ];
  if (run.circuitBreakerRules.length)
    out.push(`Circuit breaker tripped by: ${run.circuitBreakerRules.join(", ")}`);
  if (run.resolvedRules.length) out.push(`Resolved rules: ${run.resolvedRules.join(", ")}`);
  if (run.persistentRules.length) out.push(`Persistent rules: ${run.persistentRules.join(", ")}`);
  if (run.parentRunId) out.push(`Edited from run: ${run.parentRunId}`);
  if (run.review)
    out.push(
      `Review: ${run.review.decision} at ${run.review.at}${run.review.note ? ` — ${run.review.note}` : ""}`,
    );
  out.push("", "Attempt 0 (initial validation):", listViolations(result.initialViolations));
  for (const a of result.attemptsDetail) out.push("", attemptBlock(a));
  out.push("", "Final violations:", listViolations(result.finalViolations));
  out.push("", "Transitions:", ...run.transitions.map((t) => `  ${t.at}  ${t.status}`));
  if (execution) {
    out.push("", `Execution path (${execution.status}):`);
    for (const h of execution.history) {
      if (h.type === "StateEntered") out.push(`  ${h.at}  → ${h.state} (${h.stateType})`);
      else if (h.type === "StateRetried")
        out.push(`  ${h.at}    retried ${h.state} (attempt ${h.retry?.attempt ?? "?"})`);
      else if (h.type === "StateCaught" || h.type === "StateFailed" || h.type === "ExecutionFailed") {
        out.push(`  ${h.at}    ${h.type} ${h.state ?? ""} ${h.error ?? ""}: ${h.cause ?? ""}`);
      }
    }
  }
  return out.join("\n");
}
