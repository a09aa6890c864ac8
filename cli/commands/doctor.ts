import type { Command } from "commander";
import { say } from "../options.js";
import { type CommandContext, globalOptions, READ_ONLY, withRuntime } from "../session.js";

/** `redraft doctor`: reads the whole database of the data dir; --repair rebuilds it (local/repair.ts). */
export function registerDoctor(cli: Command, ctx: CommandContext): void {
  cli
    .command("doctor")
    .description(
      "read the whole database of the data dir; --repair rebuilds a damaged one from what can be read",
    )
    .option(
      "--repair",
      "when the database is damaged, move it aside, then rebuild it from what can be read (a whole one is left as it is); no redraft may have the folder open",
    )
    .action(async (cmd: { repair?: boolean }) => {
      const opts = globalOptions(ctx);
      if (cmd.repair) {
        const { repairDatabase } = await import("../../local/repair.js");
        const { checkDatabase } = await import("../doctor.js");
        const outcome = await repairDatabase(opts.dataDir, () =>
          withRuntime(opts, READ_ONLY, checkDatabase).then(
            () => true,
            () => false,
          ),
        );
        say(
          outcome.repaired
            ? `Rebuilt the database in ${opts.dataDir}; the database as it was is kept in ${outcome.copy}.`
            : `The database in ${opts.dataDir} is not damaged: nothing to repair, it is left as it was.`,
        );
      }
      await withRuntime(opts, READ_ONLY, async (runtime) => {
        const { checkDatabase } = await import("../doctor.js");
        const items = await checkDatabase(runtime);
        process.stdout.write(`The database in ${opts.dataDir} reads whole: ${items} items.\n`);
      });
    });
}
