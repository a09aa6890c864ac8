import { PackRuleError } from "../../errors.js";
import { isActiveStatus, newRunRecord, type StopReason } from "../../store/types.js";
import type { LoopDeps } from "./deps.js";
import { guessDraftId } from "./input.js";

/**
 * Records a run as failed, saying why. A run that failed before Validate registered it is created
 * here, so that no failure goes unrecorded (the in-process mirror of RecordFailure).
 */
export async function recordFailure(
  deps: Pick<LoopDeps, "runs">,
  failure: {
    runId: string;
    draft: unknown;
    at: string;
    reason: StopReason;
    message: string;
    finalRef?: string;
  },
): Promise<void> {
  const { runId, at, reason, message } = failure;
  const fields = { reason, message, ...(failure.finalRef && { finalRef: failure.finalRef }) };
  if (await deps.runs.getRun(runId)) {
    await deps.runs.setStatus(runId, "failed", at, fields);
    return;
  }
  const raw = failure.draft as { kind?: unknown } | undefined;
  const run = {
    ...newRunRecord(
      runId,
      guessDraftId(failure.draft, undefined),
      String(raw?.kind ?? "unknown").slice(0, 64),
      at,
    ),
    ...fields,
  };
  await deps.runs.createRun({
    ...run,
    status: "failed",
    transitions: [...run.transitions, { status: "failed", at }],
  });
}

/**
 * `work` (a step), a pack's code throwing in it (PackRuleError) ending the run `failed` with reason
 * `pack_error` and the violation `rule_error` as its message. The error is thrown on: the state
 * machine's failure path then finds the run no longer under way (RecordFailure's conditional write
 * is refused), so the reason stays the pack's, never `system_error`.
 */
export async function failOnPackError<T>(
  runId: string,
  deps: Pick<LoopDeps, "runs" | "clock">,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof PackRuleError) {
      const run = await deps.runs.getRun(runId).catch(() => undefined);
      if (run && isActiveStatus(run.status))
        await deps.runs
          .setStatus(runId, "failed", (deps.clock?.() ?? new Date()).toISOString(), {
            reason: "pack_error",
            message: error.message,
          })
          .catch(() => undefined);
    }
    throw error;
  }
}
