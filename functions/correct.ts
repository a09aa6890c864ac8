import { LoopStateSchema } from "../shared/loop/state.js";
import { correctStep } from "../shared/loop/steps/correct.js";
import { depsFromEnv } from "./lib/deps.js";
import { type DepsProvider, stepHandler } from "./lib/handler.js";

/** λ correct: one model call on the best draft so far (CorrectExecution). */
export function createCorrectHandler(getDeps: DepsProvider) {
  return stepHandler("correct", LoopStateSchema, correctStep, getDeps);
}

export const handler = createCorrectHandler(() => depsFromEnv({ model: true }));
