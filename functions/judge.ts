import { depsFromEnv } from "./lib/deps.js";
import { queuedOrDirect } from "./lib/model-queue.js";
import { createJudgeHandler } from "./steps/judge.js";

/** λ judge in Lambda: the step handler over the deps its environment names, built at cold start; work from
 * its model queue is answered to the waiting state (functions/lib/model-queue.ts). */
export const handler = queuedOrDirect(createJudgeHandler(() => depsFromEnv({ model: true })));
