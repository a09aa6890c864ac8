/**
 * `npm run bench:burst -- --drafts N --slots S --call-ms M [--throttle-rate P] [--batch] [--json]`:
 * a burst through the same emulated deployment as `test:cloud` (tests/cloud/deployment.ts: the
 * committed ASL, the real handlers, dynalite, s3rver). N drafts are uploaded under `drafts/` at once
 * (or, with `--batch`, one N-line manifest under `batches/`, its items run at prod's batch
 * concurrency), and every run is followed to its end.
 *
 * What stands for the deployment's limits:
 * - Lambda's reserved concurrency on λ correct and λ judge, as Lambda applies it: an invoke beyond S
 *   in flight fails at once with `Lambda.TooManyRequestsException`;
 * - the model: a stand-in taking M ms per call that answers 429 (ModelRateLimitedError) with
 *   probability P, and otherwise the correction the request asks for (the draft's content with the
 *   missing field added), so every draft validates after one call.
 * - the model queue's consumer (the SQS event source's `maximumConcurrency`): S slots.
 *
 * Prints `drafts`, `terminal`, `failedByLoad` (runs the run records say ended by a throttle, a 429 or
 * the deadline), `drainSeconds` (first upload to last run's end), `idealSeconds` (model calls × M / S),
 * `transitionsPerDraft` beside an unloaded run's (min(N, S) drafts alone, same settings) and
 * `peakQueueDepth`; `--json` prints that as one object. Goal: failedByLoad 0, every draft terminal,
 * drainSeconds ≤ 1.15 × idealSeconds, at most 2 more transitions per draft than unloaded.
 *
 * `--smoke` (CI): 40 drafts, 2 slots, 500 ms calls answering 429 one time in twenty, then a 30-line
 * batch at 1 slot; exits 1 when a draft failed by load, was left unfinished, or took more than 2
 * transitions more than unloaded (the drain time is printed beside its goal, not enforced there).
 * `--write-docs` rewrites the `burst` section of docs/BENCHMARKS.md (`burst-batch` with `--batch`)
 * with what it printed.
 */
import "../../cli/quiet.js";
import { readFile } from "node:fs/promises";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { BENCHMARKS_MD, sectionRecorder, writeSections } from "../../bench/lib/docs.js";
import { machine } from "../../bench/lib/stats.js";
import type { ExecutionSummary } from "../../local/asl-interpreter.js";
import { LocalModelQueue } from "../../local/model-queue.js";
import { ModelRateLimitedError } from "../../shared/errors.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";
import { isActiveStatus, type RunRecord } from "../../shared/store/types.js";
import { startDeployment } from "./deployment.js";
import { LOCAL_CREDENTIALS } from "./s3.js";

interface Options {
  drafts: number;
  slots: number;
  callMs: number;
  throttleRate: number;
  batch: boolean;
}

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
}
function numberFlag(name: string, fallback: number): number {
  const raw = flag(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`bench:burst: ${name} takes a number ≥ 0, not ${raw}`);
    process.exit(2);
  }
  return value;
}

const SMOKE = process.argv.includes("--smoke");
const JSON_OUT = process.argv.includes("--json");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
/** prod's Distributed Map MaxConcurrency (infra/config.ts): what a batch's items run at. */
const BATCH_CONCURRENCY = 40;
const DRAIN_GOAL = 1.15;
const TRANSITIONS_GOAL = 2;

const draftTemplate = JSON.parse(await readFile("examples/drafts/json-corrected.json", "utf8")) as {
  id: string;
  content: Record<string, unknown>;
};

/** Stands for the model: M ms a call, a 429 with probability P, the asked-for correction otherwise. */
class StandInModel implements ModelClient {
  readonly provider = "burst-stand-in";
  readonly model = "claude-sonnet-5-5";
  calls = 0;
  throttled = 0;
  /** Milliseconds spent in model calls, summed over calls. */
  modelMs = 0;
  constructor(
    private readonly callMs: number,
    private readonly throttleRate: number,
  ) {}
  async complete(request: ModelRequest): Promise<ModelResponse> {
    if (Math.random() < this.throttleRate) {
      this.throttled += 1;
      throw new ModelRateLimitedError("429 from the stand-in");
    }
    this.calls += 1;
    const begun = performance.now();
    await new Promise((resolve) => setTimeout(resolve, this.callMs));
    this.modelMs += performance.now() - begun;
    const content = (request.subject?.content ?? {}) as Record<string, unknown>;
    return {
      output: {
        content: { ...content, year: 2025 },
        analysis: "The required field year was missing.",
        fixDescription: "Added the publication year.",
      },
      usage: { input: 1400, output: 300, cacheRead: 0, cacheWrite: 0 },
      model: this.model,
      latencyMs: this.callMs,
    };
  }
}

/**
 * Lambda's reserved concurrency on one function: an invoke beyond `slots` in flight is refused at
 * once. One gate per function, shared by every draft's binding of it.
 */
function reservedConcurrency(slots: number) {
  const gate = {
    inFlight: 0,
    /** Invokes refused. */
    refused: 0,
    /** Milliseconds an invoke held a slot, summed (the profile: how much of it was the model call). */
    heldMs: 0,
    wrap:
      <T>(fn: (input: unknown) => Promise<T>) =>
      async (input: unknown): Promise<T> => {
        if (gate.inFlight >= slots) {
          gate.refused += 1;
          const error = new Error("Rate Exceeded. (Service: Lambda, Status Code: 429)");
          error.name = "Lambda.TooManyRequestsException";
          throw error;
        }
        gate.inFlight += 1;
        const begun = performance.now();
        try {
          return await fn(input);
        } finally {
          gate.inFlight -= 1;
          gate.heldMs += performance.now() - begun;
        }
      },
  };
  return gate;
}

/** How many state transitions an execution made, as Step Functions bills them: states entered and retries. */
const transitionsOf = (execution: ExecutionSummary) =>
  execution.history.filter((h) => h.type === "StateEntered" || h.type === "StateRetried").length;

/** A run ended by load: a throttle or a 429 outliving its retries, or the deadline passing while it waited. */
const endedByLoad = (run: RunRecord) =>
  run.status === "failed" &&
  (run.reason === "deadline" ||
    /TooManyRequestsException|ModelRateLimitedError|ModelOverloadedError/.test(run.message ?? ""));

interface BurstResult {
  drafts: number;
  terminal: number;
  failedByLoad: number;
  drainSeconds: number;
  idealSeconds: number;
  transitionsPerDraft: number;
  unloadedTransitionsPerDraft: number;
  peakQueueDepth: number;
  /** How the drafts' runs ended, by status and reason. */
  outcomes: Record<string, number>;
  /** Uploads whose delivery failed before a run started (the emulation's S3 under load). */
  failedDeliveries: number;
  /** Where the drain's time went (see Profile). */
  profile: Profile;
}

/**
 * Where the time goes: how busy the model slots were, how much of a held slot was the model call,
 * how often slots stood free with no work ready (the work was still in non-model steps or a retry's
 * backoff) or free while work waited (the queue's own fault), and how saturated the emulation process
 * was (its event loop's delay, its CPU time against the wall clock).
 */
interface Profile {
  /** Slot time held by an invoke of λ correct or λ judge ÷ (slots × drain). */
  slotBusyShare: number;
  /** Model call time ÷ slot time held: the rest is the step's own work and its store I/O. */
  modelShareOfSlot: number;
  /** Share of samples (every 100 ms) with a slot free and no model work waiting. */
  starvedShare: number;
  /** Share of samples with a slot free while model work waited. */
  idleWhileWaitingShare: number;
  /** The emulation process's event loop delay, p50 and p99 (ms). */
  eventLoopDelayP50Ms: number;
  eventLoopDelayP99Ms: number;
  /** CPU seconds of the emulation process ÷ drain seconds (2 would be both cores, all the time). */
  cpuPerWallSecond: number;
  /** Invokes λ correct or λ judge refused (Lambda.TooManyRequestsException). */
  refusedInvokes: number;
  /** States.Timeout errors by state (a non-model state timing out is the emulation saturating). */
  timeouts: Record<string, number>;
}

async function burst(options: Options, count: number): Promise<BurstResult & { calls: number }> {
  const model = new StandInModel(options.callMs, options.throttleRate);
  const transitions: number[] = [];
  /** States.Timeout errors by the state they fired in, retried ones included. */
  const timeouts: Record<string, number> = {};
  // λ correct and λ judge each have `slots` of reserved concurrency, across all drafts.
  const correctGate = reservedConcurrency(options.slots);
  const judgeGate = reservedConcurrency(options.slots);
  // The model queue's consumer: as many slots as the functions' reserved concurrency.
  const queue = new LocalModelQueue({ slots: options.slots });
  const deployment = await startDeployment({
    model,
    detached: true,
    maxSockets: 200,
    batchConcurrency: BATCH_CONCURRENCY,
    correct: {
      invoke: (steps) => ({
        ...steps,
        correct: correctGate.wrap(steps.correct),
        judge: judgeGate.wrap(steps.judge),
      }),
      onExecution: (execution) => {
        transitions.push(transitionsOf(execution));
        for (const h of execution.history)
          if (h.error === "States.Timeout" && h.state) timeouts[h.state] = (timeouts[h.state] ?? 0) + 1;
      },
      modelQueue: queue,
    },
  });
  // Every upload at once: a client with as many sockets as drafts, not the SDK's default 50.
  const s3 = new S3Client({
    endpoint: deployment.s3.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: LOCAL_CREDENTIALS,
    requestHandler: { httpAgent: { maxSockets: 200 } },
  });
  try {
    const bodies = Array.from({ length: count }, (_, i) =>
      JSON.stringify({ ...draftTemplate, id: `${draftTemplate.id}-${i}` }),
    );
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const cpuBefore = process.cpuUsage();
    const samples = { total: 0, starved: 0, idleWhileWaiting: 0 };
    const sampler = setInterval(() => {
      const free = correctGate.inFlight + judgeGate.inFlight < options.slots;
      samples.total += 1;
      if (free && queue.depth === 0) samples.starved += 1;
      if (free && queue.depth > 0) samples.idleWhileWaiting += 1;
    }, 100);
    const started = performance.now();
    if (options.batch) {
      await s3.send(
        new PutObjectCommand({
          Bucket: "redraft-test-drafts",
          Key: "batches/burst.jsonl",
          Body: bodies.join("\n"),
        }),
      );
    } else {
      await Promise.all(
        bodies.map((Body, i) =>
          s3.send(
            new PutObjectCommand({ Bucket: "redraft-test-drafts", Key: `drafts/burst-${i}.json`, Body }),
          ),
        ),
      );
    }
    await deployment.idle();
    const drainSeconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    delay.disable();
    const cpu = process.cpuUsage(cpuBefore);
    const heldMs = correctGate.heldMs + judgeGate.heldMs;
    const share = (part: number, whole: number) => round(part / Math.max(1, whole));
    const profile: Profile = {
      slotBusyShare: share(heldMs, options.slots * drainSeconds * 1000),
      modelShareOfSlot: share(model.modelMs, heldMs),
      starvedShare: share(samples.starved, samples.total),
      idleWhileWaitingShare: share(samples.idleWhileWaiting, samples.total),
      eventLoopDelayP50Ms: round(delay.percentile(50) / 1e6),
      eventLoopDelayP99Ms: round(delay.percentile(99) / 1e6),
      cpuPerWallSecond: round((cpu.user + cpu.system) / 1e6 / drainSeconds),
      refusedInvokes: correctGate.refused + judgeGate.refused,
      timeouts,
    };
    const runs = (
      await Promise.all(
        deployment.started
          .filter((name) => !options.batch || name !== "burst")
          .map((runId) => deployment.runs.getRun(runId)),
      )
    ).filter((r): r is RunRecord => r !== undefined && r.draftId !== undefined);
    const drafts = runs.filter((r) => r.draftId?.startsWith(draftTemplate.id));
    return {
      drafts: count,
      terminal: drafts.filter((r) => !isActiveStatus(r.status)).length,
      failedByLoad: drafts.filter(endedByLoad).length,
      drainSeconds: round(drainSeconds),
      idealSeconds: round((model.calls * options.callMs) / 1000 / options.slots),
      transitionsPerDraft: round(transitions.reduce((a, b) => a + b, 0) / Math.max(1, transitions.length)),
      unloadedTransitionsPerDraft: 0,
      // No state of a machine without the model queue ever puts work in it.
      peakQueueDepth: queue.peakDepth,
      // A failure by its error's name too (the message starts with it): a throttle, a 429, the store.
      outcomes: countBy(drafts, (r) =>
        [r.status, r.reason, r.status === "failed" ? r.message?.split(":")[0] : undefined]
          .filter(Boolean)
          .join("/"),
      ),
      failedDeliveries: deployment.failedDeliveries.count,
      profile,
      calls: model.calls,
    };
  } finally {
    s3.destroy();
    await deployment.close();
  }
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

const round = (x: number) => Math.round(x * 100) / 100;

async function measure(options: Options): Promise<BurstResult> {
  // The unloaded yardstick: as many drafts as there are slots, so nothing waits or is throttled.
  const unloaded = await burst({ ...options, batch: false }, Math.min(options.drafts, options.slots));
  const loaded = await burst(options, options.drafts);
  const { calls: _calls, ...result } = loaded;
  return { ...result, unloadedTransitionsPerDraft: unloaded.transitionsPerDraft };
}

function verdicts(r: BurstResult): string[] {
  const failures: string[] = [];
  if (r.failedByLoad > 0) failures.push(`${r.failedByLoad} runs failed by load (goal 0)`);
  if (r.terminal < r.drafts) failures.push(`${r.drafts - r.terminal} drafts not terminal`);
  if (r.drainSeconds > DRAIN_GOAL * r.idealSeconds)
    failures.push(`drained in ${r.drainSeconds} s > ${DRAIN_GOAL} × ${r.idealSeconds} s`);
  if (r.transitionsPerDraft > r.unloadedTransitionsPerDraft + TRANSITIONS_GOAL)
    failures.push(
      `${r.transitionsPerDraft} transitions per draft > ${r.unloadedTransitionsPerDraft} unloaded + ${TRANSITIONS_GOAL}`,
    );
  return failures;
}

const runs: { options: Options; label: string }[] = SMOKE
  ? [
      { label: "uploads", options: { drafts: 40, slots: 2, callMs: 500, throttleRate: 0.05, batch: false } },
      { label: "batch", options: { drafts: 30, slots: 1, callMs: 100, throttleRate: 0, batch: true } },
    ]
  : [
      {
        label: process.argv.includes("--batch") ? "batch" : "uploads",
        options: {
          drafts: numberFlag("--drafts", 2_000),
          slots: Math.max(1, numberFlag("--slots", 9)),
          callMs: numberFlag("--call-ms", 2_000),
          throttleRate: numberFlag("--throttle-rate", 0),
          batch: process.argv.includes("--batch"),
        },
      },
    ];

const { date, load, commit, output, say } = sectionRecorder();
let failed = false;
for (const { options, label } of runs) {
  const result = await measure(options);
  const failures = verdicts(result);
  // The smoke holds the counts to the goal, not the clock: CI machines are shared and noisy.
  failed ||= failures.some((f) => !f.startsWith("drained in"));
  if (JSON_OUT) {
    console.log(JSON.stringify(result));
    continue;
  }
  say(
    `bench:burst — ${label}: ${options.drafts} drafts${options.batch ? " in one manifest (batch concurrency 40)" : " uploaded at once"}, ${options.slots} model slots, ${options.callMs} ms per call, 429 rate ${options.throttleRate}`,
  );
  say(machine());
  say(JSON.stringify(result));
  say(
    failures.length === 0
      ? `goal met: failedByLoad 0, every draft terminal, drainSeconds ≤ ${DRAIN_GOAL} × idealSeconds, ≤ ${TRANSITIONS_GOAL} more transitions per draft than unloaded`
      : `goal missed: ${failures.join("; ")}`,
  );
}
if (WRITE_DOCS) {
  const command = `npm run bench:burst -- ${process.argv
    .slice(2)
    .filter((a) => a !== "--write-docs")
    .join(" ")}`;
  const bench = process.argv.includes("--batch") ? "burst-batch" : "burst";
  writeSections([{ bench, command, output: output.join("\n"), date, load, commit }]);
  console.error(`wrote the ${bench} section of ${BENCHMARKS_MD}`);
}
if (SMOKE && failed) process.exitCode = 1;
