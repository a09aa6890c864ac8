import { RetentionDays } from "aws-cdk-lib/aws-logs";
import { z } from "zod";
import { DEFAULT_ANTHROPIC_MODEL, DEFAULT_BEDROCK_MODEL } from "../shared/model/pricing.js";
import { DeploymentConfigSchema } from "../shared/pack.js";

export const ENV_NAMES = ["dev", "staging", "prod"] as const;
export const EnvNameSchema = z.enum(ENV_NAMES);
export type EnvName = z.infer<typeof EnvNameSchema>;

/** Everything that differs between environments; `cdk deploy -c env=<name>` picks one. */
export const EnvConfigSchema = z
  .object({
    envName: EnvNameSchema,
    /** Pin the stack to an account/region; env-agnostic (the CLI's credentials decide) when absent. */
    account: z
      .string()
      .regex(/^\d{12}$/)
      .optional(),
    region: z.string().min(1).optional(),
    model: z
      .object({
        /** `anthropic`: API key from Secrets Manager. `bedrock`: the correct function's IAM role, no key. */
        provider: z.enum(["anthropic", "bedrock"]),
        /** A Claude API id, or a Bedrock model / inference-profile id (`global.anthropic.…`). */
        id: z.string().min(1),
      })
      .strict(),
    /**
     * Loop limits, budgets, caps and per-kind overrides, handed to the Lambdas as DEPLOYMENT_CONFIG.
     * Validated with the same schema the Lambdas parse it with.
     */
    deployment: DeploymentConfigSchema,
    /** A repeated delivery of the same content within this window starts no second run. */
    dedupeWindowMinutes: z.number().int().nonnegative(),
    logLevel: z.enum(["DEBUG", "INFO", "WARN", "ERROR"]),
    logRetention: z.enum(RetentionDays),
    /** Where alarms are sent (an SNS e-mail subscription). Overridable with `-c alarmEmail=`. */
    alarmEmail: z.email(),
    /** `destroy` empties and deletes the bucket and table with the stack; `retain` keeps them. */
    removalPolicy: z.enum(["destroy", "retain"]),
    /** A run that takes longer is stopped by Step Functions (and alarmed on). */
    executionTimeoutMinutes: z
      .number()
      .int()
      .positive()
      .max(24 * 60),
    alarms: z
      .object({
        /** Alarm when NeedsReview / (Validated + NeedsReview) over an hour goes above this share. */
        reviewRateThreshold: z.number().gt(0).lt(1),
        /** …once at least this many runs finished in that hour, so one unlucky draft does not page. */
        reviewRateMinRuns: z.number().int().positive(),
        /** Alarm when model spend over a day goes above this. */
        dailyCostUsd: z.number().positive(),
      })
      .strict(),
  })
  .strict()
  .refine((c) => c.model.provider !== "bedrock" || !c.model.id.startsWith("claude-"), {
    path: ["model", "id"],
    message: "a Bedrock model needs a Bedrock id (anthropic.… or a profile such as global.anthropic.…)",
  });
export type EnvConfig = z.infer<typeof EnvConfigSchema>;

/** The one place per-environment settings live. */
export const environments: Record<EnvName, EnvConfig> = {
  dev: {
    envName: "dev",
    model: { provider: "anthropic", id: "claude-haiku-5-5" },
    deployment: {
      loop: { maxAttempts: 2, stuckAfter: 2, maxLogicAttempts: 1, maxTokens: 200_000, maxCostUsd: 0.5 },
      caps: { maxAttempts: 3, maxLogicAttempts: 1, maxTokens: 400_000, maxCostUsd: 1 },
    },
    dedupeWindowMinutes: 15,
    logLevel: "DEBUG",
    logRetention: RetentionDays.ONE_WEEK,
    alarmEmail: "redraft-alerts-dev@example.com",
    removalPolicy: "destroy",
    executionTimeoutMinutes: 60,
    alarms: { reviewRateThreshold: 0.5, reviewRateMinRuns: 5, dailyCostUsd: 5 },
  },
  staging: {
    envName: "staging",
    model: { provider: "anthropic", id: DEFAULT_ANTHROPIC_MODEL },
    deployment: {
      loop: { maxAttempts: 2, stuckAfter: 2, maxLogicAttempts: 1, maxTokens: 300_000, maxCostUsd: 1 },
      caps: { maxAttempts: 4, maxLogicAttempts: 2, maxTokens: 600_000, maxCostUsd: 2 },
    },
    dedupeWindowMinutes: 15,
    logLevel: "INFO",
    logRetention: RetentionDays.ONE_MONTH,
    alarmEmail: "redraft-alerts-staging@example.com",
    removalPolicy: "destroy",
    executionTimeoutMinutes: 60,
    alarms: { reviewRateThreshold: 0.4, reviewRateMinRuns: 10, dailyCostUsd: 25 },
  },
  prod: {
    envName: "prod",
    model: { provider: "bedrock", id: DEFAULT_BEDROCK_MODEL },
    deployment: {
      loop: { maxAttempts: 3, stuckAfter: 2, maxLogicAttempts: 1, maxTokens: 400_000, maxCostUsd: 2 },
      caps: { maxAttempts: 5, maxLogicAttempts: 3, maxTokens: 800_000, maxCostUsd: 4 },
    },
    dedupeWindowMinutes: 60,
    logLevel: "INFO",
    logRetention: RetentionDays.SIX_MONTHS,
    alarmEmail: "redraft-alerts@example.com",
    removalPolicy: "retain",
    executionTimeoutMinutes: 60,
    alarms: { reviewRateThreshold: 0.3, reviewRateMinRuns: 20, dailyCostUsd: 200 },
  },
};

/** Context values that may override an environment's settings at deploy time (`-c alarmEmail=ops@…`). */
export interface ConfigOverrides {
  alarmEmail?: string | undefined;
}

/**
 * The validated settings of one environment. Fails with a message naming the known environments
 * when the name is unknown, and with the offending fields when a setting is invalid.
 */
export function loadConfig(envName: string, overrides: ConfigOverrides = {}): EnvConfig {
  const name = EnvNameSchema.safeParse(envName);
  if (!name.success) {
    throw new Error(`unknown environment "${envName}": use -c env=${ENV_NAMES.join("|")}`);
  }
  const merged = {
    ...environments[name.data],
    ...(overrides.alarmEmail !== undefined && { alarmEmail: overrides.alarmEmail }),
  };
  const parsed = EnvConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`invalid settings for environment "${envName}": ${problems}`);
  }
  return parsed.data;
}
