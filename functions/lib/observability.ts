import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { Tracer } from "@aws-lambda-powertools/tracer";
import * as z from "zod";
import { readEnv } from "../../contracts/env.js";
import {
  COST_METRIC,
  METRIC_NAMESPACE,
  OUTCOME_METRICS,
  type OutcomeStatus,
  REPAIRS_METRIC,
  REVIEW_METRIC,
  SERVICE_NAME,
} from "../../contracts/metric-names.js";
import type { LoopState } from "../../shared/loop/state.js";

/** Built once per container, shared by every handler in it. */
export const logger = new Logger({ serviceName: SERVICE_NAME });
/**
 * Its own warnings (a dimension set twice, nothing to publish) go through the logger, as structured
 * lines at WARN in Lambda, rather than straight to stderr: the local runtime runs several drafts'
 * steps in one process, with the logger silenced and metrics disabled, and its user's stderr is not
 * the place for them.
 */
export const metrics = new Metrics({ namespace: METRIC_NAMESPACE, serviceName: SERVICE_NAME, logger });

/** What the handlers ask of the X-Ray tracer. */
export type StepTracer = Pick<Tracer, "captureAWSv3Client" | "getSegment">;

/** Outside Lambda (the local runtime, tests): clients as they are, no segment. */
const NO_TRACER: StepTracer = {
  captureAWSv3Client: (client) => client,
  getSegment: () => undefined,
};

/** Set by the Lambda runtime itself, not by the stack: whether this process is a Lambda container. */
const LambdaRuntimeEnvSchema = z.object({ AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).optional() });

/**
 * The X-Ray tracer, built in Lambda only (where `AWS_LAMBDA_FUNCTION_NAME` is set), once, at cold
 * start. Elsewhere its module is never even evaluated: the X-Ray SDK turns on async hooks when it
 * loads, which slowed every await of the local runtime, and Powertools would disable it anyway.
 */
export const tracer: StepTracer = readEnv(LambdaRuntimeEnvSchema).AWS_LAMBDA_FUNCTION_NAME
  ? new (await import("@aws-lambda-powertools/tracer")).Tracer({ serviceName: SERVICE_NAME })
  : NO_TRACER;

/**
 * One run reached an outcome: counted once with only the service dimension (what the alarms read)
 * and once per kind and reason (what the dashboard breaks down). Each is flushed at once.
 */
export function emitOutcome(
  status: OutcomeStatus,
  kind: string,
  reason: string | undefined,
  repairs = 0,
): void {
  const name = OUTCOME_METRICS[status];
  metrics.singleMetric().addMetric(name, MetricUnit.Count, 1);
  const detailed = metrics.singleMetric();
  detailed.addDimensions({ kind, reason: reason ?? "none" });
  detailed.addMetric(name, MetricUnit.Count, 1);
  if (repairs > 0) {
    const repaired = metrics.singleMetric();
    repaired.addDimensions({ kind });
    repaired.addMetric(REPAIRS_METRIC, MetricUnit.Count, repairs);
  }
}

/** A reviewer decided a run: counted once by kind and decision, flushed at once. */
export function emitReview(kind: string, decision: string): void {
  const detailed = metrics.singleMetric();
  detailed.addDimensions({ kind, decision });
  detailed.addMetric(REVIEW_METRIC, MetricUnit.Count, 1);
}

/** Every log line of a step carries the run and draft it is about. */
export function withRunKeys(state: Pick<LoopState, "runId" | "draftId" | "kind">): void {
  logger.appendKeys({ runId: state.runId, draftId: state.draftId, kind: state.kind });
}

/** Token and cost metrics of one attempt, so the dashboard can sum spend per kind. */
export function emitAttemptMetrics(before: LoopState, after: LoopState): void {
  metrics.addDimension("kind", after.kind);
  metrics.addMetric("CorrectionAttempts", MetricUnit.Count, 1);
  emitSpendMetrics(before, after);
}

/** Tokens and cost spent between two states (a correction, or a judge round). */
export function emitSpendMetrics(before: LoopState, after: LoopState): void {
  metrics.addMetric("InputTokens", MetricUnit.Count, after.tokens.input - before.tokens.input);
  metrics.addMetric("OutputTokens", MetricUnit.Count, after.tokens.output - before.tokens.output);
  metrics.addMetric("CacheReadTokens", MetricUnit.Count, after.tokens.cacheRead - before.tokens.cacheRead);
  metrics.addMetric("CacheWriteTokens", MetricUnit.Count, after.tokens.cacheWrite - before.tokens.cacheWrite);
  const micro = Math.round((after.costUsd - before.costUsd) * 1e6);
  metrics.addMetric(COST_METRIC, MetricUnit.Count, micro);
  // The hourly budget alarm reads the total over every kind: one metric without the kind dimension.
  metrics.singleMetric().addMetric(COST_METRIC, MetricUnit.Count, micro);
}

export { MetricUnit };
