import { LoopEnvSchema, readEnv } from "../contracts/env.js";
import { depsFromEnv } from "./lib/deps.js";
import { createValidateHandler } from "./steps/validate.js";

let validate: ReturnType<typeof createValidateHandler> | undefined;

/** Built on the first event, when the environment is read (a bad one fails it loudly), then reused. */
export const handler: ReturnType<typeof createValidateHandler> = (event, context) => {
  validate ??= createValidateHandler(() => depsFromEnv({ model: false }), {
    bucketName: readEnv(LoopEnvSchema).BUCKET_NAME,
  });
  return validate(event, context);
};
