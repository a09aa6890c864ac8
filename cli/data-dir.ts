import { statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** The data folder's name when `--data-dir` is not given. */
export const DEFAULT_DATA_DIR = ".redraft";
/** What a folder holds once redraft has used it: its database (SQLite's file, or dynalite's folder before it). */
const MARKERS = ["redraft.db", "dynamodb"];

const isDataDir = (dir: string): boolean =>
  MARKERS.some((marker) => {
    try {
      statSync(join(dir, marker));
      return true;
    } catch {
      return false;
    }
  });

/**
 * The data folder a command run from `cwd` without `--data-dir` uses: the nearest `.redraft` that
 * redraft has used (it holds a database), in `cwd` or in a folder above, as git finds `.git`; so a
 * command run from a project's subfolder sees the project's runs instead of a new, empty folder.
 * None found: `.redraft` in `cwd`, created when first written.
 */
export function findDataDir(cwd: string = process.cwd()): string {
  let dir = resolve(cwd);
  for (;;) {
    const candidate = join(dir, DEFAULT_DATA_DIR);
    if (isDataDir(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return DEFAULT_DATA_DIR;
    dir = parent;
  }
}
