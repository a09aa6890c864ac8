import { LoopStateSchema } from "../shared/loop/state.js";
import { judgeStep } from "../shared/loop/steps/judge.js";
import { depsFromEnv } from "./lib/deps.js";
import { type DepsProvider, stepHandler } from "./lib/handler.js";
import { emitSpendMetrics, MetricUnit, metrics } from "./lib/observability.js";

/** λ judge: the logic phase's LLM judge (Judge state). */
export function createJudgeHandler(getDeps: DepsProvider) {
  return stepHandler(
    "judge",
    LoopStateSchema,
    async (state, deps) => {
      const next = await judgeStep(state, deps);
      metrics.addDimension("kind", next.kind);
      metrics.addMetric("JudgeRounds", MetricUnit.Count, 1);
      metrics.addMetric("JudgeBlockingFindings", MetricUnit.Count, next.judge.blocking);
      emitSpendMetrics(state, next);
      return next;
    },
    getDeps,
  );
}

export const handler = createJudgeHandler(() => depsFromEnv({ model: true }));
