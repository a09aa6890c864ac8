import type { LocalRuntime } from "../local/runtime.js";

/**
 * `redraft doctor`: reads the whole store of a data folder (SQLite's integrity check of every page
 * and index, or a scan of dynalite's table), so that damage is found now rather than by the next
 * listing; `--repair` rebuilds it (local/repair.ts). Returns how many records it holds.
 */
export function checkDatabase(runtime: LocalRuntime): Promise<number> {
  return runtime.checkStore();
}
