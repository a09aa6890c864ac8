import pLimit from "p-limit";
import * as z from "zod";
import { attemptsMade, type LoopState, LoopStateSchema } from "../loop/state.js";
import { correctStep } from "../loop/steps/correct.js";
import type { LoopDeps } from "../loop/steps/deps.js";
import { judgeStep } from "../loop/steps/judge.js";
import type { BatchModelService, BatchRequestLine } from "../model/batch.js";
import { costUsd } from "../model/pricing.js";
import { totalTokens } from "../model/types.js";
import { blobKeys, roundKeys, roundListKeys } from "../store/bucket-layout.js";
import { addTotals, type BlobStore, type TokenTotals, ZERO_TOTALS } from "../store/types.js";
import { childRunId } from "./record.js";
import {
  customIdFor,
  lineOfRunId,
  ModelAnswerDeferred,
  mustFallBack,
  nextWait,
  type Parked,
  ParkedRequestSchema,
  ParkedSchema,
  RoundModelClient,
  type RoundRecord,
  RoundRecordSchema,
  type RoundTiming,
  readJson,
  roundFits,
  type StoredResult,
  splitIntoBatches,
} from "./rounds.js";

/**
 * The steps of a batch-priced batch around the unchanged loop steps: a model step that asks the
 * batch (answered, or parked for the next round), and the three steps of each round — submit the
 * parked calls as one batch (split by the service's limits), poll it, and collect its results where
 * the parked calls find them. The state machine (infra/constructs/batch-rounds.ts) loops over them.
 */

const STORE_CONCURRENCY = 32;

/** A loop state that waits for the next batch: the round Map's output for the item. */
export type ParkedState = LoopState & { parked: Parked };

/**
 * CorrectExecution, CorrectLogic or Judge in a batch-priced round: the same step as on demand with
 * the round's model ({@link RoundModelClient}). Answered, it returns the step's state; otherwise the
 * state as it was, with `parked` saying which step resumes it and where its request waits.
 */
export async function roundModelStep(
  call: "correct" | "judge",
  state: LoopState,
  deps: LoopDeps,
  maxRetries: number,
): Promise<LoopState | ParkedState> {
  const line = lineOfRunId(state.runId);
  const judge = call === "judge";
  const n = judge ? state.judge.rounds + 1 : attemptsMade(state) + 1;
  // The keys the steps themselves store the answer under (correctStep, judgeStep).
  const answerKey = judge ? blobKeys.judgeAnswer(state.runId, n) : blobKeys.attemptAnswer(state.runId, n);
  const model = new RoundModelClient(
    deps.model?.model ?? "batch",
    deps.blobs,
    { answerKey, customId: customIdFor(line, judge ? "judge" : "attempt", n) },
    maxRetries,
  );
  try {
    return await (judge ? judgeStep : correctStep)(state, { ...deps, model });
  } catch (error) {
    if (!(error instanceof ModelAnswerDeferred)) throw error;
    const resume = judge ? "judge" : state.phase === "logic" ? "correct_logic" : "correct";
    return { ...state, parked: { call: resume, requestKey: error.requestKey } };
  }
}

/** The state machine's `$.rounds`: where the rounds stand. Small: the lists live in the bucket. */
export const RoundsStateSchema = z.object({
  /** The last round submitted (0: only the validation round has run). */
  number: z.number().int().nonnegative(),
  /** When the batch execution started: the deadline counts from it. */
  startedAt: z.string(),
  /** The item list the next RunRound reads. */
  itemsKey: z.string(),
  status: z.enum(["validating", "submitted", "waiting", "ended", "on_demand", "done"]),
  jobs: z.array(z.string()).default([]),
  waitSeconds: z.number().int().nonnegative().default(0),
  longestRoundMs: z.number().nonnegative().default(0),
  /** The lines to run on demand, JSONL of {@link OnDemandItem}; absent while none. */
  onDemandKey: z.string().optional(),
  onDemandItems: z.number().int().nonnegative().default(0),
  history: z.array(RoundRecordSchema).default([]),
  /** The batch's items, and the share of them that may fail (a system or model failure) before it fails. */
  items: z.number().int().nonnegative().default(0),
  toleratedFailurePercentage: z.number().min(0).max(100).default(100),
  /** When the round's batches were canceled at the deadline: it waits for them to end, then collects. */
  canceledAt: z.string().optional(),
  /** Items whose round ended them `failed` so far (the Maps' FAILED results). */
  failedItems: z.number().int().nonnegative().default(0),
});
export type RoundsState = z.infer<typeof RoundsStateSchema>;

/** A line the on-demand fallback runs: the per-draft state machine's child, named as in rounds. */
interface OnDemandItem {
  line: number;
  runId: string;
  batchId: string;
  draftRef: { bucket: string; key: string };
}

export interface RoundStepDeps {
  blobs: BlobStore;
  service: BatchModelService;
  timing: RoundTiming;
  bucketName: string;
  /** The item's draft as the batch stored it (`batchKeys.item`). */
  itemKey: (batchId: string, line: number) => string;
  /** Writes the rounds so far into the batch record. */
  recordRounds: (batchId: string, rounds: RoundRecord[]) => Promise<void>;
  now?: () => number;
}

/** The ResultWriter's details of a Distributed Map (`ResultWriterDetails`). */
export interface MapResults {
  Bucket: string;
  Key: string;
}

/**
 * The share of a batch's items that failed is the batch's, not one round's: each round's Map
 * tolerates every failure, and SubmitRound ends the batch with this error once the failed items of
 * all rounds are more than `batchToleratedFailurePercentage` of the manifest, as the on-demand Map
 * fails with `States.ExceedToleratedFailureThreshold`.
 */
class ToleratedFailuresExceeded extends Error {
  override readonly name = "BatchToleratedFailureThresholdExceeded";
}

/** How many items a Distributed Map ended failed, from its ResultWriter files. */
export async function failedItemsOf(blobs: BlobStore, results: MapResults): Promise<number> {
  const manifest = JSON.parse(await blobs.get(results.Key)) as {
    ResultFiles?: Record<string, { Key: string }[]>;
  };
  let failed = 0;
  for (const file of manifest.ResultFiles?.FAILED ?? [])
    failed += (JSON.parse(await blobs.get(file.Key)) as unknown[]).length;
  return failed;
}

/**
 * The failed share of a batch-priced batch, over all of its items: every round's failed items and
 * the fallback's. Past `toleratedFailurePercentage` the batch fails, as the on-demand Map does.
 */
export function checkToleratedFailures(
  failedItems: number,
  items: number,
  toleratedFailurePercentage: number,
) {
  if (items > 0 && (failedItems / items) * 100 > toleratedFailurePercentage)
    throw new ToleratedFailuresExceeded(
      `${failedItems} of ${items} items failed; the batch tolerates ${toleratedFailurePercentage}%`,
    );
}

/** The items a round's Map left waiting for a batch, and how many it ended failed, from its ResultWriter files. */
async function parkedItems(
  blobs: BlobStore,
  results: MapResults,
): Promise<ParkedState[] & { failed?: number }> {
  const manifest = JSON.parse(await blobs.get(results.Key)) as {
    ResultFiles?: Record<string, { Key: string }[]>;
  };
  let failed = 0;
  for (const file of manifest.ResultFiles?.FAILED ?? [])
    failed += (JSON.parse(await blobs.get(file.Key)) as unknown[]).length;
  const parked: ParkedState[] & { failed?: number } = [];
  parked.failed = failed;
  for (const file of manifest.ResultFiles?.SUCCEEDED ?? []) {
    const entries = JSON.parse(await blobs.get(file.Key)) as { Output?: string }[];
    for (const entry of entries) {
      const output = entry.Output ? (JSON.parse(entry.Output) as Record<string, unknown>) : {};
      const waiting = ParkedSchema.safeParse(output.parked);
      if (waiting.success) parked.push({ ...LoopStateSchema.parse(output), parked: waiting.data });
    }
  }
  parked.sort((a, b) => lineOfRunId(a.runId) - lineOfRunId(b.runId));
  return parked;
}

const jsonl = (lines: readonly unknown[]) => lines.map((l) => `${JSON.stringify(l)}\n`).join("");

/** Adds lines to the on-demand list (a new object per round, with the earlier ones in it). */
async function addOnDemand(
  batchId: string,
  rounds: RoundsState,
  lines: readonly number[],
  round: number,
  deps: RoundStepDeps,
): Promise<Pick<RoundsState, "onDemandKey" | "onDemandItems">> {
  if (lines.length === 0) return { onDemandKey: rounds.onDemandKey, onDemandItems: rounds.onDemandItems };
  const earlier = rounds.onDemandKey ? (await deps.blobs.get(rounds.onDemandKey)).trim() : "";
  const key = roundListKeys.onDemand(batchId, round);
  const added = lines.map(
    (line): OnDemandItem => ({
      line,
      runId: childRunId(batchId, line),
      batchId,
      draftRef: { bucket: deps.bucketName, key: deps.itemKey(batchId, line) },
    }),
  );
  await deps.blobs.put(key, `${earlier ? `${earlier}\n` : ""}${jsonl(added)}`, "application/jsonl");
  return { onDemandKey: key, onDemandItems: rounds.onDemandItems + lines.length };
}

const deadlineOf = (rounds: RoundsState, timing: RoundTiming) =>
  Date.parse(rounds.startedAt) + timing.deadlineMinutes * 60_000;

/**
 * SubmitRound: the calls the last round's Map parked, as one batch request (several when the
 * service's limits say so). When no round can end before the deadline any more, or a request cannot
 * go in a batch (over the byte limit, or too few requests for the service's minimum), those items go
 * to the on-demand fallback instead. Nothing parked: the rounds are done.
 */
export async function submitRound(
  input: { batchId: string; rounds: RoundsState; mapResults: MapResults },
  deps: RoundStepDeps,
): Promise<RoundsState> {
  const { batchId } = input;
  const rounds = RoundsStateSchema.parse(input.rounds);
  const now = deps.now?.() ?? Date.now();
  const round = rounds.number + 1;
  const parked = await parkedItems(deps.blobs, input.mapResults);
  const failedItems = rounds.failedItems + (parked.failed ?? 0);
  checkToleratedFailures(failedItems, rounds.items, rounds.toleratedFailurePercentage);
  rounds.failedItems = failedItems;
  if (parked.length === 0)
    return { ...rounds, status: rounds.onDemandItems > 0 ? "on_demand" : "done", jobs: [] };
  const lines = parked.map((p) => lineOfRunId(p.runId));
  if (!roundFits(now, deadlineOf(rounds, deps.timing), rounds.longestRoundMs, deps.timing)) {
    return {
      ...rounds,
      ...(await addOnDemand(batchId, rounds, lines, round, deps)),
      status: "on_demand",
      jobs: [],
    };
  }

  const limit = pLimit(STORE_CONCURRENCY);
  const requests = await Promise.all(
    parked.map((p) =>
      limit(async () => {
        const request = await readJson(deps.blobs, p.parked.requestKey, ParkedRequestSchema);
        if (!request) throw new Error(`the parked request ${p.parked.requestKey} is missing`);
        return { item: p, line: { customId: request.customId, request: request.request } };
      }),
    ),
  );
  const { service } = deps;
  const { batches, tooLarge } = splitIntoBatches(
    requests.map((r) => r.line),
    service.limits,
    (line) => service.requestBytes(line),
  );
  const sent = batches.filter((b) => b.length >= service.limits.minRequests);
  const apart = new Set<string>([
    ...tooLarge.map((l) => l.customId),
    ...batches.filter((b) => b.length < service.limits.minRequests).flatMap((b) => b.map((l) => l.customId)),
  ]);
  const inBatch = requests.filter((r) => !apart.has(r.line.customId));
  const onDemand = await addOnDemand(
    batchId,
    rounds,
    requests.filter((r) => apart.has(r.line.customId)).map((r) => lineOfRunId(r.item.runId)),
    round,
    deps,
  );
  if (sent.length === 0) return { ...rounds, ...onDemand, status: "on_demand", jobs: [] };

  // The round's items, its custom ids, then the batches: a retried step finds its jobs and sends nothing twice.
  const itemsKey = roundListKeys.items(batchId, round);
  await deps.blobs.put(itemsKey, jsonl(inBatch.map((r) => r.item)), "application/jsonl");
  await deps.blobs.put(
    roundListKeys.requests(batchId, round),
    JSON.stringify(Object.fromEntries(inBatch.map((r) => [r.line.customId, r.item.parked.requestKey]))),
  );
  const jobs = await submitParts(batchId, round, sent, deps);
  await deps.blobs.putIfAbsent(roundListKeys.jobs(batchId, round), JSON.stringify(jobs));
  const submittedAt = new Date(now).toISOString();
  const { canceledAt: _lastRound, ...going } = rounds;
  const history = [
    ...rounds.history,
    { round, requests: inBatch.length, jobs, submittedAt, onDemand: apart.size },
  ];
  // The record names the round's batches while they run: whoever finds the batch failed or stopped
  // can see (and cancel) what it has out.
  await deps.recordRounds(batchId, history);
  return {
    ...going,
    ...onDemand,
    number: round,
    itemsKey,
    status: "submitted",
    jobs,
    waitSeconds: deps.timing.pollFirstSeconds,
    history,
  };
}

/**
 * AbandonRounds: a step of the rounds failed and the batch ends `failed` (AggregateBatch ends the
 * items still under way). The batches still running are canceled first, so that nothing goes on
 * being processed, and charged, for a batch that has ended: the round's, and the parts of the next
 * round a failed SubmitRound had already created. Never throws: a cancel the service refuses is
 * reported, and AggregateBatch still runs.
 */
export async function abandonRound(
  input: { batchId: string; rounds: RoundsState },
  deps: Pick<RoundStepDeps, "service" | "blobs">,
): Promise<{ canceled: string[]; failed: { job: string; error: string }[] }> {
  const rounds = RoundsStateSchema.parse(input.rounds);
  const jobs = new Set(rounds.jobs);
  const next = rounds.number + 1;
  for (let part = 0; ; part += 1) {
    const saved = await readJson(deps.blobs, roundListKeys.job(input.batchId, next, part), z.string()).catch(
      () => undefined,
    );
    if (saved === undefined) break;
    jobs.add(saved);
  }
  const canceled: string[] = [];
  const failed: { job: string; error: string }[] = [];
  for (const job of jobs) {
    try {
      // A status the service will not give is no reason to leave the batch running.
      const ended = await deps.service.status(job).then(
        (s) => s.ended,
        () => false,
      );
      if (ended) continue;
      await cancelUnlessEnded(job, deps.service);
      canceled.push(job);
    } catch (error) {
      failed.push({ job, error: `${(error as Error).name}: ${(error as Error).message}` });
    }
  }
  return { canceled, failed };
}

/**
 * Sends each part of a round as its own batch, saving its id the moment the service returns it: a
 * step retried after part i failed (throttled, timed out) finds parts 0..i-1 saved and sends only
 * the rest. A repeated create is a new, paid batch on every service (the Message Batches API takes
 * no idempotency key), so a part is only sent again when its id was never saved.
 */
async function submitParts(
  batchId: string,
  round: number,
  parts: readonly BatchRequestLine[][],
  deps: RoundStepDeps,
): Promise<string[]> {
  const jobs: string[] = [];
  for (const [part, lines] of parts.entries()) {
    const key = roundListKeys.job(batchId, round, part);
    const saved = await readJson(deps.blobs, key, z.string());
    if (saved !== undefined) {
      jobs.push(saved);
      continue;
    }
    const id = await deps.service.submit(`${batchId}-r${round}-${part}`, lines);
    // Another attempt of this step saved the part first: its batch is the round's, ours is not needed.
    if (!(await deps.blobs.putIfAbsent(key, JSON.stringify(id)))) {
      await deps.service.cancel(id).catch(() => undefined);
      jobs.push((await readJson(deps.blobs, key, z.string())) ?? id);
      continue;
    }
    jobs.push(id);
  }
  return jobs;
}

/**
 * PollBatch: whether every batch of the round has ended. While one has not, the next wait doubles
 * (up to the longest). Once only the fallback's reserve is left before the deadline, the batches
 * still running are canceled and the round waits for them to end: the services return (and charge
 * for) the requests they finished before the cancel, which CollectRound stores like any answer, so
 * only the unanswered items run on demand. A batch that has not ended even at the deadline is given
 * up: then all of the round's items go on demand.
 */
export async function pollRound(
  input: { batchId: string; rounds: RoundsState },
  deps: RoundStepDeps,
): Promise<RoundsState> {
  const rounds = RoundsStateSchema.parse(input.rounds);
  const statuses = await Promise.all(rounds.jobs.map((job) => deps.service.status(job)));
  if (statuses.every((s) => s.ended)) return { ...rounds, status: "ended" };
  const now = deps.now?.() ?? Date.now();
  const deadline = deadlineOf(rounds, deps.timing);
  if (rounds.canceledAt !== undefined) {
    if (now <= deadline)
      return { ...rounds, status: "waiting", waitSeconds: nextWait(rounds.waitSeconds, deps.timing) };
    return giveUpRound(input.batchId, rounds, deps);
  }
  if (mustFallBack(now, deadline, deps.timing)) {
    await Promise.all(
      rounds.jobs.map((job, i) => (statuses[i]?.ended ? undefined : cancelUnlessEnded(job, deps.service))),
    );
    return {
      ...rounds,
      canceledAt: new Date(now).toISOString(),
      status: "waiting",
      waitSeconds: deps.timing.pollFirstSeconds,
    };
  }
  return { ...rounds, status: "waiting", waitSeconds: nextWait(rounds.waitSeconds, deps.timing) };
}

/**
 * Cancels a batch that had not ended when polled. One that ended since (a cancel refused as too
 * late: Bedrock's ValidationException for a completed job) has nothing left to cancel.
 */
async function cancelUnlessEnded(job: string, service: BatchModelService): Promise<void> {
  try {
    await service.cancel(job);
  } catch (error) {
    if (!(await service.status(job)).ended) throw error;
  }
}

/** The round's batches did not end even at the deadline: every item of the round goes on demand. */
async function giveUpRound(batchId: string, rounds: RoundsState, deps: RoundStepDeps): Promise<RoundsState> {
  const items = (await deps.blobs.get(rounds.itemsKey))
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => lineOfRunId((JSON.parse(l) as { runId: string }).runId));
  const onDemand = await addOnDemand(batchId, rounds, items, rounds.number, deps);
  const history = rounds.history.map((r) =>
    r.round === rounds.number ? { ...r, onDemand: (r.onDemand ?? 0) + items.length } : r,
  );
  await deps.recordRounds(batchId, history);
  return { ...rounds, ...onDemand, history, status: "on_demand" };
}

/**
 * CollectRound: every result of the round's batches written where its parked call finds it
 * ({@link roundKeys}); a request the service returned nothing for counts as expired. The round's
 * counts, tokens and batch-priced cost go into the batch record.
 */
export async function collectRound(
  input: { batchId: string; rounds: RoundsState },
  deps: RoundStepDeps,
): Promise<RoundsState> {
  const rounds = RoundsStateSchema.parse(input.rounds);
  const round = rounds.number;
  const requestKeys = JSON.parse(
    await deps.blobs.get(roundListKeys.requests(input.batchId, round)),
  ) as Record<string, string>;
  const results = new Map<string, StoredResult["result"]>();
  for (const job of rounds.jobs)
    for (const [id, result] of await deps.service.results(job)) results.set(id, result);
  const tally = { succeeded: 0, errored: 0, expired: 0, canceled: 0 };
  let tokens: TokenTotals = { ...ZERO_TOTALS };
  let cost = 0;
  const limit = pLimit(STORE_CONCURRENCY);
  await Promise.all(
    Object.entries(requestKeys).map(([customId, requestKey]) =>
      limit(async () => {
        const result = results.get(customId) ?? { type: "expired" as const };
        tally[result.type] += 1;
        // Canceled by this round at the deadline: no failure of the request's. It stays parked as it
        // was, with its retries untouched, and the fallback runs it.
        if (result.type === "canceled" && rounds.canceledAt !== undefined) return;
        if (result.type === "succeeded") {
          const { usage, model } = result.response;
          tokens = addTotals(tokens, { ...usage, total: totalTokens(usage) });
          cost += costUsd(model, usage, "batch");
        }
        const answerKey = requestKey.replace(/batch-request\.json$/, "answer.json");
        await deps.blobs.put(
          roundKeys.result(answerKey),
          JSON.stringify({ round, result } satisfies StoredResult),
        );
      }),
    ),
  );
  const now = deps.now?.() ?? Date.now();
  const history = rounds.history.map((r) =>
    r.round === round
      ? {
          ...r,
          ...tally,
          endedAt: new Date(now).toISOString(),
          tokens,
          costUsd: Math.round(cost * 1e6) / 1e6,
        }
      : r,
  );
  await deps.recordRounds(input.batchId, history);
  const submitted = rounds.history.find((r) => r.round === round)?.submittedAt;
  const took = submitted ? now - Date.parse(submitted) : 0;
  return { ...rounds, history, status: "ended", longestRoundMs: Math.max(rounds.longestRoundMs, took) };
}
