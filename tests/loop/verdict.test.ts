import { describe, expect, it } from "vitest";
import type { LoopLimits } from "../../shared/loop/state.js";
import { nextVerdict } from "../../shared/loop/verdict.js";
import { DEFAULT_BREAKER_AFTER } from "../../shared/loop-settings.js";

const LIMITS: LoopLimits = {
  maxAttempts: 4,
  breakerAfter: 2,
  stuckAfter: 2,
  maxLogicAttempts: 1,
  maxTokens: 0,
  maxCostUsd: 0,
};
const best = (errorRules: string[], errors = errorRules.length) => ({
  errors,
  warnings: 0,
  score: 1 - errors / 10,
  errorRules,
});
const exec = (errorRules: string[], beats: boolean, usable = true, attemptsLeft = 2) =>
  ({ phase: "execution", usable, errorRules, beats, attemptsLeft }) as const;
const NONE = { tokens: 0, costUsd: 0 };

describe("nextVerdict: the stop rules as one pure function", () => {
  it("defaults breakerAfter to 2", () => {
    expect(DEFAULT_BREAKER_AFTER).toBe(2);
  });

  // Each row: memory before, the attempt, the best after it, what the verdict must say.
  const table: {
    name: string;
    previous: { ruleFailures: Record<string, number>; sinceBest: number };
    attempt: Parameters<typeof nextVerdict>[1];
    best: Parameters<typeof nextVerdict>[2];
    limits?: Partial<LoopLimits>;
    spent?: { tokens: number; costUsd: number };
    expected: {
      tripped: string[];
      stuck: boolean;
      budgetExhausted?: boolean;
      ruleFailures?: Record<string, number>;
      sinceBest?: number;
    };
  }[] = [
    {
      name: "a rule failing for the first time does not trip",
      previous: { ruleFailures: {}, sinceBest: 0 },
      attempt: exec(["a"], true),
      best: best(["a"]),
      expected: { tripped: [], stuck: false, ruleFailures: { a: 1 }, sinceBest: 0 },
    },
    {
      name: "the same rule in two consecutive attempts, still failing, trips",
      previous: { ruleFailures: { a: 1 }, sinceBest: 0 },
      attempt: exec(["a"], true),
      best: best(["a"]),
      expected: { tripped: ["a"], stuck: false, ruleFailures: { a: 2 } },
    },
    {
      name: "a rule that passed in between starts counting again",
      previous: { ruleFailures: { b: 1 }, sinceBest: 0 },
      attempt: exec(["a"], true),
      best: best(["a"]),
      expected: { tripped: [], stuck: false, ruleFailures: { a: 1 } },
    },
    {
      name: "a rule failing twice that the best draft no longer fails does not trip",
      previous: { ruleFailures: { a: 1 }, sinceBest: 0 },
      attempt: exec(["a"], false),
      best: best(["b"]),
      expected: { tripped: [], stuck: false, ruleFailures: { a: 2 }, sinceBest: 1 },
    },
    {
      name: "an unusable answer checks nothing: the memory is unchanged, but it counts towards stuck",
      previous: { ruleFailures: { a: 1 }, sinceBest: 1 },
      attempt: exec([], false, false),
      best: best(["a"]),
      expected: { tripped: [], stuck: true, ruleFailures: { a: 1 }, sinceBest: 2 },
    },
    {
      name: "breakerAfter 3 waits for a third consecutive failure",
      previous: { ruleFailures: { a: 1 }, sinceBest: 0 },
      attempt: exec(["a"], true),
      best: best(["a"]),
      limits: { breakerAfter: 3 },
      expected: { tripped: [], stuck: false },
    },
    {
      name: "several rules trip together, sorted",
      previous: { ruleFailures: { z: 1, a: 1, m: 1 }, sinceBest: 0 },
      attempt: exec(["z", "a", "m"], true),
      best: best(["z", "a", "m"]),
      expected: { tripped: ["a", "m", "z"], stuck: false },
    },
    {
      name: "two attempts that do not beat the best are stuck",
      previous: { ruleFailures: {}, sinceBest: 1 },
      attempt: exec(["c"], false),
      best: best(["a"]),
      expected: { tripped: [], stuck: true, sinceBest: 2 },
    },
    {
      name: "a logic attempt neither counts towards stuck nor trips the breaker",
      previous: { ruleFailures: { a: 5 }, sinceBest: 1 },
      attempt: { phase: "logic", usable: true, errorRules: ["a"], beats: false, attemptsLeft: 1 },
      best: best(["a"]),
      expected: { tripped: [], stuck: false, ruleFailures: { a: 5 }, sinceBest: 1 },
    },
    {
      name: "with exactly one attempt left, a rule failing twice does not trip: the exit would save only the final call",
      previous: { ruleFailures: { a: 1 }, sinceBest: 0 },
      attempt: exec(["a"], true, true, 1),
      best: best(["a"]),
      expected: { tripped: [], stuck: false, ruleFailures: { a: 2 } },
    },
    {
      name: "with exactly one attempt left, two attempts that do not beat the best are not stuck",
      previous: { ruleFailures: {}, sinceBest: 1 },
      attempt: exec(["c"], false, true, 1),
      best: best(["a"]),
      expected: { tripped: [], stuck: false, sinceBest: 2 },
    },
    {
      name: "after the final attempt the breaker still names the rules (the run ends anyway)",
      previous: { ruleFailures: { a: 2 }, sinceBest: 2 },
      attempt: exec(["a"], false, true, 0),
      best: best(["a"]),
      expected: { tripped: ["a"], stuck: true, ruleFailures: { a: 3 }, sinceBest: 3 },
    },
    {
      name: "the token budget is spent",
      previous: { ruleFailures: {}, sinceBest: 0 },
      attempt: exec(["a"], true),
      best: best(["a"]),
      limits: { maxTokens: 1000 },
      spent: { tokens: 1000, costUsd: 0 },
      expected: { tripped: [], stuck: false, budgetExhausted: true },
    },
    {
      name: "the cost budget is spent; a zero budget means none",
      previous: { ruleFailures: {}, sinceBest: 0 },
      attempt: exec(["a"], true),
      best: best(["a"]),
      limits: { maxCostUsd: 0.01 },
      spent: { tokens: 10 ** 9, costUsd: 0.02 },
      expected: { tripped: [], stuck: false, budgetExhausted: true },
    },
    {
      name: "no budget set: never exhausted",
      previous: { ruleFailures: {}, sinceBest: 0 },
      attempt: exec(["a"], true),
      best: best(["a"]),
      spent: { tokens: 10 ** 9, costUsd: 10 ** 6 },
      expected: { tripped: [], stuck: false, budgetExhausted: false },
    },
  ];

  for (const row of table) {
    it(row.name, () => {
      const next = nextVerdict(row.previous, row.attempt, row.best, row.spent ?? NONE, {
        ...LIMITS,
        ...row.limits,
      });
      expect(next.tripped).toEqual(row.expected.tripped);
      expect(next.verdict.breakerTripped).toBe(row.expected.tripped.length > 0);
      expect(next.verdict.stuck).toBe(row.expected.stuck);
      expect(next.verdict.budgetExhausted).toBe(row.expected.budgetExhausted ?? false);
      expect(next.verdict.errors).toBe(row.best.errors);
      if (row.expected.ruleFailures) expect(next.ruleFailures).toEqual(row.expected.ruleFailures);
      if (row.expected.sinceBest !== undefined) expect(next.sinceBest).toBe(row.expected.sinceBest);
    });
  }

  it("never mutates the memory it is given", () => {
    const previous = Object.freeze({ ruleFailures: Object.freeze({ a: 1 }), sinceBest: 0 });
    expect(() => nextVerdict(previous, exec(["a"], true), best(["a"]), NONE, LIMITS)).not.toThrow();
    expect(previous.ruleFailures).toEqual({ a: 1 });
  });
});
