import { writeFile } from "node:fs/promises";
import { UsageError } from "../app/inputs.js";
import type { Draft } from "../shared/draft.js";
import type { RunRecord } from "../shared/store/types.js";

/**
 * `redraft export`, offline and in the cloud alike: the run's best draft (CommandRuntime.bestDraft) as pretty JSON, to `out`
 * (saying so on stderr) or to stdout. A run with no draft to show is a usage error.
 */
export async function writeBestDraft(
  { run, finalDraft }: { run: RunRecord; finalDraft: Draft | null },
  out: string | undefined,
): Promise<void> {
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
