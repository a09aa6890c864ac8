import * as z from "zod";
import { DEFAULT_DEDUPE_WINDOW_MS } from "../shared/loop-settings.js";
import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS } from "../shared/model/types.js";
import { type DeploymentConfig, DeploymentConfigSchema } from "../shared/pack.js";
import { DEFAULT_MAX_DRAFT_BYTES, DEFAULT_MAX_DRAFT_DEPTH } from "../shared/validate.js";

/**
 * How every handler reads its configuration: one zod schema per handler, parsed by `readEnv` on the
 * first event and kept for the container's life, so a bad deployment fails before it touches a run
 * and names every variable that is wrong, not the first one a code path happens to reach.
 */

/** A Lambda environment its handler's schema refuses; `variables` names each bad one. */
export class InvalidEnvironmentError extends Error {
  override readonly name = "InvalidEnvironmentError";
  constructor(
    readonly variables: string[],
    problems: string,
  ) {
    super(`invalid Lambda environment: ${problems}`);
  }
}

type Source = Readonly<Record<string, string | undefined>>;

const parsedOnce = new WeakMap<z.ZodType, unknown>();

/**
 * Parses `source` (the process environment unless given) with `schema`. From the process
 * environment, which a container never changes, each schema is parsed once and its result reused.
 * @throws InvalidEnvironmentError listing each missing or malformed variable.
 */
export function readEnv<S extends z.ZodType>(schema: S, source?: Source): z.output<S> {
  if (source === undefined && parsedOnce.has(schema)) return parsedOnce.get(schema) as z.output<S>;
  const parsed = schema.safeParse(source ?? process.env);
  if (!parsed.success) {
    const variables = [...new Set(parsed.error.issues.map((i) => i.path.join(".")))];
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new InvalidEnvironmentError(variables, problems);
  }
  if (source === undefined) parsedOnce.set(schema, parsed.data);
  return parsed.data;
}

/** The table's variables, for every handler that reads or writes runs or batches. */
const TABLE_ENV = {
  TABLE_NAME: z.string().min(1),
  /** Days to keep run and attempt items (`ttl`); absent: kept until deleted. */
  RETENTION_DAYS: z.coerce.number().int().positive().optional(),
};

/** The bucket drafts and blobs are kept in. */
const BUCKET_ENV = { BUCKET_NAME: z.string().min(1) };

/** The loop steps' environment (validate, correct, revalidate, judge; batch and rounds build on it). */
export const LoopEnvSchema = z
  .object({
    ...TABLE_ENV,
    ...BUCKET_ENV,
    MODEL_PROVIDER: z.enum(["anthropic", "bedrock", "none"]).default("none"),
    MODEL_ID: z.string().min(1).optional(),
    /** Bedrock: the environment's application inference profile for MODEL_ID, invoked in its place. */
    MODEL_INFERENCE_PROFILE_ARN: z.string().min(1).optional(),
    ANTHROPIC_SECRET_ARN: z.string().min(1).optional(),
    /** One model request's timeout; set by the stack to fit inside the Lambda timeout. */
    MODEL_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_TIMEOUT_MS),
    /** The SDK's own retries of a model request (0 in the cloud: the state machine retries). */
    MODEL_MAX_RETRIES: z.coerce.number().int().nonnegative().default(DEFAULT_MAX_RETRIES),
    AWS_REGION: z.string().optional(),
    DEPLOYMENT_CONFIG: z
      .string()
      .default("{}")
      .transform((text, ctx): DeploymentConfig => {
        try {
          const parsed = DeploymentConfigSchema.safeParse(JSON.parse(text));
          if (parsed.success) return parsed.data;
          ctx.addIssue({ code: "custom", message: parsed.error.message });
        } catch (error) {
          ctx.addIssue({ code: "custom", message: `not JSON: ${(error as Error).message}` });
        }
        return z.NEVER;
      }),
    DEDUPE_WINDOW_MS: z.coerce.number().int().nonnegative().default(DEFAULT_DEDUPE_WINDOW_MS),
    MAX_DRAFT_BYTES: z.coerce.number().int().positive().default(DEFAULT_MAX_DRAFT_BYTES),
    /** Deepest JSON nesting a draft may have; checked without recursion before anything parses it. */
    MAX_DRAFT_DEPTH: z.coerce.number().int().positive().default(DEFAULT_MAX_DRAFT_DEPTH),
  })
  .refine((e) => e.MODEL_PROVIDER !== "anthropic" || e.ANTHROPIC_SECRET_ARN, {
    path: ["ANTHROPIC_SECRET_ARN"],
    message: "is required when MODEL_PROVIDER is anthropic",
  });
export type LoopEnv = z.infer<typeof LoopEnvSchema>;

/** λ rounds' deadline settings (beside the loop's), from the stack's `batchPricing` (infra/config.ts). */
export const RoundsTimingEnvSchema = z.object({
  BATCH_DEADLINE_MINUTES: z.coerce.number().positive(),
  BATCH_ROUND_ESTIMATE_MINUTES: z.coerce.number().positive(),
  BATCH_FALLBACK_RESERVE_MINUTES: z.coerce.number().nonnegative(),
  BATCH_POLL_FIRST_SECONDS: z.coerce.number().int().nonnegative(),
  BATCH_POLL_MAX_SECONDS: z.coerce.number().int().positive(),
  BATCH_MODEL_RETRIES: z.coerce.number().int().nonnegative(),
  BEDROCK_BATCH_ROLE_ARN: z.string().optional(),
});

/** λ batch. With a bus, it announces a batch the state machine stopped before AnnounceBatch; without one it does not. */
export const BatchEnvSchema = z.object({
  ...TABLE_ENV,
  ...BUCKET_ENV,
  EVENT_BUS_NAME: z.string().min(1).optional(),
});

/** λ start: the state machines it starts. */
export const StartEnvSchema = z.object({
  STATE_MACHINE_ARN: z.string().min(1),
  BATCH_STATE_MACHINE_ARN: z.string().min(1).optional(),
});

/** λ outcome: the run it counts and the bus it announces on. */
export const OutcomeEnvSchema = z.object({ ...TABLE_ENV, ...BUCKET_ENV, EVENT_BUS_NAME: z.string().min(1) });

/** λ finalize: the run it fails and the bus it announces on. */
export const FinalizeEnvSchema = z.object({ ...TABLE_ENV, EVENT_BUS_NAME: z.string().min(1) });

/**
 * Variables the Lambda runtime, Node or Powertools read on their own, which no handler's schema
 * lists: the stack may set these beside the ones a schema names.
 */
const PLATFORM_VARIABLES = /^(POWERTOOLS_[A-Z_]+|NODE_OPTIONS)$/;

/**
 * A function's environment checked against the schemas its handler reads it with, so the stack
 * (infra/constructs/functions.ts `redraftFunction`) and the handler agree on one key list: a key no
 * schema names (a typo, a variable a handler stopped reading) or a missing or malformed required
 * one fails the synth, not the first event after a deployment. Values the deployment resolves
 * later (`isUnresolved`: CDK tokens such as a table's name) stand in as a placeholder string.
 * @throws InvalidEnvironmentError naming each variable that is unknown, missing or malformed.
 */
export function lambdaEnvironment(
  schemas: readonly z.ZodObject[],
  environment: Readonly<Record<string, string>>,
  isUnresolved: (value: string) => boolean = () => false,
): Record<string, string> {
  const known = new Set(schemas.flatMap((schema) => Object.keys(schema.shape)));
  const unknown = Object.keys(environment).filter((key) => !known.has(key) && !PLATFORM_VARIABLES.test(key));
  if (unknown.length > 0) {
    throw new InvalidEnvironmentError(unknown, `${unknown.join(", ")}: read by no schema of the handler`);
  }
  const resolved = Object.fromEntries(
    Object.entries(environment).map(([key, value]) => [
      key,
      isUnresolved(value) ? "unresolved-at-synth" : value,
    ]),
  );
  for (const schema of schemas) readEnv(schema, resolved);
  return { ...environment };
}
