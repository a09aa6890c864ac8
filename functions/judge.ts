import { depsFromEnv } from "./lib/deps.js";
import { createJudgeHandler } from "./steps/judge.js";

/** λ judge in Lambda: the step handler over the deps its environment names, built at cold start. */
export const handler = createJudgeHandler(() => depsFromEnv({ model: true }));
