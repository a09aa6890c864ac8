import { defineCommand } from "./define.js";

/** `redraft show`: a run's story (cli/show.ts), or a batch's counts and items. */
export const showCommand = defineCommand("show", (cli, ctx) => {
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
      await (await ctx.runtime()).show(runId, cmd);
    });
});
