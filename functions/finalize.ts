import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import * as z from "zod";
import { FinalizeEnvSchema, readEnv } from "../contracts/env.js";
import { OUTCOME_EVENT_SOURCE } from "../contracts/events.js";
import { STOPPED_STATUSES } from "../contracts/state-names.js";
import { DynamoRunStore } from "./lib/dynamo-store.js";
import { type Finalization, type FinalizerDeps, finalizeExecution } from "./lib/finalizer.js";
import { logger, tracer } from "./lib/observability.js";

/**
 * λ finalize: the per-draft state machine's `Step Functions Execution Status Change` events for
 * FAILED, TIMED_OUT and ABORTED (the default bus), each finishing its run (functions/lib/finalizer.ts).
 * The detail is the shape AWS documents; `input`, `output`, `error` and `cause` are null when absent.
 */
export const FinalizeEventSchema = z.object({
  source: z.literal("aws.states"),
  "detail-type": z.literal("Step Functions Execution Status Change"),
  detail: z.object({
    executionArn: z.string().min(1),
    stateMachineArn: z.string().min(1),
    name: z.string().min(1),
    status: z.enum(STOPPED_STATUSES),
    startDate: z.number().nullish(),
    stopDate: z.number().nullish(),
    input: z.string().nullish(),
    output: z.string().nullish(),
    error: z.string().nullish(),
    cause: z.string().nullish(),
  }),
});
export type FinalizeEvent = z.infer<typeof FinalizeEventSchema>;

export function createFinalizeHandler(getDeps: () => FinalizerDeps) {
  return async (event: unknown): Promise<Finalization> => {
    const { detail } = FinalizeEventSchema.parse(event);
    logger.appendKeys({ runId: detail.name, executionStatus: detail.status });
    try {
      const result = await finalizeExecution(detail, getDeps());
      logger.info("finalized", { ...result });
      return result;
    } catch (error) {
      // Thrown on: Lambda retries the event, then sends it to the finalizer's dead-letter queue.
      logger.error("finalize failed", error as Error);
      throw error;
    } finally {
      logger.resetKeys();
    }
  };
}

/** Parsed and built at cold start: a bad deployment fails before its first event. */
function depsFromEnv(): FinalizerDeps {
  const env = readEnv(FinalizeEnvSchema);
  const events = tracer.captureAWSv3Client(new EventBridgeClient({}));
  return {
    runs: new DynamoRunStore({
      client: tracer.captureAWSv3Client(new DynamoDBClient({})),
      tableName: env.TABLE_NAME,
      ttlDays: env.RETENTION_DAYS,
    }),
    announce: async (detailType, detail) => {
      const { FailedEntryCount, Entries } = await events.send(
        new PutEventsCommand({
          Entries: [
            {
              EventBusName: env.EVENT_BUS_NAME,
              Source: OUTCOME_EVENT_SOURCE,
              DetailType: detailType,
              Detail: JSON.stringify(detail),
            },
          ],
        }),
      );
      if (FailedEntryCount) {
        const entry = Entries?.[0];
        throw new Error(`PutEvents refused ${detailType}: ${entry?.ErrorCode}: ${entry?.ErrorMessage}`);
      }
    },
    now: () => new Date().toISOString(),
  };
}

let deps: FinalizerDeps | undefined;
export const handler = createFinalizeHandler(() => {
  deps ??= depsFromEnv();
  return deps;
});
