import { randomUUID } from "node:crypto";
import { readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { mkdir, readFile, rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { hostname } from "node:os";

/**
 * Who a process is, precisely enough to tell it from a later process given the same pid: the pid,
 * the machine's boot (a reboot ends every process) and the process's start time in clock ticks
 * (Linux `/proc/<pid>/stat`; empty elsewhere, where the pid alone is checked).
 */
export interface ProcessIdentity {
  pid: number;
  boot: string;
  start: string;
}

function readBoot(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return hostname();
  }
}

/** Field 22 of `/proc/<pid>/stat`, counted after the parenthesised command name (which may hold spaces). */
function readStart(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return "";
  }
}

const BOOT = readBoot();

/** This process. */
export const SELF: ProcessIdentity = { pid: process.pid, boot: BOOT, start: readStart(process.pid) };

/** Whether the process still runs: same boot, the pid answers signal 0, and it started when it said. */
export function isAlive(owner: ProcessIdentity): boolean {
  if (owner.pid === SELF.pid && owner.start === SELF.start && owner.boot === SELF.boot) return true;
  if (owner.boot !== BOOT) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: it runs, under another user.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const start = readStart(owner.pid);
  return owner.start === "" || start === "" || start === owner.start;
}

export const sameProcess = (a: ProcessIdentity, b: ProcessIdentity): boolean =>
  a.pid === b.pid && a.boot === b.boot && a.start === b.start;

/** Whether something accepts TCP connections on 127.0.0.1:port within the timeout. */
export function answers(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/** Writes a file whole or not at all: a temporary file beside it, then a rename over it. */
export async function writeAtomic(file: string, body: string): Promise<void> {
  const temp = `${file}.${randomUUID()}.tmp`;
  await writeFile(temp, body, { flag: "wx" });
  try {
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/**
 * {@link writeAtomic} without the thread pool: for small files written once per draft (owner
 * records), where each asynchronous call costs a round trip and the write itself microseconds.
 */
export function writeAtomicSync(file: string, body: string): void {
  const temp = `${file}.${randomUUID()}.tmp`;
  writeFileSync(temp, body, { flag: "wx" });
  try {
    renameSync(temp, file);
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      // The rename's error is the one to report.
    }
    throw error;
  }
}

/** Creates the file only if it does not exist (`open(…, 'wx')`); false when it did. */
export async function createExclusive(file: string, body: string): Promise<boolean> {
  try {
    await writeFile(file, body, { flag: "wx" });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

/** The file's text, or undefined when it does not exist. */
export async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** A takeover left behind by a process killed inside it is cleared after this long. */
const TAKEOVER_STALE_MS = 5_000;

/**
 * Removes a lock file judged orphaned, unless it changed since it was judged: two processes that
 * both saw the same orphan must not remove the lock the faster one wrote next. The check and the
 * removal happen inside a `mkdir` mutex, which only one process can create.
 */
export async function removeIfUnchanged(file: string, judged: string): Promise<void> {
  const mutex = `${file}.takeover`;
  try {
    await mkdir(mutex);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const since = await stat(mutex).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
    if (since > TAKEOVER_STALE_MS) await rm(mutex, { recursive: true, force: true });
    return;
  }
  try {
    if ((await readIfExists(file)) === judged) await rm(file, { force: true });
  } finally {
    await rm(mutex, { recursive: true, force: true });
  }
}
