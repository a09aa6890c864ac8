import type { Draft, Violation } from "../../draft.js";
import type { ResolvedPack } from "../../engine.js";
import { ModelNotConfiguredError } from "../../errors.js";
import {
  checkGrounding,
  contentText,
  type FieldEvidence,
  type GroundedField,
  groundedFields,
  NO_GROUNDING,
  summarize,
} from "../../grounding/check.js";
import { choosePassages, type PassageSeen } from "../../grounding/passages.js";
import { sourceOf } from "../../grounding/source.js";
import type { Persona } from "../../loop-settings.js";
import { DEFAULT_MAX_OUTPUT_TOKENS } from "../../loop-settings.js";
import { costUsd } from "../../model/pricing.js";
import type { ModelClient } from "../../model/types.js";
import { type TokenUsage, totalTokens } from "../../model/types.js";
import { blobKeys } from "../../store/bucket-layout.js";
import { addTotals, JUDGE_USAGE_KEY_BASE } from "../../store/types.js";
import { packFor } from "../../validate.js";
import { buildJudgePrompt, classifyFindings, parseJudgeAnswer, personasFor } from "../judge.js";
import type { LoopState } from "../state.js";
import { budgetSpent } from "../verdict.js";
import { answerOnce } from "./answer.js";
import { type LoopDeps, loadJson, now } from "./deps.js";
import { failOnPackError } from "./failure.js";
import { keepHints } from "./hints.js";

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
  usage: TokenUsage;
  costUsd: number;
  /** The attempt whose best draft this round judged. */
  attempt?: number;
  /** Present when the draft's fields were grounded in its source. */
  grounding?: GroundingRound;
}

/** A round's grounding check: what the judge saw of the source, and the evidence per field. */
interface GroundingRound {
  /** The run's copy of the source (`runs/<runId>/source.txt`). */
  sourceRef: string;
  sourceChars: number;
  /** The source was longer than the judge's window: only `passages` were sent. */
  split: boolean;
  passages: PassageSeen[];
  fields: FieldEvidence[];
}

/**
 * Step 4 (λ judge): the logic phase. Asks the model, through a tool, whether the best draft does
 * what was asked, follows the rubric and personas, and is sound; gates findings by severity,
 * confidence and the draft's `acceptFindings`; stores the evidence whole.
 */
export async function judgeStep(state: LoopState, deps: LoopDeps): Promise<LoopState> {
  // A pack's code throwing ends the run failed / pack_error (failure.ts), not system_error.
  return failOnPackError(state.runId, deps, () => judgeWork(state, deps));
}

async function judgeWork(state: LoopState, deps: LoopDeps): Promise<LoopState> {
  const round = state.judge.rounds + 1;
  const best = await loadJson<Draft>(deps.blobs, state.best.draftRef);
  const resolved = await packFor(best, deps.registry);
  const { client: model, modelId } = judgeClient(deps, resolved.judge.model);
  const grounding = await groundingInput(state.runId, resolved, best, deps);
  const prompt = buildJudgePrompt(resolved, best, grounding);
  const response = await answerOnce(deps, blobKeys.judgeAnswer(state.runId, round), () =>
    model.complete({
      ...(modelId !== undefined && { model: modelId }),
      runId: state.runId,
      draftId: state.draftId,
      purpose: "judge",
      system: prompt.system,
      user: prompt.user,
      tool: prompt.tool,
      maxTokens: deps.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
    }),
  );
  const verdict = parseJudgeAnswer(response);
  const accept = best.options?.acceptFindings ?? [];
  // Code decides whether each quote is real; its violations are certain (confidence 1) and gated
  // only by the draft's acceptFindings, like any finding.
  const checked =
    grounding && verdict.ok
      ? checkGrounding(grounding.source, grounding.fields, verdict.grounding, contentText(best.content))
      : undefined;
  const classified = verdict.ok
    ? classifyFindings(
        [...verdict.findings, ...(checked?.violations ?? []).map((v) => ({ ...v, confidence: 1 }))],
        resolved.judge.threshold,
        accept,
      )
    : { blocking: [], kept: [], accepted: [] };
  const cost = costUsd(response.model, response.usage, response.priceClass);
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
    attempt: state.best.attempt,
  };
  if (grounding)
    report.grounding = {
      sourceRef: blobKeys.source(state.runId),
      sourceChars: grounding.source.length,
      split: grounding.split,
      passages: grounding.passages,
      fields: checked?.fields ?? [],
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
    judge: {
      enabled: true,
      rounds: round,
      blocking,
      failed: !verdict.ok,
      reportRef,
      grounding: checked ? summarize(checked.fields) : NO_GROUNDING,
    },
    hints:
      blocking > 0
        ? keepHints([
            ...state.hints,
            `The reviewer found: ${classified.blocking.map((v) => v.ruleId).join(", ")}.`,
          ])
        : state.hints,
  };
}

/**
 * The client and model id that judge. `judge.model` names a model of the corrector's provider (the
 * request carries it) or `<provider>:<id>` of another provider, whose client the runtime gives as
 * `judgeModel`; a provider with no client is a configuration fault, never a silent fallback to the
 * author's model.
 */
function judgeClient(deps: LoopDeps, setting: string | undefined): { client: ModelClient; modelId?: string } {
  const model = deps.model;
  if (!model) throw new ModelNotConfiguredError("the judge needs a model");
  if (setting === undefined) return { client: model };
  const colon = setting.indexOf(":");
  const provider = colon > 0 ? setting.slice(0, colon) : undefined;
  const modelId = colon > 0 ? setting.slice(colon + 1) : setting;
  if (provider === undefined || provider === model.provider) return { client: model, modelId };
  if (deps.judgeModel?.provider === provider) return { client: deps.judgeModel, modelId };
  throw new ModelNotConfiguredError(
    `judge.model names ${setting}, but this runtime has no ${provider} client for the judge`,
  );
}

/** The grounding part of the judge's prompt, when the kind grounds fields and the draft has a source. */
async function groundingInput(runId: string, resolved: ResolvedPack, best: Draft, deps: LoopDeps) {
  if (!resolved.grounding || sourceOf(best) === undefined) return undefined;
  const fields: GroundedField[] = groundedFields(best.content, resolved.grounding);
  if (fields.length === 0) return undefined;
  const source = await deps.blobs.get(blobKeys.source(runId));
  const { passages, split } = choosePassages(
    source,
    fields.map((f) => f.value),
  );
  return { fields, source, passages, split };
}
