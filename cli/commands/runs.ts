import { type Command, Option } from "commander";
import { RunStatusSchema } from "../../shared/store/types.js";
import { wholeNumber } from "../options.js";
import { type CommandContext, cloud, globalOptions, inCloud, READ_ONLY, withRuntime } from "../session.js";

interface RunsOptions {
  status?: string;
  draft?: string;
  limit: number;
  json?: boolean;
  explain?: boolean;
}

/** `redraft runs`: the runs, newest first; the review queue with --status needs_manual_review. */
export function registerRuns(cli: Command, ctx: CommandContext): void {
  cli
    .command("runs")
    .description("list runs, newest first (the review queue with --status needs_manual_review)")
    .addOption(new Option("--status <status>", "only runs in this status").choices(RunStatusSchema.options))
    .option("--draft <id>", "only runs of this draft")
    .addOption(new Option("--limit <n>", "at most this many").argParser(wholeNumber(1)).default(50))
    .option("--json", "one JSON run record per line")
    .option("--explain", "after the table, what each reason listed means")
    .addHelpText("after", "\nExample:\n  $ npx redraft runs --status needs_manual_review --explain")
    .action(async (cmd: RunsOptions) => {
      const opts = globalOptions(ctx);
      if (inCloud(opts)) return (await cloud()).cloudRuns(opts, cmd);
      await withRuntime(opts, READ_ONLY, async (runtime) => {
        const [{ runsTable }, { localRunIds }] = await Promise.all([
          import("../format.js"),
          import("../../app/ids.js"),
        ]);
        const runs = await runtime.runs.listRuns({
          ...(cmd.status && { status: RunStatusSchema.parse(cmd.status) }),
          ...(cmd.draft && { draftId: cmd.draft }),
          limit: cmd.limit,
        });
        if (cmd.json) for (const r of runs) process.stdout.write(`${JSON.stringify(r)}\n`);
        else
          process.stdout.write(
            runs.length ? `${runsTable(runs, undefined, await localRunIds(runtime)())}\n` : "No runs.\n",
          );
        if (cmd.explain && !cmd.json && runs.length)
          process.stdout.write(
            `${(await import("../../app/explain.js")).reasonsLegend(runs.map((r) => r.reason))}\n`,
          );
      });
    });
}
