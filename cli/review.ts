import { readFile } from "node:fs/promises";
import type { Draft } from "../shared/draft.js";
import { SelfCorrectionError } from "../shared/errors.js";
import type { RunResult } from "../shared/loop/run.js";
import type { LoopDeps } from "../shared/loop/steps.js";
import type { Review, RunStatus, RunStore } from "../shared/store/types.js";
import type { RunIdLister } from "./ids.js";
import { type DraftSource, splitFile, UsageError } from "./inputs.js";
import { resolveRun } from "./run-id.js";

export const REVIEW_DECISIONS = ["approve", "reject", "edit"] as const;
export type ReviewDecision = (typeof REVIEW_DECISIONS)[number];
const REVIEWABLE: readonly RunStatus[] = ["needs_manual_review", "failed"];

/** What a review needs of the local runtime: its runs, its packs, and its event log. */
export interface ReviewRuntime {
  readonly runs: RunStore;
  readonly deps: Pick<LoopDeps, "registry">;
  publish(detailType: string, detail: Record<string, unknown>): Promise<void>;
}

export interface ReviewOptions {
  file?: string;
  note?: string;
  reviewer: string;
  /** Starts a run of an edited draft, linked to the run under review. */
  submit: (source: DraftSource, parentRunId: string) => Promise<RunResult>;
  /** Every run id of the store, so that the run may be named by a prefix a table printed. */
  listIds?: RunIdLister;
  /** Where the runs are, for the message when the run is not found. */
  where?: string;
}

/** The edited draft's run failed (a system fault), so the run under review keeps its place in the queue. */
export class EditedRunFailedError extends Error {
  override readonly name = "EditedRunFailedError";
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
  const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`${file}: ${error.code === "ENOENT" ? "no such file" : error.message}`);
  });
  const sources = splitFile(file, text);
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
  if (!REVIEWABLE.includes(run.status)) {
    throw new UsageError(
      `run ${runId} is ${run.status}: only a draft that needs review, or whose run failed, can be reviewed`,
    );
  }
  const at = new Date().toISOString();
  const review = { decision, reviewer: options.reviewer, at, ...(options.note && { note: options.note }) };
  if (decision === "approve") {
    await runtime.runs.setReview(runId, review);
    await runtime.runs.setStatus(runId, "validated", at, { reason: "approved" });
    await runtime.publish("Draft Validated", {
      runId,
      draftId: run.draftId,
      kind: run.kind,
      status: "validated",
      reason: "approved",
    });
    return `Run ${runId} approved: draft ${run.draftId} is validated.`;
  }
  if (decision === "reject") {
    await runtime.runs.setReview(runId, review);
    await runtime.runs.setStatus(runId, "rejected", at, { reason: "rejected_by_reviewer" });
    return `Run ${runId} rejected: draft ${run.draftId} is closed.`;
  }
  const file = options.file ?? "";
  const source = await readEdit(file, runtime, { runId, draftId: run.draftId });
  const result = await options.submit(source, runId);
  // The checks above mirror Validate's; should its verdict still differ, this run stays under review.
  if (result.status === "rejected")
    throw new UsageError(result.message ?? `${source.label}: rejected (${result.reason})`);
  if (result.status === "failed")
    throw new EditedRunFailedError(
      `the edited draft's run ${result.runId} failed (${result.reason ?? "no reason recorded"}); run ${runId} is still under review`,
    );
  await runtime.runs.setReview(runId, { ...review, newRunId: result.runId });
  await runtime.runs.setStatus(runId, "rejected", at, { reason: "superseded_by_edit" });
  return `Edited draft submitted as run ${result.runId} (${result.status}${result.reason ? `, ${result.reason}` : ""}); run ${runId} is superseded.`;
}
