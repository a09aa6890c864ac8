import fastJsonPatch from "fast-json-patch";
import type { Draft, ValidationReport, Violation } from "../draft.js";
import { inspectWithPack } from "../engine.js";
import {
  BlobNotFoundError,
  ErrorNames,
  InvalidDraftError,
  ModelNotConfiguredError,
  SelfCorrectionError,
  UnreadableInputError,
} from "../errors.js";
import { canonicalJson, sha256 } from "../hash.js";
import { topLevelField } from "../json-depth.js";
import { costUsd } from "../model/pricing.js";
import { addUsage, type ModelClient, type ModelResponse, totalTokens } from "../model/types.js";
import type { Persona } from "../pack.js";
import { fromPointer } from "../pointer.js";
import type { PackRegistry } from "../registry.js";
import {
  type AttemptRecord,
  type BlobStore,
  newRunRecord,
  type RunRecord,
  type RunStore,
  type StopReason,
  type TokenTotals,
  ZERO_TOTALS,
} from "../store/types.js";
import { packFor, parseDraft } from "../validate.js";
import { buildJudgePrompt, classifyFindings, judgeEnabled, parseJudgeAnswer, personasFor } from "./judge.js";
import { blobKeys } from "./keys.js";
import { resolveLimits } from "./limits.js";
import { buildCorrectionPrompt } from "./prompt.js";
import { parseCorrectionAnswer } from "./response.js";
import { attemptsMade, type LoopState, type Pending } from "./state.js";
import { budgetSpent, nextVerdict } from "./verdict.js";

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
  clock?: () => Date;
  /** A duplicate delivery of the same content within this window starts no second run. 0 disables it. */
  dedupeWindowMs?: number;
  maxDraftBytes?: number;
  /** Deepest nesting of objects and arrays a draft may have (DEFAULT_MAX_DRAFT_DEPTH). */
  maxDraftDepth?: number;
  /** Output token cap per model call. */
  maxOutputTokens?: number;
  /** Called once per attempt, when its record is first written (never on a retried task): for metrics. */
  onAttemptRecorded?: (record: AttemptRecord) => void;
}

export const DEFAULT_DEDUPE_WINDOW_MS = 15 * 60 * 1000;
/** Attempt diffs above this size go to the blob store, keeping attempt records far under 400 KB. */
const MAX_INLINE_DIFF_BYTES = 64 * 1024;
/**
 * Violations and repairs an attempt record lists inline; the rest stay in the attempt's report
 * blob and the record says how many it left out. The budget keeps records well under DynamoDB's
 * 400 KB whatever the messages hold.
 */
const MAX_RECORD_LIST = 100;
const MAX_RECORD_BYTES = 300 * 1024;

function fitRecord(
  record: AttemptRecord,
  input: Violation[],
  output: Violation[],
  repairs: AttemptRecord["repairs"],
): void {
  for (const cap of [MAX_RECORD_LIST, 30, 10, 0]) {
    record.inputViolations = input.slice(0, cap);
    record.outputViolations = output.slice(0, cap);
    record.repairs = repairs.slice(0, cap);
    if (Buffer.byteLength(JSON.stringify(record)) <= MAX_RECORD_BYTES) break;
  }
  const omitted = {
    inputViolations: input.length - record.inputViolations.length,
    outputViolations: output.length - record.outputViolations.length,
    repairs: repairs.length - record.repairs.length,
  };
  if (omitted.inputViolations + omitted.outputViolations + omitted.repairs > 0) record.omitted = omitted;
}

const now = (deps: LoopDeps): string => (deps.clock?.() ?? new Date()).toISOString();

/** Input of the Validate step: an inline draft, or a reference to one in the blob store. */
export interface ValidateInput {
  runId: string;
  draft?: unknown;
  draftRef?: string;
  /** The upload's version (S3 VersionId), so a later upload to the same key cannot change what this run reads. */
  draftVersion?: string;
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

/** Why an input was refused before it reached Validate, and what to call its draft. */
export interface InputRejection {
  reason: "unreadable" | "too_deep" | "invalid_input";
  message: string;
  /** The run's draft id when the draft could not be read (a file name, say); else a guess from the input. */
  draftId?: string;
}

const ZERO_VERDICT = {
  errors: 0,
  warnings: 0,
  score: 0,
  breakerTripped: false,
  stuck: false,
  budgetExhausted: false,
};

function terminalState(
  runId: string,
  draftId: string,
  kind: string,
  decision: "rejected" | "duplicate",
  reason: StopReason,
  message: string,
): LoopState {
  return {
    runId,
    draftId,
    kind,
    decision,
    reason,
    message,
    phase: "execution",
    counters: { execution: 0, logic: 0 },
    limits: {
      maxAttempts: 0,
      breakerAfter: 1,
      stuckAfter: 1,
      maxLogicAttempts: 0,
      maxTokens: 0,
      maxCostUsd: 0,
    },
    modelAvailable: false,
    verdict: ZERO_VERDICT,
    best: { attempt: 0, draftRef: "", reportRef: "", errors: 0, score: 0 },
    originalRef: "",
    initialErrorRules: [],
    ruleFailures: {},
    sinceBest: 0,
    circuitBreakerRules: [],
    violationsPerAttempt: [],
    hints: [],
    tokens: { ...ZERO_TOTALS },
    costUsd: 0,
    judge: { enabled: false, rounds: 0, blocking: 0, failed: false },
  };
}

/** A best-effort id for a run whose input is not a valid Draft, so the rejection can be listed. */
function guessDraftId(input: unknown, ref: string | undefined): string {
  const id = topLevelField(input, "id")?.slice(0, 256);
  if (id) return id;
  return ref ? (ref.split(/[/\\]/).pop() || ref).slice(0, 256) : "unknown";
}

const guessKind = (input: unknown): string => (topLevelField(input, "kind") || "unknown").slice(0, 64);

const REJECTION_CODES: ReadonlySet<string> = new Set<StopReason>([
  "too_large",
  "too_deep",
  "unreadable",
  "invalid_schema",
  "unknown_kind",
]);

/** Errors that say the input itself is bad: the run is rejected. Anything else is a failure. */
function isInputError(error: unknown): error is SelfCorrectionError {
  return (
    error instanceof SelfCorrectionError &&
    (error.code === "invalid_input" || REJECTION_CODES.has(error.code))
  );
}

/** The rejected reason is the error's own stable code where it names one, else `invalid_input`. */
const rejectionReason = (error: unknown): StopReason =>
  error instanceof SelfCorrectionError && REJECTION_CODES.has(error.code)
    ? (error.code as StopReason)
    : "invalid_input";

/** Binary uploads are rejected before JSON parsing gives a confusing message. */
function looksBinary(text: string): boolean {
  const sample = text.slice(0, 8192);
  return sample.includes("\u0000") || (sample.match(/\uFFFD/g)?.length ?? 0) > 8;
}

/**
 * Reads an upload. S3 event notifications may carry the key URL-encoded ("red flower.json" as
 * "red+flower.json"), so a key that is not there is tried once more decoded; a draft that is
 * truly missing is bad input (rejected), not a system failure.
 */
async function readUpload(blobs: BlobStore, key: string, version?: string): Promise<string> {
  try {
    return await blobs.get(key, version);
  } catch (error) {
    if (!(error instanceof BlobNotFoundError)) throw error;
    let decoded = key;
    try {
      decoded = decodeURIComponent(key.replace(/\+/g, " "));
    } catch {
      // not URL-encoded: keep the key as it is
    }
    if (decoded === key) throw new InvalidDraftError(`no draft at ${key}`);
    return blobs.get(decoded, version).catch(() => {
      throw new InvalidDraftError(`no draft at ${key}`);
    });
  }
}

export async function loadJson<T>(blobs: BlobStore, key: string): Promise<T> {
  return JSON.parse(await blobs.get(key)) as T;
}

const errorsOf = (report: ValidationReport): Violation[] =>
  report.violations.filter((v) => v.severity === "error");
const errorRuleIds = (report: ValidationReport): string[] => [
  ...new Set(errorsOf(report).map((v) => v.ruleId)),
];

/** The error a submitter's or handler's `rejectWith` stands for. */
function rejectionError(rejectWith: string | InputRejection): SelfCorrectionError {
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

/**
 * Errors the state machine's Retry on Validate matches (the store's StoreUnavailableError): the
 * retry registers the run, so a failure recorded now would contradict it.
 */
const RETRIED_BY_WORKFLOW: ReadonlySet<string> = new Set([ErrorNames.StoreUnavailable]);

/**
 * Step 1 (λ validate): load the draft, reject bad input, register the run (idempotently, once per
 * content within the dedupe window), repair and check it, and store attempt 0.
 *
 * A fault before the run is registered still leaves a `failed` run record saying why: the state
 * machine's failure path only updates an existing record, and without one `runs` and `show` would
 * know nothing of the draft. The error is then thrown on, for the workflow to end as it does.
 */
export async function validateStep(input: ValidateInput, deps: LoopDeps): Promise<LoopState> {
  const read: { raw?: unknown } = {};
  try {
    return await registerAndCheck(input, deps, read);
  } catch (error) {
    if (!RETRIED_BY_WORKFLOW.has((error as Error).name)) {
      const registered = await deps.runs.getRun(input.runId).catch(() => undefined);
      if (!registered) {
        const e = error as Error;
        await recordFailure(deps, {
          runId: input.runId,
          draft: read.raw,
          at: now(deps),
          reason: "system_error",
          message: `${input.draftRef ? `${input.draftRef}: ` : ""}${e.name}: ${e.message}`,
        }).catch(() => undefined);
      }
    }
    throw error;
  }
}

/** Validate's work; `read.raw` keeps the input as read, for naming the draft of a failed run. */
async function registerAndCheck(
  input: ValidateInput,
  deps: LoopDeps,
  read: { raw?: unknown },
): Promise<LoopState> {
  const at = now(deps);
  const { runId } = input;
  let raw: unknown = input.draft;
  read.raw = raw;
  let draft: Draft;
  try {
    if (input.rejectWith) throw rejectionError(input.rejectWith);
    if (input.draftRef !== undefined) {
      const text = await readUpload(deps.blobs, input.draftRef, input.draftVersion);
      if (looksBinary(text))
        throw new InvalidDraftError(`${input.draftRef} is a binary file, not a JSON draft`);
      raw = text;
      read.raw = text;
    }
    // Size and depth first, without recursion: nothing below may walk an unbounded value.
    draft = parseDraft(raw, { maxDraftBytes: deps.maxDraftBytes, maxDraftDepth: deps.maxDraftDepth });
    // The pack refuses what it cannot check (a json draft's unusable context.schema) before the run starts.
    deps.registry.get(draft.kind).pack.contentJsonSchema?.(draft);
  } catch (error) {
    // Only a fault of the input rejects it; a store that failed to read the upload is not the draft's fault.
    if (!isInputError(error)) throw error;
    const named = typeof input.rejectWith === "object" ? input.rejectWith.draftId?.slice(0, 256) : undefined;
    const draftId = named || guessDraftId(raw, input.draftRef);
    const reason = rejectionReason(error);
    // Name the upload, so a person can find the file that was refused.
    const message =
      input.draftRef && !error.message.includes(input.draftRef)
        ? `${input.draftRef}: ${error.message}`
        : error.message;
    const run = {
      ...newRunRecord(runId, draftId, guessKind(raw), at),
      status: "rejected" as const,
      reason,
      message,
    };
    run.transitions.push({ status: "rejected", at });
    if (input.draftRef) run.originalRef = input.draftRef;
    await deps.runs.createRun(run);
    return terminalState(runId, draftId, run.kind, "rejected", reason, message);
  }

  const contentHash = sha256(`${canonicalJson(draft)}\n${input.submissionId ?? ""}`);
  const windowMs = deps.dedupeWindowMs ?? DEFAULT_DEDUPE_WINDOW_MS;
  if (windowMs > 0) {
    let holder = await deps.runs.claimContent(contentHash, runId, at, windowMs);
    // A run that failed holds its claim in vain: a resubmission takes it over instead of being a duplicate.
    if (holder !== runId && (await deps.runs.getRun(holder))?.status === "failed") {
      holder = await deps.runs.claimContent(contentHash, runId, at, windowMs, holder);
    }
    if (holder !== runId) {
      const message = `duplicate delivery of draft ${draft.id}: run ${holder} already handles this content`;
      const run = {
        ...newRunRecord(runId, draft.id, draft.kind, at),
        status: "rejected" as const,
        reason: "duplicate" as const,
        message,
      };
      run.transitions.push({ status: "rejected", at });
      await deps.runs.createRun(run);
      return {
        ...terminalState(runId, draft.id, draft.kind, "duplicate", "duplicate", message),
        duplicateOf: holder,
      };
    }
  }

  // The run keeps its own copy of what it was given: an upload's key may receive a newer version later.
  const originalRef = blobKeys.original(runId);
  await deps.blobs.putIfAbsent(originalRef, JSON.stringify(draft));
  const run: RunRecord = { ...newRunRecord(runId, draft.id, draft.kind, at), originalRef, contentHash };
  if (input.draftRef)
    run.uploadRef = input.draftVersion ? `${input.draftRef}?versionId=${input.draftVersion}` : input.draftRef;
  if (deps.model) run.model = deps.model.model;
  if (input.parentRunId) run.parentRunId = input.parentRunId;
  // A retried Validate task finds its run already registered and carries on: the rest is idempotent.
  await deps.runs.createRun(run);

  const resolved = await packFor(draft, deps.registry);
  const { draft: repaired, report } = inspectWithPack(resolved, draft);
  const draftRef = blobKeys.attemptDraft(runId, 0);
  const reportRef = blobKeys.attemptReport(runId, 0);
  await deps.blobs.put(draftRef, JSON.stringify(repaired));
  await deps.blobs.put(reportRef, JSON.stringify(report));
  const limits = resolveLimits(resolved, draft, deps.registry.config);
  const modelAvailable = deps.modelAvailable ?? deps.model !== undefined;
  const judgeOn = judgeEnabled(resolved, draft);
  if (draft.options?.skipJudge) await deps.runs.updateRun(runId, { overrides: ["skipJudge"] });
  if (report.counts.error > 0 && modelAvailable && limits.maxAttempts > 0) {
    await deps.runs.setStatus(runId, "correcting", at);
  }
  await deps.runs.updateRun(runId, { violationsPerAttempt: [report.counts.error] });
  return {
    runId,
    draftId: draft.id,
    kind: draft.kind,
    decision: "correct",
    phase: "execution",
    counters: { execution: 0, logic: 0 },
    limits,
    modelAvailable,
    verdict: {
      ...ZERO_VERDICT,
      errors: report.counts.error,
      warnings: report.counts.warning,
      score: report.score,
    },
    best: { attempt: 0, draftRef, reportRef, errors: report.counts.error, score: report.score },
    originalRef,
    initialErrorRules: errorRuleIds(report),
    ruleFailures: {},
    sinceBest: 0,
    circuitBreakerRules: [],
    violationsPerAttempt: [report.counts.error],
    hints: [],
    tokens: { ...ZERO_TOTALS },
    costUsd: 0,
    judge: { enabled: judgeOn, rounds: 0, blocking: 0, failed: false },
  };
}

/**
 * Step 2 (λ correct): one model call on the best draft so far. Transient model failures are thrown
 * as named errors for the state machine to retry; an unusable answer is a failed attempt, not an error.
 */
export async function correctStep(state: LoopState, deps: LoopDeps): Promise<LoopState> {
  const model = deps.model;
  if (!model) throw new ModelNotConfiguredError();
  const attempt = attemptsMade(state) + 1;
  const [best, report] = await Promise.all([
    loadJson<Draft>(deps.blobs, state.best.draftRef),
    loadJson<ValidationReport>(deps.blobs, state.best.reportRef),
  ]);
  const resolved = await packFor(best, deps.registry);
  const logic = state.phase === "logic";
  const judged =
    logic && state.judge.reportRef
      ? await loadJson<JudgeReport>(deps.blobs, state.judge.reportRef)
      : undefined;
  const violations = judged ? judged.blocking : errorsOf(report);
  const promptAttempt = logic ? state.counters.logic + 1 : state.counters.execution + 1;
  const maxAttempts = logic ? state.limits.maxLogicAttempts : state.limits.maxAttempts;
  const prompt = buildCorrectionPrompt({
    resolved,
    draft: best,
    violations,
    attempt: promptAttempt,
    maxAttempts,
    hints: state.hints,
    phase: state.phase,
    personas: judged?.personas ?? [],
  });
  const response = await answerOnce(deps, blobKeys.attemptAnswer(state.runId, attempt), () =>
    model.complete({
      runId: state.runId,
      draftId: state.draftId,
      purpose: "correct",
      system: prompt.system,
      user: prompt.user,
      tool: prompt.tool,
      maxTokens: deps.maxOutputTokens ?? 8192,
      subject: {
        phase: state.phase,
        attempt: promptAttempt,
        maxAttempts,
        content: best.content,
        violations: violations.map((v) => ({
          ruleId: v.ruleId,
          ...(v.path !== undefined && { path: v.path }),
        })),
      },
    }),
  );
  const parsed = parseCorrectionAnswer(response);
  const pending: Pending = {
    attempt,
    phase: state.phase,
    analysis: parsed.ok ? parsed.answer.analysis : parsed.analysis,
    fixDescription: parsed.ok ? parsed.answer.fixDescription : "",
    usage: response.usage,
    costUsd: costUsd(response.model, response.usage),
    model: response.model,
    latencyMs: response.latencyMs,
    at: now(deps),
  };
  const touched = parsed.ok
    ? protectedChange(resolved.pack.protectedContent, best.content, parsed.answer.content)
    : undefined;
  if (parsed.ok && touched) {
    pending.failure = `the answer changed ${touched}, which a correction may not change`;
  } else if (parsed.ok) {
    // Only content comes from the model: id, kind, metadata, context and options are the best draft's.
    const candidate: Draft = { ...best, content: parsed.answer.content };
    const candidateRef = blobKeys.attemptCandidate(state.runId, attempt);
    await deps.blobs.put(candidateRef, JSON.stringify(candidate));
    pending.candidateRef = candidateRef;
  } else {
    pending.failure = parsed.failure;
  }
  return { ...state, pending };
}

/** The first protected pointer whose value differs between the two contents, if any. */
function protectedChange(
  pointers: readonly string[] | undefined,
  before: unknown,
  after: unknown,
): string | undefined {
  for (const pointer of pointers ?? []) {
    const at = (value: unknown) =>
      fromPointer(pointer).reduce<unknown>(
        (node, key) =>
          node !== null && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined,
        value,
      );
    if (canonicalJson(at(before)) !== canonicalJson(at(after))) return pointer;
  }
  return undefined;
}

const violationKey = (v: Violation) => `${v.ruleId}\u0000${v.path ?? ""}`;

/**
 * Step 3 (λ revalidate): repair and fully re-validate the answer, record the attempt exactly once,
 * keep the best so far, and compute the verdict the NextStep Choice routes on.
 */
export async function revalidateStep(state: LoopState, deps: LoopDeps): Promise<LoopState> {
  const pending = state.pending;
  if (!pending)
    throw new SelfCorrectionError("revalidate called without a pending answer", "no_pending_answer");
  const n = pending.attempt;
  const [bestDraft, bestReport] = await Promise.all([
    loadJson<Draft>(deps.blobs, state.best.draftRef),
    loadJson<ValidationReport>(deps.blobs, state.best.reportRef),
  ]);
  let draft = bestDraft;
  let report = bestReport;
  let draftRef: string | undefined;
  let reportRef = state.best.reportRef;
  if (pending.candidateRef) {
    const candidate = await loadJson<Draft>(deps.blobs, pending.candidateRef);
    const resolved = await packFor(candidate, deps.registry);
    ({ draft, report } = inspectWithPack(resolved, candidate));
    draftRef = blobKeys.attemptDraft(state.runId, n);
    reportRef = blobKeys.attemptReport(state.runId, n);
    await deps.blobs.put(draftRef, JSON.stringify(draft));
    await deps.blobs.put(reportRef, JSON.stringify(report));
  }
  const errors = report.counts.error;
  const logic = pending.phase === "logic";
  // A logic fix answers the judge, not the rules: it is kept unless it breaks a mechanical check.
  const beats =
    draftRef !== undefined &&
    (logic
      ? errors <= state.best.errors
      : errors < state.best.errors || (errors === state.best.errors && report.score > state.best.score));

  const judged =
    logic && state.judge.reportRef
      ? await loadJson<JudgeReport>(deps.blobs, state.judge.reportRef)
      : undefined;
  const inputErrors = judged ? judged.blocking : errorsOf(bestReport);
  const outputKeys = new Set(errorsOf(report).map(violationKey));
  // A logic attempt's findings are resolved or not by the next judge round, not by the rules.
  const resolvedCount = judged ? 0 : inputErrors.filter((v) => !outputKeys.has(violationKey(v))).length;
  let diff = draftRef
    ? (fastJsonPatch.compare(bestDraft, draft) as unknown as Record<string, unknown>[])
    : [];
  let diffRef: string | undefined;
  const diffJson = JSON.stringify(diff);
  if (Buffer.byteLength(diffJson) > MAX_INLINE_DIFF_BYTES) {
    diffRef = blobKeys.attemptDiff(state.runId, n);
    await deps.blobs.put(diffRef, diffJson);
    diff = [];
  }
  const usage = { ...pending.usage, total: totalTokens(pending.usage) };
  const repairs = draftRef ? report.repairs : [];
  const record: AttemptRecord = {
    runId: state.runId,
    attempt: n,
    phase: pending.phase,
    inputViolations: inputErrors,
    outputViolations: report.violations,
    resolvedCount,
    remainingCount: errors,
    repairs,
    reportRef,
    diff,
    analysis: pending.analysis,
    fixDescription: pending.fixDescription,
    tokens: pending.usage,
    costUsd: pending.costUsd,
    model: pending.model,
    latencyMs: pending.latencyMs,
    at: pending.at,
    errorCount: errors,
    score: report.score,
    rolledBack: !beats,
    isBest: beats,
  };
  if (diffRef) record.diffRef = diffRef;
  fitRecord(record, inputErrors, report.violations, repairs);
  if (draftRef) record.draftRef = draftRef;
  if (pending.failure) record.failure = pending.failure;
  if (judged) record.personas = judged.personas.map((p) => `${p.name}: ${p.constraints.join("; ")}`);
  // Both writes are conditional on the attempt number: a retried task neither duplicates nor double-counts.
  const recorded = await deps.runs.putAttempt(record);
  await deps.runs.addUsage(state.runId, n, usage, pending.costUsd);
  if (recorded) deps.onAttemptRecorded?.(record);

  const best =
    beats && draftRef ? { attempt: n, draftRef, reportRef, errors, score: report.score } : state.best;
  const bestReportNow = beats ? report : bestReport;
  const hints = keepHints([
    ...state.hints,
    ...attemptHints(n, pending.failure, inputErrors, report, beats, state.best.attempt),
  ]);

  const tokens = addTotals(state.tokens, usage);
  const cost = state.costUsd + pending.costUsd;
  const bestRules = new Set(errorRuleIds(bestReportNow));
  const { limits } = state;
  // The stop rules are one pure function; this step only records what it decides.
  const next = nextVerdict(
    state,
    { phase: pending.phase, usable: draftRef !== undefined, errorRules: errorRuleIds(report), beats },
    {
      errors: best.errors,
      warnings: bestReportNow.counts.warning,
      score: best.score,
      errorRules: [...bestRules],
    },
    { tokens: tokens.total, costUsd: cost },
    limits,
  );
  const tripped = next.tripped;
  const violationsPerAttempt = [...state.violationsPerAttempt, errors];
  const initial = new Set(state.initialErrorRules);
  await deps.runs.updateRun(state.runId, {
    attempts: attemptsMade(state),
    logicAttempts: state.counters.logic,
    violationsPerAttempt,
    resolvedRules: [...initial].filter((id) => !bestRules.has(id)),
    persistentRules: [...initial].filter((id) => bestRules.has(id)),
    circuitBreakerRules: tripped,
    finalRef: best.draftRef,
  });
  const { pending: _done, ...rest } = state;
  return {
    ...rest,
    decision: "correct",
    // After a logic correction the execution checks ran again; the judge runs again next.
    phase: "execution",
    best,
    ruleFailures: next.ruleFailures,
    sinceBest: next.sinceBest,
    hints,
    tokens,
    costUsd: cost,
    violationsPerAttempt,
    circuitBreakerRules: tripped,
    verdict: next.verdict,
  };
}

function addTotals(a: TokenTotals, b: TokenTotals): TokenTotals {
  return { ...addUsage(a, b), total: a.total + b.total };
}

/** The prompt shows the last few hints; the state keeps no more than that, each clipped. */
const MAX_STATE_HINTS = 4;
const MAX_HINT_CHARS = 400;
function keepHints(hints: readonly string[]): string[] {
  return hints
    .slice(-MAX_STATE_HINTS)
    .map((h) => (h.length > MAX_HINT_CHARS ? `${h.slice(0, MAX_HINT_CHARS)}…` : h));
}

/** Short, bounded notes for the next prompt: what persisted, what regressed, whether we rolled back. */
function attemptHints(
  n: number,
  failure: string | undefined,
  input: readonly Violation[],
  report: ValidationReport,
  beats: boolean,
  bestAttempt: number,
): string[] {
  if (failure)
    return [
      `Attempt ${n} could not be used (${failure.slice(0, 160)}); answer through the tool with the full content.`,
    ];
  const before = new Set(input.map((v) => v.ruleId));
  const after = errorRuleIds(report);
  const persisted = after.filter((id) => before.has(id));
  const regressed = after.filter((id) => !before.has(id));
  const notes: string[] = [];
  if (persisted.length) notes.push(`Attempt ${n} did not fix: ${persisted.join(", ")}.`);
  if (regressed.length) notes.push(`Attempt ${n} broke rules that passed before: ${regressed.join(", ")}.`);
  if (!beats) {
    notes.push(
      `Attempt ${n} was no better than attempt ${bestAttempt}, so it was rolled back; start again from attempt ${bestAttempt} and try a different fix.`,
    );
  }
  return notes;
}

/**
 * Records a run as failed, saying why. A run that failed before Validate registered it is created
 * here, so that no failure goes unrecorded (the in-process mirror of RecordFailure).
 */
export async function recordFailure(
  deps: Pick<LoopDeps, "runs">,
  failure: {
    runId: string;
    draft: unknown;
    at: string;
    reason: StopReason;
    message: string;
    finalRef?: string;
  },
): Promise<void> {
  const { runId, at, reason, message } = failure;
  const fields = { reason, message, ...(failure.finalRef && { finalRef: failure.finalRef }) };
  if (await deps.runs.getRun(runId)) {
    await deps.runs.setStatus(runId, "failed", at, fields);
    return;
  }
  const raw = failure.draft as { kind?: unknown } | undefined;
  const run = {
    ...newRunRecord(
      runId,
      guessDraftId(failure.draft, undefined),
      String(raw?.kind ?? "unknown").slice(0, 64),
      at,
    ),
    ...fields,
  };
  await deps.runs.createRun({
    ...run,
    status: "failed",
    transitions: [...run.transitions, { status: "failed", at }],
  });
}

/** Usage of judge round k is counted under this key + k: attempts are 1..9999, so the keys never meet. */
export const JUDGE_USAGE_KEY_BASE = 100_000;

/** The whole evidence of one judge round, stored in the blob store (never truncated). */
export interface JudgeReport {
  round: number;
  at: string;
  model: string;
  threshold: number;
  personas: Persona[];
  rubric: string[];
  prompt: { system: string[]; user: string };
  findings: unknown[];
  blocking: Violation[];
  kept: Violation[];
  accepted: string[];
  failure?: string;
  usage: { input: number; output: number; cacheRead: number; cacheWrite: number };
  costUsd: number;
}

/**
 * The model's answer for one attempt or judge round, asked for at most once. A task retried after
 * a later write failed (S3 throttled) finds the answer it already paid for and uses it, instead of
 * calling the model again and losing the first call's tokens from the run's totals. The answer is
 * stored before anything else happens; only a failure of that one write can still cost a second call.
 */
async function answerOnce(
  deps: LoopDeps,
  key: string,
  call: () => Promise<ModelResponse>,
): Promise<ModelResponse> {
  const stored = await deps.blobs.get(key).catch((error: unknown) => {
    if (error instanceof BlobNotFoundError) return undefined;
    throw error;
  });
  if (stored !== undefined) return JSON.parse(stored) as ModelResponse;
  const response = await call();
  await deps.blobs.put(key, JSON.stringify(response));
  return response;
}

/**
 * Step 4 (λ judge): the logic phase. Asks the model, through a tool, whether the best draft does
 * what was asked, follows the rubric and personas, and is sound; gates findings by severity,
 * confidence and the draft's `acceptFindings`; stores the evidence whole.
 */
export async function judgeStep(state: LoopState, deps: LoopDeps): Promise<LoopState> {
  const model = deps.model;
  if (!model) throw new ModelNotConfiguredError("the judge needs a model");
  const round = state.judge.rounds + 1;
  const best = await loadJson<Draft>(deps.blobs, state.best.draftRef);
  const resolved = await packFor(best, deps.registry);
  const prompt = buildJudgePrompt(resolved, best);
  const response = await answerOnce(deps, blobKeys.judgeAnswer(state.runId, round), () =>
    model.complete({
      runId: state.runId,
      draftId: state.draftId,
      purpose: "judge",
      system: prompt.system,
      user: prompt.user,
      tool: prompt.tool,
      maxTokens: deps.maxOutputTokens ?? 8192,
    }),
  );
  const verdict = parseJudgeAnswer(response);
  const accept = best.options?.acceptFindings ?? [];
  const classified = verdict.ok
    ? classifyFindings(verdict.findings, resolved.judge.threshold, accept)
    : { blocking: [], kept: [], accepted: [] };
  const cost = costUsd(response.model, response.usage);
  const report: JudgeReport = {
    round,
    at: now(deps),
    model: response.model,
    threshold: resolved.judge.threshold,
    personas: personasFor(resolved, best),
    rubric: resolved.judge.rubric,
    prompt: { system: prompt.system.map((b) => b.text), user: prompt.user },
    findings: verdict.ok ? verdict.findings : [],
    ...classified,
    usage: response.usage,
    costUsd: cost,
  };
  if (!verdict.ok) report.failure = verdict.failure;
  const reportRef = blobKeys.judgeReport(state.runId, round);
  await deps.blobs.put(reportRef, JSON.stringify(report));
  const usage = { ...response.usage, total: totalTokens(response.usage) };
  await deps.runs.addUsage(state.runId, JUDGE_USAGE_KEY_BASE + round, usage, cost);
  const overrides = [
    ...(best.options?.skipJudge ? ["skipJudge"] : []),
    ...[...new Set(classified.accepted)].map((id) => `acceptFindings:${id}`),
  ];
  await deps.runs.updateRun(state.runId, { judgeRef: reportRef, ...(overrides.length && { overrides }) });
  const blocking = classified.blocking.length;
  const tokens = addTotals(state.tokens, usage);
  const spent = state.costUsd + cost;
  if (!verdict.ok)
    await deps.runs.updateRun(state.runId, {
      message: `the judge gave no usable verdict: ${verdict.failure}`,
    });
  // A logic correction is a correction too: the run shows it (idempotent when already correcting).
  if (blocking > 0 && state.counters.logic < state.limits.maxLogicAttempts) {
    await deps.runs.setStatus(state.runId, "correcting", report.at);
  }
  return {
    ...state,
    phase: blocking > 0 ? "logic" : state.phase,
    tokens,
    costUsd: spent,
    // The budget binds the logic phase too: HasCriticalFindings? stops before another correction.
    verdict: { ...state.verdict, budgetExhausted: budgetSpent(state.limits, tokens.total, spent) },
    judge: { enabled: true, rounds: round, blocking, failed: !verdict.ok, reportRef },
    hints:
      blocking > 0
        ? keepHints([
            ...state.hints,
            `The reviewer found: ${classified.blocking.map((v) => v.ruleId).join(", ")}.`,
          ])
        : state.hints,
  };
}
