import { constants } from "node:fs";
import { access, lstat, mkdir, stat, statfs } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";

/**
 * The data folder's own faults, each said in one line with what to do: a path that cannot be a data
 * folder ({@link DataDirError}, refused before anything is opened), and the faults of a folder in use
 * (a full disk, a damaged database, a lock held elsewhere) that {@link dataDirFault} recognises in
 * whatever error they surfaced as.
 */

/** `--data-dir` names a path that cannot be a data folder: the command is refused as a usage error. */
class DataDirError extends Error {
  override readonly name = "DataDirError";
}

/**
 * File systems that only look like folders (the kernel's views of processes, devices and control
 * groups): nothing can be kept there, and a recursive mkdir under /proc never returns.
 */
const VIRTUAL_FILE_SYSTEMS = new Map<number, string>([
  [0x9fa0, "proc"],
  [0x62656572, "sysfs"],
  [0x1cd1, "devpts"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
  [0x64626720, "debugfs"],
  [0x74726163, "tracefs"],
  [0x73636673, "securityfs"],
  [0xcafe4a11, "bpf"],
]);

const code = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;

/** The path itself when it exists, else its nearest ancestor that does; `blocked` when that one is no folder. */
async function nearestExisting(path: string): Promise<{ path: string; isDirectory: boolean }> {
  for (let at = path; ; at = dirname(at)) {
    const info = await lstat(at).catch((error: unknown) => error as NodeJS.ErrnoException);
    if (!(info instanceof Error)) {
      if (info.isSymbolicLink()) {
        // Followed, as every later call will follow it.
        const target = await stat(at).catch(() => undefined);
        return { path: at, isDirectory: target?.isDirectory() ?? false };
      }
      return { path: at, isDirectory: info.isDirectory() };
    }
    if (info.code !== "ENOENT" && info.code !== "ENOTDIR") throw info;
    if (dirname(at) === at) return { path: at, isDirectory: true };
  }
}

/**
 * Makes sure `dataDir` can be a data folder, making it when it is missing, or throws a
 * {@link DataDirError} that says why not: a file, a path under a file, a virtual file system, a
 * folder this user cannot make, read or write. Each check is one system call: no wait, no retry.
 */
export async function prepareDataDir(dataDir: string): Promise<void> {
  const path = resolve(dataDir);
  const found = await nearestExisting(path);
  const fs = await statfs(found.path).catch(() => undefined);
  const virtual = fs && VIRTUAL_FILE_SYSTEMS.get(Number(fs.type));
  if (virtual)
    throw new DataDirError(
      `--data-dir ${dataDir} is on ${virtual}, a virtual file system that cannot keep data: give a folder on a disk`,
    );
  if (!found.isDirectory)
    throw new DataDirError(
      found.path === path
        ? `--data-dir ${dataDir} is a file, not a folder: give a folder, or a path where one can be made`
        : `--data-dir ${dataDir} cannot be made: ${found.path} is a file, not a folder`,
    );
  if (found.path !== path) {
    try {
      await mkdir(path, { recursive: true });
    } catch (error) {
      throw new DataDirError(`--data-dir ${dataDir} cannot be made: ${reason(error)}`);
    }
  }
  try {
    await access(path, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new DataDirError(`--data-dir ${dataDir} cannot be used: ${reason(error)}`);
  }
}

function reason(error: unknown): string {
  switch (code(error)) {
    case "EACCES":
    case "EPERM":
      return "permission denied (this user may not read and write there)";
    case "EROFS":
      return "it is on a read-only file system";
    case "ENOSPC":
      return "no space left on the disk";
    case "ENOTDIR":
      return "a part of the path is a file, not a folder";
    default:
      return (error as Error).message;
  }
}

/** Every message and code of an error and its causes, for recognising what the store said. */
function chain(error: unknown): { text: string; codes: string[]; paths: string[] } {
  const messages: string[] = [];
  const codes: string[] = [];
  const paths: string[] = [];
  for (let e: unknown = error, depth = 0; e && depth < 8; depth++) {
    const err = e as { message?: unknown; code?: unknown; path?: unknown; cause?: unknown };
    if (typeof err.message === "string") messages.push(err.message);
    if (typeof err.code === "string") codes.push(err.code);
    if (typeof err.path === "string") paths.push(err.path);
    e = err.cause;
  }
  return { text: messages.join(": "), codes, paths };
}

function chainNames(error: unknown): string[] {
  const names: string[] = [];
  for (let e: unknown = error, depth = 0; e && depth < 8; depth++) {
    const name = (e as { name?: unknown }).name;
    if (typeof name === "string") names.push(name);
    e = (e as { cause?: unknown }).cause;
  }
  return names;
}

/** The store's own words, short: the last message of the chain that says something, on one line. */
const detail = (text: string) =>
  text
    .replace(/\s*\n\s*/g, " ")
    .replace(/^.*local store failure: /, "")
    .slice(0, 240);

/**
 * One line naming a data folder's fault and what to do, or undefined when the error is not one: a
 * full disk, a damaged database, a database lock held by a process that is not serving it, a
 * folder or file inside it this user cannot use.
 */
export function dataDirFault(error: unknown, dataDir: string): string | undefined {
  const sqlite = sqliteFault(error, dataDir);
  if (sqlite) return sqlite;
  const { text, codes, paths } = chain(error);
  const db = join(dataDir, "dynamodb");
  if (codes.includes("ENOSPC") || /no space left on device|ENOSPC/i.test(text))
    return (
      `the disk holding ${dataDir} is full (${detail(text)}): free some space, then run the command again; ` +
      "what was stored before is kept, and a run cut short is finished as failed (interrupted), to be run again"
    );
  if (
    /corrupt|truncated (block|record)|bad (magic|block|record)|checksum mismatch|missing files/i.test(text) ||
    /IO error: \S+\.(ldb|sst|log): (Invalid argument|Input\/output error)/i.test(text)
  )
    return (
      `the database in ${db} is damaged (${detail(text)}): run \`redraft doctor --repair --data-dir ${dataDir}\`, ` +
      "which keeps a copy of it, then rebuilds it from what can be read"
    );
  if (codes.includes("LEVEL_LOCKED") || /IO error: lock .*(temporarily unavailable|already held)/i.test(text))
    return (
      `the database in ${db} is locked by another process that is not serving it to redraft (${detail(text)}): ` +
      "stop that process (a second copy of redraft of another version, a backup tool), then run the command again"
    );
  if (codes.some((c) => c === "EACCES" || c === "EPERM" || c === "EROFS"))
    return (
      `${paths[0] ?? dataDir} cannot be written (${detail(text)}): give this user write access to ${dataDir}, ` +
      "or use another --data-dir"
    );
  if (chainNames(error).includes("DatabaseUnavailableError"))
    return (
      `${detail(text)}: wait for that process to finish or stop it; if no redraft is running, remove ` +
      `${join(dataDir, "dynamodb.lock")} and run the command again`
    );
  if (codes.includes("EISDIR") && paths.some((p) => p.startsWith(resolve(dataDir))))
    return `${paths[0]} is a folder where redraft keeps a file: move it out of ${dataDir}, then run the command again`;
  return undefined;
}

/** The SQLite store's faults (local/sqlite-store.ts's LocalStoreError), each in one line. */
function sqliteFault(error: unknown, dataDir: string): string | undefined {
  let e: unknown = error;
  for (let depth = 0; e && depth < 8 && (e as Error).name !== "LocalStoreError"; depth++)
    e = (e as { cause?: unknown }).cause;
  if (!e) return undefined;
  const { kind, file, message } = e as { kind: string; file: string; message: string };
  const said = detail(message);
  switch (kind) {
    case "full":
      return (
        `the disk holding ${dataDir} is full (${said}): free some space, then run the command again; ` +
        "what was stored before is kept, and a run cut short is finished as failed (interrupted), to be run again"
      );
    case "damaged":
      return (
        `the database ${file} is damaged (${said}): run \`redraft doctor --repair --data-dir ${dataDir}\`, ` +
        "which keeps a copy of it, then rebuilds it from what can be read"
      );
    case "busy":
      return (
        `the database ${file} stayed locked by another process (${said}): let the other redraft finish, ` +
        `or stop a tool holding it open, then run the command again; \`redraft doctor --data-dir ${dataDir}\` checks it`
      );
    case "foreign":
      // The message says whose file it is, that it was left as it was, and what to do.
      return message;
    case "readonly":
      return `${file} cannot be written (${said}): give this user write access to ${dataDir}, or use another --data-dir`;
    default:
      return `the database ${file} cannot be used (${said}): run \`redraft doctor --data-dir ${dataDir}\``;
  }
}
