import { createHash } from "node:crypto";
import { SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import * as z from "zod";
import { readEnv, StartEnvSchema } from "../contracts/env.js";
import { BatchEvents } from "../contracts/events.js";
import { type BatchInput, batchIdFor, ManifestRefSchema } from "../shared/batch/record.js";
import { PricingSchema } from "../shared/batch/rounds.js";
import { BATCHES_PREFIX } from "../shared/store/bucket-layout.js";
import { logger, tracer } from "./lib/observability.js";

/**
 * λ start: between the trigger rules and StartExecution, so that a delivery has one execution name.
 *
 * EventBridge delivers at least once, and its Step Functions target cannot name the execution:
 * every redelivery would start (and pay for) a Validate that only finds a duplicate. Here the
 * name is a hash of what identifies the delivery — bucket, key and version id of an upload; the
 * event id of a `Draft Submitted` — so Step Functions itself refuses the second start
 * (`ExecutionAlreadyExists`), which is success.
 *
 * A *new* upload of identical content (a new version) gets a new name and a run of its own, which
 * Validate's content claim marks `rejected` / `duplicate` within the dedupe window: a re-upload is
 * a deliberate re-submission, answered cheaply; after the window it is corrected again.
 */

/** Step Functions: at most 80 characters of `[A-Za-z0-9-_]`. */
const NAME_HASH_CHARS = 64;

/** The S3 `Object Created` event, as EventBridge delivers it (only what the run needs). */
const UploadEventSchema = z.object({
  id: z.string().min(1),
  source: z.literal("aws.s3"),
  detail: z.object({
    bucket: z.object({ name: z.string().min(1) }),
    object: z.object({
      key: z.string().min(1),
      size: z.number().int().nonnegative().optional(),
      "version-id": z.string().min(1).optional(),
      sequencer: z.string().optional(),
    }),
  }),
});

/**
 * A client's `Batch Submitted`: a manifest already in the bucket, and how to price its corrections
 * (`on_demand` or `batch`; absent, the deployment's `batchPricing.default` applies).
 */
const BatchSubmissionSchema = z.object({
  id: z.string().min(1),
  source: z.string().min(1),
  "detail-type": z.literal(BatchEvents.submitted),
  detail: z.object({
    // Only a manifest: λ batch may also read other batches' items and results, which an event naming
    // them would otherwise run again as a batch of their own.
    manifestRef: ManifestRefSchema.refine((ref) => ref.key.startsWith(BATCHES_PREFIX), {
      message: `a Batch Submitted manifest must be under ${BATCHES_PREFIX}`,
      path: ["key"],
    }),
    pricing: PricingSchema.optional(),
  }),
});

/** A client's `Draft Submitted`: its detail is the execution input. Never a batch's detail type. */
const SubmissionEventSchema = z.object({
  id: z.string().min(1),
  source: z.string().min(1),
  "detail-type": z
    .string()
    .refine((type) => type !== BatchEvents.submitted)
    .optional(),
  detail: z.looseObject({}),
});

export const StartEventSchema = z.union([UploadEventSchema, BatchSubmissionSchema, SubmissionEventSchema]);
export type StartEvent = z.infer<typeof StartEventSchema>;

export interface Start {
  name: string;
  input: Record<string, unknown>;
  /** Which state machine: the per-draft one, or the batch one (a manifest under `batches/`, `Batch Submitted`). */
  machine: "draft" | "batch";
}

const digest = (parts: string[]): string =>
  createHash("sha256").update(parts.join("\n")).digest("hex").slice(0, NAME_HASH_CHARS);

/** The execution name and input of one delivery; the same delivery always gives the same name. */
export function startFor(event: StartEvent): Start {
  if (event.source === "aws.s3" && "bucket" in event.detail) {
    const { bucket, object } = (event as z.infer<typeof UploadEventSchema>).detail;
    // The bucket is versioned, so an upload has a version id; the sequencer stands in without one.
    const version = object["version-id"] ?? `seq:${object.sequencer ?? event.id}`;
    if (object.key.startsWith(BATCHES_PREFIX)) {
      // The batch id is the execution name too: a repeated delivery is refused twice over.
      const batchId = batchIdFor(["upload", bucket.name, object.key, version]);
      return {
        machine: "batch",
        name: batchId,
        input: {
          batchId,
          manifestRef: {
            bucket: bucket.name,
            key: object.key,
            ...(object["version-id"] && { versionId: object["version-id"] }),
            keyForm: "notification",
          },
        },
      };
    }
    return {
      machine: "draft",
      name: `u-${digest(["upload", bucket.name, object.key, version])}`,
      input: {
        draftRef: {
          bucket: bucket.name,
          key: object.key,
          ...(object["version-id"] && { versionId: object["version-id"] }),
          // The key as S3's event gave it, which may be URL-encoded: Validate may read its decoded
          // form, with this version (shared/loop/steps/input.ts's readUpload).
          keyForm: "notification",
        },
      },
    };
  }
  if ("detail-type" in event && event["detail-type"] === BatchEvents.submitted) {
    // A client names its manifest's key exactly: a keyForm it set is dropped (see submittedInput).
    const { keyForm: _dropped, ...manifestRef } = (event as z.infer<typeof BatchSubmissionSchema>).detail
      .manifestRef;
    const { pricing } = (event as z.infer<typeof BatchSubmissionSchema>).detail;
    // A named version is one manifest whoever submits it; without one, the event is the submission.
    const batchId = batchIdFor(
      manifestRef.versionId
        ? ["upload", manifestRef.bucket, manifestRef.key, manifestRef.versionId]
        : ["event", event.id],
    );
    return {
      machine: "batch",
      name: batchId,
      input: { batchId, manifestRef, ...(pricing && { pricing }) } satisfies BatchInput,
    };
  }
  return { machine: "draft", name: `e-${digest(["event", event.id])}`, input: submittedInput(event.detail) };
}

/**
 * A client's `Draft Submitted` detail as the execution input. A client names its key exactly: a
 * `keyForm` it sets is dropped, so no event can have its key decoded into another upload's. Which
 * keys a run may read at all is Validate's to decide (shared/store/draft-ref.ts), so that the run
 * is recorded rejected with the reason.
 */
function submittedInput(detail: Record<string, unknown>): Record<string, unknown> {
  const ref = detail.draftRef;
  if (ref === null || typeof ref !== "object" || !("keyForm" in ref)) return detail;
  const { keyForm: _dropped, ...exact } = ref as Record<string, unknown>;
  return { ...detail, draftRef: exact };
}

export interface StartHandlerOptions {
  client: SFNClient;
  stateMachineArn: string;
  /** The batch state machine; without it, a batch delivery fails loudly (and goes to the DLQ). */
  batchStateMachineArn?: string | undefined;
}

/** Starts the execution of one delivery; a name already taken means the delivery already started one. */
export function createStartHandler(options: StartHandlerOptions) {
  return async (event: unknown): Promise<{ name: string; started: boolean }> => {
    const { name, input, machine } = startFor(StartEventSchema.parse(event));
    const stateMachineArn = machine === "batch" ? options.batchStateMachineArn : options.stateMachineArn;
    if (!stateMachineArn)
      throw new Error(`no ${machine} state machine is configured (BATCH_STATE_MACHINE_ARN)`);
    try {
      await options.client.send(
        new StartExecutionCommand({
          stateMachineArn,
          name,
          input: JSON.stringify(input),
        }),
      );
      logger.info("execution started", { name });
      return { name, started: true };
    } catch (error) {
      // Names are unique for 90 days per state machine: the same delivery, seen again.
      if ((error as { name?: string }).name === "ExecutionAlreadyExists") {
        logger.info("repeated delivery: execution exists", { name });
        return { name, started: false };
      }
      // Anything else fails the invocation: Lambda retries it, then it goes to the dead-letter queue.
      logger.error("could not start the execution", error as Error);
      throw error;
    }
  };
}

let start: ReturnType<typeof createStartHandler> | undefined;

/** Built on the first event (a bad environment fails it loudly), then reused by the container. */
export const handler = (event: unknown) => {
  const env = readEnv(StartEnvSchema);
  start ??= createStartHandler({
    client: tracer.captureAWSv3Client(new SFNClient({})),
    stateMachineArn: env.STATE_MACHINE_ARN,
    batchStateMachineArn: env.BATCH_STATE_MACHINE_ARN,
  });
  return start(event);
};
