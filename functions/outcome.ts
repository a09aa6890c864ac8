import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { S3Client } from "@aws-sdk/client-s3";
import * as z from "zod";
import { OutcomeEnvSchema, readEnv } from "../contracts/env.js";
import { OUTCOME_EVENT_SOURCE, OutcomeEvents } from "../contracts/events.js";
import { runPrefix } from "../shared/store/bucket-layout.js";
import type { RunStore } from "../shared/store/types.js";
import { DynamoRunStore } from "./lib/dynamo-store.js";
import { emitOutcome, emitReview, logger, metrics, tracer } from "./lib/observability.js";
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
 * - `Draft Reviewed` (a person's decision, put by `redraft review` under the reviewer policy): counted
 *   as a decision. An approval is also announced as `Draft Validated` (reason `approved`) once the run
 *   item says so, so that consumers of validated drafts get approved ones, as locally; the reviewer
 *   policy itself may put only `Draft Reviewed`, so no reviewer can announce a validation the table
 *   does not hold. That `Draft Validated` comes back here and is not counted as an outcome: the loop's
 *   outcome for the run was `Draft Needs Review`, and counting it twice would lower the review rate.
 *
 * Rejections and duplicates are counted by Validate, where they are decided.
 *
 * A run that needs review is also held: its attempt items lose their `ttl` (MarkNeedsReview
 * removed the run item's) and its objects are re-tagged `review` (contracts/retention.ts), so
 * the review queue keeps them until a person decides.
 */

/** What λ outcome needs of the stores. */
export interface OutcomeDeps {
  runs: { getRun: RunStore["getRun"]; holdForReview(runId: string): Promise<void> };
  blobs: Pick<S3BlobStore, "retain">;
  /** Puts an outcome event on the project's bus (source `redraft`). */
  announce(detailType: string, detail: Record<string, unknown>): Promise<void>;
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

const ReviewedEventSchema = z.object({
  source: z.literal(OUTCOME_EVENT_SOURCE),
  "detail-type": z.literal(OutcomeEvents.Reviewed),
  detail: z.object({
    runId: z.string().min(1),
    kind: z.string(),
    decision: z.enum(["approve", "reject", "edit"]),
  }),
});

const ExecutionEventSchema = z.object({
  source: z.literal("aws.states"),
  detail: z.object({ name: z.string().min(1), status: z.enum(["FAILED", "TIMED_OUT", "ABORTED"]) }),
});

export const OutcomeHandlerEventSchema = z.union([
  ReviewedEventSchema,
  OutcomeEventSchema,
  ExecutionEventSchema,
]);

/** What a timeout or an abort is counted as: the run record has no reason for it. */
const STOPPED_REASON = { TIMED_OUT: "timed_out", ABORTED: "aborted" } as const;

/**
 * One message of λ outcome's retry queue: Lambda's on-failure record of an invocation whose retries
 * were spent (the event under `requestPayload`), or an event EventBridge could not deliver (the
 * event itself, the rules' dead-letter queue being the same queue).
 */
const OnFailureRecordSchema = z.object({
  requestContext: z.object({ condition: z.string() }).loose(),
  requestPayload: z.unknown(),
});
const SqsEventSchema = z.object({
  Records: z
    .array(z.object({ messageId: z.string().min(1), body: z.string(), eventSource: z.literal("aws:sqs") }))
    .min(1),
});

/** The event a retry-queue message carries. */
function retriedEvent(body: string): unknown {
  const message: unknown = JSON.parse(body);
  const record = OnFailureRecordSchema.safeParse(message);
  return record.success ? record.data.requestPayload : message;
}

/**
 * λ outcome. An event from a rule is handled, and a failure thrown: Lambda retries it twice, then
 * sends it to the retry queue (its on-failure destination), which λ outcome also consumes, one
 * message at a time; a message that fails again stays there (`batchItemFailures`) until the queue
 * moves it to its dead-letter queue, which is alarmed. So the hold of a run needing review is
 * retried until it is done or a person is told, never dropped while the run's clock runs.
 */
export function createOutcomeHandler(getDeps: () => OutcomeDeps) {
  const handleEvent = createEventHandler(getDeps);
  return async (event: unknown): Promise<undefined | { batchItemFailures: { itemIdentifier: string }[] }> => {
    const sqs = SqsEventSchema.safeParse(event);
    if (!sqs.success) {
      await handleEvent(event);
      return undefined;
    }
    const batchItemFailures: { itemIdentifier: string }[] = [];
    for (const record of sqs.data.Records) {
      try {
        await handleEvent(retriedEvent(record.body));
      } catch (error) {
        // A message that can never be handled (not an outcome event) fails as often as the queue
        // allows and lands in the dead-letter queue too, where a person sees it.
        logger.error("outcome: a retried event failed again", { messageId: record.messageId, error });
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return { batchItemFailures };
  };
}

function createEventHandler(getDeps: () => OutcomeDeps) {
  return async (event: unknown): Promise<void> => {
    const parsed = OutcomeHandlerEventSchema.parse(event);
    try {
      const reviewed = ReviewedEventSchema.safeParse(parsed);
      if (reviewed.success) {
        const { runId, kind, decision } = reviewed.data.detail;
        emitReview(kind, decision);
        if (decision !== "approve") return;
        const deps = getDeps();
        const run = await deps.runs.getRun(runId);
        if (run?.status !== "validated" || run.reason !== "approved") return;
        await deps.announce(OutcomeEvents.Validated, {
          runId,
          draftId: run.draftId,
          kind: run.kind,
          status: run.status,
          reason: run.reason,
          ...(run.resultRef && { resultRef: run.resultRef }),
        });
        return;
      }
      const outcome = OutcomeEventSchema.safeParse(parsed);
      if (outcome.success) {
        // An approval announced above: the decision is counted, the run's outcome already was.
        if (outcome.data.detail.reason === "approved") return;
        const { runId, kind, reason, resultRef, repairs } = outcome.data.detail;
        const status =
          outcome.data["detail-type"] === OutcomeEvents.Validated ? "validated" : "needs_manual_review";
        if (status === "needs_manual_review") {
          const { runs, blobs } = getDeps();
          await runs.holdForReview(runId);
          await blobs.retain(runPrefix(runId), resultRef ? [resultRef] : [], "review");
        }
        emitOutcome(status, kind, reason, repairs);
        return;
      }
      const { name: runId, status } = ExecutionEventSchema.parse(parsed).detail;
      // The execution name is the run id. A run that never got a record is still counted.
      const run = await getDeps().runs.getRun(runId);
      const reason = status === "FAILED" ? (run?.reason ?? "system_error") : STOPPED_REASON[status];
      emitOutcome("failed", run?.kind ?? "unknown", reason);
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
  };
}

/** PutEvents of one outcome event; a failed entry fails the invocation, which EventBridge retries. */
const announcer =
  (client: EventBridgeClient, bus: string) =>
  async (detailType: string, detail: Record<string, unknown>): Promise<void> => {
    const { FailedEntryCount, Entries } = await client.send(
      new PutEventsCommand({
        Entries: [
          {
            Source: OUTCOME_EVENT_SOURCE,
            DetailType: detailType,
            Detail: JSON.stringify(detail),
            EventBusName: bus,
          },
        ],
      }),
    );
    if (FailedEntryCount)
      throw Object.assign(new Error(`${detailType} was not put on ${bus}: ${Entries?.[0]?.ErrorCode}`), {
        name: "EventBridge.FailedEntry",
      });
  };

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
      announce: announcer(tracer.captureAWSv3Client(new EventBridgeClient({})), env.EVENT_BUS_NAME),
    };
  }
  return deps;
});
