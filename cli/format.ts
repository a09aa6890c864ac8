import { shortIds } from "../app/ids.js";
import type { Violation } from "../shared/draft.js";
import type { RunResult } from "../shared/loop/run.js";
import { isPriced } from "../shared/model/pricing.js";
import type { RunRecord } from "../shared/store/types.js";
import { type Column, type OutputStyle, renderTable, stdoutStyle } from "./output.js";

/** Violations as the `--json` contract shows them: `{ruleId, severity, message, path?, suggestion?}`. */
function publicViolation(v: Violation) {
  return {
    ruleId: v.ruleId,
    severity: v.severity,
    message: v.message,
    ...(v.path !== undefined && { path: v.path }),
    ...(v.suggestion !== undefined && { suggestion: v.suggestion }),
  };
}

/**
 * A run result with the file, array element or line its draft came from: two drafts of one batch
 * may share an id, and the source tells their lines apart.
 */
export type SourcedResult = RunResult & {
  source?: string;
  /** The content had already run to an end in this data folder: the earlier run, reprinted. */
  duplicate?: true;
};

/** One `--json` line: the core's run result without the per-attempt detail (`redraft show` has it). */
export function jsonLine(result: SourcedResult): string {
  return JSON.stringify({
    draftId: result.draftId,
    ...(result.source !== undefined && { source: result.source }),
    runId: result.runId,
    status: result.status,
    reason: result.reason,
    ...(result.message !== undefined && { message: result.message }),
    attempts: result.attempts,
    logicAttempts: result.logicAttempts,
    initialViolations: result.initialViolations.map(publicViolation),
    finalViolations: result.finalViolations.map(publicViolation),
    repairs: result.repairs.map(({ path, before, after }) => ({ path, before, after })),
    violationsPerAttempt: result.violationsPerAttempt,
    circuitBreakerRules: result.circuitBreakerRules,
    tokens: result.tokens,
    costUsd: result.costUsd,
    finalDraft: result.finalDraft,
  });
}

/** A status with the deterministic repairs behind its draft, so a repaired run never reads as clean: `validated · 2 repairs`. */
const statusText = (status: string, repairs = 0): string =>
  repairs > 0 ? `${status} · ${repairs} repair${repairs === 1 ? "" : "s"}` : status;

export const usd = (n: number) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;

/**
 * A cost as a person should read it. An unpriced model costs 0 in the records, so tokens spent at
 * no cost, or by a model the price table does not know, say `unpriced` rather than `$0.00`; a run
 * mixing both says `$0.0123 + unpriced`.
 */
export function costText(cost: number, tokens: number, models: readonly string[] = []): string {
  if (tokens === 0) return usd(cost);
  const unpriced = cost === 0 || models.some((m) => !isPriced(m));
  if (!unpriced) return usd(cost);
  return cost === 0 ? "unpriced" : `${usd(cost)} + unpriced`;
}

/** Statuses in colour on a terminal, as `gh` shows them: green done, yellow waiting, red refused or failed. */
const STATUS_COLORS: Readonly<Record<string, number>> = {
  validated: 32,
  needs_manual_review: 33,
  review: 33,
  rejected: 31,
  failed: 31,
  draft: 36,
  correcting: 36,
  not_run: 90,
  // A batch's own statuses.
  completed: 32,
  running: 36,
};

/** A status's colour on a terminal, if it has one. */
export const paintStatus = (status: string): number | undefined => STATUS_COLORS[status];

/** A status column: coloured, and `review` for `needs_manual_review` where a table is narrow. */
export const statusColumn: Column = {
  head: "status",
  short: (status) => (status === "needs_manual_review" ? "review" : status),
  paint: paintStatus,
};

/** The models that answered a run's corrections (the judge's are in its reports, see `redraft show`). */
const attemptModels = (r: RunResult) =>
  r.attemptsDetail.filter((a) => a.tokens.input + a.tokens.output > 0).map((a) => a.model);

/** The end of a long text (a source's file name and line matter more than its folders). */
const tail = (text: string, width: number): string =>
  text.length <= width ? text : `…${text.slice(text.length - width + 1)}`;

/** What the results table shows of one run: a few fields, so a long run keeps no drafts for it. */
interface ResultRow {
  draftId: string;
  source: string;
  status: string;
  reason: string;
  attempts: number;
  errorsPerAttempt: string;
  tokens: number;
  cost: string;
  unpriced: boolean;
  costUsd: number;
  runId: string;
  duplicate: boolean;
  /** Deterministic repairs behind the final draft, said beside the status (`validated · 2 repairs`). */
  repairs: number;
}

type Sum = { drafts: number; attempts: number; tokens: number; cost: number; unpriced: boolean };
const EMPTY_SUM: Sum = { drafts: 0, attempts: 0, tokens: 0, cost: 0, unpriced: false };

/**
 * The table `redraft run` prints at its end, filled as results come: the first `maxRows` drafts
 * one line each, and every draft in the sums per status. A run of 100,000 drafts keeps `maxRows`
 * small rows and a sum per status, never its results (`--json` prints every one as it ends).
 */
export class ResultsTable {
  readonly #rows: ResultRow[] = [];
  readonly #byStatus = new Map<string, Sum>();
  #total: Sum = EMPTY_SUM;
  #more = 0;

  constructor(readonly maxRows = Number.POSITIVE_INFINITY) {}

  add(r: SourcedResult): void {
    const cost = costText(r.costUsd, r.tokens.total, attemptModels(r));
    const row: ResultRow = {
      draftId: r.draftId,
      source: tail(r.source ?? "", 14),
      status: r.status,
      reason: r.reason ?? "",
      attempts: r.attempts,
      errorsPerAttempt: r.violationsPerAttempt.join(" → "),
      tokens: r.tokens.total,
      cost,
      unpriced: cost.includes("unpriced"),
      costUsd: r.costUsd,
      runId: r.runId,
      duplicate: r.duplicate === true,
      repairs: r.repairs.length,
    };
    if (this.#rows.length < this.maxRows) this.#rows.push(row);
    else this.#more += 1;
    const add = (s: Sum): Sum => ({
      drafts: s.drafts + 1,
      attempts: s.attempts + row.attempts,
      tokens: s.tokens + row.tokens,
      cost: s.cost + row.costUsd,
      unpriced: s.unpriced || row.unpriced,
    });
    this.#byStatus.set(row.status, add(this.#byStatus.get(row.status) ?? EMPTY_SUM));
    this.#total = add(this.#total);
  }

  /** How many drafts were added. */
  get drafts(): number {
    return this.#total.drafts;
  }

  /**
   * Per-draft lines and a summary per status; each table fits `style.width`. Run ids are shortened
   * to prefixes unique among `knownIds` (every run of the data folder).
   */
  render(style: OutputStyle = stdoutStyle(), knownIds: readonly string[] = []): string {
    const rows = this.#rows;
    const short = shortIds(
      rows.map((r) => r.runId),
      knownIds,
    );
    // Only when some draft was a duplicate: a re-run says which lines ran before, in the table.
    const duplicates = rows.some((r) => r.duplicate);
    const perDraft = renderTable(
      [
        { head: "draft", wrapTo: 10 },
        { head: "source", wrapTo: 14 },
        statusColumn,
        // A reason is a contract word, read whole or not at all.
        { head: "reason" },
        { head: "attempts" },
        { head: "errors per attempt", wrapTo: 9 },
        { head: "tokens" },
        { head: "cost", wrapTo: 8 },
        { head: "run" },
        ...(duplicates ? [{ head: "duplicate" }] : []),
      ],
      rows.map((r) => [
        r.draftId,
        r.source,
        statusText(r.status, r.repairs),
        r.reason,
        r.attempts,
        r.errorsPerAttempt,
        r.tokens,
        r.cost,
        short.get(r.runId) ?? r.runId,
        ...(duplicates ? [r.duplicate ? "yes" : ""] : []),
      ]),
      style,
      // Where each draft came from tells apart two drafts with one id: it gives way late. The
      // duplicate mark goes only where nothing else fits (the command says under the table how many).
      ["attempts", "tokens", "errors per attempt", "source", "cost"],
      { oneLine: true, lastDropped: ["duplicate"] },
    );
    const sumCost = (s: Sum) =>
      s.unpriced ? (s.cost === 0 ? "unpriced" : `${usd(s.cost)} + unpriced`) : usd(s.cost);
    const summary = renderTable(
      [statusColumn, ...["drafts", "attempts", "tokens", "cost"].map((head) => ({ head }))],
      [
        ...[...this.#byStatus]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([status, s]) => [status, s.drafts, s.attempts, s.tokens, sumCost(s)]),
        ["total", this.#total.drafts, this.#total.attempts, this.#total.tokens, sumCost(this.#total)],
      ],
      style,
    );
    const more =
      this.#more > 0
        ? `\n… and ${this.#more} more drafts, counted below (--json prints a line for every draft; redraft runs lists them)`
        : "";
    return `${perDraft}${more}\n${summary}`;
  }
}

/**
 * `redraft runs`: newest first, a line per run, fitting `style.width` (tokens, attempts, creation
 * time, kind and cost give way, in that order); run ids shortened to prefixes unique among `knownIds`.
 */
export function runsTable(
  runs: readonly RunRecord[],
  style: OutputStyle = stdoutStyle(),
  knownIds: readonly string[] = [],
): string {
  const short = shortIds(
    runs.map((r) => r.runId),
    knownIds,
  );
  return renderTable(
    [
      { head: "run" },
      { head: "draft", wrapTo: 10 },
      { head: "kind" },
      statusColumn,
      // A reason is a contract word, read whole or not at all.
      { head: "reason" },
      { head: "attempts" },
      { head: "tokens" },
      { head: "cost", wrapTo: 8 },
      { head: "created" },
    ],
    runs.map((r) => [
      short.get(r.runId) ?? r.runId,
      r.draftId,
      r.kind,
      statusText(r.status, r.repairs),
      r.reason ?? "",
      r.attempts,
      r.tokens.total,
      costText(r.costUsd, r.tokens.total),
      r.createdAt.slice(0, 16).replace("T", " "),
    ]),
    style,
    ["tokens", "attempts", "created", "kind", "cost"],
    { oneLine: true },
  );
}
