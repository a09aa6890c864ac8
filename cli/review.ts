import { readFile } from "node:fs/promises";
import type { LocalRuntime } from "../local/runtime.js";
import type { RunResult } from "../shared/loop/run.js";
import { type DraftSource, splitFile, UsageError } from "./inputs.js";

export interface ReviewOptions {
  file?: string;
  note?: string;
  reviewer: string;
  /** Starts a run of an edited draft, linked to the run under review. */
  submit: (source: DraftSource, parentRunId: string) => Promise<RunResult>;
}

/**
 * A person's decision on a draft waiting for review. Approve makes it validated, reject closes it,
 * edit starts a new run of the edited draft linked to this one and takes this one off the queue.
 */
export async function reviewRun(
  runtime: LocalRuntime,
  runId: string,
  decision: "approve" | "reject" | "edit",
  options: ReviewOptions,
): Promise<string> {
  const run = await runtime.runs.getRun(runId);
  if (!run) throw new UsageError(`no run ${runId}`);
  if (run.status !== "needs_manual_review") {
    throw new UsageError(`run ${runId} is ${run.status}: only a draft that needs review can be reviewed`);
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
  const sources = splitFile(
    file,
    await readFile(file, "utf8").catch(() => {
      throw new UsageError(`cannot read ${file}`);
    }),
  );
  if (sources.length !== 1 || !sources[0]) throw new UsageError(`${file} must hold exactly one draft`);
  const result = await options.submit(sources[0], runId);
  await runtime.runs.setReview(runId, { ...review, newRunId: result.runId });
  await runtime.runs.setStatus(runId, "rejected", at, { reason: "superseded_by_edit" });
  return `Edited draft submitted as run ${result.runId} (${result.status}${result.reason ? `, ${result.reason}` : ""}); run ${runId} is superseded.`;
}
