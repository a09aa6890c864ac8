/**
 * What happens to a run whose execution stopped without finishing it: the core of λ finalize
 * (`functions/finalize.ts`), free of the AWS SDK so that tests hand it any store and bus.
 *
 * A run is finished by the state machine's own states (MarkValidated, MarkNeedsReview,
 * RecordFailure…). An execution that times out, is aborted, or fails before RecordFailure could
 * write (a failure before Validate registered the run, a failed RecordFailure) leaves the run in
 * `draft` / `correcting`, or leaves no run at all. This finishes it: status `failed`, a reason
 * naming how the execution ended, a message naming the execution. A `failed` run's content claim
 * is taken over by the next submission of that content (Validate), so this is also what frees a
 * resubmission from being refused as a duplicate.
 */
import * as z from "zod";
import { OutcomeEvents } from "../../contracts/events.js";
import type { StoppedStatus } from "../../contracts/state-names.js";
import {
  ACTIVE_STATUSES,
  newRunRecord,
  type RunRecord,
  type RunStatus,
  type StopReason,
} from "../../shared/store/types.js";

/** The reason each of them is recorded with. */
export const FAILURE_REASONS = {
  FAILED: "execution_failed",
  TIMED_OUT: "timed_out",
  ABORTED: "aborted",
} as const satisfies Record<StoppedStatus, StopReason>;

/** The statuses of a run still under way: only these are finalized; any other is an outcome already. */

/** Room for the error and cause Step Functions reports, under the run item's 400 KB. */
const MESSAGE_MAX = 4096;

/** The stopped execution, as the `Step Functions Execution Status Change` event's detail gives it. */
export interface StoppedExecution {
  executionArn: string;
  /** The execution name: the run id. */
  name: string;
  status: StoppedStatus;
  /** The execution input as a JSON string (absent when the state machine logs no execution data). */
  input?: string | null | undefined;
  error?: string | null | undefined;
  cause?: string | null | undefined;
  /** Epoch milliseconds. */
  stopDate?: number | null | undefined;
}

/** What finalizing needs of the run store; `finishActive` is the conditional write. */
interface FinalizerStore {
  getRun(runId: string): Promise<RunRecord | undefined>;
  createRun(run: RunRecord): Promise<boolean>;
  finishActive(
    runId: string,
    status: RunStatus,
    from: readonly RunStatus[],
    at: string,
    fields: { reason: StopReason; message: string },
  ): Promise<boolean>;
}

export interface FinalizerDeps {
  runs: FinalizerStore;
  /** Puts one outcome event on the project's bus. */
  announce(detailType: string, detail: Record<string, unknown>): Promise<void>;
  /** ISO time, used when the event carries no stop date. */
  now(): string;
}

/** `failed`: an active run was failed; `registered`: no run existed, a failed one was created; `untouched`: it had an outcome. */
type FinalizeAction = "failed" | "registered" | "untouched";

export interface Finalization {
  action: FinalizeAction;
  runId: string;
  /** The run's status after finalizing. */
  status: RunStatus;
  /** Whether `Draft Failed` was put on the bus. */
  announced: boolean;
}

/** What the execution input may say about the draft: enough for a run record, nothing is trusted. */
const InputHintsSchema = z.looseObject({
  draft: z
    .looseObject({ id: z.string().min(1).max(256).optional(), kind: z.string().max(64).optional() })
    .optional(),
  draftRef: z.union([z.string(), z.looseObject({ key: z.string() })]).optional(),
  parentRunId: z.string().optional(),
  rejectWith: z.looseObject({ draftId: z.string().max(256).optional() }).optional(),
});

/** `execution <arn> TIMED_OUT: <error>: <cause>`, cut to what a run item should hold. */
function failureMessage(execution: StoppedExecution): string {
  const detail = [execution.error, execution.cause].filter((part) => part).join(": ");
  const message = `execution ${execution.executionArn} ${execution.status}${detail ? `: ${detail}` : ""}`;
  return message.length > MESSAGE_MAX ? `${message.slice(0, MESSAGE_MAX - 1)}…` : message;
}

/**
 * A failed run for an execution that stopped before Validate registered one: run id = execution
 * name, draft id and kind from the input when it carries them (else `unknown`).
 */
function unregisteredRun(
  execution: StoppedExecution,
  at: string,
  fields: { reason: StopReason; message: string },
): RunRecord {
  let hints: z.infer<typeof InputHintsSchema> = {};
  try {
    const parsed = InputHintsSchema.safeParse(JSON.parse(execution.input ?? "{}"));
    if (parsed.success) hints = parsed.data;
  } catch {
    // An unreadable input names no draft: the record says `unknown`.
  }
  const uploadRef = typeof hints.draftRef === "string" ? hints.draftRef : hints.draftRef?.key;
  const draftId = hints.draft?.id ?? hints.rejectWith?.draftId ?? "unknown";
  return {
    ...newRunRecord(execution.name, draftId, hints.draft?.kind ?? "unknown", at, "failed"),
    ...fields,
    ...(uploadRef && { uploadRef }),
    ...(hints.parentRunId && { parentRunId: hints.parentRunId }),
  };
}

/**
 * Finishes the run of a stopped execution, once: an active run (`draft`, `correcting`) becomes
 * `failed` by a conditional write, a missing run is created `failed`, and a run with an outcome
 * is left as it is. Every run that ends `failed` is announced as `Draft Failed` — also one that
 * RecordFailure failed, which the state machine does not announce, and one a previous delivery of
 * this event failed but could not announce (EventBridge and Lambda retry; events are at least once).
 */
export async function finalizeExecution(
  execution: StoppedExecution,
  deps: FinalizerDeps,
): Promise<Finalization> {
  const runId = execution.name;
  const at = execution.stopDate ? new Date(execution.stopDate).toISOString() : deps.now();
  const fields = { reason: FAILURE_REASONS[execution.status], message: failureMessage(execution) };
  const failActive = () => deps.runs.finishActive(runId, "failed", ACTIVE_STATUSES, at, fields);

  let action: FinalizeAction = "untouched";
  if (await failActive()) action = "failed";
  else if (!(await deps.runs.getRun(runId))) {
    // Validate may register the run between the two reads (a Lambda outlives an aborted execution).
    if (await deps.runs.createRun(unregisteredRun(execution, at, fields))) action = "registered";
    else if (await failActive()) action = "failed";
  }

  const run = await deps.runs.getRun(runId);
  const status = run?.status ?? "failed";
  if (status !== "failed") return { action, runId, status, announced: false };
  await deps.announce(OutcomeEvents.Failed, {
    runId,
    draftId: run?.draftId ?? "unknown",
    kind: run?.kind ?? "unknown",
    status,
    reason: run?.reason ?? fields.reason,
    ...(run?.message && { message: run.message }),
    executionArn: execution.executionArn,
  });
  return { action, runId, status, announced: true };
}
