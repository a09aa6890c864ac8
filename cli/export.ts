import { writeFile } from "node:fs/promises";
import { UsageError } from "../app/inputs.js";
import { buildRunResult } from "../shared/loop/run.js";
import type { LoopDeps } from "../shared/loop/steps/deps.js";
import type { RunRecord } from "../shared/store/types.js";

/**
 * `redraft export`, offline and in the cloud alike: the run's best draft as pretty JSON, to `out`
 * (saying so on stderr) or to stdout. A run with no draft to show is a usage error.
 */
export async function writeBestDraft(
  run: RunRecord,
  deps: Pick<LoopDeps, "runs" | "blobs">,
  out: string | undefined,
): Promise<void> {
  const { finalDraft } = await buildRunResult(run.runId, deps, run);
  if (!finalDraft)
    throw new UsageError(
      `run ${run.runId} has no draft to export (it is ${run.status}${run.reason ? `: ${run.reason}` : ""})`,
    );
  const text = `${JSON.stringify(finalDraft, null, 2)}\n`;
  if (out) {
    await writeFile(out, text);
    process.stderr.write(
      `Wrote the best draft of run ${run.runId} (${run.draftId}, ${run.status}) to ${out}\n`,
    );
  } else process.stdout.write(text);
}
