/** What the Validate step is given, how it reads an upload, and how it decides an input is refused. */
import * as z from "zod";
import {
  BlobNotFoundError,
  InvalidDraftError,
  SelfCorrectionError,
  UnreadableInputError,
} from "../../errors.js";
import { topLevelField } from "../../json-depth.js";
import { getByEventKey } from "../../store/event-key.js";
import type { BlobStore, StopReason } from "../../store/types.js";

/** Input of the Validate step: an inline draft, or a reference to one in the blob store. */
export interface ValidateInput {
  runId: string;
  draft?: unknown;
  draftRef?: string;
  /** The upload's version (S3 VersionId), so a later upload to the same key cannot change what this run reads. */
  draftVersion?: string;
  /**
   * The key is an S3 notification's (URL-encoded, λ start says so) and `draftVersion` names the
   * upload: its decoded form is read when the key as given is not there. Otherwise the key is exact.
   */
  decodeKey?: boolean;
  /** Distinguishes deliberate resubmissions of the same content from duplicate deliveries. */
  submissionId?: string;
  parentRunId?: string;
  /**
   * Set when the input is unusable before any draft can be read: by the handler for an event that
   * points nowhere (a foreign bucket, no draft at all), by a submitter for a path it could not read.
   * The run is recorded as rejected, so it is listed and shown like any other.
   */
  rejectWith?: string | InputRejection;
}

/**
 * Why an input was refused before it reached Validate, and what to call its draft: set by a submitter
 * (the local CLI's unreadable paths, an inline draft too deep for the engine) in Validate's input.
 */
const InputRejectionSchema = z.object({
  reason: z.enum(["unreadable", "too_deep", "invalid_input"]),
  message: z.string().max(4096),
  /** The run's draft id when the draft could not be read (a file name, say); else a guess from the input. */
  draftId: z.string().max(256).optional(),
});
export type InputRejection = z.infer<typeof InputRejectionSchema>;

/** What the state machine hands Validate: its execution name as run id, and the execution input. */
export const ValidateEventSchema = z.object({
  runId: z.string().min(1),
  input: z.looseObject({
    draft: z.unknown().optional(),
    draftRef: z
      .union([
        z.string(),
        z.object({
          bucket: z.string().optional(),
          key: z.string(),
          versionId: z.string().optional(),
          /** Set by λ start for an upload's event only (a client's `Draft Submitted` cannot: it is removed there). */
          keyForm: z.literal("notification").optional(),
        }),
      ])
      .optional(),
    submissionId: z.string().optional(),
    parentRunId: z.string().optional(),
    /** Set by a submitter that refused its input before the run (the local CLI's unreadable paths). */
    rejectWith: InputRejectionSchema.optional(),
  }),
});
export type ValidateEvent = z.infer<typeof ValidateEventSchema>;

/** A best-effort id for a run whose input is not a valid Draft, so the rejection can be listed. */
export function guessDraftId(input: unknown, ref: string | undefined): string {
  const id = topLevelField(input, "id")?.slice(0, 256);
  if (id) return id;
  return ref ? (ref.split(/[/\\]/).pop() || ref).slice(0, 256) : "unknown";
}

/** A best-effort kind for a run whose input is not a valid Draft. */
export const guessKind = (input: unknown): string => (topLevelField(input, "kind") || "unknown").slice(0, 64);

const REJECTION_CODES: ReadonlySet<string> = new Set<StopReason>([
  "too_large",
  "too_deep",
  "unreadable",
  "invalid_schema",
  "unknown_kind",
]);

/** Errors that say the input itself is bad: the run is rejected. Anything else is a failure. */
export function isInputError(error: unknown): error is SelfCorrectionError {
  return (
    error instanceof SelfCorrectionError &&
    (error.code === "invalid_input" || REJECTION_CODES.has(error.code))
  );
}

/** The rejected reason is the error's own stable code where it names one, else `invalid_input`. */
export const rejectionReason = (error: unknown): StopReason =>
  error instanceof SelfCorrectionError && REJECTION_CODES.has(error.code)
    ? (error.code as StopReason)
    : "invalid_input";

/** Binary uploads are rejected before JSON parsing gives a confusing message. */
export function looksBinary(text: string): boolean {
  const sample = text.slice(0, 8192);
  return sample.includes("\u0000") || (sample.match(/\uFFFD/g)?.length ?? 0) > 8;
}

/**
 * Reads an upload by its exact key; with `decode` (an S3 notification's key and the version it
 * names), raw or URL-encoded (`getByEventKey`). A draft that is truly missing is bad input
 * (rejected), not a system failure.
 */
export async function readUpload(
  blobs: BlobStore,
  key: string,
  version?: string,
  decode = false,
): Promise<string> {
  try {
    return decode ? (await getByEventKey(blobs, key, version)).text : await blobs.get(key, version);
  } catch (error) {
    if (error instanceof BlobNotFoundError) throw new InvalidDraftError(`no draft at ${key}`);
    throw error;
  }
}

/** The error a submitter's or handler's `rejectWith` stands for. */
export function rejectionError(rejectWith: string | InputRejection): SelfCorrectionError {
  if (typeof rejectWith === "string") return new InvalidDraftError(rejectWith);
  switch (rejectWith.reason) {
    case "unreadable":
      return new UnreadableInputError(rejectWith.message);
    case "too_deep":
      // The depth was measured where the input was refused; the message already says it.
      return new SelfCorrectionError(rejectWith.message, "too_deep");
    default:
      return new InvalidDraftError(rejectWith.message);
  }
}
