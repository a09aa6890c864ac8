import { depsFromEnv } from "./lib/deps.js";
import { createRevalidateHandler } from "./steps/revalidate.js";

/** λ revalidate in Lambda: the step handler over the deps its environment names, built at cold start. */
export const handler = createRevalidateHandler(() => depsFromEnv({ model: false }));
