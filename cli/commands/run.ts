import { Option } from "commander";
import { LoopSettingsSchema } from "../../shared/loop-settings.js";
import { wholeNumber } from "../options.js";
import type { RunOptions } from "../runtime.js";
import { defineCommand } from "./define.js";

/** `redraft run`: drafts from files and folders, streamed through the state machine (cli/run.ts). */
export const runCommand = defineCommand("run", (cli, ctx) => {
  cli
    .command("run")
    .description(
      "run drafts (JSON files, JSON arrays, JSONL files, or folders of them) through the state machine",
    )
    .argument("<paths...>", "files or folders")
    .option("--json", "print one JSON run result per draft per line on stdout, nothing else")
    .addOption(
      new Option("--max-attempts <n>", "override the correction limit for this run").argParser(
        wholeNumber(0, LoopSettingsSchema.shape.maxAttempts.maxValue ?? undefined),
      ),
    )
    .addOption(
      new Option("--concurrency <n>", "drafts in flight at once").argParser(wholeNumber(1)).default(4),
    )
    .addOption(
      new Option(
        "--model-slots <n>",
        "model calls in flight at once; the rest of a burst waits for a slot, it does not fail (default: the deployment's modelConcurrency, else 4)",
      ).argParser(wholeNumber(1)),
    )
    .option("--no-progress", "no progress bar")
    .option(
      "--rerun",
      "run drafts again even when the same content already finished in this data folder (reprinted with duplicate: true otherwise)",
    )
    .option("--no-wait", "cloud mode (--stack): submit and print each run id, without following the runs")
    .addOption(
      new Option("--via <how>", "cloud mode (--stack): an upload under drafts/, or a Draft Submitted event")
        .choices(["upload", "event"])
        .default("upload"),
    )
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft run examples/drafts/ --json --llm replay:examples/example.cassette.json > results.jsonl",
    )
    .action(async (paths: string[], cmd: RunOptions) => {
      await (await ctx.runtime()).run(paths, cmd);
    });
});
