import { once } from "node:events";
import { UsageError } from "../app/inputs.js";
import type { LocalRuntime } from "../local/runtime.js";
import type { RunRecord, RunStatus } from "../shared/store/types.js";

/** How many runs one read of the store brings: a listing of any length holds no more at once. */
const PAGE = 500;

export interface LocalRunsQuery {
  status?: RunStatus | undefined;
  draft?: string | undefined;
  limit: number;
  /** A run id (or what `resolve` takes for one): list the runs after it, the last of the previous page. */
  after?: string | undefined;
}

/**
 * `redraft runs` on a data folder, page by page: newest first, `limit` at most, after the run
 * `after` when given. Each page is handed to `page` before the next is read, so a `--json` listing
 * of every run writes as it reads instead of holding them all.
 */
export async function pageLocalRuns(
  runtime: LocalRuntime,
  query: LocalRunsQuery,
  resolve: (given: string) => Promise<RunRecord>,
  page: (runs: RunRecord[]) => Promise<void> | void,
): Promise<number> {
  let cursor: { at: string; runId: string } | undefined;
  if (query.after !== undefined) {
    const run = await resolve(query.after).catch((error: unknown) => {
      throw new UsageError(`--after ${query.after}: ${(error as Error).message}`);
    });
    cursor = { at: query.status ? run.updatedAt : run.createdAt, runId: run.runId };
  }
  let listed = 0;
  while (listed < query.limit) {
    const runs = await runtime.listPage({
      ...(query.status && { status: query.status }),
      ...(query.draft && { draftId: query.draft }),
      limit: Math.min(PAGE, query.limit - listed),
      after: cursor,
    });
    if (runs.length === 0) break;
    await page(runs);
    listed += runs.length;
    const last = runs[runs.length - 1] as RunRecord;
    cursor = { at: query.status ? last.updatedAt : last.createdAt, runId: last.runId };
    if (runs.length < PAGE) break;
  }
  return listed;
}

/** Writes a page to stdout, waiting when the reader is behind (a slow pipe must not fill memory). */
export async function writePage(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, "drain");
}
