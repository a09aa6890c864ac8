import type { Violation } from "../draft.js";
import type { ModelRung } from "../loop-settings.js";
import type { LoopState } from "./state.js";

/**
 * The model ladder (loop setting `models`, per deployment, per kind): the first rung is the model
 * every correction starts on; a later rung `{ model, after: n }` takes over once a rule it covers
 * (all rules, or its `rules`) is still failing after n attempts. The model whose rung is the last one
 * reached answers; `undefined` (no ladder) leaves the client's own model.
 *
 * A rule's attempts: the consecutive usable attempts that failed it (the circuit breaker's memory),
 * or, for a rule the draft failed from the start and still fails, every attempt made so far (an
 * unusable answer is an attempt of the cheap model too).
 */
export function modelFor(
  rungs: readonly ModelRung[] | undefined,
  violations: readonly Violation[],
  state: Pick<LoopState, "ruleFailures" | "initialErrorRules">,
  attemptsMade: number,
): string | undefined {
  if (!rungs || rungs.length === 0) return undefined;
  const initial = new Set(state.initialErrorRules);
  const triedOn = (ruleId: string) =>
    Math.max(state.ruleFailures[ruleId] ?? 0, initial.has(ruleId) ? attemptsMade : 0);
  let chosen = rungs[0]?.model;
  for (const rung of rungs.slice(1)) {
    const covered = violations.filter((v) => !rung.rules || rung.rules.includes(v.ruleId));
    if (covered.some((v) => triedOn(v.ruleId) >= (rung.after ?? 1))) chosen = rung.model;
  }
  return chosen;
}
