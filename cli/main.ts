import "./quiet.js";
import { randomUUID } from "node:crypto";
import { readFile, watch as watchDir } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import cliProgress from "cli-progress";
import { Command, InvalidArgumentError, Option } from "commander";
import pLimit from "p-limit";
import { loadAsl } from "../local/asl-cache.js";
import { aslToMermaid } from "../local/mermaid.js";
import { type ExecutionInput, LOCAL_BUCKET, LocalRuntime } from "../local/runtime.js";
import { sha256 } from "../shared/hash.js";
import { buildRunResult, type RunResult } from "../shared/loop/run.js";
import { isPriced } from "../shared/model/pricing.js";
import { type AnyPack, type DeploymentConfig, DeploymentConfigSchema } from "../shared/pack.js";
import { builtinPacks } from "../shared/packs/index.js";
import { PackRegistry } from "../shared/registry.js";
import { RunStatusSchema } from "../shared/store/types.js";
import { jsonLine, resultsTable, runsTable, timeline } from "./format.js";
import { collectDrafts, type DraftSource, splitFile, UsageError } from "./inputs.js";
import { chooseModel } from "./model.js";
import { loadPacks } from "./packs.js";

interface GlobalOptions {
  dataDir: string;
  llm?: string;
  model?: string;
  record?: string;
  config?: string;
  pack?: string[];
}

const positiveInt = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number ≥ 0`);
  return n;
};

/** Everything a person should read goes to stderr, so `--json` stdout holds only result lines. */
const say = (text: string) => process.stderr.write(`${text}\n`);

async function deploymentConfig(opts: GlobalOptions, maxAttempts?: number): Promise<DeploymentConfig> {
  let config: DeploymentConfig = {};
  if (opts.config) {
    const parsed = DeploymentConfigSchema.safeParse(JSON.parse(await readFile(opts.config, "utf8")));
    if (!parsed.success) throw new UsageError(`--config ${opts.config}: ${parsed.error.message}`);
    config = parsed.data;
  }
  if (maxAttempts !== undefined) {
    // --max-attempts overrides the limit for this run, for every kind, caps included.
    const packs = Object.fromEntries(
      Object.entries(config.packs ?? {}).map(([kind, o]) => [
        kind,
        { ...o, loop: { ...o.loop, maxAttempts } },
      ]),
    );
    config = {
      ...config,
      packs,
      loop: { ...config.loop, maxAttempts },
      caps: { ...config.caps, maxAttempts: Math.max(maxAttempts, config.caps?.maxAttempts ?? 0) },
    };
  }
  return config;
}

async function openRuntime(opts: GlobalOptions, extra: { maxAttempts?: number; quiet?: boolean } = {}) {
  const choice = chooseModel(opts.llm, {
    ...(opts.model && { model: opts.model }),
    ...(opts.record && { record: opts.record }),
  });
  if (!extra.quiet) say(choice.description);
  const deployment = await deploymentConfig(opts, extra.maxAttempts);
  if (choice.live && choice.model && !isPriced(choice.model.model) && !extra.quiet) {
    say(
      `Warning: no price is known for ${choice.model.model}; costs show as $0 and a cost budget cannot trip.`,
    );
  }
  const packs: AnyPack[] = [];
  for (const file of opts.pack ?? []) packs.push(...(await loadPacks(file)));
  // Validate the whole configuration (overrides naming real rules) before any draft runs.
  new PackRegistry(deployment, [...builtinPacks, ...packs]);
  const dataDir = resolve(opts.dataDir);
  const asl = await loadAsl();
  const runtime = await LocalRuntime.open({
    dataDir,
    asl,
    model: choice.model,
    deployment,
    extraPacks: packs,
    retryDelayMs: choice.live ? undefined : 0,
  });
  return runtime;
}

/** Uploads one draft under `drafts/` (never overwriting) and runs the state machine on it. */
async function submit(
  runtime: LocalRuntime,
  source: DraftSource,
  submissionId: string,
  parentRunId?: string,
): Promise<RunResult> {
  const runId = randomUUID();
  // The content's hash in the key: a changed file is a new upload (never an overwrite), and two
  // labels that look alike once made safe cannot share a key.
  const safe = source.label.replace(/[^A-Za-z0-9._-]+/g, "_").slice(-120);
  const hash = sha256(`${source.label}\n${source.body}`).slice(0, 16);
  const key = `drafts/${submissionId}/${hash}-${safe}${safe.endsWith(".json") ? "" : ".json"}`;
  await runtime.blobs.putIfAbsent(key, source.body);
  const input: ExecutionInput = {
    draftRef: { bucket: LOCAL_BUCKET, key },
    submissionId,
    ...(parentRunId && { parentRunId }),
  };
  await runtime.execute(input, runId);
  const result = await buildRunResult(runId, runtime.deps);
  if (result.status === "rejected" && result.message) {
    // Name the file the person gave, not the upload key.
    result.message = `${source.label}: ${result.message.replace(`${key}: `, "")}`;
  }
  return result;
}

async function runCommand(
  paths: string[],
  cmd: { json?: boolean; maxAttempts?: number; concurrency: number; progress: boolean },
  opts: GlobalOptions,
) {
  const sources = await collectDrafts(paths);
  if (sources.length === 0)
    throw new UsageError(`no drafts found in ${paths.join(", ")} (looking for .json, .jsonl files)`);
  const runtime = await openRuntime(opts, {
    ...(cmd.maxAttempts !== undefined && { maxAttempts: cmd.maxAttempts }),
  });
  try {
    const submissionId = randomUUID();
    const limit = pLimit(cmd.concurrency);
    const showBar = cmd.progress && process.stderr.isTTY && !cmd.json;
    const bar = showBar
      ? new cliProgress.SingleBar(
          { format: "{bar} {value}/{total} drafts | {status}", stream: process.stderr },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
    bar?.start(sources.length, 0, { status: "" });
    const results = await Promise.all(
      sources.map((source) =>
        limit(async () => {
          const result = await submit(runtime, source, submissionId);
          if (cmd.json) process.stdout.write(`${jsonLine(result)}\n`);
          bar?.increment({ status: `${result.draftId}: ${result.status}` });
          return result;
        }),
      ),
    );
    bar?.stop();
    if (!cmd.json) {
      process.stdout.write(`${resultsTable(results)}\n`);
      const example = results.find((r) => r.attempts > 0) ?? results[0];
      if (example)
        say(
          `See one run's timeline: npx redraft show ${example.runId}${opts.dataDir !== ".redraft" ? ` --data-dir ${opts.dataDir}` : ""}`,
        );
    }
  } finally {
    await runtime.close();
  }
}

function program(): Command {
  const cli = new Command("redraft")
    .description(
      "Check LLM drafts against rules, schemas, tests and a judge; have Claude correct what fails; escalate the rest.",
    )
    .option("--data-dir <dir>", "where runs, drafts and events are kept", ".redraft")
    .option(
      "--llm <model>",
      "anthropic | bedrock | replay:<cassette.json> | none (default: anthropic when ANTHROPIC_API_KEY is set, else none)",
    )
    .option("--model <id>", "model id for anthropic or bedrock")
    .option("--record <file>", "record the live model's answers into a cassette file")
    .option("--config <file>", "deployment config JSON: loop limits, caps, per-kind rule overrides")
    .option(
      "--pack <file...>",
      "extra packs to register: declarative files (JSON) or TypeScript/JavaScript modules",
    )
    .showHelpAfterError()
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft run examples/ --llm replay:examples/example.cassette.json\n  $ npx redraft runs --status needs_manual_review",
    );

  cli
    .command("run")
    .description(
      "run drafts (JSON files, JSON arrays, JSONL files, or folders of them) through the state machine",
    )
    .argument("<paths...>", "files or folders")
    .option("--json", "print one JSON run result per draft per line on stdout, nothing else")
    .addOption(
      new Option("--max-attempts <n>", "override the correction limit for this run").argParser(
        positiveInt("--max-attempts"),
      ),
    )
    .addOption(
      new Option("--concurrency <n>", "drafts in flight at once")
        .argParser(positiveInt("--concurrency"))
        .default(4),
    )
    .option("--no-progress", "no progress bar")
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft run examples/ --json --llm replay:examples/example.cassette.json > results.jsonl",
    )
    .action((paths: string[], cmd) => runCommand(paths, cmd, cli.opts<GlobalOptions>()));

  cli
    .command("runs")
    .description("list runs, newest first (the review queue with --status needs_manual_review)")
    .addOption(new Option("--status <status>", "only runs in this status").choices(RunStatusSchema.options))
    .option("--draft <id>", "only runs of this draft")
    .addOption(new Option("--limit <n>", "at most this many").argParser(positiveInt("--limit")).default(50))
    .option("--json", "one JSON run record per line")
    .addHelpText("after", "\nExample:\n  $ npx redraft runs --status needs_manual_review")
    .action(async (cmd: { status?: string; draft?: string; limit: number; json?: boolean }) => {
      const runtime = await openRuntime(cli.opts<GlobalOptions>(), { quiet: true });
      try {
        const runs = await runtime.runs.listRuns({
          ...(cmd.status && { status: RunStatusSchema.parse(cmd.status) }),
          ...(cmd.draft && { draftId: cmd.draft }),
          limit: cmd.limit,
        });
        if (cmd.json) for (const r of runs) process.stdout.write(`${JSON.stringify(r)}\n`);
        else process.stdout.write(runs.length ? `${runsTable(runs)}\n` : "No runs.\n");
      } finally {
        await runtime.close();
      }
    });

  cli
    .command("show")
    .description(
      "the attempt timeline of a run: violations, repairs, diffs, analysis, tokens, cost, and the execution path",
    )
    .argument("<runId>")
    .option("--json", "the full run result as JSON")
    .addHelpText("after", "\nExample:\n  $ npx redraft show 3f2c9a1e-…")
    .action(async (runId: string, cmd: { json?: boolean }) => {
      const runtime = await openRuntime(cli.opts<GlobalOptions>(), { quiet: true });
      try {
        const run = await runtime.runs.getRun(runId);
        if (!run) throw new UsageError(`no run ${runId} in ${cli.opts<GlobalOptions>().dataDir}`);
        const result = await buildRunResult(runId, runtime.deps);
        if (cmd.json)
          process.stdout.write(`${JSON.stringify({ ...result, execution: await runtime.history(runId) })}\n`);
        else process.stdout.write(`${timeline(result, run, await runtime.history(runId))}\n`);
      } finally {
        await runtime.close();
      }
    });

  cli
    .command("review")
    .description(
      "record a person's decision on a draft that needs review; edit resubmits the edited draft as a new run",
    )
    .argument("<runId>")
    .argument("<decision>", "approve | reject | edit")
    .argument("[file]", "the edited draft (edit only)")
    .option("--note <text>", "why")
    .option("--reviewer <name>", "who decided", process.env.USER ?? "reviewer")
    .addHelpText(
      "after",
      "\nExamples:\n  $ npx redraft review 3f2c9a1e-… approve --note 'homogeneity is fine here'\n  $ npx redraft review 3f2c9a1e-… edit fixed.json",
    )
    .action(
      async (
        runId: string,
        decision: string,
        file: string | undefined,
        cmd: { note?: string; reviewer: string },
      ) => {
        if (!["approve", "reject", "edit"].includes(decision))
          throw new UsageError(`decision must be approve, reject or edit, not "${decision}"`);
        if (decision === "edit" && !file) throw new UsageError("review … edit needs the edited draft's file");
        const runtime = await openRuntime(cli.opts<GlobalOptions>(), { quiet: decision !== "edit" });
        try {
          const { reviewRun } = await import("./review.js");
          const outcome = await reviewRun(runtime, runId, decision as "approve" | "reject" | "edit", {
            ...(file && { file }),
            ...(cmd.note && { note: cmd.note }),
            reviewer: cmd.reviewer,
            submit: (source, parentRunId) => submit(runtime, source, randomUUID(), parentRunId),
          });
          process.stdout.write(`${outcome}\n`);
        } finally {
          await runtime.close();
        }
      },
    );

  cli
    .command("asl")
    .description("print the synthesized state machine definition (ASL), or a Mermaid flowchart of it")
    .option("--mermaid", "a Mermaid flowchart instead of the ASL JSON")
    .addHelpText("after", "\nExample:\n  $ npx redraft asl --mermaid")
    .action(async (cmd: { mermaid?: boolean }) => {
      const asl = await loadAsl();
      process.stdout.write(`${cmd.mermaid ? aslToMermaid(asl) : JSON.stringify(asl, null, 2)}\n`);
    });

  cli
    .command("watch")
    .description(
      "treat files dropped into a folder like uploads under drafts/: each new or changed file is run",
    )
    .argument("<dir>")
    .option("--json", "one JSON run result per line")
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft watch inbox/ --llm replay:examples/example.cassette.json",
    )
    .action(async (dir: string, cmd: { json?: boolean }) => {
      const runtime = await openRuntime(cli.opts<GlobalOptions>());
      say(`Watching ${dir} for drafts (Ctrl-C to stop).`);
      const controller = new AbortController();
      const stop = () => controller.abort();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      const pending = new Map<string, NodeJS.Timeout>();
      try {
        for await (const event of watchDir(dir, { signal: controller.signal })) {
          const name = event.filename;
          if (!name || !/\.(json|jsonl|ndjson)$/i.test(name) || name.startsWith(".")) continue;
          // Editors and copies fire several events per file: settle first.
          clearTimeout(pending.get(name));
          pending.set(
            name,
            setTimeout(async () => {
              pending.delete(name);
              const text = await readFile(join(dir, name), "utf8").catch(() => undefined);
              if (text === undefined) return;
              for (const source of splitFile(join(dir, name), text)) {
                // Same content dropped twice within the dedupe window is a duplicate, like an S3 redelivery.
                const result = await submit(runtime, source, "watch");
                if (cmd.json) process.stdout.write(`${jsonLine(result)}\n`);
                else
                  process.stdout.write(
                    `${basename(name)}: ${result.draftId} ${result.status}${result.reason ? ` (${result.reason})` : ""} run ${result.runId}\n`,
                  );
              }
            }, 250),
          );
        }
      } catch (error) {
        if ((error as Error).name !== "AbortError") throw error;
      } finally {
        for (const t of pending.values()) clearTimeout(t);
        await runtime.close();
      }
    });
  return cli;
}

export async function main(argv: string[] = process.argv): Promise<number> {
  const cli = program();
  cli.exitOverride();
  try {
    await cli.parseAsync(argv);
    return 0;
  } catch (error) {
    const e = error as Error & { code?: string; exitCode?: number };
    if (e.code === "commander.helpDisplayed" || e.code === "commander.version" || e.code === "commander.help")
      return 0;
    if (e.code?.startsWith("commander.")) return e.exitCode ?? 2;
    if (e instanceof UsageError || e.name === "InvalidPackError") {
      say(`redraft: ${e.message}`);
      return 2;
    }
    say(`redraft: system failure: ${e.stack ?? e.message}`);
    return 1;
  }
}
