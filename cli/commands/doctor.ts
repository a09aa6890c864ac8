import { defineCommand } from "./define.js";

/** `redraft doctor`: reads the whole database of the data dir; --repair rebuilds it (local/repair.ts). */
export const doctorCommand = defineCommand("doctor", (cli, ctx) => {
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
      await (await ctx.runtime()).doctor(cmd);
    });
});
