import { mkdirSync, unlinkSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { BlobNotFoundError } from "../shared/errors.js";
import type { LoopDeps } from "../shared/loop/steps/deps.js";
import type { JudgeReport } from "../shared/loop/steps/judge.js";
import { totalTokens } from "../shared/model/types.js";
import { blobKeys } from "../shared/store/bucket-layout.js";
import type { RunRecord, RunStatus } from "../shared/store/types.js";
import { JUDGE_USAGE_KEY_BASE } from "../shared/store/types.js";
import { isAlive, type ProcessIdentity, readIfExists, SELF, writeAtomic, writeAtomicSync } from "./lock.js";

/**
 * Which process runs an execution: `<dataDir>/owners/<runId>.json`, written before the run's content
 * is claimed and removed once the run has its final status. A run still in `draft` or `correcting`
 * whose owner is gone was interrupted (the process was killed), and nobody else will finish it.
 */
export interface OwnerRecord extends ProcessIdentity {
  runId: string;
  at: string;
  /** The upload the execution started from, to name the draft if it died before registering it. */
  draftRef?: string;
  /**
   * Batch pricing: the run is parked, waiting for its batch's next round, not under way in the
   * process. While that batch can be resumed (its process died before it ended, see
   * {@link batchOwnerFile}), the run is the batch's to go on with, not an interrupted one.
   */
  batchId?: string;
}

/**
 * `<dataDir>/batch-owners/<batchId>.json`: which process runs a batch (local/batch.ts). It is removed
 * when the batch ends; one left behind by a dead process marks a batch the next `redraft batch` of
 * its manifest resumes.
 */
export const batchOwnerFile = (dataDir: string, batchId: string) =>
  join(dataDir, "batch-owners", `${batchId}.json`);

const OWNERS = "owners";
const UNFINISHED: readonly RunStatus[] = ["draft", "correcting"];

const ownerFile = (dataDir: string, runId: string) => join(dataDir, OWNERS, `${runId}.json`);

/** Owner folders this process made or found: made once, not at every run (see markOwned). */
const ownerFolders = new Set<string>();

/**
 * Records this process as the owner of an execution (kept if already there). Written and removed
 * synchronously, as SQLite writes: every draft writes one and removes it, and the thread pool's
 * round trips (open, write, close, rename, unlink) cost more than the small writes themselves.
 */
export async function markOwned(dataDir: string, runId: string, draftRef?: string): Promise<void> {
  const folder = join(dataDir, OWNERS);
  const record: OwnerRecord = { ...SELF, runId, at: new Date().toISOString(), ...(draftRef && { draftRef }) };
  const write = () => writeAtomicSync(ownerFile(dataDir, runId), JSON.stringify(record));
  if (!ownerFolders.has(folder)) {
    mkdirSync(folder, { recursive: true });
    ownerFolders.add(folder);
  }
  try {
    write();
  } catch (error) {
    // The folder went since (a data folder removed and made again): make it, once.
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    mkdirSync(folder, { recursive: true });
    write();
  }
}

/**
 * Hands a run that parked for its batch's next round to the batch: it is no longer in flight in this
 * process, so a kill of the process leaves it for the batch's resume instead of interrupting it.
 */
export async function holdForBatch(dataDir: string, runId: string, batchId: string): Promise<void> {
  const record: OwnerRecord = { ...SELF, runId, at: new Date().toISOString(), batchId };
  await writeAtomic(ownerFile(dataDir, runId), JSON.stringify(record));
}

export async function releaseOwned(dataDir: string, runId: string): Promise<void> {
  try {
    unlinkSync(ownerFile(dataDir, runId));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

export async function readOwner(dataDir: string, runId: string): Promise<OwnerRecord | undefined> {
  const text = await readIfExists(ownerFile(dataDir, runId));
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as OwnerRecord;
  } catch {
    return undefined;
  }
}

/** Whether a live process still owns the execution (a run without an owner record has none). */
export async function ownerAlive(dataDir: string, runId: string): Promise<boolean> {
  const owner = await readOwner(dataDir, runId);
  return owner !== undefined && isAlive(owner);
}

const isUnfinished = (run: RunRecord | undefined) => run !== undefined && UNFINISHED.includes(run.status);

/**
 * Finishes an interrupted run as `failed` / `interrupted`. Its token totals are made the sum of the
 * attempts it recorded: an attempt written just before the kill may not have been added yet, and
 * `addUsage` counts each attempt at most once. A run killed before Validate registered it gets a
 * failed record of its own, so the draft is listed and can be run again.
 */
export async function finishInterrupted(
  deps: Pick<LoopDeps, "runs" | "blobs">,
  runId: string,
  owner: OwnerRecord | undefined,
): Promise<boolean> {
  const at = new Date().toISOString();
  const who = owner ? `redraft process ${owner.pid}` : "the redraft process running it";
  const run = await deps.runs.getRun(runId);
  if (run && !isUnfinished(run)) return false;
  // Neither a run nor an owner: nothing was ever registered or claimed under this id (an admission
  // that turned out to be a duplicate releases its owner record without a run).
  if (!run && !owner) return false;
  if (!run) {
    // Imported here: the loop's steps are a tenth of a second that a listing of runs never needs.
    const { recordFailure } = await import("../shared/loop/steps/failure.js");
    const draft = owner?.draftRef ? await deps.blobs.get(owner.draftRef).catch(() => undefined) : undefined;
    await recordFailure(deps, {
      runId,
      draft: draft === undefined ? undefined : safeParse(draft),
      at,
      reason: "interrupted",
      message: `interrupted: ${who} ended before the run was registered; run the draft again`,
    });
    return true;
  }
  for (const attempt of await deps.runs.listAttempts(runId)) {
    const usage = { ...attempt.tokens, total: totalTokens(attempt.tokens) };
    await deps.runs.addUsage(runId, attempt.attempt, usage, attempt.costUsd);
  }
  // The judge rounds likewise: a round's report is written before its usage is added.
  for (let round = 1; ; round++) {
    const report = await readJudgeUsage(deps, runId, round);
    if (!report) break;
    const usage = { ...report.usage, total: totalTokens(report.usage) };
    await deps.runs.addUsage(runId, JUDGE_USAGE_KEY_BASE + round, usage, report.costUsd);
  }
  await deps.runs.setStatus(runId, "failed", at, {
    reason: "interrupted",
    message: `interrupted: ${who} ended while the run was ${run.status} after ${run.attempts} attempt(s); run the draft again, or review this run`,
  });
  return true;
}

/** What a judge round's report says it used, or undefined when the round has no report. */
async function readJudgeUsage(
  deps: Pick<LoopDeps, "blobs">,
  runId: string,
  round: number,
): Promise<Pick<JudgeReport, "usage" | "costUsd"> | undefined> {
  let text: string;
  try {
    text = await deps.blobs.get(blobKeys.judgeReport(runId, round));
  } catch (error) {
    if (error instanceof BlobNotFoundError) return undefined;
    throw error;
  }
  const parsed = safeParse(text) as Partial<JudgeReport> | undefined;
  return parsed?.usage ? { usage: parsed.usage, costUsd: parsed.costUsd ?? 0 } : undefined;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Finds the executions whose process is gone and finishes each as `interrupted`; returns their run
 * ids. Run by every command that opens a data folder.
 *
 * Finishing them, rather than resuming from the last state, is deliberate: the engine keeps no
 * checkpoint of an execution's state between states (only its history, written at the end), the
 * model call in flight is lost either way, and a re-run of the same content starts afresh, so a
 * person gets a terminal, reviewable record at once instead of a half-replayed one.
 *
 * Owner records go only after the run has its final status, so a run listed unfinished whose owner
 * record is gone (and that is still unfinished when read again) has no process behind it either.
 */
export async function recoverInterrupted(
  dataDir: string,
  deps: Pick<LoopDeps, "runs" | "blobs">,
): Promise<string[]> {
  const finished: string[] = [];
  const unfinished = (await Promise.all(UNFINISHED.map((status) => deps.runs.listRuns({ status })))).flat();
  const names = await readdir(join(dataDir, OWNERS)).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.endsWith(".json")) continue;
    const runId = name.slice(0, -".json".length);
    const owner = await readOwner(dataDir, runId);
    // Released between the listing and the read: its process finished with it, nothing is orphaned.
    if (owner === undefined && (await readIfExists(ownerFile(dataDir, runId))) === undefined) continue;
    if (owner && isAlive(owner)) continue;
    // Parked for a batch that will be resumed: the batch goes on with it (its stored answers kept).
    if (owner?.batchId && (await readIfExists(batchOwnerFile(dataDir, owner.batchId))) !== undefined)
      continue;
    if (await finishInterrupted(deps, runId, owner)) finished.push(runId);
    await releaseOwned(dataDir, runId);
  }
  for (const run of unfinished) {
    if (finished.includes(run.runId) || (await readOwner(dataDir, run.runId))) continue;
    if (await finishInterrupted(deps, run.runId, undefined)) finished.push(run.runId);
  }
  return finished;
}
