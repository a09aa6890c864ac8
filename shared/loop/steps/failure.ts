import { newRunRecord, type StopReason } from "../../store/types.js";
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
