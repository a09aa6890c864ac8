import type { RunStore } from "../shared/store/types.js";

/**
 * The ids a table prints, and the ids a command takes back.
 *
 * A run id is printed as its shortest prefix that no other run of the data folder shares, at least
 * {@link MIN_PREFIX} characters long, as git abbreviates commits: unique among every run at that
 * moment, not only among the rows shown, so any id a table prints names one run in `show`,
 * `export`, `review` and the viewer's URL.
 *
 * The run of a batch item is `<batchId>-<line>` (`b-` and 24 hex digits): every item of a batch
 * shares its first 26 characters, so a prefix would have to be the whole batch id to tell two items
 * apart. Such a run is printed as `b-<batch prefix>-<line>` instead, the batch prefix the shortest
 * unique among the batches' ids (at least {@link MIN_BATCH_HEX} digits): `b-611b40-3` is line 3 of
 * the one batch whose id starts `b-611b40`. It cannot be mistaken for a prefix of a run id, since a
 * batch id has no `-` where its shortened form has one.
 */

/** The fewest characters a plain run id is shortened to (a UUID's first 8 are its first group). */
export const MIN_PREFIX = 8;
/** The fewest hex digits of a batch id kept in a batch item's short form. */
const MIN_BATCH_HEX = 6;
/** The whole hex part of a batch id (shared/batch/record.ts `batchIdFor`). */
const BATCH_HEX = 24;

const BATCH_ITEM = new RegExp(`^b-([0-9a-f]{${BATCH_HEX}})-(\\d+)$`);
/** `b-<hex>-<line>` with fewer hex digits than a batch id has: a batch item's short form. */
const SHORT_BATCH_ITEM = new RegExp(`^b-([0-9a-f]{1,${BATCH_HEX - 1}})-(\\d+)$`);

/** The batch id and line of a batch item's run id, or undefined for any other run. */
function batchItemOf(runId: string): { batchHex: string; line: number } | undefined {
  const match = BATCH_ITEM.exec(runId);
  return match ? { batchHex: match[1] ?? "", line: Number(match[2]) } : undefined;
}

/** The length of the shortest prefix of `id` (at least `min`) that no other of `sorted` starts with. */
function uniqueLength(id: string, sorted: readonly string[], min: number): number {
  // In sorted order, the ids sharing the longest prefix with `id` are its neighbours.
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((sorted[mid] ?? "") < id) low = mid + 1;
    else high = mid;
  }
  let length = min;
  for (const other of [sorted[low - 1], sorted[low], sorted[low + 1]]) {
    if (other === undefined || other === id) continue;
    let common = 0;
    while (common < id.length && id[common] === other[common]) common++;
    length = Math.max(length, common + 1);
  }
  return Math.min(length, id.length);
}

/**
 * How each of `shown` is printed: the shortest prefix unique among `known` (every run id of the
 * data folder; the shown ones are added to it), or a batch item's short form.
 */
export function shortIds(shown: readonly string[], known: readonly string[] = []): Map<string, string> {
  const all = [...new Set([...known, ...shown])];
  const plain = all.filter((id) => !batchItemOf(id)).sort();
  const batches = [...new Set(all.flatMap((id) => batchItemOf(id)?.batchHex ?? []))].sort();
  const out = new Map<string, string>();
  for (const id of shown) {
    const item = batchItemOf(id);
    if (item)
      out.set(
        id,
        `b-${item.batchHex.slice(0, uniqueLength(item.batchHex, batches, MIN_BATCH_HEX))}-${item.line}`,
      );
    else out.set(id, id.slice(0, uniqueLength(id, plain, MIN_PREFIX)));
  }
  return out;
}

/** The run ids a short id may stand for, found in `known`: prefixes, and batch items' short forms. */
export function idsMatching(given: string, known: readonly string[]): string[] {
  const wanted = given.toLowerCase();
  if (wanted === "") return [];
  const short = SHORT_BATCH_ITEM.exec(wanted);
  if (short) {
    const [, hex = "", line = ""] = short;
    return known.filter((id) => {
      const item = batchItemOf(id);
      return item?.batchHex.startsWith(hex) === true && item.line === Number(line);
    });
  }
  return known.filter((id) => id.startsWith(wanted));
}

/** Lists every run id of a data folder; the default reads every run record of the store. */
export type RunIdLister = () => Promise<string[]>;

export const storeRunIds =
  (runs: Pick<RunStore, "listRuns">): RunIdLister =>
  async () =>
    (await runs.listRuns()).map((r) => r.runId);

/**
 * Every run id of the local runtime's data folder, from the store's index alone (no run record is
 * read). Typed loosely enough for ui/server.ts, which checks for a local runtime by its `dynamo`.
 */
export const localRunIds =
  (runtime: { runIds(): Promise<string[]> } | { readonly dynamo: unknown }): RunIdLister =>
  () => {
    if (!("runIds" in runtime)) throw new TypeError("localRunIds needs the local runtime");
    return runtime.runIds();
  };

/**
 * The one batch whose id starts with `given` (`b-` and hex digits), among the batches the run ids
 * in `known` belong to; undefined when none or several do, or when `given` is not such a prefix.
 */
export function batchMatching(given: string, known: readonly string[]): string | undefined {
  const wanted = given.toLowerCase();
  if (!/^b-[0-9a-f]+$/.test(wanted)) return undefined;
  const hexes = new Set(known.flatMap((id) => batchItemOf(id)?.batchHex ?? []));
  const matches = [...hexes].filter((hex) => `b-${hex}`.startsWith(wanted));
  return matches.length === 1 ? `b-${matches[0]}` : undefined;
}
