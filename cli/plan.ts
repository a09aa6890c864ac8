import { readFile } from "node:fs/promises";
import { UsageError } from "../app/inputs.js";
import { type CountsFile, CountsFileSchema, OUTCOME_PATHS, type OutcomePath } from "../shared/plan/counts.js";
import { type Plan, type PlanInput, plan, TARGET_UTILISATION } from "../shared/plan/planner.js";
import { type PricesFile, PricesFileSchema } from "../shared/plan/prices.js";
import { renderTable, stdoutStyle } from "./output.js";

/**
 * `redraft plan`: capacity and cost of a workload on paper, from the counts measured by executing
 * the committed state machine (shared/plan/data/counts.json, `npm run plan:counts`) and the
 * published prices and quotas (shared/plan/data/prices.json).
 */

const DATA = new URL("../shared/plan/data/", import.meta.url);

export async function loadPlanData(): Promise<{ counts: CountsFile; prices: PricesFile }> {
  const [counts, prices] = await Promise.all(
    ["counts.json", "prices.json"].map(async (file) =>
      JSON.parse(await readFile(new URL(file, DATA), "utf8")),
    ),
  );
  return { counts: CountsFileSchema.parse(counts), prices: PricesFileSchema.parse(prices) };
}

/** `a=1,b=2` as numbers by name; a usage error naming the option otherwise. */
function parseWeights(option: string, value: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of value.split(",")) {
    const [name, weight] = part.split("=");
    const n = Number(weight);
    if (!name || weight === undefined || !Number.isFinite(n) || n < 0)
      throw new UsageError(
        `${option} takes name=weight pairs separated by commas, as in "${option} a=2,b=1"`,
      );
    out[name.trim()] = n;
  }
  return out;
}

export interface PlanOptions {
  draftsPerDay?: number;
  backlog?: number;
  mix?: string;
  kinds?: string;
  attempts?: number;
  judgeRounds?: number;
  inputTokens?: number;
  outputTokens?: number;
  pricing?: "on_demand" | "batch";
  via?: "uploads" | "batch";
  env?: string;
  region?: string;
  tier?: number;
  maxTokens?: number;
  deadlineHours?: number;
}

/** The plan input the options describe; usage errors for what they cannot mean. */
function planInput(opts: PlanOptions): PlanInput {
  if (opts.draftsPerDay !== undefined && opts.backlog !== undefined)
    throw new UsageError("give --drafts-per-day or --backlog, not both");
  let mix: Record<OutcomePath, number> | undefined;
  if (opts.mix !== undefined) {
    const weights = parseWeights("--mix", opts.mix);
    const unknown = Object.keys(weights).filter((k) => !(OUTCOME_PATHS as readonly string[]).includes(k));
    if (unknown.length > 0)
      throw new UsageError(`--mix knows the paths ${OUTCOME_PATHS.join(", ")}, not ${unknown.join(", ")}`);
    if (!Object.values(weights).some((w) => w > 0)) throw new UsageError("--mix needs one path above 0");
    mix = Object.fromEntries(OUTCOME_PATHS.map((p) => [p, weights[p] ?? 0])) as Record<OutcomePath, number>;
  }
  return {
    ...(opts.draftsPerDay !== undefined && { draftsPerDay: opts.draftsPerDay }),
    ...(opts.backlog !== undefined && { backlog: opts.backlog }),
    ...(opts.draftsPerDay === undefined && opts.backlog === undefined && { draftsPerDay: 1_000_000 }),
    ...(mix && { mix }),
    ...(opts.kinds !== undefined && { kinds: parseWeights("--kinds", opts.kinds) }),
    ...(opts.attempts !== undefined && { attempts: opts.attempts }),
    ...(opts.judgeRounds !== undefined && { judgeRounds: opts.judgeRounds }),
    ...(opts.inputTokens !== undefined && { inputTokens: opts.inputTokens }),
    ...(opts.outputTokens !== undefined && { outputTokens: opts.outputTokens }),
    ...(opts.pricing !== undefined && { pricing: opts.pricing }),
    ...(opts.via !== undefined && { via: opts.via }),
    ...(opts.env !== undefined && { env: opts.env }),
    ...(opts.region !== undefined && { region: opts.region }),
    ...(opts.tier !== undefined && { tier: opts.tier }),
    ...(opts.maxTokens !== undefined && { maxTokens: opts.maxTokens }),
    ...(opts.deadlineHours !== undefined && { deadlineHours: opts.deadlineHours }),
  };
}

/** Runs the planner on the committed data; an unknown environment is a usage error. */
export async function makePlan(opts: PlanOptions): Promise<Plan> {
  const input = planInput(opts);
  const { counts, prices } = await loadPlanData();
  if (input.env !== undefined && !(input.env in counts.environments))
    throw new UsageError(
      `unknown environment "${input.env}": one of ${Object.keys(counts.environments).join(", ")} (infra/config.ts)`,
    );
  return plan(input, counts, prices);
}

/** What `--json` prints: the plan, with the fields the contract names first. */
export function planJson(p: Plan): string {
  const { bottleneck, drainHours, costPerDraftUsd, components, counts, ...rest } = p;
  return JSON.stringify({ bottleneck, drainHours, costPerDraftUsd, components, counts, ...rest });
}

export const usd = (n: number): string =>
  n === 0 ? "0" : n >= 0.01 ? `$${n.toFixed(4)}` : `$${n.toPrecision(3)}`;
export const rate = (n: number | null): string =>
  n === null ? "-" : n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toPrecision(3);

const hours = (h: number): string =>
  h < 1 / 60 ? `${Math.round(h * 3600)} s` : h < 1 ? `${(h * 60).toFixed(1)} min` : `${h.toFixed(1)} h`;
const pct = (share: number): string =>
  share === 0 ? "0 %" : share < 0.0001 ? "< 0.01 %" : `${(share * 100).toFixed(share < 0.01 ? 2 : 1)} %`;

/** The model-slot queue and the model's quota draw, in a few lines. */
function queueLines(p: Plan): string[] {
  const q = p.queue;
  const m = p.modelQuota;
  const arrival =
    q.arrival === "steady"
      ? `the day's drafts arriving evenly (${pct(q.utilisation ?? 0)} of what the queue serves)`
      : "the backlog arriving at once";
  return [
    `model-slot queue (${q.modelSlots} slots, ${q.slotSecondsPerDraft.toFixed(1)} slot-s per draft, served at ${rate(q.servicePerSecond)} drafts/s, limited by ${q.limitedBy}), ${arrival}:`,
    `  failures from load: ${q.failedByLoad} (a burst waits for a slot, it does not fail); waiting past the ${q.deadlineHours} h deadline (failed / deadline): ${pct(q.failedByDeadlineShare)}`,
    `  drained ${hours(q.drainHours)} after the first arrival; wait at the peak ${hours(q.peakWaitHours)} (${q.peakBacklog.toLocaleString("en-US")} drafts waiting), mean wait ${hours(q.meanWaitHours)}`,
    `  model quota per call: ${m.quotaTokensPerCall.toLocaleString("en-US")} quota tokens${m.outputBurndown !== 1 ? ` (output tokens × ${m.outputBurndown}, ${m.outputBurndownSource})` : ""}; ${m.reservedPerCall.toLocaleString("en-US")} reserved while in flight (max_tokens ${m.maxTokens})${m.callsInFlight !== null ? `: ${Math.floor(m.callsInFlight).toLocaleString("en-US")} calls at once at most` : ""}${m.tokensPerDayUsed !== null ? `; ${pct(m.tokensPerDayUsed)} of the ${m.tokensPerDay?.toLocaleString("en-US")} tokens a day` : ""}`,
  ];
}

/** What to deploy for the daily volume, each with where it is set and whether its basis is confirmed. */
function settingsLines(p: Plan): string[] {
  const after = p.withSettings;
  return [
    `settings to deploy for ${(p.workload.draftsPerDay ?? 0).toLocaleString("en-US")} drafts a day (sized to ${Math.round(TARGET_UTILISATION * 100)} % use at the day's mean rate):`,
    ...(p.settings ?? []).map(
      (s) =>
        `  ${s.name}: ${s.value.toLocaleString("en-US")} ${s.unit}${s.change ? ` (now ${s.current.toLocaleString("en-US")})` : " (as now)"}; ${s.where}; ${s.confirmed ? "confirmed" : "unconfirmed"}: ${s.source}`,
    ),
    ...(after
      ? [
          `with these deployed: ${after.keepsUp ? "keeps up" : "still does not keep up"}, bottleneck ${after.bottleneck} (${rate(after.queue.servicePerSecond)} drafts/s); failures from load ${after.queue.failedByLoad}, past the deadline ${pct(after.queue.failedByDeadlineShare)}; wait at the peak ${hours(after.queue.peakWaitHours)}, mean ${hours(after.queue.meanWaitHours)}; the day's drafts done ${hours(after.queue.drainHours)} after its start`,
        ]
      : []),
  ];
}

/** The plan for a person: the components table, the answer, what to raise, the numbers not confirmed. */
export function planText(p: Plan, style = stdoutStyle()): string {
  const table = renderTable(
    [
      { head: "component", wrapTo: 24 },
      { head: "drafts/s ceiling" },
      { head: "$ per draft" },
      { head: "raise", wrapTo: 30 },
    ],
    [...p.components]
      .sort(
        (a, b) =>
          (a.ceilingPerSecond ?? Number.POSITIVE_INFINITY) - (b.ceilingPerSecond ?? Number.POSITIVE_INFINITY),
      )
      .map((c) => [
        `${c.name}${c.unconfirmed ? " *" : ""}`,
        rate(c.ceilingPerSecond),
        usd(c.costPerDraftUsd),
        c.raise ?? "-",
      ]),
    style,
    ["raise"],
  );
  const w = p.workload;
  const lines = [
    `redraft plan: ${p.env} in ${p.region}, ${p.pricing === "batch" ? "batch" : "on-demand"} model pricing, ${
      w.draftsPerDay !== undefined
        ? `${w.draftsPerDay.toLocaleString("en-US")} drafts a day (${rate(w.requiredPerSecond ?? 0)}/s on average)`
        : `a backlog of ${(w.backlog ?? 0).toLocaleString("en-US")} drafts`
    }`,
    `per draft (measured, weighted by the mix): ${p.counts.transitions.toFixed(1)} state transitions, ${p.counts.invocations.toFixed(2)} Lambda invocations, ${p.counts.reads.toFixed(2)} read and ${p.counts.writes.toFixed(1)} write request units, ${p.counts.s3PutClass.toFixed(1)} S3 PUT-class and ${p.counts.s3GetClass.toFixed(1)} GET-class requests, ${p.counts.modelCalls.toFixed(2)} model calls`,
    table,
    `cost per draft: ${usd(p.costPerDraftUsd)} (state transitions ${(p.transitionShare * 100).toFixed(2)} %; an Express per-draft machine: ${usd(p.express.costPerDraftUsd)})`,
    `bottleneck: ${p.bottleneck}; ${w.draftsPerDay !== undefined ? `a day's drafts take ${p.drainHours.toFixed(1)} h at its rate${p.keepsUp ? "" : ", more than a day: it does not keep up"}` : `the backlog drains in ${p.drainHours.toFixed(1)} h`}`,
    ...queueLines(p),
    `once infra/config.ts's own limits are raised: ${p.bottleneckAfterConfig.name} at ${rate(p.bottleneckAfterConfig.ceilingPerSecond)} drafts/s, ${p.bottleneckAfterConfig.drainHours.toFixed(1)} h${p.bottleneckAfterConfig.keepsUp === false ? " (does not keep up)" : ""}`,
    "raise first:",
    ...p.raiseFirst.map(
      (r, i) => `  ${i + 1}. ${r.component} (${rate(r.ceilingPerSecond)} drafts/s): ${r.raise}`,
    ),
  ];
  if (p.settings) lines.push(...settingsLines(p));
  const fallback = p.numbersUsed.filter((u) => u.fallback).map((u) => u.id);
  if (fallback.length > 0) lines.push(`no ${p.region} row, us-east-1's used: ${fallback.join(", ")}`);
  if (p.unconfirmed.length > 0)
    lines.push(
      `* unconfirmed numbers (not read on the provider's own page; see shared/plan/data/prices.json): ${p.unconfirmed.join(", ")}`,
    );
  lines.push("durations are modelled (no AWS account here): see DURATION_MODEL in shared/plan/planner.ts");
  return lines.join("\n");
}
