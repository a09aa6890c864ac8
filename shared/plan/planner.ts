import * as z from "zod";
import { DEFAULT_MAX_OUTPUT_TOKENS } from "../loop-settings.js";
import { costUsd, type PriceClass } from "../model/pricing.js";
import { RESULTS_PREFIX, RUNS_PREFIX } from "../store/bucket-layout.js";
import {
  type CorpusDraftCounts,
  type CountsFile,
  type EnvSnapshot,
  OUTCOME_PATHS,
  type OutcomePath,
} from "./counts.js";
import { PriceBook, type PricesFile, type UsedNumber } from "./prices.js";

/**
 * The capacity and cost plan of a workload: the measured per-draft counts (counts.json), weighed by
 * the workload's mix, times the published prices and against the published quotas (prices.json) and
 * the environment's own limits (infra/config.ts, snapshotted in counts.json). Pure: no I/O.
 */

/** Where a draft's modelled time goes; durations are modelled, not measured (no AWS account here). */
export const DURATION_MODEL = {
  /** A Lambda invocation's own work besides its requests (parse, check, serialize). */
  invocationMs: 30,
  /** One DynamoDB request from a Lambda, in the same Region. */
  dynamoMs: 8,
  /** One S3 request from a Lambda, in the same Region. */
  s3Ms: 25,
  /** Time to the model's first token, then output at this rate. */
  modelFirstTokenMs: 1_000,
  modelOutputTokensPerSecond: 60,
  /** λ start: one StartExecution call. */
  startMs: 60,
  /** Each Task state's scheduling overhead in Step Functions, between states. */
  stateOverheadMs: 50,
} as const;

/** What the logs of one draft weigh, modelled from what the handlers write (bytes). */
const LOG_MODEL = {
  /** Lambda's START, END and REPORT lines (JSON format, system level INFO). */
  platformPerInvocation: 700,
  /** The handler's "<step> done" line at INFO, and its embedded metrics; DEBUG writes about thrice. */
  appPerInvocation: { DEBUG: 2_400, INFO: 800, WARN: 0, ERROR: 0 },
  /** One Step Functions history event in its log, without and with execution data. */
  sfnEvent: 350,
  sfnEventWithData: 2_500,
  /** Distinct custom metrics (names × dimension sets) the stack publishes, billed per month. */
  customMetrics: 40,
} as const;

/**
 * How long model work may wait for a slot before its run ends `failed` / `deadline`: the cloud's
 * default (model work waits in a durable queue for a slot; nothing fails because other drafts
 * arrived at the same time). `--deadline-hours` plans with another.
 */
export const DEFAULT_QUEUE_DEADLINE_HOURS = 24;

/**
 * Utilisation the settings printed for a daily volume aim at: slots and quotas sized so the day's
 * mean rate uses this share of them, which keeps the wait for a slot short (Erlang C) and leaves
 * room for a busier hour than the mean.
 */
export const TARGET_UTILISATION = 0.6;

const MixSchema = z
  .record(z.enum(OUTCOME_PATHS), z.number().nonnegative())
  .refine((m) => Object.values(m).some((v) => v > 0), { message: "the mix needs one path above 0" });

/** The default mix of outcome paths: an assumption, printed with the plan; `--mix` replaces it. */
export const DEFAULT_MIX: Readonly<Record<OutcomePath, number>> = {
  validated_at_once: 0.3,
  corrected_once: 0.35,
  corrected_twice: 0.15,
  judge_loop: 0.05,
  needs_review: 0.1,
  rejected: 0.05,
};

const PlanInputSchema = z
  .object({
    /** Drafts a day (the plan says whether the bottleneck keeps up), or a backlog to drain. */
    draftsPerDay: z.number().positive().optional(),
    backlog: z.number().positive().optional(),
    mix: MixSchema.default(DEFAULT_MIX),
    /** Weights of the corpus drafts' kinds within each path (`{ mcq: 2, json: 1 }`); equal when absent. */
    kinds: z.record(z.string(), z.number().nonnegative()).optional(),
    /** Mean correction attempts of a corrected draft; measured paths are 1 and 2, others extrapolate. */
    attempts: z.number().min(1).max(10).optional(),
    /** Mean judge rounds of a judged draft; the measured judge path has 2. */
    judgeRounds: z.number().min(1).max(10).optional(),
    /** Tokens of one model call (correction or judge round). */
    inputTokens: z.number().int().nonnegative().default(3_000),
    outputTokens: z.number().int().nonnegative().default(800),
    pricing: z.enum(["on_demand", "batch"]).default("on_demand"),
    /** How drafts arrive: one upload (or event) each, or in batches (a Distributed Map); batch pricing implies batches. */
    via: z.enum(["uploads", "batch"]).default("uploads"),
    env: z.string().default("prod"),
    region: z.string().optional(),
    /** The Anthropic usage tier whose rate limits apply (provider anthropic). */
    tier: z.number().int().min(1).max(4).default(4),
    /** The `max_tokens` of one model call: what the provider reserves from the minute's quota when it starts. */
    maxTokens: z.number().int().positive().default(DEFAULT_MAX_OUTPUT_TOKENS),
    /** How long a run may wait in the model-slot queue before it ends `failed` / `deadline`. */
    deadlineHours: z.number().positive().default(DEFAULT_QUEUE_DEADLINE_HOURS),
    /**
     * Limits as they would be deployed instead of the environment's and the published defaults: how
     * the plan checks its own settings (`withSettings`). Not a command-line option.
     */
    deployed: z
      .object({
        modelSlots: z.number().int().positive(),
        batchConcurrency: z.number().int().positive(),
        lambdaConcurrency: z.number().positive(),
        tokensPerMinute: z.number().positive(),
        tokensPerDay: z.number().positive(),
      })
      .partial()
      .strict()
      .optional(),
  })
  .strict()
  .refine((i) => !(i.draftsPerDay !== undefined && i.backlog !== undefined), {
    message: "give drafts per day or a backlog, not both",
  });
export type PlanInput = z.input<typeof PlanInputSchema>;

/** The expected counts of one draft under the workload's mix. */
interface DraftCounts {
  transitions: number;
  /** Lambda invocations, λ start included. */
  invocations: number;
  /** DynamoDB read and write request units (table and indexes). */
  reads: number;
  writes: number;
  readRequests: number;
  writeRequests: number;
  s3PutClass: number;
  s3GetClass: number;
  putEvents: number;
  eventEntries: number;
  modelCalls: number;
  /** The most events one execution of the corpus records (Step Functions allows 25,000). */
  maxHistoryEvents: number;
  /** Modelled seconds of Lambda time, and of the model steps alone. */
  lambdaSeconds: number;
  modelStepSeconds: { correct: number; judge: number };
  /** Modelled seconds from start to end of one execution. */
  executionSeconds: number;
}

interface Component {
  name: string;
  /** Drafts per second this component allows; null when it bounds no rate. */
  ceilingPerSecond: number | null;
  costPerDraftUsd: number;
  /** Where the numbers come from: prices.json items and config files. */
  source: string;
  /** The quota or setting that sets the ceiling, and how to raise it. */
  raise?: string;
  note?: string;
  /** True when a number behind it is not confirmed on the provider's own page. */
  unconfirmed: boolean;
}

export interface Plan {
  env: string;
  region: string;
  pricing: PriceClass;
  via: "uploads" | "batch";
  workload: { draftsPerDay?: number; backlog?: number; requiredPerSecond?: number };
  mix: Record<OutcomePath, number>;
  assumptions: Record<string, unknown>;
  counts: DraftCounts;
  components: Component[];
  bottleneck: string;
  /**
   * The tightest ceiling that is not a setting of infra/config.ts: what binds once the environment's
   * own limits (modelConcurrency, batchConcurrency) are raised, and the hours the drafts take then.
   */
  bottleneckAfterConfig: { name: string; ceilingPerSecond: number; drainHours: number; keepsUp?: boolean };
  /** Hours to process the backlog (or one day's drafts) at the bottleneck's rate. */
  drainHours: number;
  /** For a daily volume: whether the bottleneck keeps up with the day's average rate. */
  keepsUp?: boolean;
  costPerDraftUsd: number;
  /** State transitions' share of the cost per draft (Step Functions Standard bills them). */
  transitionShare: number;
  /** The quotas and settings to raise, tightest first, up to the first one above 10× the workload. */
  raiseFirst: { component: string; raise: string; ceilingPerSecond: number }[];
  /** The same draft on an Express per-draft machine, for the comparison. */
  express: { costPerDraftUsd: number; orchestrationUsd: number; standardOrchestrationUsd: number };
  numbersUsed: UsedNumber[];
  unconfirmed: string[];
  /** The model-slot queue: how long drafts wait and take, and which fail (only past the deadline). */
  queue: QueuePlan;
  /** What one model call draws from the provider's token quotas. */
  modelQuota: ModelQuota;
  /** For a daily volume: the settings and quotas to deploy so that the volume keeps up. */
  settings?: DeploySetting[];
  /** The same workload with `settings` deployed: what binds then, and the queue. */
  withSettings?: { bottleneck: string; drainHours: number; keepsUp: boolean; queue: QueuePlan };
}

/** What one model call draws from the provider's token quotas, and why. */
interface ModelQuota {
  provider: "anthropic" | "bedrock";
  /** Quota tokens one output token draws (Bedrock's burndown rate: 5 for Claude 4-class models). */
  outputBurndown: number;
  /** The prices.json item the multiplier comes from; null when it is the standard 1:1. */
  outputBurndownSource: string | null;
  /** Quota tokens one call draws in all: input + output × burndown (Bedrock), or output alone (Anthropic OTPM). */
  quotaTokensPerCall: number;
  /** `max_tokens` of a call, reserved from the minute's quota when the call starts. */
  maxTokens: number;
  /** Quota tokens held while a call is in flight (input + max_tokens on Bedrock, max_tokens of OTPM on Anthropic). */
  reservedPerCall: number;
  /** Calls the minute's quota lets start at once: quota ÷ reservedPerCall. */
  callsInFlight: number | null;
  /** The provider's tokens-per-day quota (Bedrock), and the share of it a day of this workload uses. */
  tokensPerDay: number | null;
  tokensPerDayUsed: number | null;
}

/**
 * The model-slot queue on paper. Model work waits for one of `modelSlots` slots as long as the
 * deadline allows: a burst becomes a backlog, and no draft fails because others arrived with it.
 */
interface QueuePlan {
  modelSlots: number;
  /** Modelled seconds a draft holds a slot (its correct and judge steps). */
  slotSecondsPerDraft: number;
  /** Drafts per second the queue serves: the tightest of the model slots and the model's quotas. */
  servicePerSecond: number;
  /** Which component sets that rate. */
  limitedBy: string;
  deadlineHours: number;
  /** Drafts that fail because of load (throttling, 429s): none by design; they wait instead. */
  failedByLoad: 0;
  /** The day's drafts arriving at an even rate (a daily volume), or all at once (a backlog). */
  arrival: "steady" | "burst";
  /** Utilisation of the queue's service rate by the arrivals (above 1: it does not keep up). */
  utilisation: number | null;
  /** Hours from the first draft's arrival until the last one is done. */
  drainHours: number;
  /** The most drafts waiting for a slot at once. */
  peakBacklog: number;
  /** Hours the longest-waiting draft waits for a slot (Erlang C's 99th percentile when it keeps up). */
  peakWaitHours: number;
  /** Mean hours a draft waits for a slot. */
  meanWaitHours: number;
  /** Share of the drafts that wait past the deadline and end `failed` / `deadline` (0 when it keeps up). */
  failedByDeadlineShare: number;
}

/** One setting or quota to deploy for a daily volume, with where it is set and whether its basis is confirmed. */
interface DeploySetting {
  name: string;
  /** What to deploy or request. */
  value: number;
  /** What it is now (the environment's setting or the published default). */
  current: number;
  unit: string;
  /** Where it is set: `infra/config.ts …` or `Service Quotas: …`. */
  where: string;
  /** The numbers it comes from: prices.json items, config files, the measured counts. */
  source: string;
  /** False when a number it rests on was not read on the provider's own page. */
  confirmed: boolean;
  /** Whether it must change from `current`. */
  change: boolean;
}

const SECONDS_PER_DAY = 86_400;

/** The corpus drafts of a path weighted by kind (equal weights when none of them has one). */
function weighted(corpus: readonly CorpusDraftCounts[], path: OutcomePath, kinds?: Record<string, number>) {
  const of = corpus.filter((d) => d.path === path);
  const w = of.map((d) => kinds?.[d.kind] ?? 0);
  const total = w.reduce((s, x) => s + x, 0);
  return of.map((d, i) => ({ d, w: total > 0 ? (w[i] as number) / total : 1 / of.length }));
}

/** A draft's counts as plain numbers, for weighing. */
function vector(d: CorpusDraftCounts): Record<string, number> {
  const per = (fn: string) => d.invocations.filter((i) => i.fn === fn);
  const sum = (
    list: { dynamo: number; s3: number; modelCalls: number }[],
    k: "dynamo" | "s3" | "modelCalls",
  ) => list.reduce((s, i) => s + i[k], 0);
  const requests = Object.entries(d.dynamo.requests);
  const v: Record<string, number> = {
    transitions: d.transitions,
    invocations: d.invocations.length,
    reads: d.dynamo.readUnits,
    writes: d.dynamo.writeUnits,
    readRequests: requests.filter(([k]) => /(Get|Query|Scan)/.test(k)).reduce((s, [, n]) => s + n, 0),
    writeRequests: requests.filter(([k]) => /(Put|Update|Delete)Item/.test(k)).reduce((s, [, n]) => s + n, 0),
    s3PutClass: d.s3.putClass,
    s3GetClass: d.s3.getClass,
    putEvents: d.events.putEvents,
    eventEntries: d.events.entries,
    modelCalls: sum(d.invocations, "modelCalls"),
    lambdaDynamo: sum(d.invocations, "dynamo"),
    lambdaS3: sum(d.invocations, "s3"),
    correctInvocations: per("correct").length,
    correctDynamo: sum(per("correct"), "dynamo"),
    correctS3: sum(per("correct"), "s3"),
    correctModel: sum(per("correct"), "modelCalls"),
    judgeInvocations: per("judge").length,
    judgeDynamo: sum(per("judge"), "dynamo"),
    judgeS3: sum(per("judge"), "s3"),
    judgeModel: sum(per("judge"), "modelCalls"),
    taskStates: Object.entries(d.statesEntered)
      .filter(([s]) => !s.endsWith("?"))
      .reduce((s, [, n]) => s + n, 0),
    runsPut: d.s3.prefixes[RUNS_PREFIX]?.putClass ?? 0,
    runsGet: d.s3.prefixes[RUNS_PREFIX]?.getClass ?? 0,
    resultsPut: d.s3.prefixes[RESULTS_PREFIX]?.putClass ?? 0,
  };
  for (const [k, n] of Object.entries(d.dynamo.partitionWrites)) v[`partition ${k}`] = n;
  return v;
}

const add = (a: Record<string, number>, b: Record<string, number>, f = 1) => {
  for (const [k, n] of Object.entries(b)) a[k] = (a[k] ?? 0) + n * f;
  return a;
};
const scaled = (base: Record<string, number>, path: Record<string, number>, f: number) => {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(base), ...Object.keys(path)]))
    out[k] = (base[k] ?? 0) + f * ((path[k] ?? 0) - (base[k] ?? 0));
  return out;
};

/** The expected per-draft vector of the workload: each path's kind-weighted mean, scaled, by the mix. */
function expected(counts: CountsFile, input: z.output<typeof PlanInputSchema>): Record<string, number> {
  const perPath: Record<string, Record<string, number>> = {};
  for (const path of OUTCOME_PATHS) {
    const v: Record<string, number> = {};
    for (const { d, w } of weighted(counts.corpus, path, input.kinds)) add(v, vector(d), w);
    perPath[path] = v;
  }
  const once = perPath.corrected_once as Record<string, number>;
  const twice = perPath.corrected_twice as Record<string, number>;
  const atOnce = perPath.validated_at_once as Record<string, number>;
  // A corrected draft's k-th attempt costs what the second cost over the first (linear in attempts).
  if (input.attempts !== undefined) {
    const k = input.attempts;
    perPath.corrected_once = scaled(once, twice, k - 1);
    perPath.corrected_twice = scaled(once, twice, k - 1);
  }
  // The measured judge path has two rounds; R rounds scale its cost over a draft validated at once.
  if (input.judgeRounds !== undefined)
    perPath.judge_loop = scaled(atOnce, perPath.judge_loop as Record<string, number>, input.judgeRounds / 2);
  const total = Object.values(input.mix).reduce((s, x) => s + x, 0);
  const out: Record<string, number> = {};
  for (const path of OUTCOME_PATHS)
    add(out, perPath[path] as Record<string, number>, (input.mix[path] ?? 0) / total);
  return out;
}

/** Builds the plan. Throws a plain Error naming the problem when the environment is unknown. */
export function plan(rawInput: PlanInput, counts: CountsFile, prices: PricesFile): Plan {
  const input = PlanInputSchema.parse(rawInput);
  const snapshot: EnvSnapshot | undefined = counts.environments[input.env];
  if (!snapshot)
    throw new Error(
      `unknown environment "${input.env}": one of ${Object.keys(counts.environments).join(", ")}`,
    );
  const deployed = input.deployed ?? {};
  const env: EnvSnapshot = {
    ...snapshot,
    ...(deployed.modelSlots !== undefined && { modelConcurrency: deployed.modelSlots }),
    ...(deployed.batchConcurrency !== undefined && { batchConcurrency: deployed.batchConcurrency }),
  };
  const region = input.region ?? "us-east-1";
  const book = new PriceBook(prices, region);
  /** A published quota, or the value `deployed` puts in its place (the published one is still listed). */
  const quota = (id: string, instead: number | undefined) => {
    const published = book.get(id);
    return instead ?? published;
  };
  const v = expected(counts, input);
  const n = (k: string) => v[k] ?? 0;

  const modelCallSeconds =
    (DURATION_MODEL.modelFirstTokenMs +
      (input.outputTokens / DURATION_MODEL.modelOutputTokensPerSecond) * 1000) /
    1000;
  const requestSeconds = (dynamo: number, s3: number) =>
    (dynamo * DURATION_MODEL.dynamoMs + s3 * DURATION_MODEL.s3Ms) / 1000;
  // With batch pricing a model step reads its answer from the round's results: no call is held open.
  const heldCallSeconds = input.pricing === "batch" ? 0 : modelCallSeconds;
  const lambdaInvocations = n("invocations") + 1; // λ start
  const lambdaSeconds =
    (n("invocations") * DURATION_MODEL.invocationMs + DURATION_MODEL.startMs) / 1000 +
    requestSeconds(n("lambdaDynamo"), n("lambdaS3")) +
    n("modelCalls") * heldCallSeconds;
  const stepSeconds = (fn: "correct" | "judge") =>
    (n(`${fn}Invocations`) * DURATION_MODEL.invocationMs) / 1000 +
    requestSeconds(n(`${fn}Dynamo`), n(`${fn}S3`)) +
    n(`${fn}Model`) * heldCallSeconds;
  const executionSeconds = lambdaSeconds + (n("taskStates") * DURATION_MODEL.stateOverheadMs) / 1000;
  const maxHistoryEvents = Math.max(...counts.corpus.map((d) => d.awsHistoryEvents));

  const draftCounts: DraftCounts = {
    transitions: n("transitions"),
    invocations: lambdaInvocations,
    reads: n("reads"),
    writes: n("writes"),
    readRequests: n("readRequests"),
    writeRequests: n("writeRequests"),
    s3PutClass: n("s3PutClass"),
    s3GetClass: n("s3GetClass"),
    putEvents: n("putEvents"),
    eventEntries: n("eventEntries"),
    modelCalls: n("modelCalls"),
    maxHistoryEvents,
    lambdaSeconds,
    modelStepSeconds: { correct: stepSeconds("correct"), judge: stepSeconds("judge") },
    executionSeconds,
  };

  const perDay = input.draftsPerDay;
  const monthlyDrafts = (perDay ?? input.backlog ?? 1) * (perDay ? 30 : 1);
  const components: Component[] = [];
  const used = (...ids: string[]) => ids.some((id) => book.used.get(id)?.status === "unconfirmed");
  const src = (...ids: string[]) => ids.map((id) => book.used.get(id)?.source ?? id).join(" ; ");
  const component = (c: Omit<Component, "unconfirmed" | "source">, ids: string[], extra = "") =>
    components.push({
      ...c,
      source: [src(...ids), extra].filter(Boolean).join(" ; "),
      unconfirmed: used(...ids),
    });

  // Step Functions Standard.
  const transitionUsd = book.get("sfn.standard.transitionUsd");
  const startRate = book.get("sfn.standard.startExecutionPerSecond");
  component(
    {
      name: "Step Functions StartExecution",
      ceilingPerSecond: startRate,
      costPerDraftUsd: 0,
      raise: "Service Quotas: Step Functions StartExecution throttle (refill rate)",
    },
    ["sfn.standard.startExecutionPerSecond"],
  );
  const transitionRate = book.get("sfn.standard.stateTransitionsPerSecond");
  component(
    {
      name: "Step Functions state transitions",
      ceilingPerSecond: transitionRate / draftCounts.transitions,
      costPerDraftUsd: draftCounts.transitions * transitionUsd,
      raise: "Service Quotas: Step Functions StateTransition throttle (refill rate)",
    },
    ["sfn.standard.stateTransitionsPerSecond", "sfn.standard.transitionUsd"],
  );
  const historyMax = book.get("sfn.standard.historyEvents");
  component(
    {
      name: "Step Functions execution history",
      ceilingPerSecond: null,
      costPerDraftUsd: 0,
      note: `the longest corpus execution records ${maxHistoryEvents} of ${historyMax} events; a run is bounded by maxAttempts (${env.maxAttempts}) and maxLogicAttempts (${env.maxLogicAttempts})`,
    },
    ["sfn.standard.historyEvents"],
  );
  const openExecutions = book.get("sfn.standard.openExecutions");
  component(
    {
      name: "Step Functions open executions",
      ceilingPerSecond: openExecutions / executionSeconds,
      costPerDraftUsd: 0,
      raise: "Service Quotas: Step Functions open executions",
      note: "executions open at once ÷ modelled seconds per execution (Little's law)",
    },
    ["sfn.standard.openExecutions"],
  );
  const mapChildren = Math.min(env.batchConcurrency, book.get("sfn.distributedMap.childConcurrency"));
  component(
    {
      name: "Distributed Map child concurrency (redraft batch)",
      ceilingPerSecond: mapChildren / executionSeconds,
      costPerDraftUsd: 0,
      raise: `infra/config.ts batchConcurrency (${env.batchConcurrency} in ${env.envName}; at most 10,000 per Map), or run several batches`,
      note: "only for drafts submitted as a batch; several batches run side by side",
    },
    ["sfn.distributedMap.childConcurrency"],
    "infra/config.ts",
  );

  // Lambda.
  const gbSecondUsd = book.get(`lambda.${env.lambdaArchitecture}.gbSecondUsd`);
  const requestUsd = book.get("lambda.requestUsd");
  const accountConcurrency = quota("lambda.concurrentExecutions", deployed.lambdaConcurrency);
  const gb = env.lambdaMemoryMb / 1024;
  component(
    {
      name: "Lambda account concurrency",
      ceilingPerSecond: accountConcurrency / lambdaSeconds,
      costPerDraftUsd: lambdaInvocations * requestUsd + lambdaSeconds * gb * gbSecondUsd,
      raise: "Service Quotas: Lambda concurrent executions",
      note: `${lambdaInvocations.toFixed(2)} invocations and ${lambdaSeconds.toFixed(1)} modelled s at ${env.lambdaMemoryMb} MB ${env.lambdaArchitecture}`,
    },
    ["lambda.concurrentExecutions", "lambda.requestUsd", `lambda.${env.lambdaArchitecture}.gbSecondUsd`],
  );
  // The model slots: Correct and Judge take their model work from one queue, at most
  // modelConcurrency calls at once; beyond it the work waits for a slot (it does not fail).
  const slotSecondsPerDraft = draftCounts.modelStepSeconds.correct + draftCounts.modelStepSeconds.judge;
  const modelSlots = env.modelConcurrency;
  const queueLimits = new Set<string>();
  if (slotSecondsPerDraft > 0) {
    queueLimits.add(MODEL_SLOTS);
    components.push({
      name: MODEL_SLOTS,
      ceilingPerSecond: modelSlots / slotSecondsPerDraft,
      costPerDraftUsd: 0,
      source:
        "infra/config.ts deployment.modelConcurrency: the model work queue's consumers (correct and judge)",
      raise: `infra/config.ts ${env.envName}.deployment.modelConcurrency (${modelSlots})`,
      note: `${slotSecondsPerDraft.toFixed(1)} modelled s of correct and judge per draft hold a slot; beyond ${modelSlots} at once, model work waits in the queue`,
      unconfirmed: false,
    });
  }

  // DynamoDB on demand.
  const wruUsd = book.get("dynamodb.writeRequestUnitUsd");
  const rruUsd = book.get("dynamodb.readRequestUnitUsd");
  const tableWrites = book.get("dynamodb.tableWritesPerSecond");
  component(
    {
      name: "DynamoDB table writes",
      ceilingPerSecond: tableWrites / draftCounts.writes,
      costPerDraftUsd: draftCounts.writes * wruUsd + draftCounts.reads * rruUsd,
      raise: "Service Quotas: DynamoDB table-level write throughput (on-demand)",
      note: `${draftCounts.writes.toFixed(1)} WRU and ${draftCounts.reads.toFixed(2)} RRU per draft, index writes included`,
    },
    ["dynamodb.tableWritesPerSecond", "dynamodb.writeRequestUnitUsd", "dynamodb.readRequestUnitUsd"],
  );
  const partitionWrites = book.get("dynamodb.partitionWritesPerSecond");
  // Partitions shared by every draft: a status partition of byStatus, a byCreated shard (1 of 8).
  const hot = Object.keys(v)
    .filter((k) => k.startsWith("partition ") && /STATUS#|RUNS#<shard>/.test(k))
    .map((k) => ({
      key: k.slice("partition ".length),
      perDraft: (v[k] ?? 0) / (k.includes("RUNS#<shard>") ? 8 : 1),
    }))
    .sort((a, b) => b.perDraft - a.perDraft);
  const hottest = hot[0];
  if (hottest)
    component(
      {
        name: `DynamoDB hottest partition (${hottest.key})`,
        ceilingPerSecond: partitionWrites / hottest.perDraft,
        costPerDraftUsd: 0,
        raise:
          "the table design (contracts/table.ts): shard the byStatus partition key as byCreated is (RUNS#0..7); no quota raises a partition's 1,000 WRU/s",
        note: `${hottest.perDraft.toFixed(2)} index WRU per draft land on this one partition; its sort key grows with time, so splitting for heat does not spread it`,
      },
      ["dynamodb.partitionWritesPerSecond"],
    );

  // S3.
  const putUsd = book.get("s3.putRequestUsd");
  const getUsd = book.get("s3.getRequestUsd");
  const prefixPut = book.get("s3.prefixPutPerSecond");
  const prefixGet = book.get("s3.prefixGetPerSecond");
  component(
    {
      name: "S3 requests on the runs/ prefix",
      ceilingPerSecond: Math.min(
        prefixPut / Math.max(n("runsPut"), 1e-9),
        prefixGet / Math.max(n("runsGet"), 1e-9),
      ),
      costPerDraftUsd: draftCounts.s3PutClass * putUsd + draftCounts.s3GetClass * getUsd,
      raise:
        "nothing to request: S3 partitions runs/<runId>/ by itself as load grows (30–60 min); ramp up, or ask AWS Support to pre-partition",
      note: `${n("runsPut").toFixed(1)} PUT-class and ${n("runsGet").toFixed(1)} GET-class requests per draft under runs/, one partition before S3 splits it`,
    },
    ["s3.prefixPutPerSecond", "s3.prefixGetPerSecond", "s3.putRequestUsd", "s3.getRequestUsd"],
  );

  // EventBridge.
  const eventUsd = book.get("eventbridge.customEventUsd");
  const putEventsRate = book.get("eventbridge.putEventsPerSecond");
  const invocationsRate = book.get("eventbridge.invocationsPerSecond");
  component(
    {
      name: "EventBridge PutEvents",
      ceilingPerSecond: putEventsRate / Math.max(draftCounts.putEvents, 1e-9),
      costPerDraftUsd: draftCounts.eventEntries * eventUsd,
      raise: "Service Quotas: EventBridge PutEvents throttle limit",
      note: "the Announce states' outcome events; the upload's S3 event is an AWS service event (free)",
    },
    ["eventbridge.putEventsPerSecond", "eventbridge.customEventUsd"],
  );
  component(
    {
      name: "EventBridge rule invocations",
      ceilingPerSecond: invocationsRate / (1 + draftCounts.putEvents),
      costPerDraftUsd: 0,
      raise: "Service Quotas: EventBridge invocations throttle limit",
      note: "λ start for the upload, λ outcome for each outcome event",
    },
    ["eventbridge.invocationsPerSecond"],
  );

  // CloudWatch: modelled log volume, and the month's custom metrics spread over its drafts.
  const logsUsd = book.get("cloudwatch.logsIngestUsdPerGb");
  const vendedUsd = book.get("cloudwatch.vendedLogsUsdPerGb");
  const metricUsd = book.get("cloudwatch.customMetricUsdPerMonth");
  const lambdaLogBytes =
    lambdaInvocations * (LOG_MODEL.platformPerInvocation + LOG_MODEL.appPerInvocation[env.logLevel]);
  const meanHistory = counts.corpus.reduce((s, d) => s + d.awsHistoryEvents, 0) / counts.corpus.length;
  const sfnLogBytes =
    env.stateMachineLogLevel === "ALL"
      ? meanHistory * (env.includeExecutionData ? LOG_MODEL.sfnEventWithData : LOG_MODEL.sfnEvent)
      : 0;
  component(
    {
      name: "CloudWatch logs and metrics",
      ceilingPerSecond: null,
      costPerDraftUsd:
        (lambdaLogBytes / 1e9) * logsUsd +
        (sfnLogBytes / 1e9) * vendedUsd +
        (LOG_MODEL.customMetrics * metricUsd) / monthlyDrafts,
      note: `modelled: ${(lambdaLogBytes / 1024).toFixed(1)} KiB of Lambda logs at ${env.logLevel}, ${(sfnLogBytes / 1024).toFixed(1)} KiB of state machine logs at ${env.stateMachineLogLevel}${env.includeExecutionData ? " with execution data" : ""}, ${LOG_MODEL.customMetrics} custom metrics a month`,
    },
    ["cloudwatch.logsIngestUsdPerGb", "cloudwatch.vendedLogsUsdPerGb", "cloudwatch.customMetricUsdPerMonth"],
  );

  // The model.
  const usage = {
    input: input.inputTokens,
    output: input.outputTokens,
    cacheRead: 0,
    cacheWrite: 0,
    total: input.inputTokens + input.outputTokens,
  };
  const perCall = costUsd(env.modelId, usage, input.pricing);
  const calls = draftCounts.modelCalls;
  const heldPerDraft = calls * heldCallSeconds;
  // Batch pricing: each model call of a draft waits for its round, one after the other.
  const rounds = Math.max(
    0,
    ...counts.corpus
      .filter((d) => (input.mix[d.path] ?? 0) > 0)
      .map((d) => d.invocations.reduce((s, i) => s + i.modelCalls, 0)),
  );
  const roundHours = (rounds * env.batchRoundEstimateMinutes) / 60;
  const burndown = outputBurndown(env, book);
  const modelQuota: ModelQuota = {
    provider: env.modelProvider,
    outputBurndown: burndown.multiplier,
    outputBurndownSource: burndown.id,
    quotaTokensPerCall:
      env.modelProvider === "bedrock"
        ? input.inputTokens + burndown.multiplier * input.outputTokens
        : input.outputTokens,
    maxTokens: input.maxTokens,
    reservedPerCall: 0,
    callsInFlight: null,
    tokensPerDay: null,
    tokensPerDayUsed: null,
  };
  /** A ceiling set by the model's quotas: the queue's service rate is the tightest of these and the slots. */
  const modelComponent = (c: Omit<Component, "unconfirmed" | "source">, ids: string[], extra = "") => {
    if (c.ceilingPerSecond !== null) queueLimits.add(c.name);
    component(c, ids, extra);
  };
  const burnIds = burndown.id ? [burndown.id] : [];
  const burnNote =
    burndown.multiplier === 1
      ? ""
      : `; each output token draws ${burndown.multiplier} quota tokens (${burndown.id}), so a call draws ${modelQuota.quotaTokensPerCall.toLocaleString("en-US")}`;
  if (input.pricing === "batch") {
    const discount = book.get(
      env.modelProvider === "anthropic" ? "anthropic.batchDiscount" : "bedrock.batchDiscount",
    );
    const ids =
      env.modelProvider === "anthropic"
        ? ["anthropic.batchDiscount", "anthropic.batchMaxRequests"]
        : ["bedrock.batchDiscount"];
    if (env.modelProvider === "anthropic") book.get("anthropic.batchMaxRequests");
    component(
      {
        name: `Model (${env.modelId}, ${env.modelProvider} batch)`,
        ceilingPerSecond: null,
        costPerDraftUsd: calls * perCall,
        note: `${calls.toFixed(2)} calls per draft at ${discount * 100} % of the on-demand price, in up to ${rounds} rounds of ${env.batchRoundEstimateMinutes} min each (infra/config.ts batchPricing.roundEstimateMinutes; a round may take up to 24 h): the drain time is at least ${roundHours.toFixed(1)} h`,
      },
      ids,
      "shared/model/pricing.ts",
    );
  } else if (env.modelProvider === "anthropic") {
    const t = `anthropic.tier${input.tier}`;
    const rpm = book.get(`${t}.rpm`);
    const itpm = book.get(`${t}.itpm`);
    const otpm = quota(`${t}.otpm`, deployed.tokensPerMinute);
    modelComponent(
      {
        name: `Model (${env.modelId}, Anthropic tier ${input.tier})`,
        ceilingPerSecond:
          Math.min(rpm / calls, itpm / (calls * input.inputTokens), otpm / (calls * input.outputTokens)) / 60,
        costPerDraftUsd: calls * perCall,
        raise: `Anthropic usage tier (now ${input.tier}), then a custom limit through Anthropic sales`,
        note: `${calls.toFixed(2)} calls per draft of ${input.inputTokens} input and ${input.outputTokens} output tokens`,
      },
      [`${t}.rpm`, `${t}.itpm`, `${t}.otpm`],
      "shared/model/pricing.ts",
    );
    // OTPM is counted from max_tokens when a call starts and settled when it ends.
    const reserved = book.get("anthropic.maxTokensReservedAtStart") * input.maxTokens;
    modelQuota.reservedPerCall = reserved;
    modelQuota.callsInFlight = otpm / reserved;
    if (heldPerDraft > 0)
      modelComponent(
        {
          name: "Model max_tokens reservation (calls in flight)",
          ceilingPerSecond: modelQuota.callsInFlight / heldPerDraft,
          costPerDraftUsd: 0,
          raise: `Anthropic usage tier (now ${input.tier}), or a lower max_tokens per call (now ${input.maxTokens})`,
          note: `each call starts by counting max_tokens (${input.maxTokens}) against ${otpm.toLocaleString("en-US")} output tokens a minute: ${Math.floor(modelQuota.callsInFlight).toLocaleString("en-US")} calls in flight at most, each ${heldCallSeconds.toFixed(1)} modelled s`,
        },
        [`${t}.otpm`, "anthropic.maxTokensReservedAtStart"],
      );
  } else {
    // Requests per minute are no longer enforced on bedrock-runtime (prices.json bedrock.crossRegionRpm):
    // the tokens are the limit.
    const tpm = quota("bedrock.crossRegionTpm", deployed.tokensPerMinute);
    const perCallQuota = modelQuota.quotaTokensPerCall;
    modelComponent(
      {
        name: `Model (${env.modelId}, Bedrock cross-Region)`,
        ceilingPerSecond: tpm / (calls * perCallQuota) / 60,
        costPerDraftUsd: calls * perCall,
        raise: "Service Quotas: Bedrock cross-Region InvokeModel tokens per minute for the model",
        note: `${calls.toFixed(2)} calls per draft of ${input.inputTokens} input and ${input.outputTokens} output tokens${burnNote}`,
      },
      ["bedrock.crossRegionTpm", ...burnIds],
      "shared/model/pricing.ts",
    );
    const tpd = deployed.tokensPerDay ?? tpm * book.get("bedrock.tokensPerDayPerTpm");
    modelQuota.tokensPerDay = tpd;
    modelQuota.tokensPerDayUsed = perDay !== undefined ? (perDay * calls * perCallQuota) / tpd : null;
    modelComponent(
      {
        name: `Model tokens per day (${env.modelId}, Bedrock)`,
        ceilingPerSecond: tpd / (calls * perCallQuota) / SECONDS_PER_DAY,
        costPerDraftUsd: 0,
        raise: "Service Quotas: Bedrock model invocation max tokens per day for the model",
        note: `the default is the minute's quota × 1,440 (${tpd.toLocaleString("en-US")}); new accounts get less${burnNote}`,
      },
      ["bedrock.crossRegionTpm", "bedrock.tokensPerDayPerTpm", ...burnIds],
    );
    // Bedrock deducts input + max_tokens when a call starts and settles it when the call ends.
    const reserved = input.inputTokens + book.get("bedrock.maxTokensReservedAtStart") * input.maxTokens;
    modelQuota.reservedPerCall = reserved;
    modelQuota.callsInFlight = tpm / reserved;
    if (heldPerDraft > 0)
      modelComponent(
        {
          name: "Model max_tokens reservation (calls in flight)",
          ceilingPerSecond: modelQuota.callsInFlight / heldPerDraft,
          costPerDraftUsd: 0,
          raise: `Service Quotas: Bedrock cross-Region InvokeModel tokens per minute for the model, or a lower max_tokens per call (now ${input.maxTokens})`,
          note: `each call starts by reserving ${reserved.toLocaleString("en-US")} tokens (input + max_tokens) of ${tpm.toLocaleString("en-US")} a minute: ${Math.floor(modelQuota.callsInFlight).toLocaleString("en-US")} calls in flight at most, each ${heldCallSeconds.toFixed(1)} modelled s`,
        },
        ["bedrock.crossRegionTpm", "bedrock.maxTokensReservedAtStart"],
      );
  }

  // The Map bounds only drafts submitted in batches.
  const viaBatch = input.via === "batch" || input.pricing === "batch";
  const rated = components.filter(
    (c): c is Component & { ceilingPerSecond: number } =>
      c.ceilingPerSecond !== null && (viaBatch || !c.name.startsWith("Distributed Map")),
  );
  rated.sort((a, b) => a.ceilingPerSecond - b.ceilingPerSecond);
  const bottleneck = rated[0] as Component & { ceilingPerSecond: number };
  const fromConfig = (c: Component) => c.raise?.startsWith("infra/config.ts") === true;
  const afterConfig = (rated.find((c) => !fromConfig(c)) ?? bottleneck) as Component & {
    ceilingPerSecond: number;
  };
  const drafts = input.backlog ?? perDay ?? 0;
  const requiredPerSecond = perDay !== undefined ? perDay / SECONDS_PER_DAY : undefined;
  const costPerDraftUsd = components.reduce((s, c) => s + c.costPerDraftUsd, 0);
  const standardOrchestrationUsd = draftCounts.transitions * transitionUsd;
  // Express bills each execution and its duration in 64 MB steps (the per-draft state is small).
  const expressOrchestrationUsd =
    book.get("sfn.express.requestUsd") +
    (Math.ceil(executionSeconds * 10) / 10) * (64 / 1024) * book.get("sfn.express.gbSecondUsd");
  const target = (requiredPerSecond ?? 0) * 10;
  const raiseFirst: Plan["raiseFirst"] = [];
  for (const c of rated) {
    if (!c.raise) continue;
    raiseFirst.push({ component: c.name, raise: c.raise, ceilingPerSecond: c.ceilingPerSecond });
    if (c.ceilingPerSecond > target && raiseFirst.length >= 1) break;
  }
  const queue = queuePlan({
    modelSlots,
    slotSecondsPerDraft,
    service: bottleneck,
    deadlineHours: input.deadlineHours,
    ...(perDay !== undefined ? { perDay } : { backlog: drafts }),
    executionSeconds,
  });
  const settings =
    perDay !== undefined && input.deployed === undefined
      ? deploySettings({
          perDay,
          env,
          book,
          draftCounts,
          slotSecondsPerDraft,
          modelQuota,
          burnIds,
          tier: input.tier,
          batch: input.pricing === "batch",
        })
      : undefined;
  const numbersUsed = [...book.used.values()];
  return {
    env: env.envName,
    region,
    pricing: input.pricing,
    via: viaBatch ? "batch" : "uploads",
    workload: {
      ...(perDay !== undefined && { draftsPerDay: perDay }),
      ...(input.backlog !== undefined && { backlog: input.backlog }),
      ...(requiredPerSecond !== undefined && { requiredPerSecond }),
    },
    mix: Object.fromEntries(OUTCOME_PATHS.map((p) => [p, input.mix[p] ?? 0])) as Record<OutcomePath, number>,
    assumptions: {
      inputTokens: input.inputTokens,
      outputTokens: input.outputTokens,
      ...(input.attempts !== undefined && { attempts: input.attempts }),
      ...(input.judgeRounds !== undefined && { judgeRounds: input.judgeRounds }),
      ...(input.kinds && { kinds: input.kinds }),
      ...(env.modelProvider === "anthropic" && { tier: input.tier }),
      durations: DURATION_MODEL,
    },
    counts: draftCounts,
    components,
    bottleneck: bottleneck.name,
    bottleneckAfterConfig: {
      name: afterConfig.name,
      ceilingPerSecond: afterConfig.ceilingPerSecond,
      drainHours: Math.max(
        drafts / afterConfig.ceilingPerSecond / 3600,
        input.pricing === "batch" ? roundHours : 0,
      ),
      ...(requiredPerSecond !== undefined && { keepsUp: afterConfig.ceilingPerSecond >= requiredPerSecond }),
    },
    drainHours: Math.max(
      drafts / bottleneck.ceilingPerSecond / 3600,
      input.pricing === "batch" ? roundHours : 0,
    ),
    ...(requiredPerSecond !== undefined && { keepsUp: bottleneck.ceilingPerSecond >= requiredPerSecond }),
    costPerDraftUsd,
    transitionShare: costPerDraftUsd > 0 ? standardOrchestrationUsd / costPerDraftUsd : 0,
    raiseFirst,
    express: {
      costPerDraftUsd: costPerDraftUsd - standardOrchestrationUsd + expressOrchestrationUsd,
      orchestrationUsd: expressOrchestrationUsd,
      standardOrchestrationUsd,
    },
    numbersUsed,
    unconfirmed: numbersUsed.filter((u) => u.status === "unconfirmed").map((u) => u.id),
    queue,
    modelQuota,
    ...(settings && { settings, withSettings: withSettings(rawInput, settings, counts, prices) }),
  };
}

/** The plan again with its own settings deployed: whether they keep up, and the queue then. */
function withSettings(
  rawInput: PlanInput,
  settings: DeploySetting[],
  counts: CountsFile,
  prices: PricesFile,
): NonNullable<Plan["withSettings"]> {
  const value = (name: string) => settings.find((s) => s.name === name)?.value;
  const deployed = Object.fromEntries(
    Object.entries({
      modelSlots: value("model slots"),
      batchConcurrency: value("batch concurrency"),
      lambdaConcurrency: value("Lambda concurrent executions"),
      tokensPerMinute:
        value("Bedrock tokens per minute (cross-Region)") ?? value("Anthropic output tokens per minute"),
      tokensPerDay: value("Bedrock tokens per day"),
    }).filter(([, v]) => v !== undefined && v > 0),
  );
  const after = plan({ ...rawInput, deployed }, counts, prices);
  return {
    bottleneck: after.bottleneck,
    drainHours: after.drainHours,
    keepsUp: after.keepsUp ?? true,
    queue: after.queue,
  };
}

/** The component of the model slots, by name (the queue's own limit). */
const MODEL_SLOTS = "Model slots (queue consumers)";

/**
 * The output-token burndown multiplier of the configured model: Bedrock draws 5 quota tokens per
 * output token of an Anthropic Claude 4-class model (a later generation is taken to be the same,
 * marked unconfirmed); other Bedrock models and the Anthropic API (whose output tokens have their
 * own per-minute quota) count 1:1.
 */
function outputBurndown(env: EnvSnapshot, book: PriceBook): { multiplier: number; id: string | null } {
  if (env.modelProvider !== "bedrock") return { multiplier: 1, id: null };
  const generation = Number(
    /claude-(?:opus|sonnet|haiku)-(\d+)/.exec(env.modelId)?.[1] ??
      /claude-(\d+)-/.exec(env.modelId)?.[1] ??
      Number.NaN,
  );
  if (!(generation >= 4)) return { multiplier: 1, id: null };
  const id = generation === 4 ? "bedrock.claude4.outputBurndown" : "bedrock.laterClaude.outputBurndown";
  return { multiplier: book.get(id), id };
}

/**
 * Erlang C: the probability that an arrival waits for one of `servers` slots when `load` of them
 * are busy on average (load = arrival rate × service time). Erlang B by its stable recursion first.
 */
export function erlangC(servers: number, load: number): number {
  if (load >= servers) return 1;
  let b = 1;
  for (let k = 1; k <= servers; k++) b = (load * b) / (k + load * b);
  const rho = load / servers;
  return b / (1 - rho * (1 - b));
}

/**
 * The model-slot queue for a workload. A daily volume arrives at an even rate over the day: when the
 * queue's service rate keeps up, the wait is Erlang C's (Poisson arrivals, `modelSlots` servers);
 * when it does not, the backlog grows all day (a fluid model) and the drafts whose wait would pass
 * the deadline end `failed` / `deadline` — first-in first-out, so once the queue is a deadline
 * long, the share of the later arrivals the queue cannot serve. A backlog arrives all at once.
 */
function queuePlan(q: {
  modelSlots: number;
  slotSecondsPerDraft: number;
  service: Component & { ceilingPerSecond: number };
  deadlineHours: number;
  perDay?: number;
  backlog?: number;
  executionSeconds: number;
}): QueuePlan {
  const mu = q.service.ceilingPerSecond;
  const deadline = q.deadlineHours * 3600;
  const base = {
    modelSlots: q.modelSlots,
    slotSecondsPerDraft: q.slotSecondsPerDraft,
    servicePerSecond: mu,
    limitedBy: q.service.name,
    deadlineHours: q.deadlineHours,
    failedByLoad: 0 as const,
  };
  const h = (seconds: number) => seconds / 3600;
  if (q.perDay === undefined) {
    const drafts = q.backlog ?? 0;
    const all = drafts / mu;
    const served = Math.min(drafts, mu * deadline);
    return {
      ...base,
      arrival: "burst",
      utilisation: null,
      drainHours: h(Math.min(all, deadline) + q.executionSeconds),
      peakBacklog: drafts,
      peakWaitHours: h(Math.min(all, deadline)),
      meanWaitHours: h(Math.min(all, deadline) / 2),
      failedByDeadlineShare: drafts > 0 ? 1 - served / drafts : 0,
    };
  }
  const lambda = q.perDay / SECONDS_PER_DAY;
  const utilisation = lambda / mu;
  if (utilisation < 1) {
    // Servers whose full use gives the service rate: the slots, or fewer when a quota binds first.
    const servers = Math.max(1, Math.floor(mu * q.slotSecondsPerDraft) || q.modelSlots);
    const perServer = mu / servers;
    const waits = erlangC(servers, lambda / perServer);
    const spare = mu - lambda;
    const p99 = waits > 0.01 ? Math.log(waits / 0.01) / spare : 0;
    return {
      ...base,
      arrival: "steady",
      utilisation,
      drainHours: 24 + h(p99 + q.executionSeconds),
      peakBacklog: Math.ceil(lambda * p99),
      peakWaitHours: h(p99),
      meanWaitHours: h(waits / spare),
      failedByDeadlineShare: waits * Math.exp(-spare * deadline),
    };
  }
  // It does not keep up: the backlog grows by (λ − μ) a second all day. A draft arriving at t waits
  // (λ − μ)·t / μ; from t0 on that is past the deadline, and of the later arrivals the queue serves
  // μ/λ (FIFO with the expired ones leaving the queue at the deadline).
  const grow = lambda - mu;
  const t0 = (deadline * mu) / grow;
  const lateShare = Math.max(0, (SECONDS_PER_DAY - t0) / SECONDS_PER_DAY);
  const lastWait = Math.min((grow * SECONDS_PER_DAY) / mu, deadline);
  return {
    ...base,
    arrival: "steady",
    utilisation,
    drainHours: h(Math.min(q.perDay / mu, SECONDS_PER_DAY + deadline)),
    peakBacklog: Math.ceil(Math.min(grow * SECONDS_PER_DAY, mu * deadline)),
    peakWaitHours: h(lastWait),
    meanWaitHours: h(lastWait / 2),
    failedByDeadlineShare: lateShare * (1 - mu / lambda),
  };
}

/**
 * The settings and quotas a daily volume needs: each sized so the day's mean rate uses at most
 * TARGET_UTILISATION of it (never below what is there now), with where it is set, what it rests on
 * and whether that is confirmed.
 */
function deploySettings(a: {
  perDay: number;
  env: EnvSnapshot;
  book: PriceBook;
  draftCounts: DraftCounts;
  slotSecondsPerDraft: number;
  modelQuota: ModelQuota;
  burnIds: string[];
  tier: number;
  batch: boolean;
}): DeploySetting[] {
  const { env, book, draftCounts: d, modelQuota: m } = a;
  const lambda = a.perDay / SECONDS_PER_DAY;
  const headroom = 1 / TARGET_UTILISATION;
  const confirmed = (...ids: string[]) => ids.every((id) => book.used.get(id)?.status === "confirmed");
  const src = (...ids: string[]) => ids.map((id) => `prices.json ${id}`).join(" ; ");
  const out: DeploySetting[] = [];
  // Never below what is deployed or granted now: a setting that already suffices stays as it is.
  const add = (s: Omit<DeploySetting, "change">) => {
    const value = Math.max(s.value, s.current);
    out.push({ ...s, value, change: value !== s.current });
  };
  const measured = "counts.json (measured per-draft counts) × DURATION_MODEL (modelled durations)";

  // 4 at least: correct and judge each need SQS event source's floor of 2 (infra modelConcurrencyShares).
  const slots = Math.max(4, env.modelConcurrency, Math.ceil(lambda * a.slotSecondsPerDraft * headroom));
  add({
    name: "model slots",
    value: slots,
    current: env.modelConcurrency,
    unit: "calls at once",
    where: `infra/config.ts ${env.envName}.deployment.modelConcurrency`,
    source: `${measured}: ${a.slotSecondsPerDraft.toFixed(1)} slot-s per draft`,
    confirmed: true,
  });
  const account = book.get("lambda.concurrentExecutions");
  add({
    name: "Lambda concurrent executions",
    value: Math.ceil(lambda * d.lambdaSeconds * headroom) + slots,
    current: account,
    unit: "executions",
    where: "Service Quotas: Lambda concurrent executions (account and Region)",
    source: `${measured}: ${d.lambdaSeconds.toFixed(1)} Lambda-s per draft, the model slots besides ; ${src("lambda.concurrentExecutions")}`,
    confirmed: confirmed("lambda.concurrentExecutions"),
  });
  if (!a.batch && m.provider === "bedrock") {
    const tpm = book.get("bedrock.crossRegionTpm");
    const perMinute = lambda * 60 * d.modelCalls * m.quotaTokensPerCall * headroom;
    const ids = ["bedrock.crossRegionTpm", ...a.burnIds, "bedrock.maxTokensReservedAtStart"];
    add({
      name: "Bedrock tokens per minute (cross-Region)",
      value: roundUp(Math.max(perMinute, slots * m.reservedPerCall)),
      current: tpm,
      unit: "quota tokens per minute",
      where: "Service Quotas: Bedrock cross-Region InvokeModel tokens per minute for the model",
      source: `${m.quotaTokensPerCall.toLocaleString("en-US")} quota tokens per call (output × ${m.outputBurndown}), and every slot's reservation of ${m.reservedPerCall.toLocaleString("en-US")} (input + max_tokens) in flight ; ${src(...ids)}`,
      confirmed: confirmed(...ids),
    });
    const perDayTokens = a.perDay * d.modelCalls * m.quotaTokensPerCall;
    const tpdIds = ["bedrock.tokensPerDayPerTpm", ...a.burnIds];
    add({
      name: "Bedrock tokens per day",
      value: roundUp(perDayTokens * headroom),
      current: m.tokensPerDay ?? 0,
      unit: "quota tokens per day",
      where: "Service Quotas: Bedrock model invocation max tokens per day for the model",
      source: `the day's ${roundUp(perDayTokens).toLocaleString("en-US")} quota tokens ; ${src(...tpdIds)}`,
      confirmed: confirmed(...tpdIds),
    });
  } else if (!a.batch) {
    const t = `anthropic.tier${a.tier}`;
    const otpm = book.get(`${t}.otpm`);
    const perMinute = lambda * 60 * d.modelCalls * m.quotaTokensPerCall * headroom;
    add({
      name: "Anthropic output tokens per minute",
      value: roundUp(Math.max(perMinute, slots * m.reservedPerCall)),
      current: otpm,
      unit: "output tokens per minute",
      where: `Anthropic usage tier (now ${a.tier}), then a custom limit through Anthropic sales`,
      source: `${m.quotaTokensPerCall.toLocaleString("en-US")} output tokens per call, and every slot's max_tokens (${m.maxTokens}) in flight ; ${src(`${t}.otpm`, "anthropic.maxTokensReservedAtStart")}`,
      confirmed: confirmed(`${t}.otpm`, "anthropic.maxTokensReservedAtStart"),
    });
  }
  // A batch's children each run a draft; the slots serve them, the rest wait in the queue. Enough
  // children to keep every slot busy, and no more than a Map runs.
  const children = Math.ceil((slots * d.executionSeconds) / Math.max(a.slotSecondsPerDraft, 1e-9));
  add({
    name: "batch concurrency",
    value: Math.min(book.get("sfn.distributedMap.childConcurrency"), Math.max(slots, children)),
    current: env.batchConcurrency,
    unit: "child executions",
    where: `infra/config.ts ${env.envName}.batchConcurrency`,
    source: `${measured}: ${d.executionSeconds.toFixed(1)} s per execution of which ${a.slotSecondsPerDraft.toFixed(1)} hold a slot ; ${src("sfn.distributedMap.childConcurrency")}`,
    confirmed: confirmed("sfn.distributedMap.childConcurrency"),
  });
  return out;
}

/** Up to two significant figures, so a quota request reads as one. */
function roundUp(n: number): number {
  if (n <= 0) return 0;
  const step = 10 ** Math.max(0, Math.floor(Math.log10(n)) - 1);
  return Math.ceil(n / step) * step;
}
