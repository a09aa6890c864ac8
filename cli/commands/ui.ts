import { type Command, Option } from "commander";
import { say, wholeNumber } from "../options.js";
import { type CommandContext, cloud, globalOptions, inCloud, submitter, withRuntime } from "../session.js";

/** `redraft ui`: the viewer (ui/server.ts) over the data dir, until stopped. */
export function registerUi(cli: Command, ctx: CommandContext): void {
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
      const opts = globalOptions(ctx);
      if (inCloud(opts)) return (await cloud()).cloudUi(opts, cmd, say);
      const [{ serveUntilStopped }, { loadAsl }] = await Promise.all([
        import("../../ui/server.js"),
        import("../../local/state-machine.js"),
      ]);
      await withRuntime(opts, {}, async (runtime) =>
        serveUntilStopped(
          {
            runtime,
            asl: await loadAsl(),
            port: cmd.port,
            reviewer: cmd.reviewer,
            submit: submitter(runtime),
          },
          say,
        ),
      );
    });
}
