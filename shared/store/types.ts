import * as z from "zod";
import { RepairSchema, ViolationSchema } from "../draft.js";
import { addUsage, TokenUsageSchema } from "../model/types.js";

export const RunStatusSchema = z.enum([
  "draft",
  "correcting",
  "validated",
  "needs_manual_review",
  "rejected",
  "failed",
]);
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** A run under way. The other statuses are outcomes: a run never goes back from one to these. */
export const ACTIVE_STATUSES = ["draft", "correcting"] as const satisfies readonly RunStatus[];
export const isActiveStatus = (status: unknown): boolean =>
  (ACTIVE_STATUSES as readonly unknown[]).includes(status);

/** Why a run ended where it did (docs/DESIGN.md §2 lists each). `validated` runs from the loop have no reason. */
export const StopReasonSchema = z.enum([
  "max_attempts",
  "circuit_breaker",
  "stuck",
  "budget_exhausted",
  "no_model",
  "logic_unresolved",
  "invalid_input",
  "unknown_kind",
  "too_large",
  "too_deep",
  "unreadable",
  "invalid_schema",
  "duplicate",
  "system_error",
  "model_error",
  "pack_error",
  "deadline",
  "interrupted",
  "timed_out",
  "aborted",
  "execution_failed",
  "approved",
  "rejected_by_reviewer",
  "superseded_by_edit",
]);
export type StopReason = z.infer<typeof StopReasonSchema>;

export const TokenTotalsSchema = TokenUsageSchema.extend({ total: z.number().int().nonnegative() });
export type TokenTotals = z.infer<typeof TokenTotalsSchema>;
export const ZERO_TOTALS: TokenTotals = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };

/** Two token totals added field by field: what a run has spent after one more call. */
export function addTotals(a: TokenTotals, b: TokenTotals): TokenTotals {
  return { ...addUsage(a, b), total: a.total + b.total };
}

const TransitionSchema = z.object({ status: RunStatusSchema, at: z.string() });

const ReviewSchema = z.object({
  decision: z.enum(["approve", "reject", "edit"]),
  reviewer: z.string().optional(),
  note: z.string().optional(),
  at: z.string(),
  newRunId: z.string().optional(),
  /**
   * An approval of a draft that still had error violations, said so explicitly (`--override`, the
   * viewer's checkbox): the rules that still failed.
   */
  overriddenRules: z.array(z.string()).optional(),
  /** Where the decision found the run, so that its reviewer can take it back (app/review.ts). */
  from: z.object({ status: RunStatusSchema, reason: StopReasonSchema.optional() }).optional(),
});
export type Review = z.infer<typeof ReviewSchema>;

/**
 * How long a review claim holds when its decision was never carried out (the reviewer's process
 * died between the claim and the status write): after this another reviewer may take it over. An
 * edit's new run is started while the claim is held, so this outlasts a slow run.
 */
export const REVIEW_CLAIM_MS = 60 * 60 * 1000;

/** One run of one draft through the loop: what the review queue and `redraft runs` list. */
export const RunRecordSchema = z.object({
  runId: z.string(),
  draftId: z.string(),
  kind: z.string(),
  status: RunStatusSchema,
  reason: StopReasonSchema.optional(),
  /** A human-readable explanation (the rejection's cause, the failure's error). */
  message: z.string().optional(),
  attempts: z.number().int().nonnegative(),
  logicAttempts: z.number().int().nonnegative(),
  violationsPerAttempt: z.array(z.number().int().nonnegative()),
  /** Deterministic repairs made to the best draft when it was checked; absent when none were. */
  repairs: z.number().int().nonnegative().optional(),
  resolvedRules: z.array(z.string()),
  persistentRules: z.array(z.string()),
  circuitBreakerRules: z.array(z.string()),
  tokens: TokenTotalsSchema,
  costUsd: z.number().nonnegative(),
  /** Blob keys of the run's own copy of the submitted draft, the best draft, and the published result. */
  originalRef: z.string().optional(),
  /** Where the draft was uploaded (`drafts/…`, with `?versionId=` when S3 gave one), for uploads. */
  uploadRef: z.string().optional(),
  finalRef: z.string().optional(),
  resultRef: z.string().optional(),
  contentHash: z.string().optional(),
  model: z.string().optional(),
  /** Set when a run was started from a reviewer's edit of an earlier run. */
  parentRunId: z.string().optional(),
  review: ReviewSchema.optional(),
  /** Judge overrides the draft used (`skipJudge`, `acceptFindings:<ruleId>`). */
  overrides: z.array(z.string()).optional(),
  /** Blob key of the last judge round's evidence. */
  judgeRef: z.string().optional(),
  transitions: z.array(TransitionSchema),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type RunRecord = z.infer<typeof RunRecordSchema>;

/** A run record with nothing done yet: no attempts, no tokens, one transition into `status`. */
export function newRunRecord(
  runId: string,
  draftId: string,
  kind: string,
  at: string,
  status: RunStatus = "draft",
): RunRecord {
  return {
    runId,
    draftId,
    kind,
    status,
    attempts: 0,
    logicAttempts: 0,
    violationsPerAttempt: [],
    resolvedRules: [],
    persistentRules: [],
    circuitBreakerRules: [],
    tokens: { ...ZERO_TOTALS },
    costUsd: 0,
    transitions: [{ status, at }],
    createdAt: at,
    updatedAt: at,
  };
}

export const PhaseSchema = z.enum(["execution", "logic"]);
export type Phase = z.infer<typeof PhaseSchema>;

/** One correction: the model call and the full re-validation after it (seed 004's CorrectionAttempt, docs/DESIGN.md §1). */
export const AttemptRecordSchema = z.object({
  runId: z.string(),
  attempt: z.number().int().positive(),
  phase: PhaseSchema,
  inputViolations: z.array(ViolationSchema),
  outputViolations: z.array(ViolationSchema),
  resolvedCount: z.number().int().nonnegative(),
  remainingCount: z.number().int().nonnegative(),
  repairs: z.array(RepairSchema),
  /** JSON Patch (RFC 6902) from the previous best draft to this attempt's draft. */
  diff: z.array(z.record(z.string(), z.unknown())),
  /** Set instead of `diff` when the patch is too large for a record; the blob holds it whole. */
  diffRef: z.string().optional(),
  /** The whole validation report of this attempt's draft, in the blob store. */
  reportRef: z.string().optional(),
  /**
   * How many entries each list above left out to keep the record under DynamoDB's 400 KB; the
   * whole lists are in `reportRef` (and the best draft's report). Absent when nothing was left out.
   */
  omitted: z
    .object({
      inputViolations: z.number().int().nonnegative(),
      outputViolations: z.number().int().nonnegative(),
      repairs: z.number().int().nonnegative(),
    })
    .optional(),
  analysis: z.string(),
  fixDescription: z.string(),
  /** Why the answer could not be used (did not parse, broke the schema, touched a protected field). */
  failure: z.string().optional(),
  tokens: TokenUsageSchema,
  costUsd: z.number().nonnegative(),
  model: z.string(),
  latencyMs: z.number().nonnegative(),
  at: z.string(),
  draftRef: z.string().optional(),
  errorCount: z.number().int().nonnegative(),
  score: z.number(),
  /** This attempt did not beat the best so far, so the next one starts from the best again. */
  rolledBack: z.boolean(),
  isBest: z.boolean(),
  /** Logic phase: the persona constraints the judge applied. */
  personas: z.array(z.string()).optional(),
  /** How the answer was asked for: `json_schema` / `strict_tool` (constrained by the provider) or `tool`. */
  outputMode: z.enum(["json_schema", "strict_tool", "tool"]).optional(),
  /** A field-level answer (only the changed values), as applied to the previous best draft. */
  patch: z
    .array(z.object({ op: z.enum(["set", "remove"]), path: z.string(), value: z.unknown().optional() }))
    .optional(),
  /** Locked fields the patch tried to change: those changes were refused as regressions, not applied. */
  refusedPaths: z.array(z.string()).optional(),
});
export type AttemptRecord = z.infer<typeof AttemptRecordSchema>;

export interface RunQuery {
  status?: RunStatus;
  draftId?: string;
  limit?: number;
}

/** What the loop finishes a run with: the fields MarkValidated / MarkNeedsReview write. */
export interface RunOutcome {
  status: RunStatus;
  reason?: StopReason;
  message?: string;
  finalRef?: string;
  resultRef?: string;
  circuitBreakerRules?: string[];
  resolvedRules?: string[];
  persistentRules?: string[];
  violationsPerAttempt?: number[];
  repairs?: number;
  attempts?: number;
  logicAttempts?: number;
  overrides?: string[];
  judgeRef?: string;
}

/**
 * Run and attempt records. Every write that can happen twice is conditional:
 * registering a run, writing an attempt, and adding an attempt's tokens.
 */
/**
 * Usage of judge round k is counted (`RunStore.addUsage`) under this key + k: attempts are 1..9999,
 * so the keys never meet. Here, beside the store's contract, so that reading it (recovery) does not
 * load the judge step and, through it, every pack.
 */
export const JUDGE_USAGE_KEY_BASE = 100_000;

export interface RunStore {
  /** Creates the run; false when a run with this id already exists (a retried task). */
  createRun(run: RunRecord): Promise<boolean>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /**
   * Claims a draft's content hash for a run. Returns the run id holding it: this one when the claim
   * is new, stale (older than windowMs), ours already, or held by `replaceHolder` (a run that
   * failed, whose claim may be taken over); another when this delivery is a duplicate.
   */
  claimContent(
    contentHash: string,
    runId: string,
    now: string,
    windowMs: number,
    replaceHolder?: string,
  ): Promise<string>;
  /**
   * Moves the run to a status, appending the transition with its timestamp. Idempotent: a run
   * already in that status is left as it is (a retried task appends no second transition).
   */
  setStatus(runId: string, status: RunStatus, at: string, fields?: Partial<RunOutcome>): Promise<void>;
  /** Records the loop's progress (counts, rule lists, best draft) without changing the status. */
  updateRun(runId: string, fields: Partial<RunOutcome>): Promise<void>;
  /** Writes an attempt once; false when it already exists. */
  putAttempt(attempt: AttemptRecord): Promise<boolean>;
  /** Adds an attempt's tokens and cost to the run's totals at most once per attempt number. */
  addUsage(runId: string, attempt: number, usage: TokenTotals, costUsd: number): Promise<boolean>;
  listAttempts(runId: string): Promise<AttemptRecord[]>;
  /** Newest first. */
  listRuns(query?: RunQuery): Promise<RunRecord[]>;
  setReview(runId: string, review: Review): Promise<void>;
  /**
   * Claims a run for one reviewer's decision: records `review` only while the run is in one of
   * `from` and holds no live claim (none, or one made before `staleBefore`). One conditional write,
   * so of two reviewers deciding at once exactly one gets true.
   */
  claimReview(
    runId: string,
    from: readonly RunStatus[],
    review: Review,
    staleBefore: string,
  ): Promise<boolean>;
  /** Withdraws `review`'s claim (the same reviewer and time) when its decision could not be carried out. */
  releaseReview(runId: string, review: Review): Promise<void>;
}

/** Drafts, attempts and evidence, by key. S3 in the cloud, a folder locally, a Map in tests. */
export interface BlobStore {
  put(key: string, body: string, contentType?: string): Promise<void>;
  /**
   * Throws BlobNotFoundError when missing. `version` reads one version of a versioned object (an
   * S3 upload's VersionId); stores without versions ignore it.
   */
  get(key: string, version?: string): Promise<string>;
  /** Writes only when the key is absent; false when it was there (originals are never overwritten). */
  putIfAbsent(key: string, body: string, contentType?: string): Promise<boolean>;
}
