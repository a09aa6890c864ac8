import { existsSync } from "node:fs";
import { cp, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { storeOf } from "./backend.js";
import { prepareDataDir } from "./data-dir.js";
import { createExclusive, isAlive, type ProcessIdentity, readIfExists, SELF } from "./lock.js";
import { LOCK_FILE } from "./shared-db.js";

/** LevelDB's binding as dynalite itself loads it: the store of a data folder made before SQLite. */
const fromDynalite = createRequire(createRequire(import.meta.url).resolve("dynalite"));

/** The repair could not start: another process has the folder. Said in one line, nothing changed. */
class RepairRefusedError extends Error {
  override readonly name = "RepairRefusedError";
}

/** What a repair did: rebuilt the database, keeping the old one at `copy`, or left a whole one as it was. */
export type RepairOutcome = { repaired: true; copy: string } | { repaired: false };

/**
 * Rebuilds a data folder's damaged database from what can be read (LevelDB's own repair, which
 * salvages every readable record of its table and log files), after copying the database as it was
 * beside it. A database that reads whole is left as it was: a rebuild is a copy of every row, and
 * nothing is gained by one but the chance of losing something. The folder's lock is held
 * throughout, so no redraft process opens the database while it is rebuilt; a folder another live
 * process holds is refused. `readsWhole` reads the whole store (dynalite's; SQLite's file is read
 * here, read-only).
 */
export async function repairDatabase(
  dataDir: string,
  readsWhole: () => Promise<boolean>,
): Promise<RepairOutcome> {
  await prepareDataDir(dataDir);
  if (storeOf(dataDir) === "sqlite") return repairSqlite(dataDir);
  if (await readsWhole()) return { repaired: false };
  const lockFile = join(dataDir, LOCK_FILE);
  const held = await readIfExists(lockFile);
  if (held !== undefined) {
    const holder = safeParse(held);
    if (holder && isAlive(holder))
      throw new RepairRefusedError(
        `redraft process ${holder.pid} has ${dataDir} open: let it finish (or stop it), then repair`,
      );
    await rm(lockFile, { force: true });
  }
  if (!(await createExclusive(lockFile, JSON.stringify({ ...SELF, at: new Date().toISOString() }))))
    throw new RepairRefusedError(
      `another redraft process opened ${dataDir} just now: repair once it is done`,
    );
  try {
    const db = join(dataDir, "dynamodb");
    const copy = join(dataDir, `dynamodb.before-repair-${new Date().toISOString().replace(/[:.]/g, "-")}`);
    await cp(db, copy, { recursive: true, errorOnExist: true, force: false });
    const { ClassicLevel } = fromDynalite("classic-level") as {
      ClassicLevel: { repair(location: string): Promise<void> };
    };
    await ClassicLevel.repair(db);
    return { repaired: true, copy };
  } finally {
    await rm(lockFile, { force: true });
  }
}

function safeParse(text: string): ProcessIdentity | undefined {
  try {
    const lock = JSON.parse(text) as Partial<ProcessIdentity>;
    return typeof lock.pid === "number" && typeof lock.boot === "string" && typeof lock.start === "string"
      ? (lock as ProcessIdentity)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The SQLite store's repair: a file that reads whole (or none) is left as it is, another program's
 * file is refused untouched; a damaged one and its log are moved aside (kept whole, beside it) and
 * a new file is made of every row that can still be read (local/sqlite-store.ts's salvageInto).
 */
async function repairSqlite(dataDir: string): Promise<RepairOutcome> {
  const { SQLITE_FILE, salvageInto, inspectSqliteFile } = await import("./sqlite-store.js");
  const found = inspectSqliteFile(dataDir);
  if (found.state === "foreign") throw new RepairRefusedError(found.reason);
  if (found.state !== "damaged") return { repaired: false };
  const file = join(dataDir, SQLITE_FILE);
  const copy = join(
    dataDir,
    `${SQLITE_FILE}.before-repair-${new Date().toISOString().replace(/[:.]/g, "-")}`,
  );
  // The log goes with the file it belongs to, under the name SQLite will look for beside the copy.
  for (const suffix of ["", "-wal", "-shm"])
    if (existsSync(`${file}${suffix}`)) await rename(`${file}${suffix}`, `${copy}${suffix}`);
  salvageInto(dataDir, copy);
  return { repaired: true, copy };
}
