import { explainReason } from "../app/explain.js";
import type { ExecutionSummary } from "../local/runtime.js";
import type { Draft, Repair, ValidationReport, Violation } from "../shared/draft.js";
import type { RunResult } from "../shared/loop/run.js";
import { type LoopDeps, loadJson } from "../shared/loop/steps/deps.js";
import type { JudgeReport } from "../shared/loop/steps/judge.js";
import type { TokenUsage } from "../shared/model/types.js";
import { valueAt } from "../shared/pointer.js";
import { blobKeys } from "../shared/store/bucket-layout.js";
import type { AttemptRecord, RunRecord } from "../shared/store/types.js";
import type { QueueDepth } from "./cloud/waiting.js";
import { costText } from "./format.js";

/** What `redraft show` reads besides the run result: the first repairs, the judge's rounds, the drafts diffs start from. */
export interface RunEvidence {
  /** Repairs made before the first validation (attempt 0). */
  initialRepairs: Repair[];
  /** Every judge round, in order. */
  judgeRounds: JudgeReport[];
  /** The draft each attempt's diff was computed from (the best draft before it), by attempt number. */
  diffBase: Map<number, unknown>;
  /** The run's copy of its draft's `context.source`, when it had one. */
  source?: string;
}

/** The longest a value in a diff or repair line is shown before it is cut with an ellipsis. */
const VALUE_CHARS = 72;

/** Reads the evidence of a run from the blob store; a blob that is missing leaves its part empty. */
export async function loadRunEvidence(
  result: RunResult,
  deps: Pick<LoopDeps, "blobs">,
): Promise<RunEvidence> {
  const maybe = <T>(key: string) => loadJson<T>(deps.blobs, key).catch(() => undefined);
  const initial = await maybe<ValidationReport>(blobKeys.attemptReport(result.runId, 0));
  const judgeRounds: JudgeReport[] = [];
  // Rounds are numbered from 1 with no gaps; the first one missing ends the list.
  for (let round = 1; ; round++) {
    const report = await maybe<JudgeReport>(blobKeys.judgeReport(result.runId, round));
    if (!report) break;
    judgeRounds.push(report);
  }
  const diffBase = new Map<number, unknown>();
  let base = await maybe<Draft>(blobKeys.attemptDraft(result.runId, 0));
  for (const a of result.attemptsDetail) {
    diffBase.set(a.attempt, base);
    if (a.isBest && a.draftRef) base = (await maybe<Draft>(a.draftRef)) ?? base;
  }
  const source = await deps.blobs.get(blobKeys.source(result.runId)).catch(() => undefined);
  return {
    initialRepairs: initial?.repairs ?? [],
    judgeRounds,
    diffBase,
    ...(source !== undefined && { source }),
  };
}

/** Text on one line, cut with an ellipsis when longer than `max` characters. */
const oneLine = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/**
 * A judge round's grounding, field by field: the draft's value and the source's words side by side
 * (the quote that supports it, or for an unsupported field the source near the closest match), each
 * quote with where it occurs in the source or why it does not count.
 */
function groundingLines(r: JudgeReport, source: string | undefined): string[] {
  const g = r.grounding;
  if (!g) return [];
  const unsupported = g.fields.filter((f) => f.status === "unsupported").length;
  const seen = g.split
    ? `passages ${g.passages.map((p) => `${p.id} [${p.start}–${p.end}]`).join(", ")} of a ${g.sourceChars}-character source`
    : `the whole source (${g.sourceChars} characters)`;
  const lines = [
    `  grounding: ${unsupported} of ${g.fields.length} field(s) unsupported; the judge saw ${seen}`,
  ];
  for (const f of g.fields) {
    lines.push(
      `    ${f.status === "supported" ? "supported  " : "UNSUPPORTED"} ${f.path}${f.claim ? ` — ${oneLine(f.claim, 100)}` : ""}`,
    );
    lines.push(`      draft:  "${oneLine(f.value, 110)}"`);
    const valid = f.quotes.find((q) => !q.problem);
    if (valid) lines.push(`      source: "${oneLine(valid.text, 110)}" [${valid.start}–${valid.end}]`);
    else if (f.match && source !== undefined)
      lines.push(
        `      source: "${oneLine(source.slice(f.match.start, f.match.end), 110)}" [${f.match.start}–${f.match.end}] (the closest match)`,
      );
    for (const q of f.quotes) {
      if (q === valid) continue;
      const where =
        q.problem === "too_short"
          ? `too short to carry the claim [${q.start}–${q.end}]`
          : q.problem === "quotes_draft"
            ? "quotes the draft, not the source"
            : q.problem === "not_in_source"
              ? "does not occur in the source"
              : `[${q.start}–${q.end}]`;
      lines.push(`      quote:  "${oneLine(q.text, 90)}" — ${where}`);
    }
  }
  return lines;
}

/** A value as JSON, cut with an ellipsis when longer than `max` characters. */
function clip(value: unknown, max = VALUE_CHARS): string {
  const text = value === undefined ? "(none)" : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The value a JSON pointer names in a document; undefined when it names nothing. */
const listViolations = (vs: readonly Violation[]) =>
  vs.length === 0
    ? ["    (none)"]
    : vs.map((v) => `    ${v.severity.padEnd(7)} ${v.ruleId}${v.path ? ` ${v.path}` : ""}: ${v.message}`);

const repairLines = (repairs: readonly Repair[]) =>
  repairs.map(
    (r) =>
      `    ${r.action} ${r.path}: ${clip(r.before)} → ${r.action === "remove" ? "(removed)" : clip(r.after)} (${r.ruleId}: ${r.message})`,
  );

const violationKey = (v: Violation) => `${v.ruleId}\u0000${v.path ?? ""}`;

/** Errors after an attempt that were not among the ones it set out to fix. */
function newErrors(a: AttemptRecord): number {
  const before = new Set(a.inputViolations.map(violationKey));
  return a.outputViolations.filter((v) => v.severity === "error" && !before.has(violationKey(v))).length;
}

/** Characters of a shared beginning kept before the point where two strings differ. */
const CONTEXT_CHARS = 16;

/**
 * Old and new values side by side. Two strings that share a long beginning are both shown from
 * just before where they differ, so the change itself is on screen; each is cut with an ellipsis.
 */
function changeText(old: unknown, now: unknown): string {
  if (typeof old === "string" && typeof now === "string") {
    const a = JSON.stringify(old);
    const b = JSON.stringify(now);
    let same = 0;
    while (same < a.length && same < b.length && a[same] === b[same]) same++;
    const from = same > CONTEXT_CHARS * 2 ? same - CONTEXT_CHARS : 0;
    const cut = (text: string) => {
      const shown = from > 0 ? `…${text.slice(from)}` : text;
      return shown.length > VALUE_CHARS ? `${shown.slice(0, VALUE_CHARS - 1)}…` : shown;
    };
    return `${cut(a)} → ${cut(b)}`;
  }
  return `${clip(old)} → ${clip(now)}`;
}

function diffLines(a: AttemptRecord, base: unknown): string[] {
  if (a.diffRef) return [`  diff: stored whole at ${a.diffRef}`];
  if (a.diff.length === 0) return [];
  return [
    "  diff:",
    ...a.diff.map((op) => {
      const path = String(op.path);
      if (op.op === "add") return `    add ${path}: (absent) → ${clip(op.value)}`;
      if (op.op === "remove") return `    remove ${path}: ${clip(valueAt(base, path))} → (removed)`;
      return `    ${String(op.op)} ${path}: ${changeText(valueAt(base, path), op.value)}`;
    }),
  ];
}

const tokenLine = (t: TokenUsage) =>
  `in ${t.input} / out ${t.output} / cache read ${t.cacheRead} / cache write ${t.cacheWrite}`;

function attemptBlock(a: AttemptRecord, base: unknown): string[] {
  const total = a.tokens.input + a.tokens.output + a.tokens.cacheRead + a.tokens.cacheWrite;
  const fresh = newErrors(a);
  const lines = [
    `Attempt ${a.attempt} (${a.phase}) at ${a.at}: ${a.errorCount} error(s) left, score ${a.score.toFixed(3)}${a.isBest ? ", new best" : ", rolled back"}`,
    `  model ${a.model}, ${a.latencyMs} ms, tokens ${tokenLine(a.tokens)}, ${costText(a.costUsd, total, [a.model])}`,
  ];
  if (a.failure) lines.push(`  answer not used: ${a.failure}`);
  if (a.analysis) lines.push(`  analysis: ${a.analysis}`);
  if (a.fixDescription) lines.push(`  fix: ${a.fixDescription}`);
  lines.push(
    `  resolved ${a.resolvedCount}, remaining ${Math.max(a.remainingCount - fresh, 0)}, new ${fresh}`,
  );
  if (a.repairs.length) lines.push("  repaired:", ...repairLines(a.repairs));
  lines.push(...diffLines(a, base));
  lines.push("  violations after:", ...listViolations(a.outputViolations));
  return lines;
}

interface RawFinding {
  ruleId?: string;
  severity?: string;
  confidence?: number;
  message?: string;
  path?: string;
}

function judgeBlock(r: JudgeReport, source?: string): string[] {
  const total = r.usage.input + r.usage.output + r.usage.cacheRead + r.usage.cacheWrite;
  const lines = [
    `Judge round ${r.round} at ${r.at}: ${r.blocking.length} blocking finding(s) (threshold ${r.threshold})`,
    `  model ${r.model}, tokens ${tokenLine(r.usage)}, ${costText(r.costUsd, total, [r.model])}`,
  ];
  if (r.failure) lines.push(`  no usable verdict: ${r.failure}`);
  lines.push(...groundingLines(r, source));
  const findings = r.findings as RawFinding[];
  if (findings.length === 0 && !r.failure) lines.push("  findings: (none)");
  else if (findings.length) lines.push("  findings:");
  for (const f of findings) {
    const critical = f.severity === "error" && (f.confidence ?? 0) >= r.threshold;
    const gate = !critical
      ? "not blocking"
      : r.accepted.includes(f.ruleId ?? "")
        ? "accepted by the draft, not blocking"
        : "blocking";
    lines.push(
      `    ${String(f.severity).padEnd(7)} ${f.ruleId}${f.path ? ` ${f.path}` : ""} (confidence ${f.confidence}, ${gate}): ${f.message}`,
    );
  }
  return lines;
}

interface Spend {
  tokens: TokenUsage;
  cost: number;
  models: string[];
}

function spend(parts: readonly { tokens: Spend["tokens"]; cost: number; model: string }[]): Spend {
  const s: Spend = { tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, cost: 0, models: [] };
  for (const p of parts) {
    s.tokens.input += p.tokens.input;
    s.tokens.output += p.tokens.output;
    s.tokens.cacheRead += p.tokens.cacheRead;
    s.tokens.cacheWrite += p.tokens.cacheWrite;
    s.cost += p.cost;
    s.models.push(p.model);
  }
  return s;
}

function spendLine(purpose: string, s: Spend): string {
  if (s.models.length === 0) return `  ${purpose}: no calls`;
  const total = s.tokens.input + s.tokens.output + s.tokens.cacheRead + s.tokens.cacheWrite;
  return `  ${purpose}: ${total} tokens (${tokenLine(s.tokens)}), ${costText(s.cost, total, s.models)}`;
}

/**
 * A stack's waiting run: how deep its model queue is. No position (a standard queue keeps no order);
 * the oldest message's age is CloudWatch's, so the run's own wait is said as its lower bound.
 */
function queueLine(queue: QueueDepth, ageSeconds: number): string {
  const which = `λ ${queue.name}'s queue`;
  if (queue.depth === null) return `Queue: ${which}: depth unknown (${queue.unknown})`;
  return `Queue: ${which} holds about ${queue.depth} (${queue.waiting} waiting for a slot, ${queue.inFlight} in a model call; in no order); its oldest has waited at least ${ageSeconds} s`;
}

const statusText = (run: RunRecord) => `${run.status}${run.reason ? ` (${run.reason})` : ""}`;

/** `redraft show`: the run's outcome, spend by purpose, attempts and judge rounds in order, and the execution path. */
export function timeline(
  result: RunResult,
  run: RunRecord,
  evidence: RunEvidence,
  execution: ExecutionSummary | undefined,
  /** The run waits for a model slot (local/waiting.ts): since when, and for how long so far. */
  waiting?: { since: string; ageSeconds: number; queue?: QueueDepth },
): string {
  const correct = spend(
    result.attemptsDetail.map((a) => ({ tokens: a.tokens, cost: a.costUsd, model: a.model })),
  );
  const judge = spend(
    evidence.judgeRounds.map((r) => ({ tokens: r.usage, cost: r.costUsd, model: r.model })),
  );
  const out = [
    `Run ${run.runId} — draft ${run.draftId} (${run.kind})`,
    `Status: ${statusText(run)}${run.message ? ` — ${run.message}` : ""}`,
    ...(waiting ? [`Waiting: for a model slot since ${waiting.since} (${waiting.ageSeconds} s)`] : []),
    ...(waiting?.queue ? [queueLine(waiting.queue, waiting.ageSeconds)] : []),
    ...(explainReason(run.reason) ? [`Why: ${explainReason(run.reason)}`] : []),
    `Errors per attempt: ${run.violationsPerAttempt.join(" → ") || "-"}`,
    `Tokens: ${run.tokens.total}; cost ${costText(run.costUsd, run.tokens.total, [...correct.models, ...judge.models])}`,
    spendLine("correct", correct),
    spendLine("judge", judge),
  ];
  if (run.circuitBreakerRules.length)
    out.push(`Circuit breaker tripped by: ${run.circuitBreakerRules.join(", ")}`);
  if (run.resolvedRules.length) out.push(`Resolved rules: ${run.resolvedRules.join(", ")}`);
  if (run.persistentRules.length) out.push(`Persistent rules: ${run.persistentRules.join(", ")}`);
  if (run.overrides?.length) out.push(`Judge overrides: ${run.overrides.join(", ")}`);
  if (run.parentRunId) out.push(`Edited from run: ${run.parentRunId}`);
  if (evidence.source !== undefined)
    out.push(`Source: ${evidence.source.length} characters: "${oneLine(evidence.source, 120)}"`);
  if (run.review)
    out.push(
      `Review: ${run.review.decision} at ${run.review.at}${run.review.note ? ` — ${run.review.note}` : ""}`,
    );
  out.push("", "Attempt 0 (initial validation):");
  if (evidence.initialRepairs.length) out.push("  repaired:", ...repairLines(evidence.initialRepairs));
  out.push("  violations:", ...listViolations(result.initialViolations));

  // Attempts and judge rounds interleave (judge → logic correction → judge): shown in the order they happened.
  const blocks = [
    ...result.attemptsDetail.map((a) => ({
      at: a.at,
      lines: attemptBlock(a, evidence.diffBase.get(a.attempt)),
    })),
    ...evidence.judgeRounds.map((r) => ({ at: r.at, lines: judgeBlock(r, evidence.source) })),
  ].sort((a, b) => a.at.localeCompare(b.at));
  for (const block of blocks) out.push("", ...block.lines);

  out.push("", "Final violations:", ...listViolations(result.finalViolations));
  out.push("", "Transitions:", ...run.transitions.map((t) => `  ${t.at}  ${t.status}`));
  if (execution) {
    // The execution succeeds whenever the state machine reached an end it knows, a review included:
    // the heading names the run's outcome, and the execution's own status only when it failed.
    const failed = execution.status === "SUCCEEDED" ? "" : `; the execution ${execution.status}`;
    out.push("", `Execution path (run ${statusText(run)}${failed}):`);
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
