/**
 * Names of the metrics the handlers publish as CloudWatch embedded metrics (namespace
 * {@link METRIC_NAMESPACE}), shared with the alarms and the dashboard in `infra/`. No SDK or
 * Powertools import, so that the CDK app can read them without loading either.
 */
import type { RunStatus } from "../shared/store/types.js";

export const METRIC_NAMESPACE = "Redraft";
/** Powertools' default dimension, on every metric: the only one the alarms' aggregates carry. */
export const SERVICE_NAME = "redraft";

/** One count per run that reached an outcome, published once without and once with `kind` and `reason`. */
export const OUTCOME_METRICS = {
  validated: "RunsValidated",
  needs_manual_review: "RunsNeedingReview",
  rejected: "RunsRejected",
  failed: "RunsFailed",
} as const satisfies Partial<Record<RunStatus, string>>;
export type OutcomeStatus = keyof typeof OUTCOME_METRICS;

/**
 * Deterministic repairs behind a run's final draft, per run that reached an outcome (with `kind`): a
 * rise says drafts are being fixed without the model, which a reader of `validated` alone would miss.
 */
export const REPAIRS_METRIC = "RepairsMade";

/**
 * One count per reviewer's decision (with `kind` and `decision`): approvals are counted here, not as
 * `RunsValidated`, since the loop already counted the run as `RunsNeedingReview` when it ended.
 */
export const REVIEW_METRIC = "ReviewDecisions";

/** Model spend in micro-USD, per attempt and per judge round; also published without `kind`. */
export const COST_METRIC = "CostMicroUsd";
