/**
 * The events redraft publishes and accepts on the project's EventBridge bus: their source and detail
 * types, in one place for the state machines (infra/), the handlers (functions/), the local runtime,
 * the command line and the viewer. Nothing else spells an event name.
 */

/** Source of the events redraft itself publishes (outcomes, reviews, batches ended). */
export const OUTCOME_EVENT_SOURCE = "redraft";

/**
 * Outcome event detail types, as published by the Announce states (and λ finalize, for a run an
 * execution left unfinished), and by a reviewer's decision, and consumed downstream.
 */
export const OutcomeEvents = {
  Validated: "Draft Validated",
  NeedsReview: "Draft Needs Review",
  Failed: "Draft Failed",
  /** A reviewer's decision on a run (source `redraft`). */
  Reviewed: "Draft Reviewed",
} as const;

/**
 * What clients put on the project's bus to submit a draft:
 * `{ source: "redraft.client", detail-type: "Draft Submitted", detail: { draft } | { draftRef: { bucket, key } } }`.
 */
export const SubmissionEvent = {
  source: "redraft.client",
  detailType: "Draft Submitted",
} as const;

/** What clients put on the bus to submit a batch, and what redraft publishes when one has ended. */
export const BatchEvents = {
  /** `detail: { manifestRef: { bucket, key, versionId? } }` */
  submitted: "Batch Submitted",
  completed: "Batch Completed",
} as const;
