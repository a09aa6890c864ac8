import * as z from "zod";
import {
  ErrorNames,
  ModelOverloadedError,
  ModelRateLimitedError,
  ModelRequestFailedError,
  ModelTimeoutError,
  SelfCorrectionError,
  TRANSIENT_MODEL_ERRORS,
} from "../errors.js";
import {
  type BatchRequestLine,
  type BatchResult,
  BatchResultSchema,
  type BatchServiceLimits,
} from "../model/batch.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../model/types.js";
import { roundKeys } from "../store/bucket-layout.js";
import { type BlobStore, TokenTotalsSchema } from "../store/types.js";

/**
 * Batch pricing: the corrections of a whole manifest in rounds, each round's model calls sent as
 * one request to a batch service (the Message Batches API, Bedrock batch inference) at half the
 * token price. The loop itself does not change: the same steps run on the same loop state, and a
 * model call is answered from the batch instead of at once. This module holds what a round needs
 * besides the steps: where a call waits for its batch, what the batch answered, and the service.
 */

/** How a batch's corrections are priced: one call per attempt (the default), or in rounds of batches. */
export const PricingSchema = z.enum(["on_demand", "batch"]);
export type Pricing = z.infer<typeof PricingSchema>;

/** The loop decision a parked item resumes with: which model step asked the batch. */
const ParkedCallSchema = z.enum(["correct", "correct_logic", "judge"]);
export type ParkedCall = z.infer<typeof ParkedCallSchema>;

/** What a parked item carries beside its loop state: the step to resume and where its request lies. */
export const ParkedSchema = z.object({ call: ParkedCallSchema, requestKey: z.string().min(1) });
export type Parked = z.infer<typeof ParkedSchema>;

/** A request waiting for (or sent in) a batch: what the step asked, and the rounds that failed it. */
export const ParkedRequestSchema = z.object({
  customId: z.string().regex(/^[A-Za-z0-9]{1,64}$/),
  request: z.custom<ModelRequest>((v) => typeof v === "object" && v !== null),
  /** Rounds whose answer was a transient failure (errored by load, expired, canceled): the retries used. */
  failedRounds: z.array(z.number().int().nonnegative()),
});
type ParkedRequest = z.infer<typeof ParkedRequestSchema>;

/** What the collect step writes for a request: the round that answered it, and how. */
const StoredResultSchema = z.object({ round: z.number().int().positive(), result: BatchResultSchema });
export type StoredResult = z.infer<typeof StoredResultSchema>;

/**
 * The request's id inside one batch: the item's line and the call (`L12A3`, attempt 3 of line 12;
 * `L12J1`, judge round 1). Letters and digits only, which both services accept (Anthropic's
 * `custom_id`, Bedrock's `recordId`), and unique in a round: one call per item per round.
 */
export const customIdFor = (line: number, call: "attempt" | "judge", n: number): string =>
  `L${line}${call === "attempt" ? "A" : "J"}${n}`;

/** The line of a child run id (`<batchId>-<line>`, record.ts's `childRunId`). */
export function lineOfRunId(runId: string): number {
  const line = Number(runId.slice(runId.lastIndexOf("-") + 1));
  if (!Number.isInteger(line) || line < 1) throw new Error(`${runId} is not the run of a batch item`);
  return line;
}

/** Thrown by {@link RoundModelClient} when the call goes into the next batch instead of being answered now. */
export class ModelAnswerDeferred extends SelfCorrectionError {
  override readonly name = "ModelAnswerDeferred";
  constructor(readonly requestKey: string) {
    super(`the model call waits for the next batch (${requestKey})`, "model_answer_deferred");
  }
}

const TRANSIENT = new Set<string>(TRANSIENT_MODEL_ERRORS);

/** The named error an on-demand call would have thrown for a batch result that has no answer. */
export function errorOfResult(result: Exclude<BatchResult, { type: "succeeded" }>): Error {
  switch (result.type) {
    // Not processed before the service's deadline: what a timeout is for one call.
    case "expired":
      return new ModelTimeoutError("the batch request expired before the service processed it");
    case "canceled":
      return new ModelTimeoutError("the batch request was canceled before the service processed it");
    case "errored": {
      const { name, message } = result.error;
      if (name === ErrorNames.ModelRateLimited) return new ModelRateLimitedError(message);
      if (name === ErrorNames.ModelOverloaded) return new ModelOverloadedError(message);
      if (name === ErrorNames.ModelTimeout) return new ModelTimeoutError(message);
      const error = new ModelRequestFailedError(message);
      // A name the on-demand path has too (CassetteExhaustedError, …) keeps it, for the same Catch.
      if (name !== ErrorNames.ModelRequestFailed) Object.defineProperty(error, "name", { value: name });
      return error;
    }
  }
}

/**
 * The model of a batch-priced round, seen by the unchanged loop steps. A call the batch answered
 * returns that answer (billed at batch price); a call without an answer is parked: its request is
 * written where the submit step finds it and {@link ModelAnswerDeferred} ends the step.
 *
 * A failure the batch reported maps to the same rule as on demand: the transient ones (load,
 * rate limit, an expired or canceled request, which is a timeout) go into the next round, at most
 * `maxRetries` times, as the state machine's MODEL_RETRY retries a call; after that, and at once for
 * any other failure, the step throws the named error, which the state machine records as
 * `model_error`. Repeating a step (a retried task) changes nothing: a failed round counts once.
 */
export class RoundModelClient implements ModelClient {
  readonly provider = "batch";

  constructor(
    readonly model: string,
    private readonly blobs: BlobStore,
    private readonly call: { answerKey: string; customId: string },
    private readonly maxRetries: number,
  ) {}

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const requestKey = roundKeys.request(this.call.answerKey);
    const [stored, parked] = await Promise.all([
      readJson(this.blobs, roundKeys.result(this.call.answerKey), StoredResultSchema),
      readJson(this.blobs, requestKey, ParkedRequestSchema),
    ]);
    if (stored?.result.type === "succeeded") return { ...stored.result.response, priceClass: "batch" };
    let failedRounds = parked?.failedRounds ?? [];
    if (stored) {
      const error = errorOfResult(stored.result);
      if (!TRANSIENT.has(error.name)) throw error;
      if (!failedRounds.includes(stored.round)) failedRounds = [...failedRounds, stored.round];
      if (failedRounds.length > this.maxRetries) throw error;
    }
    const next: ParkedRequest = { customId: this.call.customId, request, failedRounds };
    await this.blobs.put(requestKey, JSON.stringify(next));
    throw new ModelAnswerDeferred(requestKey);
  }
}

/** A JSON blob read and checked, or undefined when it does not exist. */
export async function readJson<T>(
  blobs: BlobStore,
  key: string,
  schema: z.ZodType<T>,
): Promise<T | undefined> {
  let text: string;
  try {
    text = await blobs.get(key);
  } catch (error) {
    if ((error as Error).name === ErrorNames.BlobNotFound) return undefined;
    throw error;
  }
  return schema.parse(JSON.parse(text));
}

/** One round as the batch record keeps it. */
export const RoundRecordSchema = z.object({
  round: z.number().int().positive(),
  requests: z.number().int().nonnegative(),
  jobs: z.array(z.string()),
  submittedAt: z.string(),
  endedAt: z.string().optional(),
  succeeded: z.number().int().nonnegative().optional(),
  errored: z.number().int().nonnegative().optional(),
  expired: z.number().int().nonnegative().optional(),
  canceled: z.number().int().nonnegative().optional(),
  /** Tokens of the round's answers, billed at batch price. */
  tokens: TokenTotalsSchema.optional(),
  costUsd: z.number().nonnegative().optional(),
  /** Requests of this round given up for the on-demand fallback (deadline, too large, too few). */
  onDemand: z.number().int().nonnegative().optional(),
});
export type RoundRecord = z.infer<typeof RoundRecordSchema>;

/**
 * The requests cut into batches a service takes: each within its request count and bytes. Order is
 * kept. A single request over the byte limit cannot go in any batch: it is returned apart, to run on
 * demand. Parts are filled in order; when that leaves a last part below the service's minimum
 * (Bedrock's 100 records: 50,099 requests would be 50,000 + 99, the 99 paying full price on demand)
 * and the requests are enough for every part to reach it, they are shared evenly instead.
 */
export function splitIntoBatches(
  lines: readonly BatchRequestLine[],
  limits: BatchServiceLimits,
  bytesOf: (line: BatchRequestLine) => number,
): { batches: BatchRequestLine[][]; tooLarge: BatchRequestLine[] } {
  const tooLarge: BatchRequestLine[] = [];
  const fitting: { line: BatchRequestLine; size: number }[] = [];
  for (const line of lines) {
    const size = bytesOf(line);
    if (size > limits.maxBytes) tooLarge.push(line);
    else fitting.push({ line, size });
  }
  const inOrder = fill(fitting, limits, () => limits.maxRequests);
  const last = inOrder.at(-1);
  if (!last || last.length >= limits.minRequests || fitting.length < inOrder.length * limits.minRequests)
    return { batches: inOrder, tooLarge };
  const parts = inOrder.length;
  const base = Math.floor(fitting.length / parts);
  const extra = fitting.length % parts;
  return { batches: fill(fitting, limits, (part) => base + (part < extra ? 1 : 0)), tooLarge };
}

/** Fills parts in order, part i up to `countOf(i)` requests and, always, the service's byte limit. */
function fill(
  sized: readonly { line: BatchRequestLine; size: number }[],
  limits: BatchServiceLimits,
  countOf: (part: number) => number,
): BatchRequestLine[][] {
  const batches: BatchRequestLine[][] = [];
  let current: BatchRequestLine[] = [];
  let bytes = 0;
  for (const { line, size } of sized) {
    if (current.length >= countOf(batches.length) || bytes + size > limits.maxBytes) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(line);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** The deadline settings of batch pricing (infra/config.ts `batchPricing`; local defaults in local/batch.ts). */
export interface RoundTiming {
  /** The batch must end this long after it started. */
  deadlineMinutes: number;
  /** What one round is expected to take before any has been measured (submit to results). */
  roundEstimateMinutes: number;
  /** Time kept at the end for the on-demand fallback of the items still correcting. */
  fallbackReserveMinutes: number;
  /** First wait before polling a submitted batch; doubled after each poll. */
  pollFirstSeconds: number;
  /** Longest wait between two polls. */
  pollMaxSeconds: number;
  /** Retries of a transient failure, as many as the per-draft state machine's MODEL_RETRY makes. */
  maxModelRetries: number;
}

/**
 * Whether another round can still end before the deadline, keeping the fallback's reserve: its
 * expected length is the longest round so far, or the estimate before the first one ended.
 */
export function roundFits(
  now: number,
  deadlineAt: number,
  longestRoundMs: number,
  timing: Pick<RoundTiming, "roundEstimateMinutes" | "fallbackReserveMinutes">,
): boolean {
  const expected = Math.max(longestRoundMs, timing.roundEstimateMinutes * 60_000);
  return now + expected + timing.fallbackReserveMinutes * 60_000 <= deadlineAt;
}

/** Whether a submitted round must be given up for the fallback: only the reserve is left. */
export function mustFallBack(
  now: number,
  deadlineAt: number,
  timing: Pick<RoundTiming, "fallbackReserveMinutes">,
) {
  return now + timing.fallbackReserveMinutes * 60_000 > deadlineAt;
}

/** The next wait between polls: doubled, at most the longest. */
export const nextWait = (seconds: number, timing: Pick<RoundTiming, "pollMaxSeconds">): number =>
  Math.min(Math.max(1, seconds * 2), timing.pollMaxSeconds);
