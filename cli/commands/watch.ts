import type { Command } from "commander";
import { type CommandContext, globalOptions, openRuntime } from "../session.js";

/** `redraft watch`: a folder treated like uploads under drafts/ (cli/run.ts). */
export function registerWatch(cli: Command, ctx: CommandContext): void {
  cli
    .command("watch")
    .description(
      "treat files dropped into a folder like uploads under drafts/: the files already there, then each new or changed file, are run",
    )
    .argument("<dir>")
    .option("--json", "one JSON run result per line")
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft watch inbox/ --llm replay:examples/example.cassette.json",
    )
    .option("--new-only", "leave the files already in the folder; run only those that appear or change")
    .action(async (dir: string, cmd: { json?: boolean; newOnly?: boolean }) => {
      const { watchCommand } = await import("../run.js");
      // The folder is checked before the runtime opens (watchCommand opens it), so a missing one is one line.
      await watchCommand(dir, cmd, () => openRuntime(globalOptions(ctx)));
    });
}
