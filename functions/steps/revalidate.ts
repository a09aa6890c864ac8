// λ revalidate's handler over whatever deps it is given, apart from its Lambda entry (functions/revalidate.ts,
// deps from the environment): the local runtime binds it to a data folder's store and so loads none
// of the AWS SDK clients the entry imports.
import { LoopStateSchema } from "../../shared/loop/state.js";
import { revalidateStep } from "../../shared/loop/steps/revalidate.js";
import { type DepsProvider, stepHandler } from "../lib/handler.js";
import { emitAttemptMetrics } from "../lib/observability.js";

/** λ revalidate: repair, full re-validation, attempt record, verdict for the NextStep? Choice. */
export function createRevalidateHandler(getDeps: DepsProvider) {
  return stepHandler(
    "revalidate",
    LoopStateSchema,
    async (state, deps) => {
      // Metrics only when this invocation wrote the attempt: a retried task must not count it twice.
      let recorded = false;
      const next = await revalidateStep(state, {
        ...deps,
        onAttemptRecorded: () => {
          recorded = true;
        },
      });
      if (recorded) emitAttemptMetrics(state, next);
      return next;
    },
    getDeps,
  );
}
