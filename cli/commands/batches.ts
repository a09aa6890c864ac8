import { type Command, Option } from "commander";
import { wholeNumber } from "../options.js";
import { type CommandContext, cloud, globalOptions, inCloud, READ_ONLY, withRuntime } from "../session.js";

/** `redraft batches`: the batch records, newest first. */
export function registerBatches(cli: Command, ctx: CommandContext): void {
  cli
    .command("batches")
    .description("list batches, newest first, with their counts per status")
    .addOption(new Option("--limit <n>", "at most this many").argParser(wholeNumber(1)).default(50))
    .option("--json", "one JSON batch record per line")
    .action(async (cmd: { limit: number; json?: boolean }) => {
      const opts = globalOptions(ctx);
      if (inCloud(opts)) return (await cloud()).cloudBatches(opts, cmd);
      await withRuntime(opts, READ_ONLY, async (runtime) => {
        const { batchesTable } = await import("../batch-view.js");
        const records = await runtime.batches.list(cmd.limit);
        if (cmd.json) for (const r of records) process.stdout.write(`${JSON.stringify(r)}\n`);
        else process.stdout.write(records.length ? `${batchesTable(records)}\n` : "No batches.\n");
      });
    });
}
