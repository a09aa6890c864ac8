import type { Command } from "commander";
import { type CommandContext, cloud, globalOptions, inCloud, READ_ONLY, withRuntime } from "../session.js";

/** `redraft export`: a run's best draft as a file (cli/export.ts), ready to edit and resubmit. */
export function registerExport(cli: Command, ctx: CommandContext): void {
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
      const opts = globalOptions(ctx);
      if (inCloud(opts)) return (await cloud()).cloudExport(opts, runId, cmd);
      await withRuntime(opts, READ_ONLY, async (runtime) => {
        const [{ resolveRun }, { writeBestDraft }, { localRunIds }] = await Promise.all([
          import("../../app/run-id.js"),
          import("../export.js"),
          import("../../app/ids.js"),
        ]);
        const run = await resolveRun(runtime.runs, runId, opts.dataDir, localRunIds(runtime));
        await writeBestDraft(run, runtime.deps, cmd.out);
      });
    });
}
