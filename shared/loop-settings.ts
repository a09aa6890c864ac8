import * as z from "zod";

/**
 * The correction loop's settings in one place, every default beside its schema: what a pack, a
 * deployment or a draft may set (the loop's bounds, the judge), the ceilings a deployment puts on a
 * draft's own options, and the defaults of a run's delivery, its model calls and its wait for a model
 * slot. docs/DESIGN.md §2 lists them. Defaults that belong to one enforcement point stay beside it:
 * the draft size and depth (parseDraft, shared/validate.ts, enforced before anything else parses),
 * a model request's timeout and retries (shared/model/types.ts) and the model concurrency
 * (shared/model/limited.ts).
 */

/** A persona the judge checks a draft against (seed 000 in docs/DESIGN.md §1: basic and expert guidance). */
export const PersonaSchema = z.object({
  name: z.string().min(1),
  constraints: z.array(z.string().min(1)),
});
export type Persona = z.infer<typeof PersonaSchema>;

/** The LLM judge settings of a pack (the logic phase). Off unless a pack, deployment or draft turns it on. */
export const JudgeSettingsSchema = z.object({
  enabled: z.boolean(),
  /** Findings at error severity with confidence at or above this trigger a logic correction. */
  threshold: z.number().min(0).max(1),
  rubric: z.array(z.string()),
  personas: z.array(PersonaSchema),
  /**
   * The model that judges, when it should not be the corrector's: a model id of the same provider
   * (`claude-haiku-4-5`), or `<provider>:<id>` (`bedrock:…`) for a client of another provider the
   * runtime was given. A judge that is not the author does not share its blind spots (README).
   */
  model: z.string().min(1).max(200).optional(),
});
export type JudgeSettings = z.infer<typeof JudgeSettingsSchema>;

/** One rung of a model ladder: a model, and after how many failed attempts of a rule it takes over. */
const ModelRungSchema = z.strictObject({
  model: z.string().min(1),
  /** Attempts a rule must have failed before this rung answers for it (not for the first rung). */
  after: z.number().int().min(1).max(10).optional(),
  /** Only these rules move to this rung; every rule when absent. */
  rules: z.array(z.string().min(1)).min(1).optional(),
});
export type ModelRung = z.infer<typeof ModelRungSchema>;

/** Bounds of the correction loop; the defaults are below, docs/DESIGN.md §2 gives the stop rules. */
export const LoopSettingsSchema = z.object({
  maxAttempts: z.number().int().min(0).max(10),
  /**
   * Circuit breaker: trips once the same error rule failed in this many consecutive attempts and
   * still fails (default 2), so it can stop a run before `maxAttempts`.
   */
  breakerAfter: z.number().int().min(1).max(10).optional(),
  /** Deprecated name of `breakerAfter`, still accepted (with a DeprecationWarning); `breakerAfter` wins when both are set. */
  breakerThreshold: z.number().int().min(1).max(10).optional(),
  stuckAfter: z.number().int().min(1).max(10),
  maxLogicAttempts: z.number().int().min(0).max(5),
  maxTokens: z.number().int().positive().optional(),
  maxCostUsd: z.number().positive().optional(),
  /**
   * A model ladder: `[{ model: "<cheap>" }, { model: "<strong>", after: 1 }]`. Every correction starts
   * on the first; a rule still failing after a rung's `after` attempts moves to it. Each attempt is
   * priced by the model that answered it.
   */
  models: z.array(ModelRungSchema).min(1).optional(),
});
export type LoopSettings = z.infer<typeof LoopSettingsSchema>;

export const DEFAULT_LOOP_SETTINGS: LoopSettings = { maxAttempts: 2, stuckAfter: 2, maxLogicAttempts: 1 };
export const DEFAULT_JUDGE_SETTINGS: JudgeSettings = {
  enabled: false,
  threshold: 0.8,
  rubric: [],
  personas: [],
};

/** The default of `breakerAfter`: a rule that failed in two consecutive attempts and still fails. */
export const DEFAULT_BREAKER_AFTER = 2;

/** Ceilings a draft's own `options` can never exceed. */
export const LoopCapsSchema = z
  .object({
    maxAttempts: z.number().int().min(0).max(10),
    maxLogicAttempts: z.number().int().min(0).max(5),
    maxTokens: z.number().int().positive().optional(),
    maxCostUsd: z.number().positive().optional(),
  })
  .strict();
export type LoopCaps = z.infer<typeof LoopCapsSchema>;
export const DEFAULT_LOOP_CAPS: LoopCaps = { maxAttempts: 5, maxLogicAttempts: 3 };

/**
 * A repeated delivery of the same content within this window starts no second run (0 disables the
 * check). The one default: the Validate step and the Lambda environment (DEDUPE_WINDOW_MS) use it.
 */
export const DEFAULT_DEDUPE_WINDOW_MS = 15 * 60 * 1000;

/** Output tokens one model call may produce (a correction or a judge round) unless the deps say otherwise. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 8192;

/** How long a run's model work may wait for a slot, counted from the execution's start. */
export const DEFAULT_RUN_DEADLINE_HOURS = 24;

/**
 * CPU time one json draft's check (compile, repair, Ajv, findings) may take on its thread before it is
 * stopped and the draft rejected `invalid_schema` / `too_slow` (shared/packs/json/thread.ts); the json
 * pack's `cpuBudgetMs` setting overrides it. Ordinary drafts take well under a millisecond, the
 * data-cost budget's 20 million evaluations about half a second to two seconds.
 */
export const DEFAULT_JSON_CPU_BUDGET_MS = 2_000;
