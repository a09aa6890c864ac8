import * as z from "zod";
import type { ModelRequest, ModelResponse } from "./types.js";

/**
 * The model port's batch side: what a batch service (the Message Batches API in ./anthropic.ts,
 * Bedrock batch inference in functions/lib/bedrock-batch.ts, the local stand-in in
 * local/batch-service.ts) is sent and answers. The batch rounds (shared/batch/rounds.ts) drive a
 * service through this interface; the port owns the types, so the model clients never import the
 * batch rounds and the two folders do not import each other.
 */

/**
 * One request's outcome in a batch, whatever the service: an answer, an error the service reported
 * for it (named as the on-demand call's error would be), or no answer because it expired or was
 * canceled before the service processed it.
 */
export const BatchResultSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("succeeded"), response: z.custom<ModelResponse>((v) => typeof v === "object") }),
  z.object({ type: z.literal("errored"), error: z.object({ name: z.string(), message: z.string() }) }),
  z.object({ type: z.literal("expired") }),
  z.object({ type: z.literal("canceled") }),
]);
export type BatchResult = z.infer<typeof BatchResultSchema>;

/** One request of a batch, as the service is sent it. */
export interface BatchRequestLine {
  customId: string;
  request: ModelRequest;
}

/** How many requests and bytes one batch of a service may hold, and how few it needs. */
export interface BatchServiceLimits {
  maxRequests: number;
  maxBytes: number;
  /** Fewer requests than this are refused (Bedrock's minimum records per job); 1 where none. */
  minRequests: number;
}

/** A submitted batch as polled: ended (its results can be read), or still processing. */
export interface BatchJobStatus {
  ended: boolean;
  /** The service's own word for the state (`in_progress`, `InProgress`, `Completed`…), for the record. */
  status: string;
}

/**
 * A batch service, whichever provider: the Message Batches API (./anthropic.ts), Bedrock
 * batch inference (functions/lib/bedrock-batch.ts), or the local stand-in (local/batch-service.ts).
 */
export interface BatchModelService {
  readonly provider: string;
  readonly model: string;
  readonly limits: BatchServiceLimits;
  /** The bytes one request adds to a batch, as this service encodes it. */
  requestBytes(line: BatchRequestLine): number;
  /** Submits one batch; returns the service's id for it. `name` is unique per batch, round and part. */
  submit(name: string, lines: readonly BatchRequestLine[]): Promise<string>;
  status(jobId: string): Promise<BatchJobStatus>;
  /** Every request's outcome, by custom id, once the batch has ended. */
  results(jobId: string): Promise<Map<string, BatchResult>>;
  cancel(jobId: string): Promise<void>;
}
