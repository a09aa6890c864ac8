import { mkdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { readIfExists, writeAtomicSync } from "./lock.js";

/**
 * Which runs of a data folder wait for a model slot, and since when: one small file per waiting run
 * under `<dataDir>/waiting/`, written when its model work enters the process's model queue and
 * removed when a slot takes it, so that `redraft show` in another process can say the run waits.
 */
const WAITING = "waiting";
const waitingFile = (dataDir: string, runId: string) => join(dataDir, WAITING, `${runId}.json`);
const made = new Set<string>();

/** Notes that `runId` waits for a model slot since `since`. */
export function markWaiting(dataDir: string, runId: string, since: Date): void {
  if (!made.has(dataDir)) {
    mkdirSync(join(dataDir, WAITING), { recursive: true });
    made.add(dataDir);
  }
  writeAtomicSync(
    waitingFile(dataDir, runId),
    JSON.stringify({ since: since.toISOString(), pid: process.pid }),
  );
}

/** A slot took the run's model work (or it left the queue failed). */
export function clearWaiting(dataDir: string, runId: string): void {
  try {
    unlinkSync(waitingFile(dataDir, runId));
  } catch {
    // Already gone: nothing waits.
  }
}

/** Since when `runId` waits for a model slot, if it does. */
export async function waitingSince(dataDir: string, runId: string): Promise<string | undefined> {
  const text = await readIfExists(waitingFile(dataDir, runId));
  if (text === undefined) return undefined;
  try {
    const since = (JSON.parse(text) as { since?: unknown }).since;
    return typeof since === "string" ? since : undefined;
  } catch {
    return undefined;
  }
}
