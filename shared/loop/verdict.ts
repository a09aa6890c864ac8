import type { Phase } from "../store/types.js";
import type { LoopLimits, LoopState } from "./state.js";

/** Token or cost budget spent (0 means no budget). */
export function budgetSpent(limits: LoopLimits, tokens: number, costUsd: number): boolean {
  return (
    (limits.maxTokens > 0 && tokens >= limits.maxTokens) ||
    (limits.maxCostUsd > 0 && costUsd >= limits.maxCostUsd)
  );
}

/** What one attempt produced, as the stop rules need it. */
export interface AttemptFacts {
  /** The phase of the correction that was just checked. */
  readonly phase: Phase;
  /** The answer gave a candidate draft that was checked (an unusable answer says nothing about rules). */
  readonly usable: boolean;
  /** Error rules the candidate still fails (empty when unusable). */
  readonly errorRules: readonly string[];
  /** The candidate beat the best so far and is now the best. */
  readonly beats: boolean;
  /** Execution attempts the budget (`maxAttempts`) still allows after this one. */
  readonly attemptsLeft: number;
}

/** The best draft after the attempt, as the verdict reports it. */
export interface BestFacts {
  readonly errors: number;
  readonly warnings: number;
  readonly score: number;
  readonly errorRules: readonly string[];
}

export interface NextVerdict {
  /** Per rule, the consecutive usable execution attempts that failed it (the breaker's memory). */
  readonly ruleFailures: Record<string, number>;
  readonly sinceBest: number;
  /** The rules that tripped the circuit breaker, sorted; empty when it did not trip. */
  readonly tripped: string[];
  readonly verdict: LoopState["verdict"];
}

/**
 * The stop rules after one attempt, as one pure function: from the previous loop memory, what the
 * attempt produced and the limits, to the verdict the Choice states route on. They read, in the
 * order `NextStep?` checks them: no error left, circuit breaker, stuck, budget; the attempt counter
 * against `maxAttempts` is the Choice state's own comparison.
 *
 * - Circuit breaker: an error rule that failed in `breakerAfter` consecutive usable execution
 *   attempts and still fails in the best draft. A usable attempt that passes a rule resets its
 *   count; an unusable answer (not JSON, off-schema) changes nothing, since it checked nothing.
 * - Stuck: `stuckAfter` consecutive execution attempts that did not beat the best so far. A logic
 *   attempt answers the judge, not the rules, so it neither counts nor resets.
 *
 * Neither early exit is taken when exactly one execution attempt is left: an exit that saves only the
 * final call cost more drafts than it saved tokens under every model behaviour bench:policy simulates
 * (a model that fails a rule twice still fixes it on the third try often enough). With two or more
 * attempts left the exit saves a series of calls; with none left it only names why the run ended.
 */
export function nextVerdict(
  previous: Pick<LoopState, "ruleFailures" | "sinceBest">,
  attempt: AttemptFacts,
  best: BestFacts,
  spent: { readonly tokens: number; readonly costUsd: number },
  limits: LoopLimits,
): NextVerdict {
  const execution = attempt.phase === "execution";
  let ruleFailures = previous.ruleFailures;
  if (execution && attempt.usable) {
    const failing = new Set(attempt.errorRules);
    ruleFailures = {};
    for (const id of failing) ruleFailures[id] = (previous.ruleFailures[id] ?? 0) + 1;
  }
  const stillFailing = new Set(best.errorRules);
  const exitAllowed = !(execution && attempt.attemptsLeft === 1);
  const tripped =
    execution && exitAllowed
      ? Object.entries(ruleFailures)
          .filter(([id, count]) => count >= limits.breakerAfter && stillFailing.has(id))
          .map(([id]) => id)
          .sort()
      : [];
  const sinceBest = attempt.beats ? 0 : execution ? previous.sinceBest + 1 : previous.sinceBest;
  return {
    ruleFailures,
    sinceBest,
    tripped,
    verdict: {
      errors: best.errors,
      warnings: best.warnings,
      score: best.score,
      breakerTripped: tripped.length > 0,
      stuck: exitAllowed && sinceBest >= limits.stuckAfter,
      budgetExhausted: budgetSpent(limits, spent.tokens, spent.costUsd),
    },
  };
}
