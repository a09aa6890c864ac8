// λ correct's handler over whatever deps it is given, apart from its Lambda entry (functions/correct.ts,
// deps from the environment): the local runtime binds it to a data folder's store and so loads none
// of the AWS SDK clients the entry imports.
import { LoopStateSchema } from "../../shared/loop/state.js";
import { correctStep } from "../../shared/loop/steps/correct.js";
import { type DepsProvider, stepHandler } from "../lib/handler.js";

/** λ correct: one model call on the best draft so far (CorrectExecution). */
export function createCorrectHandler(getDeps: DepsProvider) {
  return stepHandler("correct", LoopStateSchema, correctStep, getDeps);
}
