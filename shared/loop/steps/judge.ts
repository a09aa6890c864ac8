import type { Draft, Violation } from "../../draft.js";
import { ModelNotConfiguredError } from "../../errors.js";
import { costUsd } from "../../model/pricing.js";
import { type TokenUsage, totalTokens } from "../../model/types.js";
import type { Persona } from "../../pack.js";
import { blobKeys } from "../../store/bucket-layout.js";
import { addTotals, JUDGE_USAGE_KEY_BASE } from "../../store/types.js";
import { packFor } from "../../validate.js";
import { buildJudgePrompt, classifyFindings, parseJudgeAnswer, personasFor } from "../judge.js";
import { DEFAULT_MAX_OUTPUT_TOKENS } from "../limits.js";
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
      maxTokens: deps.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
    }),
  );
  const verdict = parseJudgeAnswer(response);
  const accept = best.options?.acceptFindings ?? [];
  const classified = verdict.ok
    ? classifyFindings(verdict.findings, resolved.judge.threshold, accept)
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
