/**
 * The viewer's JSON API, as one set of types read by both sides: the server's handlers (ui/api.ts,
 * ui/batches.ts, ui/server.ts) are typed to return these, and the page (ui/web/) reads every answer
 * through them, so a field renamed on one side fails `npm run typecheck` on the other.
 *
 * Type imports only, and only from modules that are themselves plain types or zod schemas: the page's
 * type check (ui/web/tsconfig.json, DOM and no Node) reads this file and what it imports.
 */
import type { HistoryEvent } from "../local/execution-types.js";
import type { Repair, Violation } from "../shared/draft.js";
import type { TokenUsage } from "../shared/model/types.js";
import type { RunFacets, RunTotals } from "../shared/store/totals.js";
import type { AttemptRecord, RunRecord, RunStatus, TokenTotals } from "../shared/store/types.js";
import type { Timeline } from "./timeline.js";

/**
 * Parts of the answers whose types live with what makes them: the list's totals and facets (the
 * store counts them), a violation and a repair (the loop records them), an execution's history and
 * its timeline (the interpreter writes it, ui/timeline.ts reads it).
 */
export type { HistoryEvent, Repair, RunFacets, RunTotals, Timeline, Violation };

/** A cost with whether it means anything: a model missing from the price table costs "$0", which is not true. */
export interface Cost {
  usd: number;
  /** False when some of the tokens were spent on a model with no known price. */
  priced: boolean;
}

/** The run's execution in the cloud, for the console link (neither for a local run). */
interface ExecutionLink {
  executionArn?: string;
  consoleUrl?: string;
}

/**
 * A run that waits for a model slot (local/waiting.ts): since when, how long so far, and its place
 * in the queue when the runtime knows it. Absent when the run does not wait.
 */
export interface Waiting {
  since: string;
  ageSeconds: number;
  position?: number;
  /**
   * A stack's run: the depth of the model queue it waits in (cli/cloud/waiting.ts QueueDepth). No
   * position: a standard SQS queue keeps no order. `depth` is null when it could not be read (`unknown` says why).
   */
  queue?: {
    name: string;
    depth: number | null;
    waiting?: number;
    inFlight?: number;
    unknown?: string;
  };
}

// ---- GET /api/runs -------------------------------------------------------------------------------

/** One row of the runs list. */
export interface RunRow extends ExecutionLink {
  runId: string;
  shortId: string;
  draftId: string;
  kind: string;
  status: RunStatus;
  reason: string | null;
  /** Deterministic repairs behind the run's draft: the list says `validated · 2 repairs`. */
  repairs: number;
  /** The batch a batch item's run belongs to, for a link to its page. */
  batchId: string | null;
  attempts: number;
  violationsPerAttempt: number[];
  tokens: number;
  cost: Cost;
  createdAt: string;
  updatedAt: string;
  /** The run waits for a model slot (a data folder's runs, and a stack's first under-way runs of the page; absent otherwise). */
  waiting?: Waiting;
}

/** What only the first page of the list carries (no `after`): totals over every run the filter matches. */
export interface RunsFirstPage {
  totals: RunTotals;
  /** The store could not count every run: the totals are of the newest it listed. */
  totalsCut: boolean;
  topRules: { ruleId: string; runs: number }[];
  /** How many runs the rules chart read. */
  topRulesOver: number;
  facets: RunFacets;
}

/** A page of the runs list; `next` names the run the following page starts after, null on the last. */
export type RunsPage = (RunsFirstPage | { [K in keyof RunsFirstPage]?: undefined }) & {
  next: string | null;
  runs: RunRow[];
};

// ---- GET /api/runs/<id> --------------------------------------------------------------------------

/** One change of an attempt, old beside new. */
export interface DiffRow {
  op: string;
  path: string;
  old?: unknown;
  new?: unknown;
  from?: string;
}

/** One correction attempt as the run page shows it. */
export interface AttemptView
  extends Pick<
    AttemptRecord,
    | "attempt"
    | "phase"
    | "at"
    | "model"
    | "latencyMs"
    | "inputViolations"
    | "outputViolations"
    | "resolvedCount"
    | "remainingCount"
    | "repairs"
    | "analysis"
    | "fixDescription"
    | "tokens"
    | "errorCount"
    | "score"
    | "isBest"
    | "rolledBack"
  > {
  /** The attempt whose best draft the patch starts from. */
  baseAttempt: number;
  omitted: AttemptRecord["omitted"] | null;
  diff: DiffRow[];
  failure: string | null;
  cost: Cost;
}

/** A judge finding, and whether it blocked the draft or was kept as a warning. */
type JudgeFinding = Violation & { blocked: boolean };

export interface JudgeRoundView {
  round: number;
  at: string;
  model: string;
  threshold: number;
  findings: JudgeFinding[];
  accepted: string[];
  failure: string | null;
  tokens: TokenUsage & { total: number };
  cost: Cost;
}

/** `[start, end)` in the source's characters. */
interface SourceSpan {
  start: number;
  end: number;
}

/** One grounded field of the draft beside the source (shared/grounding/check.ts FieldEvidence). */
export interface GroundedField {
  path: string;
  value: string;
  claim: string;
  status: "supported" | "unsupported";
  quotes: {
    text: string;
    start?: number;
    end?: number;
    problem?: "not_in_source" | "quotes_draft" | "too_short";
  }[];
  match?: SourceSpan;
  excerpt?: SourceSpan & { text: string };
}

/** The run's source and the last judge round's grounding. */
export interface SourceView {
  text: string;
  chars: number;
  truncated: boolean;
  round: number | null;
  split: boolean;
  passages: (SourceSpan & { id: number; score?: number })[];
  fields: GroundedField[];
}

interface PurposeTotals {
  calls: number;
  tokens: number;
  cost: Cost;
}

interface ExecutionView {
  status: string;
  terminalState: string;
  error: { error: string; cause: string } | null;
  history: HistoryEvent[];
  timeline: Timeline | undefined;
}

interface GraphView {
  /** The whole machine, the Catch edges the run did not take drawn quietly. */
  mermaid: string;
  views: { path: string | null; all: string };
  states: number;
  /** How many times the run entered each state. */
  entered: Record<string, number>;
  /** Mermaid's node id → the state's name. */
  nodes: Record<string, string>;
}

/** Everything the run page shows. */
export interface RunDetail {
  version: string;
  run: RunRecord & { cost: Cost } & ExecutionLink;
  executionArn: string | null;
  consoleUrl: string | null;
  batchId: string | null;
  repairs: Pick<Repair, "ruleId" | "action" | "path" | "message" | "before" | "after">[];
  undoUntil: string | null;
  reasonExplained: string | null;
  initial: { violations: Violation[]; repairs: Repair[]; score: number } | null;
  finalViolations: Violation[];
  attempts: AttemptView[];
  judge: JudgeRoundView[];
  source: SourceView | null;
  purposes: { correct: PurposeTotals; judge: PurposeTotals };
  finalDraft: unknown;
  execution: ExecutionView | null;
  graph: GraphView;
  /** The run waits for a model slot; absent when it does not. */
  waiting?: Waiting;
}

// ---- POST /api/runs/<id>/review and /undo ---------------------------------------------------------

export interface ReviewAnswer {
  message: string;
  status: string;
  /** Until when the reviewer may take an approval or a rejection back. */
  undoUntil?: string;
}

export interface UndoAnswer {
  message: string;
  status: string;
}

/** Every refusal and failure of the API: the HTTP status says which. */
export interface ApiError {
  error: string;
}

// ---- GET /api/batches and /api/batches/<id> --------------------------------------------------------

export interface BatchSummaryView {
  batchId: string;
  status: string;
  items: number | null;
  counts: Record<string, number>;
  reasons: Record<string, number>;
  tokens: number;
  costUsd: number;
  pricing: string | null;
  manifest: string;
  startedAt: string;
  endedAt: string | null;
  error: { error: string; cause: string } | null;
}

export interface BatchList {
  batches: BatchSummaryView[];
}

interface BatchItemRow {
  line: number;
  runId: string;
  shortId: string;
  draftId: string | null;
  status: RunStatus | "not_run";
  reason: string | null;
  attempts: number;
  tokens: number;
  costUsd: number;
}

export interface BatchDetail {
  batch: BatchSummaryView & {
    priceClasses: Record<string, { tokens: TokenTotals; costUsd: number }> | null;
    rounds: number;
    resultsKey: string | null;
  };
  /** The manifest's lines the loop rejected, with why. */
  rejected: { line: number; runId: string; reason: string; message: string }[];
  items: BatchItemRow[];
  itemsTotal: number;
}
