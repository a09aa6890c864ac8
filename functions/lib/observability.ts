import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { Tracer } from "@aws-lambda-powertools/tracer";
import type { LoopState } from "../../shared/loop/state.js";

/** Built once per container, shared by every handler in it. */
export const logger = new Logger({ serviceName: "redraft" });
export const metrics = new Metrics({ namespace: "Redraft", serviceName: "redraft" });
export const tracer = new Tracer({ serviceName: "redraft" });

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
  metrics.addMetric("CostMicroUsd", MetricUnit.Count, Math.round((after.costUsd - before.costUsd) * 1e6));
}

export { MetricUnit };
