import { defineCommand } from "./define.js";

/** `redraft export`: a run's best draft as a file (cli/export.ts), ready to edit and resubmit. */
export const exportCommand = defineCommand("export", (cli, ctx) => {
  cli
    .command("export")
    .description("write a run's best draft as a JSON file, ready to edit and resubmit with review … edit")
    .argument("<runId>", "a run id, or a unique prefix of one")
    .option("--out <file>", "the file to write (default: stdout)")
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft export 3f2c9a1e --out fixed.json && $EDITOR fixed.json\n  $ npx redraft review 3f2c9a1e edit fixed.json",
    )
    .action(async (runId: string, cmd: { out?: string }) => {
      const best = await (await ctx.runtime()).bestDraft(runId);
      await (await import("../export.js")).writeBestDraft(best, cmd.out);
    });
});
