import type { Command } from "commander";
import { type CommandContext, cloud, globalOptions, inCloud, READ_ONLY, withRuntime } from "../session.js";

/** `redraft show`: a run's story (cli/show.ts), or a batch's counts and items. */
export function registerShow(cli: Command, ctx: CommandContext): void {
  cli
    .command("show")
    .description(
      "the attempt timeline of a run: repairs, violations, judge findings, diffs, analysis, tokens and cost by purpose, and the execution path",
    )
    .argument(
      "<runId>",
      "a run id, or a unique prefix of one; or a batch id (b-…): its counts and items by status",
    )
    .option("--json", "the full run result as JSON")
    .addHelpText("after", "\nExample:\n  $ npx redraft show 3f2c9a1e")
    .action(async (runId: string, cmd: { json?: boolean }) => {
      const opts = globalOptions(ctx);
      if (inCloud(opts)) return (await cloud()).cloudShow(opts, runId, cmd);
      await withRuntime(opts, READ_ONLY, async (runtime) => {
        const [{ resolveRun }, { buildRunResult }, { loadRunEvidence, timeline }, ids] = await Promise.all([
          import("../../app/run-id.js"),
          import("../../shared/loop/run.js"),
          import("../show.js"),
          import("../../app/ids.js"),
        ]);
        const listIds = ids.localRunIds(runtime);
        if (runId.startsWith("b-")) {
          // A batch id: the batch's summary and its items by status.
          const { showBatch } = await import("../batch-view.js");
          const batches = runtime.batches;
          const batch =
            (await batches.get(runId)) ??
            (await batches.get(ids.batchMatching(runId, await listIds()) ?? runId));
          if (batch) {
            process.stdout.write(`${await showBatch(runtime, batch, cmd.json === true, await listIds())}\n`);
            return;
          }
        }
        const run = await resolveRun(runtime.runs, runId, opts.dataDir, listIds);
        const result = await buildRunResult(run.runId, runtime.deps);
        const execution = await runtime.history(run.runId);
        // A run under way may be waiting for a model slot in the process that runs it.
        const since =
          run.status === "draft" || run.status === "correcting"
            ? await (await import("../../local/waiting.js")).waitingSince(runtime.dataDir, run.runId)
            : undefined;
        const waiting = since && {
          state: "waiting_for_model_slot",
          since,
          ageSeconds: Math.max(0, Math.round((Date.now() - Date.parse(since)) / 1000)),
        };
        if (cmd.json)
          process.stdout.write(`${JSON.stringify({ ...result, execution, ...(waiting && { waiting }) })}\n`);
        else {
          const evidence = await loadRunEvidence(result, runtime.deps);
          process.stdout.write(`${timeline(result, run, evidence, execution, waiting || undefined)}\n`);
        }
      });
    });
}
