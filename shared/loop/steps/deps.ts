import type { SourceReader } from "../../grounding/source.js";
import type { ModelClient } from "../../model/types.js";
import type { PackRegistry } from "../../registry.js";
import type { AttemptRecord, BlobStore, RunStore } from "../../store/types.js";

/** What the steps need from the outside world; the same in Lambda, in the local runtime and in tests. */
export interface LoopDeps {
  registry: PackRegistry;
  runs: RunStore;
  blobs: BlobStore;
  /** Absent when no model is configured: drafts with errors then go to review with reason `no_model`. */
  model?: ModelClient | undefined;
  /**
   * Whether a model is configured, for steps that do not call it themselves (Validate, Revalidate
   * in Lambda). Defaults to `model !== undefined`.
   */
  modelAvailable?: boolean;
  /**
   * A client of another provider for the judge, used when `judge.model` is `<provider>:<id>` and the
   * provider is not `model`'s. A judge of the same provider needs none: the request names the model.
   */
  judgeModel?: ModelClient | undefined;
  /**
   * Reads a `context.source` reference. @default a key of the blob store under `sources/` (the
   * bucket); the local runtime reads a file path.
   */
  readSource?: SourceReader;
  clock?: () => Date;
  /**
   * A duplicate delivery of the same content within this window starts no second run. 0 disables it.
   * @default DEFAULT_DEDUPE_WINDOW_MS (shared/loop/limits.ts)
   */
  dedupeWindowMs?: number;
  /** Largest draft accepted, in bytes. @default DEFAULT_MAX_DRAFT_BYTES (shared/validate.ts) */
  maxDraftBytes?: number;
  /** Deepest nesting of objects and arrays a draft may have. @default DEFAULT_MAX_DRAFT_DEPTH (ditto) */
  maxDraftDepth?: number;
  /** Output token cap per model call. @default DEFAULT_MAX_OUTPUT_TOKENS (shared/loop/limits.ts) */
  maxOutputTokens?: number;
  /** Called once per attempt, when its record is first written (never on a retried task): for metrics. */
  onAttemptRecorded?: (record: AttemptRecord) => void;
}

/** The time a step records: the injected clock, so tests and replays are deterministic. */
export const now = (deps: LoopDeps): string => (deps.clock?.() ?? new Date()).toISOString();

/** A JSON blob the loop wrote earlier (a draft, a report, a judge report). */
export async function loadJson<T>(blobs: BlobStore, key: string): Promise<T> {
  return JSON.parse(await blobs.get(key)) as T;
}
