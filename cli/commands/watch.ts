import { defineCommand } from "./define.js";

/** `redraft watch`: a folder treated like uploads under drafts/ (cli/run.ts). */
export const watchCommand = defineCommand("watch", (cli, ctx) => {
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
      await (await ctx.runtime()).watch(dir, cmd);
    });
});
