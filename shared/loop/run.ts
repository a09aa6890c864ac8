import { randomUUID } from "node:crypto";
import type { Draft, ValidationReport, Violation } from "../draft.js";
import { isTransientModelError, ModelError } from "../errors.js";
import type { AttemptRecord, RunStatus, StopReason, TokenTotals } from "../store/types.js";
import { blobKeys } from "./keys.js";
import type { LoopState } from "./state.js";
import {
  correctStep,
  countAttempt,
  type JudgeReport,
  judgeStep,
  type LoopDeps,
  loadJson,
  recordFailure,
  revalidateStep,
  validateStep,
} from "./steps.js";

/** Where published outcome events go: EventBridge in the cloud, a log file locally. */
export interface EventSink {
  publish(
    detailType: "Draft Validated" | "Draft Needs Review",
    detail: Record<string, unknown>,
  ): Promise<void>;
}

/** What `correctDraft` returns and `redraft run --json` prints, one per draft. */
export interface RunResult {
  draftId: string;
  runId: string;
  status: RunStatus;
  /** Why the run stopped where it did; null for a validated draft. */
  reason: StopReason | null;
  message?: string;
  /** Corrections made, both phases together. */
  attempts: number;
  logicAttempts: number;
  initialViolations: Violation[];
  finalViolations: Violation[];
  /** Error-severity violations after attempt i; i = 0 is the initial validation. */
  violationsPerAttempt: number[];
  circuitBreakerRules: string[];
  tokens: TokenTotals;
  costUsd: number;
  /** The best draft (not the last one); null when the input was rejected. */
  finalDraft: Draft | null;
  attemptsDetail: AttemptRecord[];
}

/**
 * The in-process mirror of the state machine's Choice states (HasErrors? and NextStep?), in the
 * same order: validated, circuit breaker, stuck, budget, attempts used up; otherwise correct again.
 */
export function route(state: LoopState): LoopState {
  if (state.decision === "rejected" || state.decision === "duplicate") return state;
  const stop = (decision: LoopState["decision"], reason?: StopReason): LoopState => {
    const { reason: _old, ...rest } = state;
    return reason ? { ...rest, decision, reason } : { ...rest, decision };
  };
  if (state.verdict.errors === 0)
    return state.judge.enabled && state.modelAvailable ? stop("judge") : stop("validated");
  if (!state.modelAvailable) return stop("needs_manual_review", "no_model");
  if (state.verdict.breakerTripped) return stop("needs_manual_review", "circuit_breaker");
  if (state.verdict.stuck) return stop("needs_manual_review", "stuck");
  if (state.verdict.budgetExhausted) return stop("needs_manual_review", "budget_exhausted");
  if (state.counters.execution >= state.limits.maxAttempts)
    return stop("needs_manual_review", "max_attempts");
  return stop("correct");
}

/** The in-process mirror of the HasCriticalFindings? Choice after the Judge state. */
export function routeAfterJudge(state: LoopState): LoopState {
  const { reason: _old, ...rest } = state;
  if (state.judge.failed) return { ...rest, decision: "needs_manual_review", reason: "logic_unresolved" };
  if (state.judge.blocking === 0) return { ...rest, decision: "validated" };
  if (state.verdict.budgetExhausted)
    return { ...rest, decision: "needs_manual_review", reason: "budget_exhausted" };
  if (state.counters.logic >= state.limits.maxLogicAttempts)
    return { ...rest, decision: "needs_manual_review", reason: "logic_unresolved" };
  return { ...rest, decision: "correct_logic" };
}

/**
 * The in-process mirror of PublishResult + MarkValidated / MarkNeedsReview + the outcome event:
 * the best draft is copied under `results/`, the run gets its final status.
 */
export async function finishRun(state: LoopState, deps: LoopDeps & { events?: EventSink }): Promise<void> {
  if (state.decision !== "validated" && state.decision !== "needs_manual_review") return;
  const at = (deps.clock?.() ?? new Date()).toISOString();
  const resultRef = blobKeys.result(state.draftId, state.runId);
  await deps.blobs.put(resultRef, await deps.blobs.get(state.best.draftRef));
  const fields = state.reason
    ? { reason: state.reason, finalRef: state.best.draftRef, resultRef }
    : { finalRef: state.best.draftRef, resultRef };
  await deps.runs.setStatus(state.runId, state.decision, at, fields);
  await deps.events?.publish(state.decision === "validated" ? "Draft Validated" : "Draft Needs Review", {
    runId: state.runId,
    draftId: state.draftId,
    kind: state.kind,
    status: state.decision,
    reason: state.reason ?? null,
    resultRef,
  });
}

/** Reads a run back from the stores as a RunResult: the same view in-process, locally and in the cloud. */
export async function buildRunResult(
  runId: string,
  deps: Pick<LoopDeps, "runs" | "blobs">,
): Promise<RunResult> {
  const run = await deps.runs.getRun(runId);
  if (!run) throw new Error(`run ${runId} not found`);
  const attemptsDetail = await deps.runs.listAttempts(runId);
  const bestAttempt = attemptsDetail.filter((a) => a.isBest).at(-1)?.attempt ?? 0;
  const hasChecks = run.status !== "rejected";
  // A run that failed before its first check has no reports: the result says so by their absence.
  const maybe = <T>(key: string) => loadJson<T>(deps.blobs, key).catch(() => undefined);
  const [initial, final, finalDraft] = hasChecks
    ? await Promise.all([
        maybe<ValidationReport>(blobKeys.attemptReport(runId, 0)),
        maybe<ValidationReport>(blobKeys.attemptReport(runId, bestAttempt)),
        maybe<Draft>(run.finalRef ?? blobKeys.attemptDraft(runId, 0)),
      ])
    : [undefined, undefined, null];
  // The judge's findings are part of the final picture: blocking ones as errors, the rest as warnings.
  const judged = run.judgeRef ? await loadJson<JudgeReport>(deps.blobs, run.judgeRef) : undefined;
  const judgeViolations = judged ? [...judged.blocking, ...judged.kept] : [];
  const result: RunResult = {
    draftId: run.draftId,
    runId,
    status: run.status,
    reason: run.reason ?? null,
    attempts: run.attempts,
    logicAttempts: run.logicAttempts,
    initialViolations: initial?.violations ?? [],
    finalViolations: [...(final?.violations ?? []), ...judgeViolations],
    violationsPerAttempt: run.violationsPerAttempt,
    circuitBreakerRules: run.circuitBreakerRules,
    tokens: run.tokens,
    costUsd: run.costUsd,
    finalDraft: finalDraft ?? null,
    attemptsDetail,
  };
  if (run.message) result.message = run.message;
  return result;
}

export interface CorrectDraftOptions {
  runId?: string;
  events?: EventSink;
  /** Transient model errors are retried this many times (the state machine's Retry, in-process). */
  transientRetries?: number;
  retryBaseMs?: number;
  parentRunId?: string;
  submissionId?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Backoff with full jitter, as the state machine's Retry does. */
async function withRetries<T>(fn: () => Promise<T>, retries: number, baseMs: number): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (error) {
      if (i >= retries || !isTransientModelError(error)) throw error;
      await sleep(Math.random() * baseMs * 2 ** i);
    }
  }
}

/**
 * Corrects one draft in-process by composing the same steps the state machine chains:
 * validate → (correct → count → revalidate → route)* → finish. Returns the run result; a
 * model or system failure ends the run as `failed` with the reason recorded, not as an exception.
 */
export async function correctDraft(draft: unknown, deps: LoopDeps & CorrectDraftOptions): Promise<RunResult> {
  const runId = deps.runId ?? randomUUID();
  const input = {
    runId,
    draft,
    ...(deps.parentRunId && { parentRunId: deps.parentRunId }),
    ...(deps.submissionId && { submissionId: deps.submissionId }),
  };
  let state: LoopState | undefined;
  try {
    state = route(await validateStep(input, deps));
    const retried = <T>(fn: () => Promise<T>) =>
      withRetries(fn, deps.transientRetries ?? 3, deps.retryBaseMs ?? 1000);
    while (state.decision === "correct" || state.decision === "judge" || state.decision === "correct_logic") {
      const current: LoopState = state;
      if (current.decision === "judge") {
        state = routeAfterJudge(await retried(() => judgeStep(current, deps)));
        continue;
      }
      state = await retried(() => correctStep(current, deps));
      state = countAttempt(state);
      state = route(await revalidateStep(state, deps));
    }
    await finishRun(state, deps);
  } catch (error) {
    const at = (deps.clock?.() ?? new Date()).toISOString();
    const reason: StopReason = error instanceof ModelError ? "model_error" : "system_error";
    const message = `${(error as Error).name}: ${(error as Error).message}`;
    await recordFailure(deps, {
      runId,
      draft,
      at,
      reason,
      message,
      ...(state?.best.draftRef && { finalRef: state.best.draftRef }),
    });
  }
  return buildRunResult(runId, deps);
}
