import { depsFromEnv } from "./lib/deps.js";
import { createCorrectHandler } from "./steps/correct.js";

/** λ correct in Lambda: the step handler over the deps its environment names, built at cold start. */
export const handler = createCorrectHandler(() => depsFromEnv({ model: true }));
