// λ judge's handler over whatever deps it is given, apart from its Lambda entry (functions/judge.ts,
// deps from the environment): the local runtime binds it to a data folder's store and so loads none
// of the AWS SDK clients the entry imports.
import { LoopStateSchema } from "../../shared/loop/state.js";
import { judgeStep } from "../../shared/loop/steps/judge.js";
import { type DepsProvider, stepHandler } from "../lib/handler.js";
import { emitSpendMetrics, MetricUnit, metrics } from "../lib/observability.js";

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
