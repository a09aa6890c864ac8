import type { RunRecord, RunStore } from "../shared/store/types.js";
import { idsMatching, type RunIdLister, storeRunIds } from "./ids.js";
import { UsageError } from "./inputs.js";

/** How many candidates an ambiguous prefix names before it says how many more there are. */
const LISTED = 5;

/**
 * The run a full id, a unique prefix of one, or a batch item's short form (`b-611b40-3`, see
 * app/ids.ts) names, as git resolves abbreviated commits. An ambiguous id is a usage error listing
 * the runs it could mean; an id matching nothing is a usage error naming where it looked.
 * `listIds` lists every run id of the store (by default from its run records).
 */
export async function resolveRun(
  runs: RunStore,
  idOrPrefix: string,
  where: string,
  listIds: RunIdLister = storeRunIds(runs),
): Promise<RunRecord> {
  const exact = await runs.getRun(idOrPrefix);
  if (exact) return exact;
  const matches = idsMatching(idOrPrefix, idOrPrefix === "" ? [] : await listIds()).sort();
  const [only, ...others] = matches;
  const run = only !== undefined && others.length === 0 ? await runs.getRun(only) : undefined;
  if (run) return run;
  if (!only || others.length === 0) throw new UsageError(`no run ${idOrPrefix} in ${where}`);
  const records = await Promise.all(matches.slice(0, LISTED).map((id) => runs.getRun(id)));
  const listed = records.flatMap((r) => (r ? [`${r.runId} (${r.draftId}, ${r.status})`] : [])).join(", ");
  const more = matches.length > LISTED ? ` and ${matches.length - LISTED} more` : "";
  throw new UsageError(
    `run id ${idOrPrefix} is ambiguous: ${matches.length} runs start with it: ${listed}${more}`,
  );
}
