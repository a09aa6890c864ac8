import { rate, usd } from "../../cli/plan.js";
import type { CountsFile } from "../../shared/plan/counts.js";
import {
  DEFAULT_MIX,
  DEFAULT_QUEUE_DEADLINE_HOURS,
  DURATION_MODEL,
  type Plan,
  plan,
  TARGET_UTILISATION,
} from "../../shared/plan/planner.js";
import type { PricesFile } from "../../shared/plan/prices.js";

/** The daily volumes the document plans for. */
const WORKLOADS = [10_000, 1_000_000, 10_000_000] as const;

const row = (cells: readonly (string | number)[]) => `| ${cells.join(" | ")} |`;
const head = (cells: readonly string[]) => [row(cells), row(cells.map(() => "---"))];
const n = (x: number, digits = 1) => x.toFixed(digits);
const hours = (p: Plan) => `${n(p.drainHours)} h${p.keepsUp ? "" : " (does not keep up)"}`;
const wait = (h: number) =>
  h < 1 / 60 ? `${Math.round(h * 3600)} s` : h < 1 ? `${n(h * 60)} min` : `${n(h)} h`;
const share = (x: number) => (x === 0 ? "0 %" : x < 0.0001 ? "< 0.01 %" : `${n(x * 100)} %`);

/**
 * docs/CAPACITY.md as `npm run plan:docs` writes it: deterministic (no dates but the ones the
 * prices were read on), so tests/plan/docs.test.ts can require the committed file to be this.
 */
export function capacityDoc(counts: CountsFile, prices: PricesFile): string {
  const envs = Object.keys(counts.environments);
  const plans = Object.fromEntries(
    envs.map((env) => [env, WORKLOADS.map((draftsPerDay) => plan({ draftsPerDay, env }, counts, prices))]),
  ) as Record<string, Plan[]>;
  const prod = plans.prod ?? (Object.values(plans)[0] as Plan[]);
  const mid = prod[1] as Plan;
  const out: string[] = [
    "# Capacity and cost on paper",
    "",
    "<!-- Written by `npm run plan:docs` (scripts/plan-docs.ts); tests/plan/docs.test.ts fails when it is stale. Do not edit. -->",
    "",
    "What a day of drafts costs, how long it takes, and which quota stops it first, for each environment of",
    "[infra/config.ts](../infra/config.ts). `redraft plan` prints the same plan for any workload (`--help` lists",
    "its inputs); this page is its answer for three daily volumes under the default mix of outcomes.",
    "",
    "Three kinds of number go into it, and the page keeps them apart:",
    "",
    "- **Measured**: state transitions, Lambda invocations, DynamoDB request units (index writes included),",
    "  S3 requests and events per draft come from executing the committed state machine",
    "  ([contracts/state-machine.asl.json](../contracts/state-machine.asl.json)) over the example corpus with the real",
    "  handlers and stores ([scripts/plan/measure.ts](../scripts/plan/measure.ts), written to",
    "  [shared/plan/data/counts.json](../shared/plan/data/counts.json) by `npm run plan:counts`;",
    "  [tests/plan/counts.test.ts](../tests/plan/counts.test.ts) executes it again and requires the same counts).",
    "- **Published**: prices and quotas, each with the page it was read on and the date, in",
    "  [shared/plan/data/prices.json](../shared/plan/data/prices.json); a number not read on the provider's own",
    "  page is marked *unconfirmed* below. Model token prices are [shared/model/pricing.ts](../shared/model/pricing.ts)'s.",
    "- **Modelled**: durations (there is no AWS account here to time a Lambda), log volume, and the workload's",
    "  mix of outcomes. The model: each Lambda invocation " +
      `${DURATION_MODEL.invocationMs} ms, each DynamoDB request ${DURATION_MODEL.dynamoMs} ms, each S3 request ` +
      `${DURATION_MODEL.s3Ms} ms, a model call ${DURATION_MODEL.modelFirstTokenMs} ms to its first token then ` +
      `${DURATION_MODEL.modelOutputTokensPerSecond} output tokens/s; a call is ${mid.assumptions.inputTokens} input and ` +
      `${mid.assumptions.outputTokens} output tokens.`,
    "",
    "## The model-slot queue",
    "",
    "Model work waits for a model slot in a durable queue for as long as the run's deadline allows",
    `(${DEFAULT_QUEUE_DEADLINE_HOURS} h unless \`--deadline-hours\` says otherwise): a burst becomes a backlog, and no draft fails because`,
    "others arrived at the same time (**failed by load: 0** in every row). The queue is served at the",
    "tightest of the model slots (`modelConcurrency`) and the model's quotas. A day's drafts arrive at an even",
    "rate: when the queue keeps up, the wait at the peak is the 99th percentile of Erlang C's wait for a slot;",
    "when it does not, the backlog grows all day and the drafts whose wait would pass the deadline end",
    "`failed` / `deadline` (the column says what share). The model's quotas are counted as the provider",
    "counts them: on Bedrock an output token of a Claude 4-class model draws 5 quota tokens from the",
    "tokens-per-minute and tokens-per-day quotas; the tokens per day default to the minute's × 1,440; and a",
    "call reserves its input and its whole `max_tokens` from the minute's quota while it is in flight,",
    "which bounds the calls that can start at once.",
    "",
    "## Per draft, as measured",
    "",
    ...head([
      "path",
      "corpus drafts",
      "state transitions",
      "Lambda invocations",
      "model calls",
      "write units",
      "read units",
      "S3 PUT-class",
      "S3 GET-class",
      "events",
      "history events",
    ]),
    ...counts.paths.map((p) =>
      row([
        p.path,
        p.drafts.join(", "),
        p.transitions,
        n(
          Object.values(p.invocations).reduce((s, i) => s + i.count, 0),
          0,
        ),
        Object.values(p.invocations).reduce((s, i) => s + i.modelCalls, 0),
        p.dynamo.writeUnits,
        p.dynamo.readUnits,
        p.s3.putClass,
        p.s3.getClass,
        p.events.putEvents,
        p.awsHistoryEvents,
      ]),
    ),
    "",
    "Lambda invocations include λ outcome (the rule on the outcome event) but not λ start, which the plan adds",
    "(one per upload). Write units count the index entries DynamoDB writes: a run moves through",
    "`STATUS#draft` (and `STATUS#correcting`) of the `byStatus` index, two units each time its key changes.",
    "History events are what Step Functions would record of the execution; its quota is 25,000.",
    "",
    `The default mix: ${Object.entries(DEFAULT_MIX)
      .map(([path, share]) => `${path} ${share * 100} %`)
      .join(", ")} (\`--mix\` changes it).`,
    "",
  ];
  for (const env of envs) {
    const ps = plans[env] as Plan[];
    const e = counts.environments[env];
    out.push(
      `## ${env}`,
      "",
      `Model ${e?.modelId} through ${e?.modelProvider}; modelConcurrency ${e?.modelConcurrency} (correct ${e?.reservedConcurrency.correct}, judge ${e?.reservedConcurrency.judge}); ` +
        `Lambda ${e?.lambdaMemoryMb} MB ${e?.lambdaArchitecture}; logs at ${e?.logLevel}, state machine logs ${e?.stateMachineLogLevel}` +
        `${e?.includeExecutionData ? " with execution data" : ""}.`,
      "",
      ...head([
        "drafts a day",
        "cost per draft",
        "bottleneck",
        "its ceiling (drafts/s)",
        "a day's drafts take",
        "failed by load",
        "wait at the peak",
        "past the deadline (failed / deadline)",
        "then, with infra/config.ts raised",
        "raise first",
      ]),
      ...ps.map((p) =>
        row([
          (p.workload.draftsPerDay ?? 0).toLocaleString("en-US"),
          usd(p.costPerDraftUsd),
          p.bottleneck,
          rate(p.raiseFirst[0]?.ceilingPerSecond ?? null),
          hours(p),
          p.queue.failedByLoad,
          wait(p.queue.peakWaitHours),
          share(p.queue.failedByDeadlineShare),
          `${p.bottleneckAfterConfig.name}: ${rate(p.bottleneckAfterConfig.ceilingPerSecond)}/s, ${n(p.bottleneckAfterConfig.drainHours)} h${p.bottleneckAfterConfig.keepsUp === false ? " (does not keep up)" : ""}`,
          p.raiseFirst
            .slice(0, 3)
            .map((r) => r.raise)
            .join("; then "),
        ]),
      ),
      "",
      `What to deploy in ${env} for each volume (each sized so the day's mean rate uses ${TARGET_UTILISATION * 100} % of it; \`redraft plan --drafts-per-day N --env ${env}\` prints where each is set and what it rests on), and the queue once they are:`,
      "",
      ...head([
        "drafts a day",
        ...((ps[0] as Plan).settings ?? []).map((s) => `${s.name}${s.confirmed ? "" : " *"} (now)`),
        "then: bottleneck",
        "wait at the peak",
        "past the deadline",
      ]),
      ...ps.map((p) =>
        row([
          (p.workload.draftsPerDay ?? 0).toLocaleString("en-US"),
          ...(p.settings ?? []).map(
            (s) => `${s.value.toLocaleString("en-US")} (${s.current.toLocaleString("en-US")})`,
          ),
          p.withSettings?.bottleneck ?? "-",
          wait(p.withSettings?.queue.peakWaitHours ?? 0),
          share(p.withSettings?.queue.failedByDeadlineShare ?? 0),
        ]),
      ),
      "",
      "Cost per draft by component (the same at every volume but for the month's custom metrics, spread over its drafts):",
      "",
      ...head(["component", ...WORKLOADS.map((w) => `${w.toLocaleString("en-US")}/day`), "drafts/s ceiling"]),
      ...(ps[0] as Plan).components.map((c, i) =>
        row([
          `${c.name}${c.unconfirmed ? " *" : ""}`,
          ...ps.map((p) => usd(p.components[i]?.costPerDraftUsd ?? 0)),
          rate(c.ceilingPerSecond),
        ]),
      ),
      "",
    );
  }
  out.push(
    "## Standard or Express for the per-draft machine",
    "",
    "Step Functions Standard bills each state transition; Express bills each execution and its duration",
    "(64 MB steps). What the transitions are of the cost per draft, and what Express would cost instead, at each",
    "volume in prod (the rest of the cost is the same on both):",
    "",
    ...head([
      "drafts a day",
      "cost per draft (Standard)",
      "state transitions",
      "their share",
      "Express orchestration",
      "cost per draft (Express)",
    ]),
    ...prod.map((p) =>
      row([
        (p.workload.draftsPerDay ?? 0).toLocaleString("en-US"),
        usd(p.costPerDraftUsd),
        usd(p.express.standardOrchestrationUsd),
        `${n(p.transitionShare * 100, 2)} %`,
        usd(p.express.orchestrationUsd),
        usd(p.express.costPerDraftUsd),
      ]),
    ),
    "",
    "The transitions are a small share because the model call dominates the cost of every draft it corrects;",
    "the saving Express offers is that share and no more. What an Express per-draft machine would change:",
    "",
    ...head(["", "Standard (now)", "Express"]),
    row([
      "cost per draft (prod, 1,000,000/day)",
      usd(mid.costPerDraftUsd),
      `${usd(mid.express.costPerDraftUsd)} (unconfirmed Express prices)`,
    ]),
    row([
      "execution semantics",
      "exactly-once per execution name: a second delivery of the same upload or event is refused (`ExecutionAlreadyExists`), which λ start relies on",
      "at-least-once, and names are not unique: a repeated delivery runs again, caught only by Validate's content claim within the dedupe window",
    ]),
    row([
      "batch children (`StartExecution.sync:2`, named `<batchId>-<line>`)",
      "a retried item finds its child by name instead of starting a second",
      "the name finds nothing: a retried item starts a second child; every child step must be idempotent on its own (the conditional writes are, the model call is not)",
    ]),
    row([
      "duration",
      `up to the environment's executionTimeoutMinutes (${counts.environments.prod?.executionTimeoutMinutes} in prod), which covers the worst case of retries (infra/worst-case.ts)`,
      "5 minutes at most: a run whose model calls are throttled and backed off would be cut off",
    ]),
    row([
      "history",
      "every execution's event history in the console for 90 days; `redraft show` mirrors it locally",
      "none in the console: only what CloudWatch Logs keeps at level ALL with execution data, billed as logs",
    ]),
    row([
      "history limit",
      `25,000 events (the longest corpus run records ${mid.counts.maxHistoryEvents})`,
      "none",
    ]),
    "",
    "So the per-draft machine stays Standard: Express would save about the transitions' share above while",
    "giving up the exactly-once start that deduplicates repeated deliveries and batch retries, the console",
    "history, and runs longer than five minutes.",
    "",
    "## The numbers used",
    "",
    ...head(["number", "us-east-1", "unit", "status", "read", "source"]),
    ...Object.entries(prices.items).map(([id, item]) =>
      row([
        `\`${id}\``,
        item.values["us-east-1"] ?? item.values.global ?? "-",
        item.unit,
        item.status,
        item.read,
        `<${item.source}>`,
      ]),
    ),
    "",
    "## The largest uncertainty",
    "",
    "The model's own quota. Every environment's first ceiling is the model: the provider's tokens per minute",
    "(on Bedrock drawn 5x per output token) and the model slots (a setting of infra/config.ts, `modelConcurrency`).",
    "Bedrock's default tokens-per-minute quota for the configured Claude model was not found in a",
    "published page (the figure used is an older Claude's, unconfirmed); it is set per account and Region and",
    "is what Service Quotas shows. Whether the configured model's generation draws 5x is taken, not read",
    "(the page names the Claude 4 models). After it come the modelled durations (the model call's time scales every",
    "concurrency ceiling) and the Step Functions throttling rates, also unconfirmed. The prices that make",
    "up the cost per draft are dominated by the model's tokens, whose rates are the project's own price table.",
    "",
  );
  return out.join("\n");
}
