import fastJsonPatch from "fast-json-patch";
import type { Draft, ValidationReport, Violation } from "../../draft.js";
import { inspectWithPackAsync } from "../../engine.js";
import { SelfCorrectionError } from "../../errors.js";
import { totalTokens } from "../../model/types.js";
import { SchemaTooSlowError } from "../../packs/json/regex-guard.js";
import { blobKeys } from "../../store/bucket-layout.js";
import { type AttemptRecord, addTotals } from "../../store/types.js";
import { packFor } from "../../validate.js";
import { attemptsMade, type LoopState } from "../state.js";
import { nextVerdict } from "../verdict.js";
import { type LoopDeps, loadJson } from "./deps.js";
import { failOnPackError } from "./failure.js";
import { attemptHints, keepHints } from "./hints.js";
import type { JudgeReport } from "./judge.js";
import { errorRuleIds, errorsOf } from "./violations.js";

/** Attempt diffs above this size go to the blob store, keeping attempt records far under 400 KB. */
const MAX_INLINE_DIFF_BYTES = 64 * 1024;
/**
 * Violations and repairs an attempt record lists inline; the rest stay in the attempt's report
 * blob and the record says how many it left out. The budget keeps records well under DynamoDB's
 * 400 KB whatever the messages hold.
 */
const MAX_RECORD_LIST = 100;
const MAX_RECORD_BYTES = 300 * 1024;

/** Lists as many of the attempt's violations and repairs inline as keep the record under MAX_RECORD_BYTES. */
function fitRecord(
  record: AttemptRecord,
  input: Violation[],
  output: Violation[],
  repairs: AttemptRecord["repairs"],
): void {
  for (const cap of [MAX_RECORD_LIST, 30, 10, 0]) {
    record.inputViolations = input.slice(0, cap);
    record.outputViolations = output.slice(0, cap);
    record.repairs = repairs.slice(0, cap);
    if (Buffer.byteLength(JSON.stringify(record)) <= MAX_RECORD_BYTES) break;
  }
  const omitted = {
    inputViolations: input.length - record.inputViolations.length,
    outputViolations: output.length - record.outputViolations.length,
    repairs: repairs.length - record.repairs.length,
  };
  if (omitted.inputViolations + omitted.outputViolations + omitted.repairs > 0) record.omitted = omitted;
}

/**
 * The candidate repaired and checked against its pack. A check the schema's pattern guard stopped
 * (`too_slow`: the model's new strings, not the draft's schema, made a pattern too slow) leaves the
 * answer unusable, as an unparseable one is: the best draft stays and the loop goes on, instead of
 * the whole run failing on a candidate.
 */
async function checkCandidate(
  candidateRef: string,
  deps: LoopDeps,
): Promise<{ draft: Draft; report: ValidationReport } | { tooSlow: string }> {
  const candidate = await loadJson<Draft>(deps.blobs, candidateRef);
  const resolved = await packFor(candidate, deps.registry);
  try {
    return await inspectWithPackAsync(resolved, candidate);
  } catch (error) {
    if (error instanceof SchemaTooSlowError) return { tooSlow: error.message };
    throw error;
  }
}

const violationKey = (v: Violation) => `${v.ruleId}\u0000${v.path ?? ""}`;

/**
 * Step 3 (λ revalidate): repair and fully re-validate the answer, record the attempt exactly once,
 * keep the best so far, and compute the verdict the NextStep Choice routes on.
 */
export async function revalidateStep(state: LoopState, deps: LoopDeps): Promise<LoopState> {
  // A pack's code throwing ends the run failed / pack_error (failure.ts), not system_error.
  return failOnPackError(state.runId, deps, () => revalidateWork(state, deps));
}

async function revalidateWork(state: LoopState, deps: LoopDeps): Promise<LoopState> {
  const pending = state.pending;
  if (!pending)
    throw new SelfCorrectionError("revalidate called without a pending answer", "no_pending_answer");
  const n = pending.attempt;
  const [bestDraft, bestReport] = await Promise.all([
    loadJson<Draft>(deps.blobs, state.best.draftRef),
    loadJson<ValidationReport>(deps.blobs, state.best.reportRef),
  ]);
  let draft = bestDraft;
  let report = bestReport;
  let draftRef: string | undefined;
  let reportRef = state.best.reportRef;
  let failure = pending.failure;
  const checked = pending.candidateRef ? await checkCandidate(pending.candidateRef, deps) : undefined;
  if (checked && "tooSlow" in checked) failure = checked.tooSlow;
  else if (checked) {
    ({ draft, report } = checked);
    draftRef = blobKeys.attemptDraft(state.runId, n);
    reportRef = blobKeys.attemptReport(state.runId, n);
    await deps.blobs.put(draftRef, JSON.stringify(draft));
    await deps.blobs.put(reportRef, JSON.stringify(report));
  }
  const errors = report.counts.error;
  const logic = pending.phase === "logic";
  // A logic fix answers the judge, not the rules: it is kept unless it breaks a mechanical check.
  const beats =
    draftRef !== undefined &&
    (logic
      ? errors <= state.best.errors
      : errors < state.best.errors || (errors === state.best.errors && report.score > state.best.score));

  const judged =
    logic && state.judge.reportRef
      ? await loadJson<JudgeReport>(deps.blobs, state.judge.reportRef)
      : undefined;
  const inputErrors = judged ? judged.blocking : errorsOf(bestReport);
  const outputKeys = new Set(errorsOf(report).map(violationKey));
  // A logic attempt's findings are resolved or not by the next judge round, not by the rules.
  const resolvedCount = judged ? 0 : inputErrors.filter((v) => !outputKeys.has(violationKey(v))).length;
  let diff = draftRef
    ? (fastJsonPatch.compare(bestDraft, draft) as unknown as Record<string, unknown>[])
    : [];
  let diffRef: string | undefined;
  const diffJson = JSON.stringify(diff);
  if (Buffer.byteLength(diffJson) > MAX_INLINE_DIFF_BYTES) {
    diffRef = blobKeys.attemptDiff(state.runId, n);
    await deps.blobs.put(diffRef, diffJson);
    diff = [];
  }
  const usage = { ...pending.usage, total: totalTokens(pending.usage) };
  const repairs = draftRef ? report.repairs : [];
  const record: AttemptRecord = {
    runId: state.runId,
    attempt: n,
    phase: pending.phase,
    inputViolations: inputErrors,
    outputViolations: report.violations,
    resolvedCount,
    remainingCount: errors,
    repairs,
    reportRef,
    diff,
    analysis: pending.analysis,
    fixDescription: pending.fixDescription,
    tokens: pending.usage,
    costUsd: pending.costUsd,
    model: pending.model,
    latencyMs: pending.latencyMs,
    at: pending.at,
    errorCount: errors,
    score: report.score,
    rolledBack: !beats,
    isBest: beats,
  };
  if (diffRef) record.diffRef = diffRef;
  fitRecord(record, inputErrors, report.violations, repairs);
  if (draftRef) record.draftRef = draftRef;
  if (failure) record.failure = failure;
  if (judged) record.personas = judged.personas.map((p) => `${p.name}: ${p.constraints.join("; ")}`);
  if (pending.outputMode) record.outputMode = pending.outputMode;
  if (pending.patch) record.patch = pending.patch;
  if (pending.refusedPaths) record.refusedPaths = pending.refusedPaths;
  // Both writes are conditional on the attempt number: a retried task neither duplicates nor double-counts.
  const recorded = await deps.runs.putAttempt(record);
  await deps.runs.addUsage(state.runId, n, usage, pending.costUsd);
  if (recorded) deps.onAttemptRecorded?.(record);

  const best =
    beats && draftRef
      ? { attempt: n, draftRef, reportRef, errors, score: report.score, repairs: report.repairs.length }
      : state.best;
  const bestReportNow = beats ? report : bestReport;
  const hints = keepHints([
    ...state.hints,
    ...attemptHints(n, failure, inputErrors, report, beats, state.best.attempt),
    // A patch's changes to locked fields were refused: the next answer should leave them alone.
    ...(pending.refusedPaths?.length
      ? [
          `Attempt ${n}: changes to locked fields were refused: ${pending.refusedPaths.slice(0, 5).join(", ")}.`,
        ]
      : []),
  ]);

  const tokens = addTotals(state.tokens, usage);
  const cost = state.costUsd + pending.costUsd;
  const bestRules = new Set(errorRuleIds(bestReportNow));
  const { limits } = state;
  // The stop rules are one pure function; this step only records what it decides.
  const next = nextVerdict(
    state,
    {
      phase: pending.phase,
      usable: draftRef !== undefined,
      errorRules: errorRuleIds(report),
      beats,
      // CountExecutionAttempt has already counted this attempt.
      attemptsLeft: Math.max(0, limits.maxAttempts - state.counters.execution),
    },
    {
      errors: best.errors,
      warnings: bestReportNow.counts.warning,
      score: best.score,
      errorRules: [...bestRules],
    },
    { tokens: tokens.total, costUsd: cost },
    limits,
  );
  const tripped = next.tripped;
  const violationsPerAttempt = [...state.violationsPerAttempt, errors];
  const initial = new Set(state.initialErrorRules);
  await deps.runs.updateRun(state.runId, {
    attempts: attemptsMade(state),
    logicAttempts: state.counters.logic,
    violationsPerAttempt,
    resolvedRules: [...initial].filter((id) => !bestRules.has(id)),
    persistentRules: [...initial].filter((id) => bestRules.has(id)),
    circuitBreakerRules: tripped,
    finalRef: best.draftRef,
    repairs: best.repairs,
  });
  const { pending: _done, ...rest } = state;
  return {
    ...rest,
    decision: "correct",
    // After a logic correction the execution checks ran again; the judge runs again next.
    phase: "execution",
    best,
    ruleFailures: next.ruleFailures,
    sinceBest: next.sinceBest,
    hints,
    tokens,
    costUsd: cost,
    violationsPerAttempt,
    circuitBreakerRules: tripped,
    verdict: next.verdict,
  };
}
