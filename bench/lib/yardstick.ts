import type { Draft, ValidationReport, Violation } from "../../shared/draft.js";
import { inspectWithPack, type ResolvedPack } from "../../shared/engine.js";
import type { PackRegistry } from "../../shared/registry.js";
import { fidelity, lostValues } from "./json-corpus.js";

/** How one policy left one draft. */
export interface Outcome {
  draftId: string;
  kind: string;
  validated: boolean;
  score: number;
  /** Share of the reference's values present unchanged in the delivered content. */
  fidelity: number;
  /**
   * Nothing of the reference lost: every value of the clean draft the corrector started from is in the
   * delivered content, unchanged and at the same place. A wrong value deleted counts as a loss unless
   * the reference had no value there.
   */
  faithful: boolean;
  /** The reference's values lost: no longer there at all, or there with another value. */
  lost: { deleted: number; changed: number };
  /** Characters of each call's prompt text (system + messages, not the tool schema), in call order. */
  promptChars: number[];
  /** Model calls made for this draft. */
  calls: number;
  tokens: number;
  costUsd: number;
  reason: string;
}

/** The pack without any deterministic repair: what a loop without repair validates with. */
function withoutRepair(resolved: ResolvedPack): ResolvedPack {
  const { repair: _repair, ...pack } = resolved.pack;
  const rules = resolved.rules.map(({ rule, severity }) => {
    const { repair: _r, ...bare } = rule;
    return { rule: bare, severity };
  });
  return { ...resolved, pack, rules };
}

export const errorsOf = (report: ValidationReport): Violation[] =>
  report.violations.filter((v) => v.severity === "error");

/**
 * The one yardstick every policy is judged by: the pack's rules and schema on the delivered content
 * as it is, with no repair. It is also the validator the baselines' users run in their loops.
 */
export class Yardstick {
  readonly registry: PackRegistry;
  readonly #bare = new Map<string, ResolvedPack>();
  constructor(registry: PackRegistry) {
    this.registry = registry;
    for (const kind of registry.kinds()) this.#bare.set(kind, withoutRepair(registry.get(kind)));
  }
  check(draft: Draft): ValidationReport {
    const bare = this.#bare.get(draft.kind);
    if (!bare) throw new Error(`unknown kind ${draft.kind}`);
    return inspectWithPack(bare, draft).report;
  }
}

/**
 * What a loop delivered, judged by the yardstick and the clean reference (validity, fidelity, what was
 * lost), with what the loop spent; `gaveUp` is the reason when the yardstick still finds an error.
 */
export function judgeDelivered(
  yardstick: Yardstick,
  draft: Draft,
  delivered: unknown,
  reference: unknown,
  spent: Pick<Outcome, "promptChars" | "calls" | "tokens" | "costUsd">,
  gaveUp: string,
): Outcome {
  const report = yardstick.check({ ...draft, content: delivered as Draft["content"] });
  const kept = fidelity(delivered, reference);
  const validated = report.counts.error === 0;
  return {
    draftId: draft.id,
    kind: draft.kind,
    validated,
    score: report.score,
    fidelity: kept,
    faithful: kept === 1,
    lost: lostValues(delivered, reference),
    ...spent,
    reason: validated ? "validated" : gaveUp,
  };
}
