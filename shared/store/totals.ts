import type { RunRecord, RunStatus, StopReason } from "./types.js";

/** Which runs a total counts: the viewer's filters (status, reason, kind, a part of the draft id). */
export interface RunFilter {
  status?: RunStatus | undefined;
  reason?: StopReason | undefined;
  kind?: string | undefined;
  /** Case-insensitive part of the draft id. */
  q?: string | undefined;
}

/**
 * Totals over every run a filter matches, however many: what the viewer's cards say. The loop's
 * outcomes are apart from people's decisions (an approval is not the loop validating a draft).
 */
export interface RunTotals {
  runs: number;
  drafts: number;
  finished: number;
  /** Runs whose status is validated, approvals included; `outcomes` and `decisions` tell them apart. */
  validated: number;
  needsReview: number;
  outcomes: { finished: number; validated: number; sentToReview: number; rejected: number; failed: number };
  decisions: { approved: number; rejected: number; edited: number; awaiting: number };
  tokens: number;
  /** The priced runs' cost; `priced` is false when some run's model has no price. */
  cost: { usd: number; priced: boolean };
  unpricedRuns: number;
}

/** The kinds and reasons present among all runs, for the filters' choices. */
export interface RunFacets {
  kinds: string[];
  reasons: string[];
}

/** The reasons a person's decision writes (app/review.ts): the run's status is theirs, not the loop's. */
export const DECISION_REASONS: readonly StopReason[] = [
  "approved",
  "rejected_by_reviewer",
  "superseded_by_edit",
];
export const FINAL_STATUSES: readonly RunStatus[] = [
  "validated",
  "needs_manual_review",
  "rejected",
  "failed",
];

/**
 * A priced call always costs something, so tokens at $0 were spent on a model with no price (the
 * run's own `model` names the client, "replay" for a cassette, not the model each answer stands for).
 */
export const isPricedRun = (run: Pick<RunRecord, "tokens" | "costUsd">) =>
  run.tokens.total === 0 || run.costUsd > 0;

export function matchesFilter(run: RunRecord, filter: RunFilter): boolean {
  const needle = filter.q?.trim().toLowerCase();
  return (
    (!filter.status || run.status === filter.status) &&
    (!filter.reason || run.reason === filter.reason) &&
    (!filter.kind || run.kind === filter.kind) &&
    (!needle || run.draftId.toLowerCase().includes(needle))
  );
}

/**
 * Totals added up one run at a time, for a store that cannot add them up itself (DynamoDB, a
 * folder kept by dynalite): a listing is read page by page and nothing but the counts (and the
 * distinct draft ids) is kept. The SQLite store counts with one query (SqliteRunStore.totals).
 */
export class TotalsFold {
  readonly #drafts = new Set<string>();
  readonly #kinds = new Set<string>();
  readonly #reasons = new Set<string>();
  readonly #totals: RunTotals = emptyTotals();

  constructor(readonly filter: RunFilter) {}

  /** Counts `run` when the filter matches it; its kind and reason are facets either way. */
  add(run: RunRecord): void {
    this.#kinds.add(run.kind);
    if (run.reason) this.#reasons.add(run.reason);
    if (!matchesFilter(run, this.filter)) return;
    const t = this.#totals;
    const decided = run.reason !== undefined && DECISION_REASONS.includes(run.reason);
    t.runs += 1;
    this.#drafts.add(run.draftId);
    t.drafts = this.#drafts.size;
    if (FINAL_STATUSES.includes(run.status)) t.finished += 1;
    if (run.status === "validated") t.validated += 1;
    if (run.status === "needs_manual_review") t.needsReview += 1;
    if (run.status === "validated" && !decided) t.outcomes.validated += 1;
    if (run.status === "needs_manual_review" || decided) t.outcomes.sentToReview += 1;
    if (run.status === "rejected" && !decided) t.outcomes.rejected += 1;
    if (run.status === "failed") t.outcomes.failed += 1;
    if (run.reason === "approved") t.decisions.approved += 1;
    if (run.reason === "rejected_by_reviewer") t.decisions.rejected += 1;
    if (run.reason === "superseded_by_edit") t.decisions.edited += 1;
    t.decisions.awaiting = t.needsReview;
    t.tokens += run.tokens.total;
    if (isPricedRun(run)) t.cost.usd += run.costUsd;
    else {
      t.unpricedRuns += 1;
      t.cost.priced = false;
    }
    const o = t.outcomes;
    o.finished = o.validated + o.sentToReview + o.rejected + o.failed;
  }

  get totals(): RunTotals {
    return structuredClone(this.#totals);
  }

  get facets(): RunFacets {
    return { kinds: [...this.#kinds].sort(), reasons: [...this.#reasons].sort() };
  }
}

function emptyTotals(): RunTotals {
  return {
    runs: 0,
    drafts: 0,
    finished: 0,
    validated: 0,
    needsReview: 0,
    outcomes: { finished: 0, validated: 0, sentToReview: 0, rejected: 0, failed: 0 },
    decisions: { approved: 0, rejected: 0, edited: 0, awaiting: 0 },
    tokens: 0,
    cost: { usd: 0, priced: true },
    unpricedRuns: 0,
  };
}
