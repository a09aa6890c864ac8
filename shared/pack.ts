import * as z from "zod";
import type { Draft, Repair, Severity, Violation, ViolationSource } from "./draft.js";
import { SeveritySchema } from "./draft.js";
import { type GroundingSettings, GroundingSettingsSchema } from "./grounding/check.js";
import {
  type JudgeSettings,
  JudgeSettingsSchema,
  LoopCapsSchema,
  type LoopSettings,
  LoopSettingsSchema,
} from "./loop-settings.js";

/** What a rule's check returns for one problem; the engine adds ruleId, severity and source. */
export interface Finding {
  message: string;
  path?: string;
  suggestion?: string;
  /** Overrides the rule's effective severity for this one finding (rare: e.g. a schema keyword). */
  severity?: Severity;
  /** Lets one rule report under several ids (`schema:required`, `test:adds numbers`). */
  ruleId?: string;
  confidence?: number;
}

/** Everything a check may look at. `content` is the repaired content, already parsed by the pack. */
export interface RuleContext<C = unknown, S = Record<string, unknown>> {
  readonly draft: Draft;
  readonly content: C;
  readonly settings: S;
}

export interface RepairResult<C> {
  content: C;
  repairs: Repair[];
}

/**
 * A rule: an id users configure by, a default severity, a description, a check and,
 * where a fix needs no model, a deterministic repair (pure: it returns new content).
 */
export interface Rule<C = unknown, S = Record<string, unknown>> {
  readonly id: string;
  readonly description: string;
  readonly severity: Severity;
  /** Defaults to `rule`. */
  readonly source?: ViolationSource;
  check(ctx: RuleContext<C, S>): readonly Finding[];
  repair?(ctx: RuleContext<C, S>): RepairResult<C>;
}

/**
 * A rule pack: the rules, settings and loop bounds for one `kind` of draft.
 * Users add a kind by exporting one of these from a TypeScript module, or with a declarative JSON file.
 */
export interface Pack<C = unknown, S extends Record<string, unknown> = Record<string, unknown>> {
  readonly kind: string;
  readonly description: string;
  /**
   * Parses the draft's content. Shape problems become violations (the model can fix them),
   * not a rejection; rules run only on content that parsed.
   */
  readonly contentSchema?: z.ZodType<C>;
  /** Default settings (thresholds, word lists…), overridable per deployment. */
  readonly settings: S;
  /** Validates overridden settings, so a bad deployment config fails at load. */
  readonly settingsSchema?: z.ZodType<S>;
  readonly rules: readonly Rule<C, S>[];
  /** Pack-wide repair, run after the rules' own repairs (the json pack's schema repair). */
  repair?(ctx: RuleContext<C, S>): RepairResult<C>;
  /** How many units a draft was checked on: the denominator of the proportional score. */
  scoreUnits?(ctx: RuleContext<C, S>): number;
  /** A score of its own (the code pack's share of passing tests); defaults to the proportional score. */
  score?(ctx: RuleContext<C, S>, violations: readonly Violation[]): number;
  readonly loop?: Partial<LoopSettings>;
  readonly judge?: Partial<JudgeSettings>;
  /**
   * Fields the judge must ground in the draft's `context.source` with verbatim quotes that code
   * checks (shared/grounding/check.ts). Applies only to drafts that have a source.
   */
  readonly grounding?: GroundingSettings;
  /** Pack rules in words, put in the stable part of the correction prompt. */
  readonly instructions?: string;
  /**
   * The same checks one line per rule id: a correction prompt then sends only the lines of the rules
   * the draft fails (and whose violations carry no suggestion), not `instructions` whole.
   */
  readonly checks?: Readonly<Record<string, string>>;
  /** JSON Schema of `content`, handed to the model as the shape of the corrected content. */
  contentJsonSchema?(draft: Draft, settings?: S): Record<string, unknown> | undefined;
  /**
   * JSON pointers into `content` that a correction may not change (the code pack's tests): an
   * answer that changes one is a failed attempt, like one that touches `metadata`.
   */
  readonly protectedContent?: readonly string[];
  /** One-time async set-up (compiling a sandbox); validation itself is synchronous. */
  ready?(): Promise<void>;
}

/** What a deployment may change per kind without touching code. */
const RuleOverrideSchema = z
  .object({ enabled: z.boolean().optional(), severity: SeveritySchema.optional() })
  .strict();
const PackOverrideSchema = z
  .object({
    disabledRules: z.array(z.string()).optional(),
    rules: z.record(z.string(), RuleOverrideSchema).optional(),
    settings: z.record(z.string(), z.unknown()).optional(),
    loop: LoopSettingsSchema.partial().optional(),
    judge: JudgeSettingsSchema.partial().optional(),
    /** Replaces the pack's grounding setting for this kind. */
    grounding: GroundingSettingsSchema.optional(),
  })
  .strict();
export type PackOverride = z.infer<typeof PackOverrideSchema>;

export const DeploymentConfigSchema = z
  .object({
    packs: z.record(z.string(), PackOverrideSchema).optional(),
    caps: LoopCapsSchema.partial().optional(),
    /** Deployment-wide loop defaults, under the per-kind overrides. */
    loop: LoopSettingsSchema.partial().optional(),
    judge: JudgeSettingsSchema.partial().optional(),
    /**
     * Model calls in flight at once; a burst beyond it waits its turn instead of failing. Locally
     * the bound of one process's LimitedModelClient (shared/model/limited.ts). @default 4
     */
    modelConcurrency: z.number().int().positive().optional(),
  })
  .strict();
export type DeploymentConfig = z.infer<typeof DeploymentConfigSchema>;

/**
 * A pack of any kind. Packs differ in their content and settings types, and the registry holds
 * them side by side; `unknown` would not do, because a Pack is contravariant in its content.
 */
// biome-ignore lint/suspicious/noExplicitAny: the one place packs of different kinds meet.
export type AnyPack = Pack<any, any>;
