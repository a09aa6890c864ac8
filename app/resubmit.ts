import { randomUUID } from "node:crypto";
import { BlobNotFoundError } from "../shared/errors.js";
import { sha256 } from "../shared/hash.js";
import { blobKeys } from "../shared/store/bucket-layout.js";
import type { BlobStore, RunRecord, RunStore, StopReason } from "../shared/store/types.js";
import type { DraftSource } from "./inputs.js";

/**
 * `redraft resubmit`: failed runs run again, each once however often the command is called, locally
 * or on a deployed stack. Which run replaced a failed one is kept as a claim in the runs' own store
 * (the content claims' conditional write, keyed by the failed run's id, never expiring): two calls,
 * or two processes at once, find the claim taken and start nothing. The new run is linked to the
 * one it replaces by `parentRunId`, as `review … edit` links an edit to its run.
 *
 * A cloud run's id is known only once its event is on the bus (the execution is named after the
 * event id), so the claim is first held by a pending token that says when it was taken, then handed
 * to the run. A token left behind by a call that stopped in between is taken over once it is older
 * than {@link PENDING_STALE_MS}: that draft may then run twice, never not at all.
 */

/** Which failed runs to run again. */
export interface ResubmitFilter {
  reason?: StopReason | undefined;
  /** Runs that failed at or after this instant (ISO 8601). */
  since?: string | undefined;
  /** The children of this batch (run ids `<batchId>-<line>`). */
  batch?: string | undefined;
}

/** What one failed run became. */
export interface Resubmission {
  runId: string;
  draftId: string;
  /** `resubmitted` now; `already` by an earlier call (or one under way); `skipped` when nothing can be run again. */
  outcome: "resubmitted" | "already" | "skipped";
  /** The run that replaces it, when known. */
  resubmittedAs?: string;
  /** The new run's status, when it ran here (locally) or was followed. */
  status?: string;
  /** Why it was skipped, or what failed while it was resubmitted. */
  message?: string;
}

/** What a resubmission needs of a runtime (local, or a deployed stack). */
export interface ResubmitRuntime {
  readonly runs: RunStore;
  readonly blobs: BlobStore;
  /** Every failed run, newest first. */
  failedRuns(): Promise<RunRecord[]>;
  /**
   * Whether the new run's id is chosen before it starts (locally: then the claim names it at once)
   * or known only after (a stack: the event's id names it).
   */
  readonly choosesRunId: boolean;
  /**
   * Starts `source` as a new run linked to `parentRunId` (under `runId` when it chooses ids); its id
   * and status. `uploadRef` is where the failed run's draft was uploaded, when it was: a stack names
   * that object instead of carrying a draft too large for an event.
   */
  submit(
    source: DraftSource,
    parentRunId: string,
    runId: string,
    uploadRef?: string,
  ): Promise<{ runId: string; status?: string }>;
}

/** A claim that never expires: a failed run is resubmitted once, whenever the command is called again. */
const FOREVER_MS = 100 * 365 * 24 * 3600 * 1000;
/** How long a pending claim (a call between its claim and its event) is waited for before another call takes it over. */
const PENDING_STALE_MS = 10 * 60 * 1000;
const PENDING = "resubmitting-";

/** The claim's key: a hash like a content claim's, of the failed run's id, so no draft content shares it. */
const resubmissionClaim = (runId: string): string => sha256(`resubmit\n${runId}`);

const pendingToken = (nowMs: number) => `${PENDING}${nowMs}-${randomUUID().slice(0, 8)}`;
const pendingSince = (holder: string): number | undefined =>
  holder.startsWith(PENDING) ? Number(holder.slice(PENDING.length).split("-")[0]) : undefined;

/** Whether `run` is one of `filter`'s. */
function matches(run: RunRecord, filter: ResubmitFilter): boolean {
  if (run.status !== "failed") return false;
  if (filter.reason !== undefined && run.reason !== filter.reason) return false;
  if (filter.since !== undefined && Date.parse(run.updatedAt) < Date.parse(filter.since)) return false;
  if (filter.batch !== undefined && !run.runId.startsWith(`${filter.batch}-`)) return false;
  return true;
}

/** The draft a failed run was given: the copy the run kept, else the upload it named; undefined when neither is there. */
async function draftOf(run: RunRecord, blobs: BlobStore): Promise<string | undefined> {
  const kept = await blobs.get(blobKeys.original(run.runId)).catch((error: unknown) => {
    if (error instanceof BlobNotFoundError) return undefined;
    throw error;
  });
  if (kept !== undefined || !run.uploadRef) return kept;
  const [key, query] = run.uploadRef.split("?versionId=") as [string, string | undefined];
  return blobs.get(key, query).catch((error: unknown) => {
    if (error instanceof BlobNotFoundError) return undefined;
    throw error;
  });
}

/**
 * Takes the failed run's claim for `token`: the holder it finds, or `token` when it took it. A
 * pending holder older than PENDING_STALE_MS is taken over.
 */
async function claim(runs: RunStore, runId: string, token: string, now: Date): Promise<string> {
  const key = resubmissionClaim(runId);
  const holder = await runs.claimContent(key, token, now.toISOString(), FOREVER_MS);
  if (holder === token) return token;
  const since = pendingSince(holder);
  if (since === undefined || now.getTime() - since < PENDING_STALE_MS) return holder;
  return runs.claimContent(key, token, now.toISOString(), FOREVER_MS, holder);
}

/** Resubmits every failed run `filter` selects, oldest failure first; one entry per run considered. */
export async function resubmitFailed(
  runtime: ResubmitRuntime,
  filter: ResubmitFilter,
  onEach: (done: Resubmission) => void | Promise<void> = () => undefined,
): Promise<Resubmission[]> {
  const selected = (await runtime.failedRuns()).filter((run) => matches(run, filter)).reverse();
  const done: Resubmission[] = [];
  for (const run of selected) {
    const entry = await resubmitOne(runtime, run);
    done.push(entry);
    await onEach(entry);
  }
  return done;
}

async function resubmitOne(runtime: ResubmitRuntime, run: RunRecord): Promise<Resubmission> {
  const base = { runId: run.runId, draftId: run.draftId };
  const body = await draftOf(run, runtime.blobs);
  if (body === undefined)
    return { ...base, outcome: "skipped", message: "its draft is no longer stored (no original, no upload)" };
  const now = new Date();
  // Locally the new run's id is chosen now and the claim names it at once; on a stack it is known
  // only once the event is put, so a pending token holds the claim meanwhile.
  const token = runtime.choosesRunId ? randomUUID() : pendingToken(now.getTime());
  const holder = await claim(runtime.runs, run.runId, token, now);
  if (holder !== token)
    return {
      ...base,
      outcome: "already",
      ...(pendingSince(holder) === undefined
        ? { resubmittedAs: holder }
        : { message: "another resubmit is starting it now" }),
    };
  try {
    const started = await runtime.submit(
      { label: `${run.draftId} (run ${run.runId})`, body },
      run.runId,
      token,
      run.uploadRef,
    );
    if (started.runId !== token)
      await runtime.runs.claimContent(
        resubmissionClaim(run.runId),
        started.runId,
        new Date().toISOString(),
        FOREVER_MS,
        token,
      );
    return {
      ...base,
      outcome: "resubmitted",
      resubmittedAs: started.runId,
      ...(started.status && { status: started.status }),
    };
  } catch (error) {
    return {
      ...base,
      outcome: "skipped",
      message: runtime.choosesRunId
        ? `it could not be started (${(error as Error).message})`
        : `it could not be started (${(error as Error).message}); a later resubmit tries again once its claim is ${PENDING_STALE_MS / 60000} minutes old`,
    };
  }
}
