import { mkdirSync, unlinkSync } from "node:fs";
import { readdir } from "node:fs/promises";
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

/** A run waiting for a model slot: since when, and its place in its process's queue (1 is next). */
export interface WaitingPlace {
  since: string;
  position: number;
}

/**
 * Every run of a data folder that waits for a model slot, with its place in the queue: each process
 * has its own model queue, first come first served (local/model-queue.ts), so a run's place is one
 * more than the runs the same process noted earlier. One read of the folder for all of them (the
 * viewer's runs list asks for a page of runs at once).
 */
export async function waitingPlaces(dataDir: string): Promise<Map<string, WaitingPlace>> {
  let names: string[];
  try {
    names = await readdir(join(dataDir, WAITING));
  } catch {
    return new Map();
  }
  const notes: { runId: string; since: string; pid: unknown }[] = [];
  for (const name of names) {
    if (!name.endsWith(".json")) continue;
    const runId = name.slice(0, -".json".length);
    const text = await readIfExists(waitingFile(dataDir, runId));
    if (text === undefined) continue;
    try {
      const note = JSON.parse(text) as { since?: unknown; pid?: unknown };
      if (typeof note.since === "string") notes.push({ runId, since: note.since, pid: note.pid });
    } catch {
      // A note being replaced: the next read finds it whole.
    }
  }
  notes.sort((a, b) => a.since.localeCompare(b.since) || a.runId.localeCompare(b.runId));
  const places = new Map<string, WaitingPlace>();
  const ahead = new Map<unknown, number>();
  for (const note of notes) {
    const position = (ahead.get(note.pid) ?? 0) + 1;
    ahead.set(note.pid, position);
    places.set(note.runId, { since: note.since, position });
  }
  return places;
}
