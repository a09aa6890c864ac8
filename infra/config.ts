import { RetentionDays } from "aws-cdk-lib/aws-logs";
import * as z from "zod";
import { PricingSchema } from "../shared/batch/rounds.js";
import { DEFAULT_DEDUPE_WINDOW_MS } from "../shared/loop-settings.js";
import { DEFAULT_ANTHROPIC_MODEL, DEFAULT_BEDROCK_MODEL } from "../shared/model/pricing.js";
import { DeploymentConfigSchema } from "../shared/pack.js";

export const ENV_NAMES = ["dev", "staging", "prod"] as const;
const EnvNameSchema = z.enum(ENV_NAMES);
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
    /**
     * Days a run is kept: the `ttl` of its run and attempt items, and the S3 expiration of
     * `runs/`, `results/` and `drafts/` (noncurrent versions too). A run awaiting manual review
     * keeps its run item until decided; the clock starts again at the decision.
     */
    retentionDays: z.number().int().positive().max(3650),
    /**
     * What the state machine logs (CloudWatch Logs). Outcome metrics do not depend on it: the
     * steps publish them as embedded metrics.
     */
    stateMachineLogs: z
      .object({
        level: z.enum(["ALL", "ERROR", "FATAL", "OFF"]),
        /** Execution input and output in each log event: drafts and results. */
        includeExecutionData: z.boolean(),
      })
      .strict(),
    /**
     * Where alarms are sent: an e-mail subscription on the stack's alarm topic, and/or an existing
     * topic (its ARN) the alarms also notify. Both may be absent where `requireAlarmDestination` is
     * false: the topic then has no subscriber and synth says so in one line. Overridable with
     * `-c alarmEmail=` / `-c alarmTopicArn=`.
     */
    alarmEmail: z.email().optional(),
    alarmTopicArn: z
      .string()
      .regex(/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/)
      .optional(),
    /**
     * The stack refuses to synthesize without an alarm destination (alarmEmail or alarmTopicArn):
     * an environment whose alarms must reach someone. Elsewhere synth says in one line that they reach nobody.
     */
    requireAlarmDestination: z.boolean(),
    /** CloudFormation termination protection: `cdk destroy` (or a deleted stack) is refused. */
    terminationProtection: z.boolean(),
    /** `destroy` empties and deletes the bucket and table with the stack; `retain` keeps them. */
    removalPolicy: z.enum(["destroy", "retain"]),
    /**
     * A run that takes longer is stopped by Step Functions (alarmed on, and finalized as `timed_out`).
     * At least the run's worst case (infra/worst-case.ts; tests/infra checks it), so that a run whose
     * every retry is spent is never cut short.
     */
    executionTimeoutMinutes: z
      .number()
      .int()
      .positive()
      .max(24 * 60),
    /**
     * How long a run's model work may wait for a model slot (the model queue), from the
     * execution's start; past it the run fails with reason `deadline`.
     * @default DEFAULT_RUN_DEADLINE_HOURS (24)
     */
    runDeadlineHours: z
      .number()
      .positive()
      .max(24 * 14)
      .optional(),
    /**
     * How many drafts of one batch run at once: the Distributed Map's MaxConcurrency. Each running
     * child may call the model, so this (with `modelConcurrency`) is what bounds a batch's model load.
     */
    batchConcurrency: z.number().int().min(1).max(10_000),
    /**
     * The share of a batch's items whose child execution may fail (a system or model failure, not a
     * draft that ends rejected or needing review) before the Map stops and the batch ends `failed`.
     */
    batchToleratedFailurePercentage: z.number().min(0).max(100),
    /** A batch execution that takes longer is stopped by Step Functions. */
    batchTimeoutHours: z
      .number()
      .int()
      .positive()
      .max(24 * 365),
    /**
     * Batch pricing (README "Batches"): corrections in rounds of batch requests at half the token
     * price. `default` is what a batch gets when its request does not say (`pricing`); the rest bound
     * its time, the deadline counting from the batch's start.
     */
    batchPricing: z
      .object({
        default: PricingSchema,
        /** The batch must end by then: the items still correcting go on demand before it. */
        deadlineMinutes: z.number().int().positive(),
        /** What one round (submit to results) is expected to take until one has been measured. */
        roundEstimateMinutes: z.number().int().positive(),
        /** Time kept before the deadline for the on-demand fallback of the items left. */
        fallbackReserveMinutes: z.number().int().nonnegative(),
        /** First wait before polling a batch request; doubled up to `pollMaxSeconds`. */
        pollFirstSeconds: z.number().int().positive(),
        pollMaxSeconds: z.number().int().positive(),
      })
      .strict(),
    alarms: z
      .object({
        /** Alarm when NeedsReview / (Validated + NeedsReview) over an hour goes above this share. */
        reviewRateThreshold: z.number().gt(0).lt(1),
        /** …once at least this many runs finished in that hour, so one unlucky draft does not page. */
        reviewRateMinRuns: z.number().int().positive(),
        /**
         * Alarm when Failed / (every outcome) over an hour goes above this share, once at least
         * `reviewRateMinRuns` runs ended in it: a rate, so one unlucky draft among thousands does not page.
         */
        failureRateThreshold: z.number().gt(0).lt(1),
        /**
         * The drafts a day this environment is run for. The hourly-cost alarm is scaled to it: the
         * plan's cost per draft (shared/plan, `redraft plan --env <name>`) × its hourly share × `costHeadroom`.
         */
        expectedDraftsPerDay: z.number().int().positive(),
        /** How far above the expected hourly model spend the cost alarm fires. */
        costHeadroom: z.number().min(1),
      })
      .strict(),
  })
  .strict()
  .refine((c) => !`${c.alarmEmail ?? ""}`.toLowerCase().endsWith("@example.com"), {
    path: ["alarmEmail"],
    message: "example.com is a placeholder: configure a real address, or none (the topic then warns)",
  })
  .refine((c) => c.batchPricing.deadlineMinutes < c.batchTimeoutHours * 60, {
    path: ["batchPricing", "deadlineMinutes"],
    message: "the deadline must come before the batch execution's own timeout (batchTimeoutHours)",
  })
  .refine((c) => c.model.provider !== "bedrock" || !c.model.id.startsWith("claude-"), {
    path: ["model", "id"],
    message: "a Bedrock model needs a Bedrock id (anthropic.… or a profile such as global.anthropic.…)",
  });
export type EnvConfig = z.infer<typeof EnvConfigSchema>;

/** The one place per-environment settings live. */
export const environments: Record<EnvName, EnvConfig> = {
  dev: {
    envName: "dev",
    requireAlarmDestination: false,
    terminationProtection: false,
    model: { provider: "anthropic", id: "claude-haiku-5-5" },
    deployment: {
      loop: { maxAttempts: 2, stuckAfter: 2, maxLogicAttempts: 1, maxTokens: 200_000, maxCostUsd: 0.5 },
      caps: { maxAttempts: 3, maxLogicAttempts: 1, maxTokens: 400_000, maxCostUsd: 1 },
      // 4, not 2: correct and judge each need SQS's floor of 2 slots (modelConcurrencyShares).
      modelConcurrency: 4,
    },
    dedupeWindowMinutes: DEFAULT_DEDUPE_WINDOW_MS / 60_000,
    logLevel: "DEBUG",
    logRetention: RetentionDays.ONE_WEEK,
    retentionDays: 7,
    stateMachineLogs: { level: "ALL", includeExecutionData: true },
    removalPolicy: "destroy",
    executionTimeoutMinutes: 300,
    batchConcurrency: 4,
    batchToleratedFailurePercentage: 10,
    batchTimeoutHours: 6,
    batchPricing: {
      default: "on_demand",
      deadlineMinutes: 300,
      roundEstimateMinutes: 60,
      fallbackReserveMinutes: 45,
      pollFirstSeconds: 60,
      pollMaxSeconds: 900,
    },
    alarms: {
      reviewRateThreshold: 0.5,
      reviewRateMinRuns: 5,
      failureRateThreshold: 0.25,
      expectedDraftsPerDay: 1_000,
      costHeadroom: 3,
    },
  },
  staging: {
    envName: "staging",
    requireAlarmDestination: false,
    terminationProtection: false,
    model: { provider: "anthropic", id: DEFAULT_ANTHROPIC_MODEL },
    deployment: {
      loop: { maxAttempts: 2, stuckAfter: 2, maxLogicAttempts: 1, maxTokens: 300_000, maxCostUsd: 1 },
      caps: { maxAttempts: 4, maxLogicAttempts: 2, maxTokens: 600_000, maxCostUsd: 2 },
      modelConcurrency: 4,
    },
    dedupeWindowMinutes: DEFAULT_DEDUPE_WINDOW_MS / 60_000,
    logLevel: "INFO",
    logRetention: RetentionDays.ONE_MONTH,
    retentionDays: 30,
    stateMachineLogs: { level: "ERROR", includeExecutionData: true },
    removalPolicy: "destroy",
    executionTimeoutMinutes: 450,
    batchConcurrency: 8,
    batchToleratedFailurePercentage: 10,
    batchTimeoutHours: 12,
    batchPricing: {
      default: "on_demand",
      deadlineMinutes: 660,
      roundEstimateMinutes: 60,
      fallbackReserveMinutes: 60,
      pollFirstSeconds: 60,
      pollMaxSeconds: 900,
    },
    alarms: {
      reviewRateThreshold: 0.4,
      reviewRateMinRuns: 10,
      failureRateThreshold: 0.1,
      expectedDraftsPerDay: 10_000,
      costHeadroom: 2,
    },
  },
  prod: {
    envName: "prod",
    requireAlarmDestination: true,
    terminationProtection: true,
    model: { provider: "bedrock", id: DEFAULT_BEDROCK_MODEL },
    deployment: {
      loop: { maxAttempts: 3, stuckAfter: 2, maxLogicAttempts: 1, maxTokens: 400_000, maxCostUsd: 2 },
      caps: { maxAttempts: 5, maxLogicAttempts: 3, maxTokens: 800_000, maxCostUsd: 4 },
      modelConcurrency: 12,
    },
    dedupeWindowMinutes: 60,
    logLevel: "INFO",
    logRetention: RetentionDays.SIX_MONTHS,
    retentionDays: 90,
    // Errors only, without drafts or results: the run record and the bucket hold the evidence.
    stateMachineLogs: { level: "ERROR", includeExecutionData: false },
    removalPolicy: "retain",
    executionTimeoutMinutes: 600,
    batchConcurrency: 40,
    batchToleratedFailurePercentage: 5,
    batchTimeoutHours: 48,
    batchPricing: {
      default: "on_demand",
      deadlineMinutes: 2_760,
      roundEstimateMinutes: 90,
      fallbackReserveMinutes: 120,
      pollFirstSeconds: 120,
      pollMaxSeconds: 1_800,
    },
    alarms: {
      reviewRateThreshold: 0.3,
      reviewRateMinRuns: 20,
      failureRateThreshold: 0.02,
      expectedDraftsPerDay: 1_000_000,
      costHeadroom: 2,
    },
  },
};

/** Context values that may override an environment's settings at deploy time (`-c alarmEmail=ops@…`). */
export interface ConfigOverrides {
  alarmEmail?: string | undefined;
  alarmTopicArn?: string | undefined;
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
    ...(overrides.alarmTopicArn !== undefined && { alarmTopicArn: overrides.alarmTopicArn }),
  };
  const parsed = EnvConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`invalid settings for environment "${envName}": ${problems}`);
  }
  return parsed.data;
}
