import type { Draft } from "../draft.js";
import type { ResolvedPack } from "../engine.js";
import { DEFAULT_BREAKER_AFTER, DEFAULT_LOOP_CAPS } from "../loop-settings.js";
import type { DeploymentConfig } from "../pack.js";
import type { LoopLimits } from "./state.js";

// The loop's settings, caps and every default beside its schema: shared/loop-settings.ts.

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
