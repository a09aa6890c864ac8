import { Option } from "commander";
import { wholeNumber } from "../options.js";
import { defineCommand } from "./define.js";

/** `redraft ui`: the viewer (ui/server.ts) over the data dir, until stopped. */
export const uiCommand = defineCommand("ui", (cli, ctx) => {
  cli
    .command("ui")
    .description(
      "a local web page over the data dir (or, with --stack, the deployment): runs, each run's path and attempts, reviews, live",
    )
    .addOption(
      new Option("--port <n>", "port on 127.0.0.1 (0: any free port)")
        .argParser(wholeNumber(0, 65535))
        .default(4321),
    )
    .option("--reviewer <name>", "who decides the reviews made in the page", process.env.USER ?? "reviewer")
    .addHelpText("after", "\nExample:\n  $ npx redraft ui --port 4321")
    .action(async (cmd: { port: number; reviewer: string }) => {
      await (await ctx.runtime()).ui(cmd);
    });
});
