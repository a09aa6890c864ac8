import { Option } from "commander";
import { wholeNumber } from "../options.js";
import { defineCommand } from "./define.js";

/** `redraft batches`: the batch records, newest first. */
export const batchesCommand = defineCommand("batches", (cli, ctx) => {
  cli
    .command("batches")
    .description("list batches, newest first, with their counts per status")
    .addOption(new Option("--limit <n>", "at most this many").argParser(wholeNumber(1)).default(50))
    .option("--json", "one JSON batch record per line")
    .action(async (cmd: { limit: number; json?: boolean }) => {
      const records = await (await ctx.runtime()).listBatches(cmd.limit);
      if (cmd.json) for (const r of records) process.stdout.write(`${JSON.stringify(r)}\n`);
      else {
        const { batchesTable } = await import("../batch-view.js");
        process.stdout.write(records.length ? `${batchesTable(records)}\n` : "No batches.\n");
      }
    });
});
