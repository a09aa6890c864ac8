import * as z from "zod";

/**
 * What one draft costs the cloud per outcome path, as measured by executing the committed state
 * machine over the example corpus (scripts/plan/measure.ts, written to shared/plan/data/counts.json
 * by `npm run plan:counts`; tests/plan/counts.test.ts checks the file against a fresh run).
 */

/** How a draft's run went; the planner weighs each path by the workload's mix. */
export const OUTCOME_PATHS = [
  "validated_at_once",
  "corrected_once",
  "corrected_twice",
  "judge_loop",
  "needs_review",
  "rejected",
] as const;
const OutcomePathSchema = z.enum(OUTCOME_PATHS);
export type OutcomePath = z.infer<typeof OutcomePathSchema>;

const Counts = z.record(z.string(), z.number().nonnegative());

/** One Lambda invocation: its function, its store requests and model calls. */
const InvocationCountSchema = z
  .object({
    fn: z.string(),
    dynamo: z.number().int().nonnegative(),
    s3: z.number().int().nonnegative(),
    modelCalls: z.number().int().nonnegative(),
  })
  .strict();
export type InvocationCount = z.infer<typeof InvocationCountSchema>;

/** One corpus draft's counts. Requests are keyed `<sender> <operation>`: lambda, integration or client. */
const CorpusDraftCountsSchema = z
  .object({
    draft: z.string(),
    kind: z.string(),
    path: OutcomePathSchema,
    terminal: z.string(),
    status: z.string(),
    reason: z.string().optional(),
    /** States entered plus retries: what Step Functions Standard bills. */
    transitions: z.number().int().nonnegative(),
    /** The events Step Functions would record for this execution (its 25,000-event quota). */
    awsHistoryEvents: z.number().int().nonnegative(),
    statesEntered: Counts,
    invocations: z.array(InvocationCountSchema),
    dynamo: z
      .object({
        requests: Counts,
        readUnits: z.number().nonnegative(),
        /** Table and index write request units together. */
        writeUnits: z.number().nonnegative(),
        /** Write units per partition kind: `table RUN#<runId>`, `byStatus STATUS#validated`… */
        partitionWrites: Counts,
      })
      .strict(),
    s3: z
      .object({
        requests: Counts,
        putClass: z.number().int().nonnegative(),
        getClass: z.number().int().nonnegative(),
        prefixes: z.record(
          z.string(),
          z.object({ putClass: z.number().int().nonnegative(), getClass: z.number().int().nonnegative() }),
        ),
      })
      .strict(),
    events: z.object({ putEvents: z.number().int().nonnegative(), entries: z.number().int().nonnegative() }),
  })
  .strict();
export type CorpusDraftCounts = z.infer<typeof CorpusDraftCountsSchema>;

/** The mean over a path's corpus drafts of each count. */
const PathCountsSchema = z
  .object({
    path: OutcomePathSchema,
    drafts: z.array(z.string()).min(1),
    transitions: z.number().nonnegative(),
    awsHistoryEvents: z.number().nonnegative(),
    /** Per function: invocations, their DynamoDB and S3 requests, their model calls. */
    invocations: z.record(
      z.string(),
      z
        .object({
          count: z.number().nonnegative(),
          dynamo: z.number().nonnegative(),
          s3: z.number().nonnegative(),
          modelCalls: z.number().nonnegative(),
        })
        .strict(),
    ),
    dynamo: z
      .object({
        requests: Counts,
        readUnits: z.number().nonnegative(),
        writeUnits: z.number().nonnegative(),
        partitionWrites: Counts,
      })
      .strict(),
    s3: z
      .object({
        requests: Counts,
        putClass: z.number().nonnegative(),
        getClass: z.number().nonnegative(),
        prefixPutClass: Counts,
        prefixGetClass: Counts,
      })
      .strict(),
    events: z.object({ putEvents: z.number().nonnegative(), entries: z.number().nonnegative() }).strict(),
  })
  .strict();
export type PathCounts = z.infer<typeof PathCountsSchema>;

/** What the planner needs of one environment in infra/config.ts (the CLI does not load aws-cdk-lib). */
const EnvSnapshotSchema = z
  .object({
    envName: z.string(),
    modelProvider: z.enum(["anthropic", "bedrock"]),
    modelId: z.string(),
    /** The Lambda memory every function is given, in MB, and its architecture. */
    lambdaMemoryMb: z.number().int().positive(),
    lambdaArchitecture: z.enum(["arm64", "x86_64"]),
    /** Reserved concurrency of the two model steps (correct, judge): modelConcurrency split. */
    modelConcurrency: z.number().int().positive(),
    reservedConcurrency: z.record(z.string(), z.number().int().positive()),
    maxAttempts: z.number().int().nonnegative(),
    maxLogicAttempts: z.number().int().nonnegative(),
    batchConcurrency: z.number().int().positive(),
    /** What one round of batch requests (submit to results) is expected to take (batchPricing). */
    batchRoundEstimateMinutes: z.number().int().positive(),
    logLevel: z.enum(["DEBUG", "INFO", "WARN", "ERROR"]),
    stateMachineLogLevel: z.enum(["ALL", "ERROR", "FATAL", "OFF"]),
    includeExecutionData: z.boolean(),
    executionTimeoutMinutes: z.number().int().positive(),
  })
  .strict();
export type EnvSnapshot = z.infer<typeof EnvSnapshotSchema>;

export const CountsFileSchema = z
  .object({
    /** How the file was made, for a person reading it. */
    generatedBy: z.string(),
    corpus: z.array(CorpusDraftCountsSchema),
    paths: z.array(PathCountsSchema),
    environments: z.record(z.string(), EnvSnapshotSchema),
  })
  .strict();
export type CountsFile = z.infer<typeof CountsFileSchema>;
