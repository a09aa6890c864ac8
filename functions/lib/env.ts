import * as z from "zod";
import { DEFAULT_DEDUPE_WINDOW_MS } from "../../shared/loop/limits.js";
import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS } from "../../shared/model/messages.js";
import { type DeploymentConfig, DeploymentConfigSchema } from "../../shared/pack.js";
import { DEFAULT_MAX_DRAFT_BYTES, DEFAULT_MAX_DRAFT_DEPTH } from "../../shared/validate.js";

/**
 * The Lambda environment, parsed once at cold start: a bad deployment fails before the first
 * event instead of half-way through a run.
 */
const EnvSchema = z
  .object({
    TABLE_NAME: z.string().min(1),
    BUCKET_NAME: z.string().min(1),
    MODEL_PROVIDER: z.enum(["anthropic", "bedrock", "none"]).default("none"),
    MODEL_ID: z.string().min(1).optional(),
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
    /** Days to keep run and attempt items (`ttl`); absent: kept until deleted. */
    RETENTION_DAYS: z.coerce.number().int().positive().optional(),
    MAX_DRAFT_BYTES: z.coerce.number().int().positive().default(DEFAULT_MAX_DRAFT_BYTES),
    /** Deepest JSON nesting a draft may have; checked without recursion before anything parses it. */
    MAX_DRAFT_DEPTH: z.coerce.number().int().positive().default(DEFAULT_MAX_DRAFT_DEPTH),
  })
  .refine((e) => e.MODEL_PROVIDER !== "anthropic" || e.ANTHROPIC_SECRET_ARN, {
    path: ["ANTHROPIC_SECRET_ARN"],
    message: "is required when MODEL_PROVIDER is anthropic",
  });
export type Env = z.infer<typeof EnvSchema>;

export function readEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const parsed = EnvSchema.safeParse(source);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`invalid Lambda environment: ${problems}`);
  }
  return parsed.data;
}
