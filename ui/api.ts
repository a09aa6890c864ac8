import * as z from "zod";
import { explainReason } from "../app/explain.js";
import { shortIds } from "../app/ids.js";
import { UNDO_MS } from "../app/review.js";
import type { AslDefinition } from "../contracts/asl.js";
import type { ExecutionSummary } from "../local/runtime.js";
import { type WaitingPlace, waitingPlaces } from "../local/waiting.js";
import { executionConsoleUrl } from "../shared/console-url.js";
import type { ValidationReport } from "../shared/draft.js";
import { buildRunResult, type RunResult } from "../shared/loop/run.js";
import type { JudgeReport } from "../shared/loop/steps/judge.js";
import { isPriced } from "../shared/model/pricing.js";
import type { TokenUsage } from "../shared/model/types.js";
import { fromPointer } from "../shared/pointer.js";
import { blobKeys } from "../shared/store/bucket-layout.js";
import {
  isPricedRun,
  matchesFilter,
  type RunFacets,
  type RunFilter,
  type RunTotals,
  TotalsFold,
} from "../shared/store/totals.js";
import {
  type AttemptRecord,
  type BlobStore,
  type RunRecord,
  RunStatusSchema,
  type RunStore,
  StopReasonSchema,
} from "../shared/store/types.js";
import type {
  AttemptView,
  Cost,
  DiffRow,
  JudgeRoundView,
  RunDetail,
  RunsFirstPage,
  RunsPage,
  SourceView,
  Waiting,
} from "./api-types.js";
import { type BatchReader, batchOfRun } from "./batches.js";
import { executionPath, highlightedMermaid, mermaidNodeId } from "./graph.js";
import { buildTimeline } from "./timeline.js";

/** What the viewer reads: the stores and execution histories of one data dir (a LocalRuntime has them). */
export interface ViewerData {
  /** A data folder's runtime: its folder, where a run waiting for a model slot is noted (local/waiting.ts). */
  readonly dataDir?: string;
  readonly runs: RunStore;
  readonly blobs: BlobStore;
  history(runId: string): Promise<ExecutionSummary | undefined>;
  /**
   * The Step Functions execution of a run, when the runs are a deployed stack's (cli/cloud's
   * CloudRuntime has it); a local data dir has none. The run page links it in the console.
   */
  executionArn?(runId: string): string | undefined;
  /**
   * The batch records the batch pages read: a stack's (CloudRuntime has them). Absent on a local
   * runtime, whose records the server reads from its data dir's table.
   */
  readonly batches?: BatchReader;
  /**
   * Whether a run under way waits for a model slot, and how deep its model queue is: a stack's
   * runtime reads it from the execution history and the queue (CloudRuntime.modelSlotWait, over
   * cli/cloud/waiting.ts). A data folder's runtime notes its waits in a file instead (`dataDir`).
   */
  modelSlotWait?(runId: string, maxAgeMs?: number): Promise<Waiting | undefined>;
  /** The console page of a run's execution, when the runtime builds it itself (else built from the ARN). */
  consoleUrl?(runId: string): string | undefined;
  /**
   * Totals over every run a filter matches, counted by the store, and the kinds and reasons of all
   * runs: a data folder's runtime has them (LocalRuntime.runTotals). Without them the list reads up
   * to CLOUD_LIST_LIMIT runs and says when it was cut.
   */
  runTotals?(filter: RunFilter): Promise<{ totals: RunTotals; facets: RunFacets }>;
  /** A page of the runs a filter matches, newest first, after a run's cursor (LocalRuntime.filteredPage). */
  filteredPage?(
    filter: RunFilter,
    limit: number,
    after?: { at: string; runId: string },
  ): Promise<RunRecord[]>;
}

/** Runs in a page of the list unless the page asks for another number, and the most it may ask. */
const DEFAULT_PAGE = 100;
const MAX_PAGE = 500;

/** The run's execution in the cloud, for the console link (nothing for a local run). */
function executionLink(data: ViewerData, runId: string) {
  const executionArn = data.executionArn?.(runId);
  const consoleUrl = data.consoleUrl?.(runId) ?? (executionArn && executionConsoleUrl(executionArn));
  return { ...(executionArn && { executionArn }), ...(consoleUrl && { consoleUrl }) };
}

/** The filters of the runs list, as the page sends them in the query string, and the page wanted. */
export const RunsQuerySchema = z.strictObject({
  status: RunStatusSchema.optional(),
  reason: StopReasonSchema.optional(),
  kind: z.string().max(64).optional(),
  q: z.string().max(200).optional(),
  /** Runs in the page. */
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(DEFAULT_PAGE),
  /** The last run of the page before (its id, as `next` gave it): the page starts after it. */
  after: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,100}$/, "not a run id")
    .optional(),
});
export type RunsQuery = z.infer<typeof RunsQuerySchema>;

/**
 * How many runs a store that cannot count or page by filter (a deployed stack's table) is read for
 * the list and its totals; a list cut there says so (`totalsCut`). A data folder's store counts and
 * pages itself, however many runs it holds.
 */
const CLOUD_LIST_LIMIT = 2000;

const runCost = (run: RunRecord): Cost => ({ usd: run.costUsd, priced: isPricedRun(run) });

/** Rule ids with error severity at a run's first check, read once per run (the report never changes). */
const firstFailures = new WeakMap<BlobStore, Map<string, string[]>>();

async function initialErrorRules(blobs: BlobStore, runId: string): Promise<string[]> {
  let cache = firstFailures.get(blobs);
  if (!cache) {
    cache = new Map();
    firstFailures.set(blobs, cache);
  }
  const known = cache.get(runId);
  if (known) return known;
  const report = await readJson<ValidationReport>(blobs, blobKeys.attemptReport(runId, 0));
  if (!report) return [];
  const rules = [...new Set(report.violations.filter((v) => v.severity === "error").map((v) => v.ruleId))];
  cache.set(runId, rules);
  return rules;
}

async function readJson<T>(blobs: BlobStore, key: string): Promise<T | undefined> {
  try {
    return JSON.parse(await blobs.get(key)) as T;
  } catch {
    return undefined;
  }
}

/** The runs, their totals and facets, however the store gives them. */
interface RunSource {
  totals(filter: RunFilter): Promise<{ totals: RunTotals; facets: RunFacets; cut: boolean }>;
  page(filter: RunFilter, limit: number, after: RunRecord | undefined): Promise<RunRecord[]>;
}

const cursorOf = (run: RunRecord, filter: RunFilter) => ({
  at: filter.status ? run.updatedAt : run.createdAt,
  runId: run.runId,
});

/**
 * A data folder's runtime counts and pages by filter itself (SQLite in one query); any other store
 * (a deployed stack's) is read up to CLOUD_LIST_LIMIT runs and added up here, the cut said.
 */
function runSource(data: ViewerData): RunSource {
  const { runTotals, filteredPage } = data;
  if (runTotals && filteredPage)
    return {
      totals: async (filter) => ({ ...(await runTotals.call(data, filter)), cut: false }),
      page: (filter, limit, after) =>
        filteredPage.call(data, filter, limit, after && cursorOf(after, filter)),
    };
  const listing = async (filter: RunFilter) =>
    data.runs.listRuns({ ...(filter.status && { status: filter.status }), limit: CLOUD_LIST_LIMIT });
  return {
    totals: async (filter) => {
      const runs = await listing(filter);
      const fold = new TotalsFold(filter);
      for (const run of runs) fold.add(run);
      return { totals: fold.totals, facets: fold.facets, cut: runs.length >= CLOUD_LIST_LIMIT };
    },
    page: async (filter, limit, after) => {
      const runs = (await listing(filter)).filter((r) => matchesFilter(r, filter));
      const start = after ? runs.findIndex((r) => r.runId === after.runId) + 1 : 0;
      return runs.slice(start, start + limit);
    },
  };
}

/** How many runs the rules chart reads a report of, newest first: a chart of the recent past, said so. */
const TOP_RULES_RUNS = 1000;

/**
 * The rules failing most often at the first check, over the newest TOP_RULES_RUNS runs the filter
 * matches (each run's report is read once and remembered), and how many runs that was.
 */
async function topRules(data: ViewerData, source: RunSource, filter: RunFilter) {
  const ruleCounts = new Map<string, number>();
  let counted = 0;
  let after: RunRecord | undefined;
  while (counted < TOP_RULES_RUNS) {
    const page = await source.page(filter, Math.min(MAX_PAGE, TOP_RULES_RUNS - counted), after);
    for (const r of page) {
      for (const rule of await initialErrorRules(data.blobs, r.runId))
        ruleCounts.set(rule, (ruleCounts.get(rule) ?? 0) + 1);
    }
    counted += page.length;
    after = page.at(-1);
    if (page.length === 0 || !after) break;
  }
  return {
    over: counted,
    rules: [...ruleCounts]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, 8)
      .map(([ruleId, runs]) => ({ ruleId, runs })),
  };
}

/**
 * One page of the runs list, newest first, filtered. The first page (no `after`) carries the totals
 * over every run the filter matches, counted by the store (not the runs of the page), the rules
 * failing most and the filters' choices; `next` names the run the following page starts after, null
 * on the last page.
 */
export async function listRunsView(
  data: ViewerData,
  query: RunsQuery,
  knownIds: readonly string[] = [],
): Promise<RunsPage> {
  const { limit, after: afterId, ...filter } = query;
  const source = runSource(data);
  const after = afterId === undefined ? undefined : await data.runs.getRun(afterId);
  if (afterId !== undefined && !after) throw new RangeError(`no run ${afterId} to page after`);
  const fetched = await source.page(filter, limit + 1, after);
  const runs = fetched.slice(0, limit);
  const next = fetched.length > limit ? (runs.at(-1)?.runId ?? null) : null;
  // As the command line prints them: unique among every run of the data dir, so `#/run/<shortId>` works.
  const short = shortIds(
    runs.map((r) => r.runId),
    [...knownIds, ...runs.map((r) => r.runId)],
  );
  // Typed here, not only by the return: a union with {} would let a field missing from it through.
  const first =
    after === undefined
      ? await (async (): Promise<RunsFirstPage> => {
          const { totals, facets, cut } = await source.totals(filter);
          const rules = await topRules(data, source, filter);
          return { totals, totalsCut: cut, topRules: rules.rules, topRulesOver: rules.over, facets };
        })()
      : {};
  const places = await waitingRuns(data, runs);
  return {
    ...first,
    next,
    runs: runs.map((r) => ({
      runId: r.runId,
      shortId: short.get(r.runId) ?? r.runId,
      draftId: r.draftId,
      kind: r.kind,
      status: r.status,
      reason: r.reason ?? null,
      /** Deterministic repairs behind the run's draft: the list says `validated · 2 repairs`. */
      repairs: r.repairs ?? 0,
      /** The batch a batch item's run belongs to, for a link to its page. */
      batchId: batchOfRun(r.runId) ?? null,
      attempts: r.attempts,
      violationsPerAttempt: r.violationsPerAttempt,
      tokens: r.tokens.total,
      cost: runCost(r),
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
      ...executionLink(data, r.runId),
      ...waitingOf(places, r),
    })),
  };
}

const isUnderWay = (run: RunRecord) => run.status === "draft" || run.status === "correcting";

/**
 * How many under-way runs of one page a stack's viewer asks Step Functions about: each is one
 * GetExecutionHistory, an account-wide bucket of 250 refilled at 5 a second, and the list is asked
 * again while the page is open. The rest of the page's rows carry no waiting badge (their own page says).
 */
export const CLOUD_WAIT_LOOKUPS = 10;

/**
 * How old a run's history read may be for the viewer to say again whether it waits (the list is
 * polled every second; the run's page reads the history itself just before, so it reuses that read).
 */
const CLOUD_WAIT_MAX_AGE_MS = 15_000;

/**
 * The runs that wait for a model slot: a data folder's runtime notes each in a file (local/waiting.ts),
 * which the viewer reads as `redraft show` does, once for a page of runs, and only when one of them
 * is under way. A stack's runtime reads each under-way run's execution history and its queue's
 * depth (`modelSlotWait`), for the first CLOUD_WAIT_LOOKUPS under-way runs of the page.
 */
async function waitingRuns(
  data: ViewerData,
  runs: readonly RunRecord[],
): Promise<Map<string, Waiting> | undefined> {
  const underWay = runs.filter(isUnderWay);
  if (underWay.length === 0) return undefined;
  if (data.dataDir !== undefined) {
    const places = await waitingPlaces(data.dataDir);
    return new Map([...places].map(([runId, place]) => [runId, localWait(place)]));
  }
  const lookup = data.modelSlotWait?.bind(data);
  if (!lookup) return undefined;
  const waits = await Promise.all(
    underWay
      .slice(0, CLOUD_WAIT_LOOKUPS)
      .map(async (run) => [run.runId, await lookup(run.runId, CLOUD_WAIT_MAX_AGE_MS)] as const),
  );
  return new Map(waits.filter((w): w is readonly [string, Waiting] => w[1] !== undefined));
}

const localWait = (place: WaitingPlace): Waiting => ({
  since: place.since,
  ageSeconds: Math.max(0, Math.round((Date.now() - Date.parse(place.since)) / 1000)),
  position: place.position,
});

/** `{ waiting }` for a run under way whose model work waits; nothing otherwise (a note an ended run left is not believed). */
function waitingOf(waits: Map<string, Waiting> | undefined, run: RunRecord): { waiting?: Waiting } {
  const waiting = isUnderWay(run) ? waits?.get(run.runId) : undefined;
  return waiting ? { waiting } : {};
}

/** The value at a JSON pointer, or undefined when the document has nothing there. */
function at(document: unknown, pointer: string): unknown {
  let node = document;
  for (const segment of fromPointer(pointer)) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

async function attemptView(
  data: ViewerData,
  runId: string,
  a: AttemptRecord,
  attempts: AttemptRecord[],
): Promise<AttemptView> {
  // The patch goes from the best draft before this attempt (the draft the correction started from).
  const base = attempts.filter((b) => b.isBest && b.attempt < a.attempt).at(-1)?.attempt ?? 0;
  const before = await readJson<unknown>(data.blobs, blobKeys.attemptDraft(runId, base));
  const ops = a.diffRef ? ((await readJson<Record<string, unknown>[]>(data.blobs, a.diffRef)) ?? []) : a.diff;
  const diff: DiffRow[] = ops.map((op) => {
    const path = String(op.path ?? "");
    const row: DiffRow = { op: String(op.op), path };
    if (op.op === "replace" || op.op === "remove" || op.op === "add") {
      const old = at(before, path);
      if (old !== undefined && op.op !== "add") row.old = old;
    }
    if ("value" in op) row.new = op.value;
    if (typeof op.from === "string") row.from = op.from;
    return row;
  });
  return {
    attempt: a.attempt,
    phase: a.phase,
    at: a.at,
    model: a.model,
    latencyMs: a.latencyMs,
    baseAttempt: base,
    inputViolations: a.inputViolations,
    outputViolations: a.outputViolations,
    resolvedCount: a.resolvedCount,
    remainingCount: a.remainingCount,
    repairs: a.repairs,
    omitted: a.omitted ?? null,
    diff,
    analysis: a.analysis,
    fixDescription: a.fixDescription,
    failure: a.failure ?? null,
    tokens: a.tokens,
    cost: { usd: a.costUsd, priced: isPriced(a.model) },
    errorCount: a.errorCount,
    score: a.score,
    isBest: a.isBest,
    rolledBack: a.rolledBack,
  };
}

/** A run never has more judge rounds than its logic budget allows; this bound only stops the scan. */
const MAX_JUDGE_ROUNDS = 50;

async function judgeRounds(data: ViewerData, run: RunRecord): Promise<JudgeRoundView[]> {
  if (!run.judgeRef) return [];
  const rounds: JudgeRoundView[] = [];
  for (let round = 1; round <= MAX_JUDGE_ROUNDS; round++) {
    const report = await readJson<JudgeReport>(data.blobs, blobKeys.judgeReport(run.runId, round));
    if (!report) break;
    const tokens =
      report.usage.input + report.usage.output + report.usage.cacheRead + report.usage.cacheWrite;
    rounds.push({
      round: report.round,
      at: report.at,
      model: report.model,
      threshold: report.threshold,
      findings: [
        ...report.blocking.map((v) => ({ ...v, blocked: true })),
        ...report.kept.map((v) => ({ ...v, blocked: false })),
      ],
      accepted: report.accepted,
      failure: report.failure ?? null,
      tokens: { ...report.usage, total: tokens },
      cost: { usd: report.costUsd, priced: isPriced(report.model) },
    });
  }
  return rounds;
}

/** The most of a source the run page is sent: past it, the text is cut and so are its highlights. */
const MAX_SOURCE_VIEW_CHARS = 200_000;

/**
 * The run's source and the last judge round's grounding, for the run page's source panel: the
 * text, and per grounded field its status, the draft's value, its quotes with offsets and, for an
 * unsupported field, the source near the closest match.
 */
async function sourceView(data: ViewerData, runId: string, lastRound: number): Promise<SourceView | null> {
  const text = await data.blobs.get(blobKeys.source(runId)).catch(() => undefined);
  if (text === undefined) return null;
  const report =
    lastRound > 0
      ? await readJson<JudgeReport>(data.blobs, blobKeys.judgeReport(runId, lastRound))
      : undefined;
  const g = report?.grounding;
  return {
    text: text.slice(0, MAX_SOURCE_VIEW_CHARS),
    chars: text.length,
    truncated: text.length > MAX_SOURCE_VIEW_CHARS,
    round: g ? lastRound : null,
    split: g?.split ?? false,
    passages: g?.passages ?? [],
    fields: g?.fields ?? [],
  };
}

const sumTokens = (items: { tokens: TokenUsage }[]) =>
  items.reduce(
    (sum, i) => sum + i.tokens.input + i.tokens.output + i.tokens.cacheRead + i.tokens.cacheWrite,
    0,
  );
const sumCost = (items: { cost: Cost }[]): Cost => ({
  usd: items.reduce((sum, i) => sum + (i.cost.priced ? i.cost.usd : 0), 0),
  priced: items.every((i) => i.cost.priced),
});

/** Everything the run page shows, or undefined for a run this data dir does not know. */
export async function runDetailView(
  data: ViewerData,
  asl: AslDefinition,
  runId: string,
): Promise<RunDetail | undefined> {
  const run = await data.runs.getRun(runId);
  if (!run) return undefined;
  const result: RunResult = await buildRunResult(runId, data);
  const initial = await readJson<ValidationReport>(data.blobs, blobKeys.attemptReport(runId, 0));
  const attempts: AttemptView[] = [];
  for (const a of result.attemptsDetail)
    attempts.push(await attemptView(data, runId, a, result.attemptsDetail));
  const judge = await judgeRounds(data, run);
  const source = await sourceView(data, runId, judge.length);
  const execution = await data.history(runId);
  // After the history: a stack's runtime says whether the run waits from that same read.
  const places = await waitingRuns(data, [run]);
  const path = execution ? executionPath(execution.history, asl.StartAt) : undefined;
  const timeline = execution ? buildTimeline(execution.history) : undefined;
  const executionArn = data.executionArn?.(runId) ?? recordedArn(run);
  return {
    version: `${run.updatedAt}|${run.status}|${attempts.length}|${execution?.history.length ?? 0}`,
    run: { ...run, cost: runCost(run), ...executionLink(data, runId) },
    /** The run's Step Functions execution and its console page: null for a local run. */
    executionArn: executionArn ?? null,
    consoleUrl: (executionArn && executionConsoleUrl(executionArn)) ?? null,
    batchId: batchOfRun(runId) ?? null,
    /** The deterministic repairs behind the final draft (no model): where, what was there, what is now. */
    repairs: result.repairs.map((r) => ({
      ruleId: r.ruleId,
      action: r.action,
      path: r.path,
      message: r.message,
      before: r.before,
      after: r.after,
    })),
    /**
     * Until when the run's approval or rejection may be taken back by its reviewer (app/review.ts
     * undoReview), while the run is where the decision put it; null otherwise.
     */
    undoUntil: undoDeadline(run),
    /** The run's reason in a sentence (app/explain.ts), for the review box. */
    reasonExplained: explainReason(run.reason) ?? null,
    initial: initial
      ? { violations: initial.violations, repairs: initial.repairs, score: initial.score }
      : null,
    finalViolations: result.finalViolations,
    attempts,
    judge,
    /** The draft's source beside the last grounding check (null for a draft without a source). */
    source,
    purposes: {
      correct: { calls: attempts.length, tokens: sumTokens(attempts), cost: sumCost(attempts) },
      judge: { calls: judge.length, tokens: sumTokens(judge), cost: sumCost(judge) },
    },
    finalDraft: result.finalDraft,
    execution: execution
      ? {
          status: execution.status,
          terminalState: execution.terminalState,
          error: execution.error ?? null,
          history: execution.history,
          timeline,
        }
      : null,
    graph: {
      /** The whole machine, the Catch edges the run did not take drawn quietly. */
      mermaid: highlightedMermaid(asl, path, timeline, { scope: "all", catches: true }),
      /**
       * The flowchart the page opens on, this run's path alone (null until the run has one), and
       * the whole machine without the Catch edges the run did not take.
       */
      views: {
        path: path ? highlightedMermaid(asl, path, timeline, { scope: "path" }) : null,
        all: highlightedMermaid(asl, path, timeline, { scope: "all", catches: false }),
      },
      states: Object.keys(asl.States).length,
      entered: path?.entered ?? {},
      nodes: Object.fromEntries(Object.keys(asl.States).map((name) => [mermaidNodeId(name), name])),
    },
    ...waitingOf(places, run),
  };
}

function undoDeadline(run: RunRecord): string | null {
  const review = run.review;
  const standing =
    (review?.decision === "approve" && run.reason === "approved") ||
    (review?.decision === "reject" && run.reason === "rejected_by_reviewer");
  if (!review || !standing || !review.from) return null;
  const until = Date.parse(review.at) + UNDO_MS;
  return until > Date.now() ? new Date(until).toISOString() : null;
}

/** An execution ARN a run record may carry (a stack's records written with one); none locally. */
function recordedArn(run: RunRecord): string | undefined {
  const arn = (run as { executionArn?: unknown }).executionArn;
  return typeof arn === "string" && arn !== "" ? arn : undefined;
}
