import type { RunRecord, RunStore } from "../shared/store/types.js";
import { UsageError } from "./inputs.js";

/** How many candidates an ambiguous prefix names before it says how many more there are. */
const LISTED = 5;

/**
 * The run a full id or a unique prefix of one names, as git resolves abbreviated commits. An
 * ambiguous prefix is a usage error listing the runs it could mean; a prefix matching nothing is
 * a usage error naming where it looked.
 */
export async function resolveRun(runs: RunStore, idOrPrefix: string, where: string): Promise<RunRecord> {
  const exact = await runs.getRun(idOrPrefix);
  if (exact) return exact;
  const prefix = idOrPrefix.toLowerCase();
  const matches = prefix === "" ? [] : (await runs.listRuns()).filter((r) => r.runId.startsWith(prefix));
  const [only, ...others] = matches;
  if (only && others.length === 0) return only;
  if (!only) throw new UsageError(`no run ${idOrPrefix} in ${where}`);
  const listed = matches
    .slice(0, LISTED)
    .map((r) => `${r.runId} (${r.draftId}, ${r.status})`)
    .join(", ");
  const more = matches.length > LISTED ? ` and ${matches.length - LISTED} more` : "";
  throw new UsageError(
    `run id ${idOrPrefix} is ambiguous: ${matches.length} runs start with it: ${listed}${more}`,
  );
}
