/**
 * redraft as a library: the names below are its public API, listed one by one; everything else in
 * the repository is internal and may change. The model clients are on their own entry,
 * `redraft/models` (models.ts), so that importing this one loads no model SDK.
 */

// Validating a draft against its kind's pack.

export type {
  Draft,
  DraftOptions,
  Repair,
  Severity,
  SeverityCounts,
  ValidationReport,
  Violation,
  ViolationSource,
} from "./shared/draft.js";
export { type DraftLimits, parseDraft, type ValidateOptions, validateDraft } from "./shared/validate.js";

// Correcting it: the committed state machine, run in-process over the stores it is given.

export { type CorrectDraftOptions, correctDraft, type EventSink } from "./local/in-process.js";
export { buildRunResult, type RunResult } from "./shared/loop/run.js";
export {
  type ContentSchema,
  ContentSchemaMismatchError,
  type TypedRunResult,
} from "./shared/loop/schema-option.js";
export type { LoopDeps } from "./shared/loop/steps/deps.js";
export type {
  ModelClient,
  ModelPurpose,
  ModelRequest,
  ModelResponse,
  TokenUsage,
} from "./shared/model/types.js";

// Packs: the kinds of draft, built in or a user's own.

export type { JudgeSettings, LoopSettings, Persona } from "./shared/loop-settings.js";
export type {
  AnyPack,
  DeploymentConfig,
  Finding,
  Pack,
  PackOverride,
  RepairResult,
  Rule,
  RuleContext,
} from "./shared/pack.js";
export { codePack } from "./shared/packs/code/code.js";
export { loadPackFile, packFromDefinition } from "./shared/packs/declarative.js";
export { builtinPacks } from "./shared/packs/index.js";
export { jsonPack } from "./shared/packs/json/json.js";
export { mcqPack } from "./shared/packs/mcq/mcq.js";
export { PackRegistry } from "./shared/registry.js";

// Stores: what a run is kept in; the in-memory pair, or a user's own implementation of the interfaces.

export { MemoryBlobStore, MemoryRunStore } from "./shared/store/memory.js";
export type {
  AttemptRecord,
  BlobStore,
  RunOutcome,
  RunQuery,
  RunRecord,
  RunStatus,
  RunStore,
  StopReason,
  TokenTotals,
} from "./shared/store/types.js";

// Errors, by the names the state machine matches.

export {
  BlobNotFoundError,
  CassetteExhaustedError,
  DraftTooDeepError,
  DraftTooLargeError,
  ErrorNames,
  InvalidDraftError,
  InvalidPackError,
  InvalidSchemaError,
  isTransientModelError,
  ModelError,
  ModelNotConfiguredError,
  ModelOverloadedError,
  ModelRateLimitedError,
  ModelRequestFailedError,
  ModelTimeoutError,
  RunFinishedError,
  RunNotFoundError,
  SelfCorrectionError,
  StoreRequestFailedError,
  StoreUnavailableError,
  UnknownKindError,
  UnreadableInputError,
} from "./shared/errors.js";
