import type { Draft, Repair, ValidationReport, Violation } from "../draft.js";
import { blobKeys } from "../store/bucket-layout.js";
import type { AttemptRecord, RunRecord, RunStatus, StopReason, TokenTotals } from "../store/types.js";
import { type LoopDeps, loadJson } from "./steps/deps.js";
import type { JudgeReport } from "./steps/judge.js";

/** What `correctDraft` (local/in-process.ts) returns and `redraft run --json` prints, one per draft. */
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
  /** What the first check found in the draft as submitted, before deterministic repair. */
  initialViolations: Violation[];
  finalViolations: Violation[];
  /** Deterministic repairs behind the final draft: the first validation's, then the best attempt's. */
  repairs: Repair[];
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
 * Reads a run back from the stores as a RunResult: the same view in-process, locally and in the
 * cloud. `known`: the run record as the caller just read it, which is not read again.
 */
export async function buildRunResult(
  runId: string,
  deps: Pick<LoopDeps, "runs" | "blobs">,
  known?: RunRecord,
): Promise<RunResult> {
  const run = known ?? (await deps.runs.getRun(runId));
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
    initialViolations: initial?.beforeRepair ?? initial?.violations ?? [],
    finalViolations: [...(final?.violations ?? []), ...judgeViolations],
    repairs: [...(initial?.repairs ?? []), ...(bestAttempt > 0 ? (final?.repairs ?? []) : [])],
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
