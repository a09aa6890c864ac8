import type { StopReason } from "../shared/store/types.js";

/**
 * Each reason a run can end with (the `StopReasonSchema` contract), in a line a person reads without
 * the design notes: what happened, and what to do next where there is something to do. One table,
 * keyed by the contract, so that a reason added to it without an explanation fails to type-check.
 * `redraft show`, `redraft runs --explain` and the viewer's review box all read it.
 */
export const REASON_EXPLANATIONS: Readonly<Record<StopReason, string>> = {
  max_attempts:
    "Every correction attempt allowed was used and errors remain; the best attempt is kept for review.",
  circuit_breaker:
    "The same rule kept failing in consecutive attempts, so correcting stopped early instead of spending the rest of the budget.",
  stuck:
    "Consecutive attempts did not improve on the best draft so far, so correcting stopped; the best draft is kept.",
  budget_exhausted: "The run's token or cost budget was spent before its errors were fixed.",
  no_model:
    "The draft has errors to correct but no model was configured (--llm none, or no ANTHROPIC_API_KEY); nothing was corrected.",
  logic_unresolved:
    "The judge still found blocking problems after the logic corrections allowed; a person should decide.",
  invalid_input:
    "The input is not a valid draft (a field is missing or has the wrong type); fix the file and run it again.",
  unknown_kind:
    "No rule pack is registered for the draft's kind: add its pack with --pack <file> (redraft packs lists the kinds known).",
  too_large: "The draft is larger than the size limit, so it was not checked.",
  too_deep: "The draft's JSON is nested deeper than the limit, so it was not checked.",
  unreadable: "The draft could not be read or is not JSON.",
  invalid_schema:
    "The JSON Schema in the draft's context is not a valid schema, so the draft could not be checked.",
  duplicate: "The same draft content was already submitted moments ago; that run is the one that counts.",
  system_error:
    "A fault in redraft or its storage ended the run; --debug shows the stack, and the run can be reviewed.",
  pack_error:
    "A rule of the draft's pack threw instead of answering (the message names the pack and the rule): the pack needs fixing, then the draft can be resubmitted.",
  model_error:
    "The model could not be reached or kept failing (after retries); check the key, the model id and the network.",
  deadline:
    "The run waited for a model slot (or kept being answered 429) until its deadline passed; other drafts held the slots. It can be run again.",
  interrupted:
    "The process running the draft ended before it finished (killed or crashed); it was closed as failed and can be run again.",
  timed_out: "The run took longer than the state machine's time limit.",
  aborted: "The execution was stopped by hand (StopExecution) before it finished.",
  execution_failed: "The state machine's execution failed before the run recorded an outcome.",
  approved: "A person reviewed the draft and approved it.",
  rejected_by_reviewer: "A person reviewed the draft and rejected it.",
  superseded_by_edit: "A person edited the draft; the edited draft was submitted as a new run.",
};

/** A reason's explanation, or undefined for a string outside the contract (a batch's own reasons). */
export function explainReason(reason: string | null | undefined): string | undefined {
  if (!reason || !Object.hasOwn(REASON_EXPLANATIONS, reason)) return undefined;
  return REASON_EXPLANATIONS[reason as StopReason];
}

/** The hint an `unknown_kind` rejection's message ends with on the command line. */
export const PACK_HINT = "add its pack with --pack <file> (redraft packs lists the kinds known)";

/** A rejection message with the `--pack` hint when it is an unknown kind's; others as they are. */
export function withPackHint<T extends string | undefined>(message: T, reason: string | null | undefined): T {
  if (reason !== "unknown_kind" || message === undefined || message.includes("--pack")) return message;
  return `${message}; ${PACK_HINT}` as T;
}

/** `redraft runs --explain`: each reason of the listed runs, once, with its explanation. */
export function reasonsLegend(reasons: readonly (string | null | undefined)[]): string {
  const present = [...new Set(reasons.filter((r): r is string => typeof r === "string" && r !== ""))].sort();
  if (present.length === 0) return "No run listed has a reason: each validated on its own.";
  return [
    "Reasons:",
    ...present.map((r) => `  ${r}: ${explainReason(r) ?? "(no explanation recorded)"}`),
  ].join("\n");
}
