import { type Command, Option } from "commander";
import { type RunRecord, RunStatusSchema } from "../../shared/store/types.js";
import { wholeNumber } from "../options.js";
import { type CommandContext, cloud, globalOptions, inCloud, READ_ONLY, withRuntime } from "../session.js";

interface RunsOptions {
  status?: string;
  draft?: string;
  limit: number;
  json?: boolean;
  explain?: boolean;
  after?: string;
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
    .option("--after <run>", "the runs after this one (the last of the previous page), for paging")
    .option("--explain", "after the table, what each reason listed means")
    .addHelpText("after", "\nExample:\n  $ npx redraft runs --status needs_manual_review --explain")
    .action(async (cmd: RunsOptions) => {
      const opts = globalOptions(ctx);
      if (inCloud(opts)) return (await cloud()).cloudRuns(opts, cmd);
      await withRuntime(opts, READ_ONLY, async (runtime) => {
        const [{ runsTable }, { localRunIds }, { pageLocalRuns, writePage }, { resolveRun }] =
          await Promise.all([
            import("../format.js"),
            import("../../app/ids.js"),
            import("../runs.js"),
            import("../../app/run-id.js"),
          ]);
        // Read a page at a time: a --json listing of every run is written as it is read.
        const runs: RunRecord[] = [];
        await pageLocalRuns(
          runtime,
          {
            status: cmd.status === undefined ? undefined : RunStatusSchema.parse(cmd.status),
            draft: cmd.draft,
            limit: cmd.limit,
            after: cmd.after,
          },
          (given) => resolveRun(runtime.runs, given, opts.dataDir, localRunIds(runtime)),
          async (page) => {
            if (cmd.json) await writePage(page.map((r) => `${JSON.stringify(r)}\n`).join(""));
            else runs.push(...page);
          },
        );
        if (cmd.json) return;
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
