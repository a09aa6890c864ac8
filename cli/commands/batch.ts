import { Option } from "commander";
import { wholeNumber } from "../options.js";
import { defineCommand } from "./define.js";

/** `redraft batch`: a manifest through the batch state machine (cli/batch.ts). */
export const batchCommand = defineCommand("batch", (cli, ctx) => {
  cli
    .command("batch")
    .description(
      "run a manifest (JSONL, one draft per line, or a JSON array) through the batch state machine: each draft its own run, one batch record",
    )
    .argument("<manifest>", "a .jsonl or .json file")
    .option("--json", "one JSON run result per item (with its line), then one summary line")
    .addOption(
      new Option(
        "--concurrency <n>",
        "items in flight at once (the Distributed Map's MaxConcurrency)",
      ).argParser(wholeNumber(1)),
    )
    .option("--no-progress", "no progress bar")
    .option("--rerun", "run the manifest again even if this data folder already ran it")
    .addOption(
      new Option(
        "--pricing <pricing>",
        "on_demand: one model call per attempt; batch: rounds of batch requests at half the token price",
      ).choices(["on_demand", "batch"]),
    )
    .addOption(
      new Option(
        "--batch-latency <seconds>",
        "with --pricing batch and a replayed model: how long the simulated batch service takes to end a batch request",
      ).argParser(wholeNumber(0)),
    )
    .addOption(
      new Option(
        "--batch-deadline <minutes>",
        "with --pricing batch: the batch must end within this; the items left then run on demand (default 1440)",
      ).argParser(wholeNumber(1)),
    )
    .option("--no-wait", "cloud mode (--stack): submit and print the batch id, without following it")
    .addOption(
      new Option(
        "--via <how>",
        "cloud mode (--stack): upload the manifest under batches/, or a Batch Submitted event for a manifest already there (its key as <manifest>)",
      )
        .choices(["upload", "event"])
        .default("upload"),
    )
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft batch questions.jsonl --llm replay:examples/example.cassette.json --json > results.jsonl\n  $ npx redraft batch questions.jsonl --pricing batch --batch-latency 5 --llm replay:examples/example.cassette.json",
    )
    .action(async (manifest: string, cmd) => {
      ctx.result.code = await (await ctx.runtime()).batch(manifest, cmd);
    });
});
