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
      const runtime = await ctx.runtime();
      const write = (text: string) => {
        process.stdout.write(`${text}\n`);
      };
      if (runId.startsWith("b-")) {
        // A batch id: the batch's summary and its items by status.
        const batch = await runtime.showBatch(runId, cmd.json === true);
        if (batch !== undefined) return write(batch);
      }
      const { run, result, execution, evidence, waiting, consoleUrl } = await runtime.readRun(runId, {
        evidence: !cmd.json,
      });
      if (cmd.json)
        return write(
          JSON.stringify({
            ...result,
            execution,
            ...(waiting && { waiting }),
            ...(consoleUrl && { consoleUrl }),
          }),
        );
      const { timeline } = await import("../show.js");
      if (evidence) write(timeline(result, run, evidence, execution, waiting));
      if (consoleUrl) write(`\nIn the Step Functions console: ${consoleUrl}`);
    });
});
