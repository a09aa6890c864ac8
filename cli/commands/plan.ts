import { InvalidArgumentError, Option } from "commander";
import { defineCommand } from "./define.js";

/** A positive number option; commander's invalid-argument error otherwise. */
const positive = (value: string): number => {
  const n = Number(value);
  if (!(Number.isFinite(n) && n > 0)) throw new InvalidArgumentError("It must be a number above 0.");
  return n;
};
const whole = (value: string): number => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("It must be a whole number.");
  return Number(value);
};

/** `redraft plan`: capacity and cost on paper; the planner and its data load only when it runs (cli/plan.ts). */
export const planCommand = defineCommand("plan", (cli) => {
  cli
    .command("plan")
    .description(
      "capacity and cost of a workload on paper: per component the drafts/s ceiling and the $ per draft, the bottleneck, the drain time, what to raise first",
    )
    .option("--drafts-per-day <n>", "drafts a day (the default: 1,000,000)", positive)
    .option("--backlog <n>", "a backlog of drafts to drain, instead of a daily volume", positive)
    .option(
      "--mix <weights>",
      "weights of the outcome paths: validated_at_once, corrected_once, corrected_twice, judge_loop, needs_review, rejected (e.g. corrected_once=3,validated_at_once=1)",
    )
    .option("--kinds <weights>", "weights of the kinds within each path (e.g. mcq=2,json=1,code=1)")
    .option(
      "--attempts <n>",
      "mean correction attempts of a corrected draft (1 and 2 are measured)",
      positive,
    )
    .option("--judge-rounds <n>", "mean judge rounds of a judged draft (2 is measured)", positive)
    .option("--input-tokens <n>", "input tokens of one model call (default 3000)", whole)
    .option("--output-tokens <n>", "output tokens of one model call (default 800)", whole)
    .addOption(
      new Option("--pricing <how>", "model pricing").choices(["on_demand", "batch"]).default("on_demand"),
    )
    .addOption(
      new Option("--via <how>", "how drafts arrive: one upload each, or in batches (a Distributed Map)")
        .choices(["uploads", "batch"])
        .default("uploads"),
    )
    .option("--env <name>", "the environment of infra/config.ts whose settings apply", "prod")
    .option(
      "--region <code>",
      "the AWS Region whose prices and quotas apply (us-east-1 where none is listed)",
    )
    .option("--tier <n>", "the Anthropic usage tier, for the anthropic provider (default 4)", whole)
    .option(
      "--max-tokens <n>",
      "max_tokens of one model call, reserved from the minute's quota when it starts (default 8192)",
      whole,
    )
    .option(
      "--deadline-hours <n>",
      "how long model work may wait for a slot before its run ends failed / deadline (default 24)",
      positive,
    )
    .option("--json", "one JSON object instead of the table")
    .addHelpText("after", "\nExample:\n  $ npx redraft plan --drafts-per-day 1000000 --env prod --json")
    .action(async (cmd: Record<string, unknown> & { json?: boolean }) => {
      const { makePlan, planJson, planText } = await import("../plan.js");
      const { json, ...opts } = cmd;
      const p = await makePlan(opts);
      process.stdout.write(`${json ? planJson(p) : planText(p)}\n`);
    });
});
