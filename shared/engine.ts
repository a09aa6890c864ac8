import type * as z from "zod";
import { withDeferral } from "./deferred.js";
import type { Draft, Repair, Severity, Violation } from "./draft.js";
import { countSeverities, type ValidationReport } from "./draft.js";
import { InvalidPackError, PackRuleError, SelfCorrectionError } from "./errors.js";
import type { GroundingSettings } from "./grounding/check.js";
import {
  DEFAULT_JUDGE_SETTINGS,
  DEFAULT_LOOP_SETTINGS,
  type JudgeSettings,
  type LoopSettings,
} from "./loop-settings.js";
import type { DeploymentConfig, Pack, PackOverride, RepairResult, Rule, RuleContext } from "./pack.js";
import { toPointer } from "./pointer.js";

/**
 * redraft's own packs (shared/packs/index.ts marks them), and the kinds they hold: what their code
 * throws is redraft's fault (`system_error`: a sandbox not set up, say), where a user's pack
 * throwing is the pack's (`pack_error`). By kind too, so that a fresh copy of a built-in pack's
 * module (a test's) is still redraft's; a user's pack that replaces a built-in kind is then treated
 * as redraft's.
 */
const OWN_PACKS = new WeakSet<object>();
const OWN_KINDS = new Set(["mcq", "json", "code"]);
export function markOwnPacks(packs: readonly object[]): void {
  for (const pack of packs) OWN_PACKS.add(pack);
}

/**
 * Runs a user pack's code (`what`: a rule's check or repair, the pack's repair or score): a throw is
 * the pack's fault, a PackRuleError naming pack and rule. redraft's own errors (a schema too slow,
 * a draft refused) and anything redraft's own packs throw pass through as they are.
 */
function packCode<T>(pack: Pack<never, never> | object, kind: string, ruleId: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof SelfCorrectionError || OWN_PACKS.has(pack) || OWN_KINDS.has(kind)) throw error;
    throw new PackRuleError(kind, ruleId, error);
  }
}

/** A rule as a deployment configured it: enabled, with its effective severity. */
interface ResolvedRule<C, S> {
  readonly rule: Rule<C, S>;
  readonly severity: Severity;
}

/** A pack with a deployment's overrides applied; built once per kind and reused for every draft. */
export interface ResolvedPack<C = unknown, S extends Record<string, unknown> = Record<string, unknown>> {
  readonly pack: Pack<C, S>;
  readonly kind: string;
  readonly settings: S;
  readonly rules: readonly ResolvedRule<C, S>[];
  readonly loop: LoopSettings;
  readonly judge: JudgeSettings;
  /** The grounding setting: the deployment's per-kind one, else the pack's; absent when none. */
  readonly grounding?: GroundingSettings;
}

/** Weight of a warning in the proportional score: enough to break ties, never enough to outweigh an error. */
const WARNING_WEIGHT = 0.1;
const CONTENT_SHAPE_RULE = "content_shape";

/** Drops keys whose value is undefined, so a partial override never blanks a default. */
function defined<T extends object>(value: T | undefined): { [K in keyof T]?: Exclude<T[K], undefined> } {
  if (!value) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

export function resolvePack<C, S extends Record<string, unknown>>(
  pack: Pack<C, S>,
  override: PackOverride = {},
  deployment: DeploymentConfig = {},
): ResolvedPack<C, S> {
  const ids = new Set(pack.rules.map((r) => r.id));
  if (ids.size !== pack.rules.length)
    throw new InvalidPackError(`pack "${pack.kind}" has duplicate rule ids`);
  for (const id of [...(override.disabledRules ?? []), ...Object.keys(override.rules ?? {})]) {
    if (!ids.has(id))
      throw new InvalidPackError(`override for pack "${pack.kind}" names unknown rule "${id}"`);
  }
  const merged = { ...pack.settings, ...(override.settings ?? {}) };
  let settings = merged as S;
  if (pack.settingsSchema) {
    const parsed = pack.settingsSchema.safeParse(merged);
    if (!parsed.success) {
      throw new InvalidPackError(`settings of pack "${pack.kind}" are invalid: ${parsed.error.message}`);
    }
    settings = parsed.data;
  }
  const disabled = new Set(override.disabledRules ?? []);
  const rules: ResolvedRule<C, S>[] = [];
  for (const rule of pack.rules) {
    const o = override.rules?.[rule.id];
    if (disabled.has(rule.id) || o?.enabled === false) continue;
    rules.push({ rule, severity: o?.severity ?? rule.severity });
  }
  // Precedence: built-in defaults < pack < deployment-wide < deployment per kind.
  const loop: LoopSettings = {
    ...DEFAULT_LOOP_SETTINGS,
    ...defined(pack.loop),
    ...defined(deployment.loop),
    ...defined(override.loop),
  };
  const judge: JudgeSettings = {
    ...DEFAULT_JUDGE_SETTINGS,
    ...defined(pack.judge),
    ...defined(deployment.judge),
    ...defined(override.judge),
  };
  const grounding = override.grounding ?? pack.grounding;
  return { pack, kind: pack.kind, settings, rules, loop, judge, ...(grounding && { grounding }) };
}

export interface Inspection {
  /** The draft after deterministic repair; the input draft is never mutated. */
  readonly draft: Draft;
  readonly report: ValidationReport;
}

function shapeViolations(error: z.ZodError): Violation[] {
  return error.issues.map((issue) => ({
    ruleId: CONTENT_SHAPE_RULE,
    severity: "error" as const,
    source: "schema" as const,
    message: `content${issue.path.length ? ` at ${toPointer(issue.path as (string | number)[])}` : ""}: ${issue.message}`,
    path: toPointer(issue.path as (string | number)[]),
    suggestion: "Give the content the shape this kind of draft requires.",
  }));
}

/** Proportional score: 1 − (errors + 0.1·warnings) / units, clamped to [0,1]. */
export function proportionalScore(violations: readonly Violation[], units: number): number {
  const counts = countSeverities(violations);
  const penalty = counts.error + WARNING_WEIGHT * counts.warning;
  return Math.min(1, Math.max(0, 1 - penalty / Math.max(units, 1)));
}

/**
 * Repairs then checks one draft against a resolved pack: the synchronous heart of validation.
 * Repairs run first so the report describes the draft that will actually be kept.
 */
export function inspectWithPack<C, S extends Record<string, unknown>>(
  resolved: ResolvedPack<C, S>,
  draft: Draft,
): Inspection {
  const { pack, settings, rules } = resolved;
  if (pack.contentSchema) {
    const parsed = pack.contentSchema.safeParse(draft.content);
    if (!parsed.success) {
      const violations = shapeViolations(parsed.error);
      return {
        draft,
        report: {
          violations,
          counts: countSeverities(violations),
          rulesApplied: [CONTENT_SHAPE_RULE],
          passed: false,
          score: proportionalScore(violations, rules.length + violations.length),
          repairs: [],
        },
      };
    }
  }
  // Rules see the content as the draft holds it (not zod's output), so nothing is silently stripped.
  let content = draft.content as C;
  const repairs: Repair[] = [];
  for (const { rule } of rules) {
    if (!rule.repair) continue;
    const input = { draft, content, settings };
    const result = packCode(pack, pack.kind, rule.id, () => rule.repair?.(input) as RepairResult<C>);
    content = result.content;
    repairs.push(...result.repairs);
  }
  if (pack.repair) {
    const input = { draft, content, settings };
    const result = packCode(pack, pack.kind, "(pack repair)", () => pack.repair?.(input) as RepairResult<C>);
    content = result.content;
    repairs.push(...result.repairs);
  }
  const repaired: Draft = repairs.length > 0 ? { ...draft, content: content as Draft["content"] } : draft;
  const ctx: RuleContext<C, S> = { draft: repaired, content, settings };
  const violations = checkAll(pack, rules, ctx);
  const counts = countSeverities(violations);
  const score = pack.score
    ? packCode(pack, pack.kind, "(pack score)", () => pack.score?.(ctx, violations) as number)
    : proportionalScore(
        violations,
        (pack.scoreUnits && packCode(pack, pack.kind, "(pack scoreUnits)", () => pack.scoreUnits?.(ctx))) ??
          rules.length,
      );
  const report: ValidationReport = {
    violations,
    counts,
    rulesApplied: rules.map((r) => r.rule.id),
    passed: counts.error === 0,
    score,
    repairs,
  };
  // What was wrong before repair is part of the record: a repaired run is never reported as clean.
  if (repairs.length > 0)
    report.beforeRepair = checkAll(pack, rules, { draft, content: draft.content as C, settings });
  return { draft: repaired, report };
}

/**
 * inspectWithPack for a caller that can wait: a check that needs an answer from elsewhere (a schema
 * pattern matched in a worker) does not hold the thread for it, so one slow draft delays only itself
 * (deferred.ts). Same result as inspectWithPack.
 */
export function inspectWithPackAsync<C, S extends Record<string, unknown>>(
  resolved: ResolvedPack<C, S>,
  draft: Draft,
): Promise<Inspection> {
  return withDeferral(() => inspectWithPack(resolved, draft));
}

function checkAll<C, S extends Record<string, unknown>>(
  pack: Pack<C, S>,
  rules: readonly ResolvedRule<C, S>[],
  ctx: RuleContext<C, S>,
): Violation[] {
  const violations: Violation[] = [];
  for (const { rule, severity } of rules) {
    // Spread inside: a check that returns no iterable is the pack's fault too.
    const findings = packCode(pack, pack.kind, rule.id, () => [...rule.check(ctx)]);
    for (const f of findings) {
      const v: Violation = {
        ruleId: f.ruleId ?? rule.id,
        severity: f.severity ?? severity,
        message: f.message,
        source: rule.source ?? "rule",
      };
      if (f.path !== undefined) v.path = f.path;
      if (f.suggestion !== undefined) v.suggestion = f.suggestion;
      if (f.confidence !== undefined) v.confidence = f.confidence;
      violations.push(v);
    }
  }
  return violations;
}
