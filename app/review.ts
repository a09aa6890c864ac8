import { OutcomeEvents } from "../contracts/events.js";
import type { Draft } from "../shared/draft.js";
import { SelfCorrectionError } from "../shared/errors.js";
import type { RunResult } from "../shared/loop/run.js";
import type { LoopDeps } from "../shared/loop/steps/deps.js";
import {
  type BlobStore,
  REVIEW_CLAIM_MS,
  type Review,
  type RunRecord,
  type RunStatus,
  type RunStore,
} from "../shared/store/types.js";
import type { RunIdLister } from "./ids.js";
import { type DraftSource, splitFile, UsageError } from "./inputs.js";
import { readRegularFile } from "./regular-file.js";
import { resolveRun } from "./run-id.js";
import { decodeText } from "./text-encoding.js";

export const REVIEW_DECISIONS = ["approve", "reject", "edit"] as const;
export type ReviewDecision = (typeof REVIEW_DECISIONS)[number];
const REVIEWABLE: readonly RunStatus[] = ["needs_manual_review", "failed"];

/** What a review needs of a runtime (local, or a deployed stack): its runs, its packs, and its bus. */
export interface ReviewRuntime {
  readonly runs: RunStore;
  /** The runs' reports: an approval reads what still fails in the draft it approves. */
  readonly blobs: BlobStore;
  readonly deps: Pick<LoopDeps, "registry">;
  publish(detailType: string, detail: Record<string, unknown>): Promise<void>;
  /**
   * Puts a decided run's objects back under normal retention (the bucket keeps a run awaiting review
   * until a decision). Absent where nothing expires (a local folder).
   */
  retainDecided?(run: RunRecord): Promise<void>;
  /** Holds a run's objects for review again, when its decision is taken back. Absent where nothing expires. */
  retainAwaiting?(run: RunRecord): Promise<void>;
  /**
   * Whether an approval is also announced as `Draft Validated`, like the loop's own outcomes. A
   * deployment's reviewers may put only `Draft Reviewed` (their policy): false there. @default true
   */
  readonly announcesApproval?: boolean;
}

export interface ReviewOptions {
  file?: string;
  note?: string;
  /**
   * Approve a draft that still has error violations (`--override`, the viewer's checkbox): without
   * it such an approval is refused, and with it the record keeps the rules that still failed.
   */
  override?: boolean;
  reviewer: string;
  /** Starts a run of an edited draft, linked to the run under review. */
  submit: (source: DraftSource, parentRunId: string) => Promise<RunResult>;
  /** Every run id of the store, so that the run may be named by a prefix a table printed. */
  listIds?: RunIdLister;
  /** Where the runs are, for the message when the run is not found. */
  where?: string;
}

/**
 * Another reviewer's decision on the run came first: only one decision counts. A refusal, like a
 * usage error (one line, exit code 2), not a system failure.
 */
class ReviewConflictError extends Error {
  override readonly name = "ReviewConflictError";
}

/** The loser's message: who decided, when, and how, as far as the run says. */
function conflict(run: RunRecord | undefined, runId: string, mine: Review): ReviewConflictError {
  const theirs = run?.review;
  const who = theirs
    ? `${theirs.reviewer ?? "another reviewer"} decided ${theirs.decision} at ${theirs.at}`
    : "another decision came first";
  return new ReviewConflictError(
    `run ${runId} was not ${mine.decision === "edit" ? "edited" : `${mine.decision}d`}: ${who}; the run is ${run?.status ?? "gone"}`,
  );
}

/** The edited draft's run failed (a system fault), so the run under review keeps its place in the queue. */
export class EditedRunFailedError extends Error {
  override readonly name = "EditedRunFailedError";
}

/**
 * An approval of a draft that still has error violations, not said to be meant: a refusal (one line,
 * exit code 2) naming the rules and how to say it is meant.
 */
export class OverrideRequiredError extends Error {
  override readonly name = "OverrideRequiredError";
  constructor(
    run: RunRecord,
    readonly rules: readonly string[],
  ) {
    super(
      `run ${run.runId} was not approved: draft ${run.draftId} still has error violations (${rules.join(", ")}); approving it anyway must be said explicitly (--override, or the viewer's checkbox)`,
    );
  }
}

/** The rules that fail with error severity in the run's best draft (its final check and the judge's blocking findings). */
async function errorRules(runtime: ReviewRuntime, run: RunRecord): Promise<string[]> {
  const { buildRunResult } = await import("../shared/loop/run.js");
  const result = await buildRunResult(run.runId, { runs: runtime.runs, blobs: runtime.blobs }, run);
  return [...new Set(result.finalViolations.filter((v) => v.severity === "error").map((v) => v.ruleId))];
}

/** How long a reviewer may take their approval or rejection back (`redraft review <run> undo`, the viewer's Undo). */
export const UNDO_MS = 5 * 60 * 1000;

/**
 * Takes back an approval or a rejection: only its own reviewer, within {@link UNDO_MS} of the
 * decision, and only while the run is where the decision put it (an edit has started a run of its
 * own: it has moved on). The run goes back to the status and reason the decision found it in,
 * waiting for a decision again; a `Draft Reviewed` with `decision: "undo"` says so on the bus.
 */
export async function undoReview(
  runtime: ReviewRuntime,
  given: string,
  options: Pick<ReviewOptions, "reviewer" | "listIds" | "where"> & { now?: () => Date },
): Promise<ReviewOutcome> {
  const { runId } = await resolveRun(
    runtime.runs,
    given,
    options.where ?? "this data folder",
    options.listIds,
  );
  const run = await runtime.runs.getRun(runId);
  const review = run?.review;
  if (!run || !review) throw new UsageError(`run ${runId} has no decision to take back`);
  const decided =
    (review.decision === "approve" && run.status === "validated" && run.reason === "approved") ||
    (review.decision === "reject" && run.status === "rejected" && run.reason === "rejected_by_reviewer");
  if (!decided)
    throw new UsageError(
      review.decision === "edit"
        ? `run ${runId} was edited into run ${review.newRunId ?? "another"}: an edit cannot be taken back, the new run has moved on`
        : `run ${runId} is ${run.status}: the decision of ${review.at} has been carried no further, or the run has moved on`,
    );
  if ((review.reviewer ?? "") !== options.reviewer)
    throw new UsageError(
      `run ${runId} was decided by ${review.reviewer ?? "another reviewer"}: only they can take the decision back`,
    );
  const now = (options.now ?? (() => new Date()))();
  const age = now.getTime() - Date.parse(review.at);
  if (!(age <= UNDO_MS))
    throw new UsageError(
      `run ${runId}'s decision (${review.decision}, ${review.at}) can no longer be taken back: a decision can be taken back for ${UNDO_MS / 60_000} minutes`,
    );
  if (!review.from)
    throw new UsageError(
      `run ${runId}'s decision was recorded without where it found the run: it cannot be taken back`,
    );
  const at = now.toISOString();
  // The status first: should the process die before the claim is withdrawn, the run waits for
  // review again, held by this reviewer's claim until it goes stale (REVIEW_CLAIM_MS).
  await runtime.runs.setStatus(runId, review.from.status, at, {
    ...(review.from.reason && { reason: review.from.reason }),
  });
  await runtime.runs.releaseReview(runId, review);
  await runtime.retainAwaiting?.(run);
  await runtime.publish(OutcomeEvents.Reviewed, {
    runId,
    draftId: run.draftId,
    kind: run.kind,
    status: review.from.status,
    ...(review.from.reason && { reason: review.from.reason }),
    decision: "undo",
    undid: review.decision,
    reviewer: options.reviewer,
  });
  const after = await runtime.runs.getRun(runId);
  return {
    runId,
    draftId: run.draftId,
    decision: review.decision,
    status: after?.status ?? review.from.status,
    reason: after?.reason ?? null,
    review: after?.review ?? null,
    message: `Run ${runId}: the ${review.decision === "approve" ? "approval" : "rejection"} is taken back; draft ${run.draftId} is ${after?.status ?? review.from.status} again.`,
  };
}

/**
 * Reads an edited draft and checks it as the Validate step would (one draft, a valid Draft, a kind
 * with a pack, the draft under review), so that a bad edit is refused before anything changes.
 */
async function readEdit(
  file: string,
  runtime: ReviewRuntime,
  review: { runId: string; draftId: string },
): Promise<DraftSource> {
  const bytes = await readRegularFile(file).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`${file}: ${error.code === "ENOENT" ? "no such file" : error.message}`);
  });
  // Read as a draft file is (text-encoding.ts): an edit saved in Latin-1 is refused, not approved with U+FFFD.
  const decoded = decodeText(bytes);
  if ("problem" in decoded) throw new UsageError(`${file} ${decoded.problem}`);
  const sources = splitFile(file, decoded.text);
  const [source] = sources;
  if (sources.length !== 1 || source === undefined)
    throw new UsageError(`${file} must hold exactly one draft, not ${sources.length}`);
  let draft: Draft;
  try {
    draft = (await import("../shared/validate.js")).parseDraft(source.body);
    runtime.deps.registry.get(draft.kind);
  } catch (error) {
    if (!(error instanceof SelfCorrectionError)) throw error;
    throw new UsageError(`${source.label}: ${error.message}`, { cause: error });
  }
  if (draft.id !== review.draftId)
    throw new UsageError(
      `${source.label} holds draft "${draft.id}", but run ${review.runId} is of draft "${review.draftId}"`,
    );
  return source;
}

/**
 * A person's decision on a draft waiting for review, or on a failed run. Approve makes it validated, reject closes it,
 * edit starts a new run of the edited draft linked to this one and takes this one off the queue.
 * An edit that is not a valid draft, or whose run is rejected or fails, leaves this run as it was.
 */
export async function reviewRun(
  runtime: ReviewRuntime,
  given: string,
  decision: ReviewDecision,
  options: ReviewOptions,
): Promise<string> {
  return (await reviewDecision(runtime, given, decision, options)).message;
}

/** What `redraft review --json` prints: the run as the decision left it, and the sentence a person reads. */
export interface ReviewOutcome {
  runId: string;
  draftId: string;
  decision: ReviewDecision;
  status: RunStatus;
  reason: string | null;
  review: Review | null;
  /** The run of the edited draft (edit only). */
  newRunId?: string;
  message: string;
}

/** {@link reviewRun}, returning the run under review as the decision left it beside the message. */
export async function reviewDecision(
  runtime: ReviewRuntime,
  given: string,
  decision: ReviewDecision,
  options: ReviewOptions,
): Promise<ReviewOutcome> {
  const { runId } = await resolveRun(
    runtime.runs,
    given,
    options.where ?? "this data folder",
    options.listIds,
  );
  const message = await decide(runtime, runId, decision, options);
  const after = await runtime.runs.getRun(runId);
  return {
    runId,
    draftId: after?.draftId ?? "",
    decision,
    status: after?.status ?? "failed",
    reason: after?.reason ?? null,
    review: after?.review ?? null,
    ...(after?.review?.newRunId && { newRunId: after.review.newRunId }),
    message,
  };
}

async function decide(
  runtime: ReviewRuntime,
  runId: string,
  decision: ReviewDecision,
  options: ReviewOptions,
): Promise<string> {
  const run = await runtime.runs.getRun(runId);
  if (!run) throw new UsageError(`no run ${runId}`);
  // A failed run (a fault, or a process killed mid-run: `interrupted`) is as reviewable as one the
  // loop escalated: a person may accept its draft, close it, or edit it into a new run.
  const at = new Date().toISOString();
  const review: Review = {
    decision,
    reviewer: options.reviewer,
    at,
    ...(options.note && { note: options.note }),
    from: { status: run.status, ...(run.reason && { reason: run.reason }) },
  };
  if (!REVIEWABLE.includes(run.status)) {
    if (run.review) throw conflict(run, runId, review);
    throw new UsageError(
      `run ${runId} is ${run.status}: only a draft that needs review, or whose run failed, can be reviewed`,
    );
  }
  if (decision === "approve") {
    const failing = await errorRules(runtime, run);
    if (failing.length > 0 && !options.override) throw new OverrideRequiredError(run, failing);
    if (failing.length > 0) review.overriddenRules = failing;
  }
  // A bad edit is refused before the run is claimed, so it takes nobody's turn.
  const source =
    decision === "edit"
      ? await readEdit(options.file ?? "", runtime, { runId, draftId: run.draftId })
      : undefined;
  // The claim is the one write two reviewers race on: the loser stops here, having changed nothing.
  const staleBefore = new Date(Date.parse(at) - REVIEW_CLAIM_MS).toISOString();
  if (!(await runtime.runs.claimReview(runId, REVIEWABLE, review, staleBefore)))
    throw conflict(await runtime.runs.getRun(runId), runId, review);
  let decided: { status: RunStatus; reason: "approved" | "rejected_by_reviewer" | "superseded_by_edit" };
  let newRunId: string | undefined;
  let said: string;
  if (decision === "approve") {
    decided = { status: "validated", reason: "approved" };
    said = `Run ${runId} approved: draft ${run.draftId} is validated${review.overriddenRules ? `, its error violations overridden (${review.overriddenRules.join(", ")})` : ""}.`;
  } else if (decision === "reject") {
    decided = { status: "rejected", reason: "rejected_by_reviewer" };
    said = `Run ${runId} rejected: draft ${run.draftId} is closed.`;
  } else {
    const edited = source as DraftSource;
    let result: RunResult;
    try {
      result = await options.submit(edited, runId);
    } catch (error) {
      await runtime.runs.releaseReview(runId, review);
      throw error;
    }
    // The checks above mirror Validate's; should its verdict still differ, this run stays under review.
    if (result.status === "rejected" || result.status === "failed") {
      await runtime.runs.releaseReview(runId, review);
      if (result.status === "rejected")
        throw new UsageError(result.message ?? `${edited.label}: rejected (${result.reason})`);
      throw new EditedRunFailedError(
        `the edited draft's run ${result.runId} failed (${result.reason ?? "no reason recorded"}); run ${runId} is still under review`,
      );
    }
    newRunId = result.runId;
    await runtime.runs.setReview(runId, { ...review, newRunId });
    decided = { status: "rejected", reason: "superseded_by_edit" };
    said = `Edited draft submitted as run ${result.runId} (${result.status}${result.reason ? `, ${result.reason}` : ""}); run ${runId} is superseded.`;
  }
  await runtime.runs.setStatus(runId, decided.status, at, { reason: decided.reason });
  await runtime.retainDecided?.(run);
  const detail = {
    runId,
    draftId: run.draftId,
    kind: run.kind,
    status: decided.status,
    reason: decided.reason,
  };
  await runtime.publish(OutcomeEvents.Reviewed, {
    ...detail,
    decision,
    reviewer: options.reviewer,
    ...(newRunId && { newRunId }),
  });
  // An approved draft is an outcome like the loop's own: consumers of Draft Validated see it too.
  if (decision === "approve" && runtime.announcesApproval !== false)
    await runtime.publish(OutcomeEvents.Validated, detail);
  return said;
}
