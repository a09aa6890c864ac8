import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import * as z from "zod";
import { OutcomeEvents } from "../shared/events.js";
import { runPrefix } from "../shared/store/bucket-layout.js";
import type { RunStore } from "../shared/store/types.js";
import { DynamoRunStore } from "./lib/dynamo-store.js";
import { BUCKET_ENV, readEnv, TABLE_ENV } from "./lib/env.js";
import { emitOutcome, metrics, tracer } from "./lib/observability.js";
import { S3BlobStore } from "./lib/s3-blobs.js";

/**
 * λ outcome: counts how runs ended, as embedded metrics, from the events that say so — not from
 * the state machine's execution log, which prod keeps at ERROR without execution data.
 *
 * - `Draft Validated` / `Draft Needs Review` (source `redraft`, the project's bus): the detail
 *   carries the kind, the reason and how many deterministic repairs the final draft had.
 * - Step Functions `Execution Status Change` FAILED / TIMED_OUT / ABORTED (the default bus): the
 *   run item says the kind and the reason RecordFailure wrote (a timeout or abort writes none).
 *
 * Rejections and duplicates are counted by Validate, where they are decided.
 *
 * A run that needs review is also held: its attempt items lose their `ttl` (MarkNeedsReview
 * removed the run item's) and its objects are re-tagged `review` (functions/lib/retention.ts), so
 * the review queue keeps them until a person decides.
 */

/** What λ outcome needs of the stores. */
export interface OutcomeDeps {
  runs: { getRun: RunStore["getRun"]; holdForReview(runId: string): Promise<void> };
  blobs: Pick<S3BlobStore, "retain">;
}

const OutcomeEventSchema = z.object({
  source: z.literal("redraft"),
  "detail-type": z.enum([OutcomeEvents.Validated, OutcomeEvents.NeedsReview]),
  detail: z.object({
    runId: z.string().min(1),
    kind: z.string(),
    reason: z.string().optional(),
    resultRef: z.string().optional(),
    /** Deterministic repairs behind the final draft. */
    repairs: z.number().int().nonnegative().optional(),
  }),
});

const ExecutionEventSchema = z.object({
  source: z.literal("aws.states"),
  detail: z.object({ name: z.string().min(1), status: z.enum(["FAILED", "TIMED_OUT", "ABORTED"]) }),
});

export const OutcomeHandlerEventSchema = z.union([OutcomeEventSchema, ExecutionEventSchema]);

/** What a timeout or an abort is counted as: the run record has no reason for it. */
const STOPPED_REASON = { TIMED_OUT: "timed_out", ABORTED: "aborted" } as const;

export function createOutcomeHandler(getDeps: () => OutcomeDeps) {
  return async (event: unknown): Promise<void> => {
    const parsed = OutcomeHandlerEventSchema.parse(event);
    try {
      if (parsed.source === "redraft") {
        const { runId, kind, reason, resultRef, repairs } = parsed.detail;
        const status =
          parsed["detail-type"] === OutcomeEvents.Validated ? "validated" : "needs_manual_review";
        if (status === "needs_manual_review") {
          const { runs, blobs } = getDeps();
          await runs.holdForReview(runId);
          await blobs.retain(runPrefix(runId), resultRef ? [resultRef] : [], "review");
        }
        emitOutcome(status, kind, reason, repairs);
        return;
      }
      const { name: runId, status } = parsed.detail;
      // The execution name is the run id. A run that never got a record is still counted.
      const run = await getDeps().runs.getRun(runId);
      const reason = status === "FAILED" ? (run?.reason ?? "system_error") : STOPPED_REASON[status];
      emitOutcome("failed", run?.kind ?? "unknown", reason);
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
  };
}

const OutcomeEnvSchema = z.object({ ...TABLE_ENV, ...BUCKET_ENV });
let deps: OutcomeDeps | undefined;

/** The stores are built on the first event (a bad environment fails it loudly), then reused. */
export const handler = createOutcomeHandler(() => {
  if (!deps) {
    const env = readEnv(OutcomeEnvSchema);
    deps = {
      runs: new DynamoRunStore({
        client: tracer.captureAWSv3Client(new DynamoDBClient({})),
        tableName: env.TABLE_NAME,
        ttlDays: env.RETENTION_DAYS,
      }),
      blobs: new S3BlobStore({
        client: tracer.captureAWSv3Client(new S3Client({})),
        bucket: env.BUCKET_NAME,
      }),
    };
  }
  return deps;
});
