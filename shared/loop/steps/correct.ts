import type { Draft, ValidationReport } from "../../draft.js";
import { ModelNotConfiguredError } from "../../errors.js";
import { canonicalJson } from "../../hash.js";
import { DEFAULT_MAX_OUTPUT_TOKENS } from "../../loop-settings.js";
import { costUsd } from "../../model/pricing.js";
import { valueAt } from "../../pointer.js";
import { blobKeys } from "../../store/bucket-layout.js";
import { packFor } from "../../validate.js";
import { modelFor } from "../ladder.js";
import { applyPatch, patchScope } from "../patch.js";
import { buildCorrectionPrompt } from "../prompt.js";
import { parseCorrectionAnswer } from "../response.js";
import { attemptsMade, type LoopState, type Pending } from "../state.js";
import { answerOnce } from "./answer.js";
import { type LoopDeps, loadJson, now } from "./deps.js";
import { failOnPackError } from "./failure.js";
import type { JudgeReport } from "./judge.js";
import { errorsOf } from "./violations.js";

/**
 * Step 2 (λ correct): one model call on the best draft so far. Transient model failures are thrown
 * as named errors for the state machine to retry; an unusable answer is a failed attempt, not an error.
 */
export async function correctStep(state: LoopState, deps: LoopDeps): Promise<LoopState> {
  // A pack's code throwing ends the run failed / pack_error (failure.ts), not system_error.
  return failOnPackError(state.runId, deps, () => correctWork(state, deps));
}

async function correctWork(state: LoopState, deps: LoopDeps): Promise<LoopState> {
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
  // Field-level when every violation names a field (execution phase): a patch over those paths.
  const scope = logic ? undefined : patchScope(resolved.kind, best.content, violations);
  // The model ladder: a rule still failing after the cheap model's attempts goes to the next rung.
  const ladderModel = modelFor(resolved.loop.models, violations, state, attemptsMade(state));
  const prompt = buildCorrectionPrompt({
    resolved,
    draft: best,
    violations,
    attempt: promptAttempt,
    maxAttempts,
    hints: state.hints,
    phase: state.phase,
    personas: judged?.personas ?? [],
    sourceExcerpts: (judged?.grounding?.fields ?? []).flatMap((f) =>
      f.excerpt ? [{ path: f.path, text: f.excerpt.text }] : [],
    ),
    ...(scope && { scope }),
  });
  const response = await answerOnce(deps, blobKeys.attemptAnswer(state.runId, attempt), () =>
    model.complete({
      runId: state.runId,
      draftId: state.draftId,
      purpose: "correct",
      system: prompt.system,
      user: prompt.user,
      tool: prompt.tool,
      maxTokens: deps.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
      ...(ladderModel !== undefined && { model: ladderModel }),
      subject: {
        phase: state.phase,
        attempt: promptAttempt,
        maxAttempts,
        content: best.content,
        violations: violations.map((v) => ({
          ruleId: v.ruleId,
          ...(v.path !== undefined && { path: v.path }),
        })),
        ...(scope && { open: scope.open }),
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
    costUsd: costUsd(response.model, response.usage, response.priceClass),
    model: response.model,
    latencyMs: response.latencyMs,
    at: now(deps),
    outputMode: response.outputMode ?? "tool",
  };
  // A patch answer becomes content here, over the best draft; a patch outside its scope is refused.
  let content: unknown = parsed.ok ? parsed.answer.content : undefined;
  let refused: string | undefined;
  if (parsed.ok && parsed.answer.patch) {
    const applied = scope
      ? applyPatch(best.content, parsed.answer.patch, scope)
      : {
          ok: false as const,
          refused: [],
          failure: "the answer is a patch, but the whole draft was asked for",
        };
    // Changes to locked fields are refused as regressions and counted; the rest of the patch stands.
    if (applied.refused.length > 0) pending.refusedPaths = applied.refused.slice(0, 50);
    if (applied.ok) {
      content = applied.content;
      // The state stays small (Step Functions' 256 KiB): a large patch is in the attempt's diff only.
      if (JSON.stringify(applied.applied).length <= 16_384) pending.patch = applied.applied;
    } else refused = applied.failure;
  }
  const touched =
    parsed.ok && content !== undefined
      ? protectedChange(resolved.pack.protectedContent, best.content, content)
      : undefined;
  if (refused) {
    pending.failure = refused;
  } else if (parsed.ok && touched) {
    pending.failure = `the answer changed ${touched}, which a correction may not change`;
  } else if (parsed.ok) {
    // Only content comes from the model: id, kind, metadata, context and options are the best draft's.
    const candidate: Draft = { ...best, content };
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
    if (canonicalJson(valueAt(before, pointer)) !== canonicalJson(valueAt(after, pointer))) return pointer;
  }
  return undefined;
}
