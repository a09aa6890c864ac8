import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import * as z from "zod";
import { BatchEnvSchema, readEnv } from "../contracts/env.js";
import { BatchEvents, OUTCOME_EVENT_SOURCE } from "../contracts/events.js";
import { BatchInputSchema } from "../shared/batch/record.js";
import { PricingSchema, RoundRecordSchema } from "../shared/batch/rounds.js";
import {
  type AggregateInput,
  aggregateBatch,
  type BatchFinisher,
  type BatchOutcome,
  type BatchStepDeps,
  finishStoppedBatch,
  type PreparedBatch,
  prepareBatch,
} from "../shared/batch/steps.js";
import { DynamoBatchStore } from "./lib/batch-store.js";
import { depsFromEnv } from "./lib/deps.js";
import { logger } from "./lib/observability.js";

/**
 * λ batch: the two Lambda steps of the batch state machine, one bundle. The state machine says
 * which step in the payload (`step`), so one function's logs, limits and permissions cover a batch.
 * Errors keep their names (`ManifestRefused`, `StoreUnavailableError`): the ASL catches and
 * retries by them.
 */

const PrepareEventSchema = z.object({ step: z.literal("prepare"), input: BatchInputSchema });

const AggregateEventSchema = z.object({
  step: z.literal("aggregate"),
  batchId: BatchInputSchema.shape.batchId,
  /** Empty when PrepareItems refused the manifest (BatchDefaults sets every field to `{}` first). */
  prepared: z.object({ itemsKey: z.string(), items: z.number().int().nonnegative() }).partial().optional(),
  /** The Map's output with a ResultWriter: where its result files are. */
  map: z
    .looseObject({ ResultWriterDetails: z.object({ Bucket: z.string(), Key: z.string() }).optional() })
    .optional(),
  /** A Catch's `$.error`: `{Error, Cause}`. */
  error: z.object({ Error: z.string().optional(), Cause: z.string().optional() }).optional(),
  /** How the batch was priced, and batch pricing's rounds as they ended. */
  pricing: PricingSchema.optional(),
  rounds: z.array(RoundRecordSchema).optional(),
  /** Batch pricing's `$.rounds`: the failed items so far and the share the batch tolerates. */
  roundsState: z
    .looseObject({
      failedItems: z.number().int().nonnegative().optional(),
      items: z.number().int().nonnegative().optional(),
      toleratedFailurePercentage: z.number().min(0).max(100).optional(),
    })
    .optional(),
});

export const BatchEventSchema = z.discriminatedUnion("step", [PrepareEventSchema, AggregateEventSchema]);

/**
 * Step Functions' own event for a batch execution that stopped without ending (the rule in
 * infra/constructs/batch-workflow.ts): its record is finished as `failed`.
 */
export const BatchStoppedEventSchema = z.object({
  source: z.literal("aws.states"),
  "detail-type": z.literal("Step Functions Execution Status Change"),
  detail: z.object({
    executionArn: z.string().min(1),
    name: z.string().min(1),
    status: z.enum(["FAILED", "TIMED_OUT", "ABORTED"]),
    input: z.string().nullish(),
    cause: z.string().nullish(),
  }),
});
export type BatchEvent = z.infer<typeof BatchEventSchema>;

export interface BatchHandlerDeps extends BatchStepDeps {
  batches: BatchFinisher;
  /** Publishes `Batch Completed` for a stopped batch the state machine could not announce. */
  announce?: (detail: BatchOutcome) => Promise<void>;
}

export function createBatchHandler(getDeps: () => Promise<BatchHandlerDeps>) {
  return async (event: unknown): Promise<PreparedBatch | BatchOutcome | { written: boolean }> => {
    const stopped = BatchStoppedEventSchema.safeParse(event);
    if (stopped.success) {
      const { detail } = stopped.data;
      // The batch id is in the execution's input (λ start names the execution after it, too).
      const input = BatchInputSchema.safeParse(detail.input ? JSON.parse(detail.input) : {});
      const batchId = input.success ? input.data.batchId : detail.name;
      logger.appendKeys({ batchId, executionStatus: detail.status });
      try {
        const outcome = await finishStoppedBatch(
          {
            batchId,
            status: detail.status,
            executionArn: detail.executionArn,
            cause: detail.cause ?? undefined,
          },
          await getDeps(),
        );
        logger.info(outcome.written ? "stopped batch finished as failed" : "stopped batch had already ended");
        if (outcome.written) await (await getDeps()).announce?.(withoutFlag(outcome));
        return outcome;
      } finally {
        logger.resetKeys();
      }
    }
    const parsed = BatchEventSchema.parse(event);
    const deps = await getDeps();
    try {
      if (parsed.step === "prepare") {
        logger.appendKeys({ batchId: parsed.input.batchId });
        const prepared = await prepareBatch(parsed.input, deps);
        logger.info("batch prepared", { items: prepared.items });
        return prepared;
      }
      logger.appendKeys({ batchId: parsed.batchId });
      const writer = parsed.map?.ResultWriterDetails;
      const input: AggregateInput = {
        batchId: parsed.batchId,
        prepared:
          parsed.prepared?.itemsKey !== undefined
            ? { itemsKey: parsed.prepared.itemsKey, items: parsed.prepared.items ?? 0 }
            : undefined,
        mapResultsRef: writer ? { bucket: writer.Bucket, key: writer.Key } : undefined,
        error: parsed.error?.Error
          ? { error: parsed.error.Error, cause: parsed.error.Cause ?? "" }
          : undefined,
        pricing: parsed.pricing,
        rounds: parsed.rounds,
        tolerance:
          parsed.roundsState?.items !== undefined
            ? {
                failedItems: parsed.roundsState.failedItems ?? 0,
                items: parsed.roundsState.items,
                toleratedFailurePercentage: parsed.roundsState.toleratedFailurePercentage ?? 100,
              }
            : undefined,
      };
      const outcome = await aggregateBatch(input, deps);
      logger.info("batch aggregated", { status: outcome.status, counts: outcome.counts });
      return outcome;
    } catch (error) {
      logger.error(`batch ${parsed.step} failed`, error as Error);
      throw error;
    } finally {
      logger.resetKeys();
    }
  };
}

/** The outcome as `Batch Completed` carries it. */
function withoutFlag({ written: _written, ...outcome }: BatchOutcome & { written: boolean }): BatchOutcome {
  return outcome;
}

let cloudDeps: Promise<BatchHandlerDeps> | undefined;

export const handler = createBatchHandler(() => {
  cloudDeps ??= (async () => {
    const env = readEnv(BatchEnvSchema);
    const loop = await depsFromEnv({ model: false });
    const busName = env.EVENT_BUS_NAME;
    const events = new EventBridgeClient({});
    return {
      ...(busName && {
        announce: async (detail: BatchOutcome) => {
          const out = await events.send(
            new PutEventsCommand({
              Entries: [
                {
                  EventBusName: busName,
                  Source: OUTCOME_EVENT_SOURCE,
                  DetailType: BatchEvents.completed,
                  Detail: JSON.stringify(detail),
                },
              ],
            }),
          );
          if (out.FailedEntryCount)
            throw new Error(`PutEvents refused ${BatchEvents.completed}: ${out.Entries?.[0]?.ErrorCode}`);
        },
      }),
      blobs: loop.blobs,
      runs: loop.runs,
      bucketName: env.BUCKET_NAME,
      batches: new DynamoBatchStore({
        client: new DynamoDBClient({}),
        tableName: env.TABLE_NAME,
        ttlDays: env.RETENTION_DAYS,
      }),
    };
  })();
  return cloudDeps;
});
