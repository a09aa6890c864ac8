import * as z from "zod";
import { TokenUsageSchema } from "../model/types.js";
import { PhaseSchema, StopReasonSchema, TokenTotalsSchema } from "../store/types.js";

/**
 * What the Choice states route on. Besides `validated`, these are the loop's own verdicts; the
 * attempt counters are compared against the limits by the Choice itself, visibly, not here.
 */
const LoopDecisionSchema = z.enum([
  "correct",
  "judge",
  "correct_logic",
  "validated",
  "needs_manual_review",
  "rejected",
  "duplicate",
]);
export type LoopDecision = z.infer<typeof LoopDecisionSchema>;

const LoopLimitsSchema = z.object({
  maxAttempts: z.number().int().nonnegative(),
  /** Consecutive usable attempts that must fail the same error rule (still failing) to trip the breaker. */
  breakerAfter: z.number().int().positive(),
  stuckAfter: z.number().int().positive(),
  maxLogicAttempts: z.number().int().nonnegative(),
  /** 0 means no budget. JSONPath Choice states cannot test for a missing field cheaply, so never absent. */
  maxTokens: z.number().int().nonnegative(),
  maxCostUsd: z.number().nonnegative(),
});
export type LoopLimits = z.infer<typeof LoopLimitsSchema>;

/** The best attempt so far (fewest errors; ties: higher score, then earlier). */
const BestSchema = z.object({
  attempt: z.number().int().nonnegative(),
  draftRef: z.string(),
  reportRef: z.string(),
  errors: z.number().int().nonnegative(),
  score: z.number(),
  /** Deterministic repairs made to the best draft's content when it was checked (its report's repairs). */
  repairs: z.number().int().nonnegative().default(0),
});

/** The outcome of the last check, as the Choice states read it. */
const VerdictSchema = z.object({
  /** Error-severity violations left in the best draft. */
  errors: z.number().int().nonnegative(),
  warnings: z.number().int().nonnegative(),
  score: z.number(),
  breakerTripped: z.boolean(),
  stuck: z.boolean(),
  budgetExhausted: z.boolean(),
});

/** The logic phase (seeds 000/002): whether the judge runs, how it went the last time. */
const JudgeStateSchema = z.object({
  enabled: z.boolean(),
  /** Judge calls made so far. */
  rounds: z.number().int().nonnegative(),
  /** Findings of the last round that block: error severity, confidence ≥ threshold, not accepted. */
  blocking: z.number().int().nonnegative(),
  /** The last round's answer was unusable. */
  failed: z.boolean(),
  /** Blob key of the last round's whole evidence (prompt, findings, personas). */
  reportRef: z.string().optional(),
  /**
   * The last round's grounding check, bounded (shared/grounding/check.ts `summarize`): the outcome
   * event carries it, so it is always present (`checked: false` before any check).
   */
  grounding: z
    .object({
      checked: z.boolean(),
      supported: z.number().int().nonnegative(),
      unsupported: z.number().int().nonnegative(),
      fields: z.array(
        z.object({
          path: z.string(),
          status: z.enum(["supported", "unsupported"]),
          quotes: z.array(z.object({ start: z.number().int(), end: z.number().int() })),
        }),
      ),
    })
    .default({ checked: false, supported: 0, unsupported: 0, fields: [] }),
});

/** A model answer waiting for re-validation (between CorrectExecution and Revalidate). */
const PendingSchema = z.object({
  attempt: z.number().int().positive(),
  phase: PhaseSchema,
  /** Blob key of the candidate draft; absent when the answer could not be used. */
  candidateRef: z.string().optional(),
  analysis: z.string(),
  fixDescription: z.string(),
  failure: z.string().optional(),
  usage: TokenUsageSchema,
  costUsd: z.number().nonnegative(),
  model: z.string(),
  latencyMs: z.number().nonnegative(),
  at: z.string(),
  /** How the answer was asked for (constrained by the provider, or plain tool use). */
  outputMode: z.enum(["json_schema", "strict_tool", "tool"]).optional(),
  /** A field-level answer as applied to the best draft. */
  patch: z
    .array(z.object({ op: z.enum(["set", "remove"]), path: z.string(), value: z.unknown().optional() }))
    .optional(),
  /** Locked fields the patch tried to change: those changes were refused as regressions. */
  refusedPaths: z.array(z.string()).optional(),
});
export type Pending = z.infer<typeof PendingSchema>;

/**
 * The loop's state between steps: plain JSON, small (references, not drafts), so that it fits
 * Step Functions' 256 KiB state limit whatever the draft's size.
 */
export const LoopStateSchema = z.object({
  runId: z.string(),
  draftId: z.string(),
  kind: z.string(),
  decision: LoopDecisionSchema,
  reason: StopReasonSchema.optional(),
  message: z.string().optional(),
  phase: PhaseSchema,
  /** Corrections made per phase. The state machine's CountAttempt Pass state increments these. */
  counters: z.object({ execution: z.number().int().nonnegative(), logic: z.number().int().nonnegative() }),
  limits: LoopLimitsSchema,
  modelAvailable: z.boolean(),
  verdict: VerdictSchema,
  best: BestSchema,
  originalRef: z.string(),
  /** Error rules of the initial validation, to report which were resolved and which persisted. */
  initialErrorRules: z.array(z.string()),
  /** Per rule, the consecutive usable execution attempts that failed it: the circuit breaker's memory. */
  ruleFailures: z.record(z.string(), z.number().int().nonnegative()),
  /** Consecutive attempts that did not beat the best so far. */
  sinceBest: z.number().int().nonnegative(),
  circuitBreakerRules: z.array(z.string()),
  violationsPerAttempt: z.array(z.number().int().nonnegative()),
  hints: z.array(z.string()),
  tokens: TokenTotalsSchema,
  costUsd: z.number().nonnegative(),
  judge: JudgeStateSchema,
  pending: PendingSchema.optional(),
  duplicateOf: z.string().optional(),
});
export type LoopState = z.infer<typeof LoopStateSchema>;

/** How many corrections a run has made, both phases together. */
export function attemptsMade(state: Pick<LoopState, "counters">): number {
  return state.counters.execution + state.counters.logic;
}
