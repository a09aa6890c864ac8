import { Option } from "commander";
import { RunStatusSchema } from "../../shared/store/types.js";
import { wholeNumber } from "../options.js";
import type { RunsOptions } from "../runtime.js";
import { defineCommand } from "./define.js";

/** `redraft runs`: the runs, newest first; the review queue with --status needs_manual_review. */
export const runsCommand = defineCommand("runs", (cli, ctx) => {
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
      await (await ctx.runtime()).runs(cmd);
    });
});
