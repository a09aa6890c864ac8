/**
 * Error names are a contract with the state machine: Lambda reports `error.name` as the
 * Step Functions error, `Retry` matches the transient ones and `Catch` the terminal ones.
 * `infra/` imports these constants; nothing repeats them as literals.
 */
export const ErrorNames = {
  SelfCorrection: "SelfCorrectionError",
  InvalidDraft: "InvalidDraftError",
  UnknownKind: "UnknownKindError",
  DraftTooLarge: "DraftTooLargeError",
  DraftTooDeep: "DraftTooDeepError",
  Unreadable: "UnreadableInputError",
  InvalidSchema: "InvalidSchemaError",
  StoreUnavailable: "StoreUnavailableError",
  StoreRequestFailed: "StoreRequestFailedError",
  InvalidPack: "InvalidPackError",
  ModelRateLimited: "ModelRateLimitedError",
  ModelOverloaded: "ModelOverloadedError",
  ModelTimeout: "ModelTimeoutError",
  ModelRequestFailed: "ModelRequestFailedError",
  ModelNotConfigured: "ModelNotConfiguredError",
  CassetteExhausted: "CassetteExhaustedError",
  DeadlinePassed: "DeadlinePassedError",
  RunNotFound: "RunNotFoundError",
  RunFinished: "RunFinishedError",
  BlobNotFound: "BlobNotFoundError",
} as const;

/** Model failures worth retrying with backoff: the state machine's `Retry` matches exactly these. */
export const TRANSIENT_MODEL_ERRORS = [
  ErrorNames.ModelRateLimited,
  ErrorNames.ModelOverloaded,
  ErrorNames.ModelTimeout,
] as const;

/** Base class of every error redraft raises on purpose. */
export class SelfCorrectionError extends Error {
  override readonly name: string = ErrorNames.SelfCorrection;
  /** A stable, machine-readable code (`invalid_input`, `unknown_kind`…). */
  readonly code: string;
  constructor(message: string, code = "self_correction_error", options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** The input is not a valid Draft; the message names the field. Terminal: the run is rejected. */
export class InvalidDraftError extends SelfCorrectionError {
  override readonly name = ErrorNames.InvalidDraft;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "invalid_input", options);
  }
}

export class UnknownKindError extends SelfCorrectionError {
  override readonly name = ErrorNames.UnknownKind;
  constructor(
    readonly kind: string,
    known: readonly string[],
  ) {
    super(
      `unknown kind "${kind}": no rule pack is registered for it (known: ${known.join(", ")})`,
      "unknown_kind",
    );
  }
}

export class DraftTooLargeError extends SelfCorrectionError {
  override readonly name = ErrorNames.DraftTooLarge;
  constructor(bytes: number, limit: number) {
    super(`draft is ${bytes} bytes, over the limit of ${limit} bytes`, "too_large");
  }
}

/**
 * JSON nested deeper than the limit. Raised by an iterative scan before anything recurses over the
 * value, so a hostile depth cannot overflow the stack of a parser, a validator or a walk.
 */
export class DraftTooDeepError extends SelfCorrectionError {
  override readonly name = ErrorNames.DraftTooDeep;
  constructor(
    readonly depth: number,
    readonly limit: number,
    where = "draft",
  ) {
    super(`${where} is nested deeper than the limit of ${limit} levels`, "too_deep");
  }
}

/** An input path that does not exist, cannot be read, or loops (symlinks). Terminal: rejected. */
export class UnreadableInputError extends SelfCorrectionError {
  override readonly name = ErrorNames.Unreadable;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "unreadable", options);
  }
}

/**
 * A json draft's `context.schema` that cannot be used: not a JSON Schema of a supported draft, too
 * large or deep, or with a remote `$ref`. The schema is untrusted input, so this rejects the run.
 */
export class InvalidSchemaError extends SelfCorrectionError {
  override readonly name = ErrorNames.InvalidSchema;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "invalid_schema", options);
  }
}

/**
 * A pack's own code threw while it checked, repaired or scored a draft: the pack's fault, not the
 * draft's and not redraft's. The run ends `failed` with reason `pack_error`, its message the
 * violation `rule_error` naming the pack and the rule.
 */
export class PackRuleError extends SelfCorrectionError {
  override readonly name = "PackRuleError";
  constructor(
    readonly kind: string,
    readonly ruleId: string,
    thrown: unknown,
  ) {
    super(`rule_error: pack "${kind}" rule "${ruleId}" threw: ${describeThrownValue(thrown)}`, "pack_error", {
      cause: thrown,
    });
  }
}

/** A thrown value in one line, read without trusting it (a pack may throw anything). */
function describeThrownValue(value: unknown): string {
  try {
    if (value instanceof Error)
      return `${value.name}: ${value.message}`.replace(/\s*\n\s*/g, " ").slice(0, 300);
    if (typeof value === "string") return value.replace(/\s*\n\s*/g, " ").slice(0, 300);
    return `${typeof value} ${String(value)}`.slice(0, 300);
  } catch {
    return "a value that cannot be read";
  }
}

/** A pack (TypeScript module or declarative file) that cannot be loaded. */
export class InvalidPackError extends SelfCorrectionError {
  override readonly name = ErrorNames.InvalidPack;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "invalid_pack", options);
  }
}

/**
 * The run's deadline passed while its model work waited for a slot or kept being answered 429:
 * recorded with reason `deadline`, never retried (shared/loop/model-queue.ts).
 */
export class DeadlinePassedError extends SelfCorrectionError {
  override readonly name = ErrorNames.DeadlinePassed;
  constructor(deadline: string, options?: { cause?: unknown }) {
    super(`the run's deadline (${deadline}) passed before a model slot answered it`, "deadline", options);
  }
}

/** Base of model-call failures. */
export class ModelError extends SelfCorrectionError {
  override readonly name: string = ErrorNames.ModelRequestFailed;
  constructor(message: string, code = "model_request_failed", options?: { cause?: unknown }) {
    super(message, code, options);
  }
}
export class ModelRateLimitedError extends ModelError {
  override readonly name = ErrorNames.ModelRateLimited;
  constructor(message = "model rate limit reached", options?: { cause?: unknown }) {
    super(message, "model_rate_limited", options);
  }
}
export class ModelOverloadedError extends ModelError {
  override readonly name = ErrorNames.ModelOverloaded;
  constructor(message = "model is overloaded", options?: { cause?: unknown }) {
    super(message, "model_overloaded", options);
  }
}
export class ModelTimeoutError extends ModelError {
  override readonly name = ErrorNames.ModelTimeout;
  constructor(message = "model call timed out", options?: { cause?: unknown }) {
    super(message, "model_timeout", options);
  }
}
export class ModelRequestFailedError extends ModelError {}
export class ModelNotConfiguredError extends ModelError {
  override readonly name = ErrorNames.ModelNotConfigured;
  constructor(message = "no model is configured") {
    super(message, "model_not_configured");
  }
}
/** The replay cassette has no answer left for this draft and purpose. */
export class CassetteExhaustedError extends ModelError {
  override readonly name = ErrorNames.CassetteExhausted;
  constructor(draftId: string, purpose: string, used: number) {
    super(
      `replay cassette has no ${purpose} response left for draft "${draftId}" (${used} already used)`,
      "cassette_exhausted",
    );
  }
}
export class RunNotFoundError extends SelfCorrectionError {
  override readonly name = ErrorNames.RunNotFound;
  constructor(runId: string) {
    super(`run ${runId} not found`, "run_not_found");
  }
}
/**
 * A step asked to move a run back under way (`correcting`) after it reached an outcome, e.g. a
 * Validate that outlived its aborted execution, whose run the finalizer had already failed. The
 * outcome stands; the step's write is refused.
 */
export class RunFinishedError extends SelfCorrectionError {
  override readonly name = ErrorNames.RunFinished;
  constructor(runId: string, status: string, wanted: string) {
    super(`run ${runId} is ${status} already and cannot move back to ${wanted}`, "run_finished");
  }
}
export class BlobNotFoundError extends SelfCorrectionError {
  override readonly name = ErrorNames.BlobNotFound;
  constructor(key: string) {
    super(`blob ${key} not found`, "blob_not_found");
  }
}

export function isTransientModelError(error: unknown): boolean {
  return error instanceof Error && (TRANSIENT_MODEL_ERRORS as readonly string[]).includes(error.name);
}

/** An error's `name: message`, for the message of the storage error that wraps it. */
function describeCause(cause: unknown): string {
  const e = cause as { name?: unknown; message?: unknown } | undefined;
  return e && typeof e === "object" ? `${String(e.name)}: ${String(e.message)}` : String(cause);
}

/**
 * DynamoDB or S3 throttled the request or failed on its side, after the SDK's own retries.
 * Transient: the state machine retries it (contracts/table.ts `storeError` decides which).
 */
export class StoreUnavailableError extends SelfCorrectionError {
  override readonly name = ErrorNames.StoreUnavailable;
  constructor(operation: string, cause: unknown) {
    super(`${operation}: storage unavailable (${describeCause(cause)})`, "store_unavailable", { cause });
  }
}

/** Any other storage failure (validation, permissions, missing table or bucket). Terminal. */
export class StoreRequestFailedError extends SelfCorrectionError {
  override readonly name = ErrorNames.StoreRequestFailed;
  constructor(operation: string, cause: unknown) {
    super(`${operation}: storage request failed (${describeCause(cause)})`, "store_request_failed", {
      cause,
    });
  }
}
