import type { Draft } from "../../draft.js";
import { type Inspection, inspectWithPackAsync, type ResolvedPack } from "../../engine.js";
import { ErrorNames, InvalidDraftError, PackRuleError } from "../../errors.js";
import { NO_GROUNDING } from "../../grounding/check.js";
import { readSource, type SourceReader, sourceOf } from "../../grounding/source.js";
import { DEFAULT_DEDUPE_WINDOW_MS } from "../../loop-settings.js";
import { blobKeys, SOURCES_PREFIX } from "../../store/bucket-layout.js";
import { claimHash } from "../../store/claim.js";
import {
  isActiveStatus,
  newRunRecord,
  type RunRecord,
  type StopReason,
  ZERO_TOTALS,
} from "../../store/types.js";
import { packFor, parseDraft } from "../../validate.js";
import { judgeEnabled } from "../judge.js";
import { resolveLimits } from "../limits.js";
import type { LoopState } from "../state.js";
import { type LoopDeps, now } from "./deps.js";
import { recordFailure } from "./failure.js";
import {
  guessDraftId,
  guessKind,
  isInputError,
  looksBinary,
  readUpload,
  rejectionError,
  rejectionReason,
  type ValidateInput,
} from "./input.js";
import { errorRuleIds } from "./violations.js";

/** The verdict before any check: Validate fills in the counts of attempt 0. */
const ZERO_VERDICT = {
  errors: 0,
  warnings: 0,
  score: 0,
  breakerTripped: false,
  stuck: false,
  budgetExhausted: false,
};

/** The state of a run that ends at Validate (rejected, or a duplicate): only its decision is routed on. */
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
    best: { attempt: 0, draftRef: "", reportRef: "", errors: 0, score: 0, repairs: 0 },
    originalRef: "",
    initialErrorRules: [],
    ruleFailures: {},
    sinceBest: 0,
    circuitBreakerRules: [],
    violationsPerAttempt: [],
    hints: [],
    tokens: { ...ZERO_TOTALS },
    costUsd: 0,
    judge: { enabled: false, rounds: 0, blocking: 0, failed: false, grounding: NO_GROUNDING },
  };
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
      const e = error as Error;
      // A pack's code that threw is the pack's fault (pack_error), recorded whether or not the run
      // was registered: the state machine's failure path would say system_error.
      const packError = error instanceof PackRuleError;
      if (!registered || (packError && isActiveStatus(registered.status))) {
        await recordFailure(deps, {
          runId: input.runId,
          draft: read.raw,
          at: now(deps),
          reason: packError ? "pack_error" : "system_error",
          message: packError
            ? e.message
            : `${input.draftRef ? `${input.draftRef}: ` : ""}${e.name}: ${e.message}`,
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
  let resolved: ResolvedPack;
  let inspection: Inspection;
  let sourceText: string | undefined;
  try {
    if (input.rejectWith) throw rejectionError(input.rejectWith);
    if (input.draftRef !== undefined) {
      const text = await readUpload(deps.blobs, input.draftRef, input.draftVersion, input.decodeKey === true);
      if (looksBinary(text))
        throw new InvalidDraftError(`${input.draftRef} is a binary file, not a JSON draft`);
      raw = text;
      read.raw = text;
    }
    // Size and depth first, without recursion: nothing below may walk an unbounded value.
    draft = parseDraft(raw, { maxDraftBytes: deps.maxDraftBytes, maxDraftDepth: deps.maxDraftDepth });
    // The pack refuses what it cannot check (a json draft's unusable context.schema) before the run starts.
    const configured = deps.registry.get(draft.kind);
    configured.pack.contentJsonSchema?.(draft, configured.settings);
    // Repair and check are pure, so they run before the run is registered: a schema that refuses this
    // content (a json pattern stopped past its budget) rejects it like one that refuses any content.
    resolved = await packFor(draft, deps.registry);
    inspection = await inspectWithPackAsync(resolved, draft);
    // A source that cannot be read, or is too large, refuses the draft before the run starts.
    const source = sourceOf(draft);
    if (source !== undefined)
      sourceText = await readSource(source, deps.readSource ?? blobSourceReader(deps));
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

  const contentHash = claimHash(draft, input.submissionId);
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
  if (sourceText !== undefined) await deps.blobs.putIfAbsent(blobKeys.source(runId), sourceText);
  const run: RunRecord = { ...newRunRecord(runId, draft.id, draft.kind, at), originalRef, contentHash };
  if (input.draftRef)
    run.uploadRef = input.draftVersion ? `${input.draftRef}?versionId=${input.draftVersion}` : input.draftRef;
  if (deps.model) run.model = deps.model.model;
  if (input.parentRunId) run.parentRunId = input.parentRunId;
  // A retried Validate task finds its run already registered and carries on: the rest is idempotent.
  await deps.runs.createRun(run);

  const { draft: repaired, report } = inspection;
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
  await deps.runs.updateRun(runId, {
    violationsPerAttempt: [report.counts.error],
    repairs: report.repairs.length,
  });
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
    best: {
      attempt: 0,
      draftRef,
      reportRef,
      errors: report.counts.error,
      score: report.score,
      repairs: report.repairs.length,
    },
    originalRef,
    initialErrorRules: errorRuleIds(report),
    ruleFailures: {},
    sinceBest: 0,
    circuitBreakerRules: [],
    violationsPerAttempt: [report.counts.error],
    hints: [],
    tokens: { ...ZERO_TOTALS },
    costUsd: 0,
    judge: { enabled: judgeOn, rounds: 0, blocking: 0, failed: false, grounding: NO_GROUNDING },
  };
}

/** In the cloud a source reference is a key of the bucket, and only under `sources/`. */
function blobSourceReader(deps: LoopDeps): SourceReader {
  return async (ref) => {
    if (!ref.startsWith(SOURCES_PREFIX) || ref.includes(".."))
      throw new InvalidDraftError(
        `context.source.ref must be a key under ${SOURCES_PREFIX}, not ${ref.slice(0, 200)}`,
      );
    return deps.blobs.get(ref);
  };
}
