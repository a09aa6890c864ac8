import type { Draft } from "../draft.js";
import type { ResolvedPack } from "../engine.js";
import { DEFAULT_LOOP_CAPS, type DeploymentConfig } from "../pack.js";
import type { LoopLimits } from "./state.js";
import { DEFAULT_BREAKER_AFTER } from "./verdict.js";

// Where the loop's defaults live: the settings a pack may change (maxAttempts, stuckAfter,
// maxLogicAttempts, the judge's threshold) and the caps in shared/pack.ts (DEFAULT_LOOP_SETTINGS,
// DEFAULT_JUDGE_SETTINGS, DEFAULT_LOOP_CAPS), the breaker's in shared/loop/verdict.ts, and the
// defaults of a run's delivery and calls below; docs/DESIGN.md §2 lists them. The draft size and
// depth defaults stay beside parseDraft (shared/validate.ts), which enforces them before anything else.

/**
 * A repeated delivery of the same content within this window starts no second run (0 disables the
 * check). The one default: the Validate step and the Lambda environment (DEDUPE_WINDOW_MS) use it.
 */
export const DEFAULT_DEDUPE_WINDOW_MS = 15 * 60 * 1000;

/** Output tokens one model call may produce (a correction or a judge round) unless the deps say otherwise. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 8192;

const capped = (value: number | undefined, fallback: number, cap: number | undefined): number =>
  Math.min(value ?? fallback, cap ?? Number.POSITIVE_INFINITY);

let warnedBreakerThreshold = false;

/**
 * `breakerThreshold` is the deprecated name of `breakerAfter`: redraft 0.1.0 accepted it in a draft's
 * options and a pack's loop settings, so drafts and pack files written for it keep working. It maps
 * to `breakerAfter` (which wins when both are set) and is warned about once per process
 * (DeprecationWarning REDRAFT_BREAKER_THRESHOLD), so the name can go in a later major version.
 */
function breakerAfterOf(settings: {
  breakerAfter?: number | undefined;
  breakerThreshold?: number | undefined;
}): number | undefined {
  if (settings.breakerThreshold !== undefined && !warnedBreakerThreshold) {
    warnedBreakerThreshold = true;
    process.emitWarning("breakerThreshold is deprecated: name it breakerAfter", {
      type: "DeprecationWarning",
      code: "REDRAFT_BREAKER_THRESHOLD",
    });
  }
  return settings.breakerAfter ?? settings.breakerThreshold;
}

/**
 * The limits one run gets: pack defaults < deployment < per-kind overrides < the draft's own
 * options, and never above the deployment's caps.
 */
export function resolveLimits(
  resolved: ResolvedPack,
  draft: Draft,
  deployment: DeploymentConfig = {},
): LoopLimits {
  const caps = { ...DEFAULT_LOOP_CAPS, ...deployment.caps };
  const loop = resolved.loop;
  const o = draft.options ?? {};
  const maxAttempts = capped(o.maxAttempts, loop.maxAttempts, caps.maxAttempts);
  return {
    maxAttempts,
    breakerAfter: Math.max(1, breakerAfterOf(o) ?? breakerAfterOf(loop) ?? DEFAULT_BREAKER_AFTER),
    stuckAfter: o.stuckAfter ?? loop.stuckAfter,
    maxLogicAttempts: capped(o.maxLogicAttempts, loop.maxLogicAttempts, caps.maxLogicAttempts),
    maxTokens: capped(o.maxTokens, loop.maxTokens ?? 0, caps.maxTokens) || (caps.maxTokens ?? 0),
    maxCostUsd: capped(o.maxCostUsd, loop.maxCostUsd ?? 0, caps.maxCostUsd) || (caps.maxCostUsd ?? 0),
  };
}
