import "./quiet.js";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { dataDirFault } from "../local/data-dir.js";
import type { LocalRuntime } from "../local/runtime.js";
import { ErrorNames } from "../shared/errors.js";
import { type AnyPack, type DeploymentConfig, LoopSettingsSchema } from "../shared/pack.js";
import { type RunRecord, RunStatusSchema } from "../shared/store/types.js";
import { COMPLETION_SHELLS, type CompletionShell, completionScript } from "./completion.js";
import { DEFAULT_DATA_DIR, findDataDir } from "./data-dir.js";
import { UsageError } from "./inputs.js";
import { installRoot } from "./install-root.js";
import { definePlan } from "./plan-command.js";
import { REVIEW_DECISIONS, type ReviewDecision } from "./review.js";
import { registerSchemaCommand } from "./schema.js";

// Everything else is imported by the command that uses it: `redraft --help` loads commander and
// the option schemas, `redraft runs` the database but no state machine, model SDK or viewer.
// LocalRuntime alone takes about a second to import (dynalite, the AWS SDK, the handlers).

interface GlobalOptions {
  dataDir: string;
  llm?: string;
  model?: string;
  record?: string;
  config?: string;
  pack?: string[];
  debug?: boolean;
  // Cloud mode (cli/cloud/): a deployed stack instead of --data-dir.
  stack?: string;
  table?: string;
  bucket?: string;
  bus?: string;
  stateMachine?: string;
}

/** Cloud mode's commands, loaded only when a cloud option is given. */
const cloud = () => import("./cloud/commands.js");
const inCloud = (opts: GlobalOptions) =>
  Boolean(opts.stack || opts.table || opts.bucket || opts.bus || opts.stateMachine);

/** A whole-number option from `min` to `max`; anything else is commander's invalid-argument error. */
const wholeNumber =
  (min: number, max = Number.POSITIVE_INFINITY) =>
  (value: string): number => {
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!(n >= min && n <= max))
      throw new InvalidArgumentError(
        `It must be a whole number ${max === Number.POSITIVE_INFINITY ? `from ${min} up` : `from ${min} to ${max}`}.`,
      );
    return n;
  };

/** `--pack` once per file: repeatable, and never swallowing the command or paths after it. */
const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** Everything a person should read goes to stderr, so `--json` stdout holds only result lines. */
const say = (text: string) => process.stderr.write(`${text}\n`);

/** The `--config` file checked against the built-in packs and `extraPacks`, with `--max-attempts` applied. */
async function deploymentConfig(
  opts: GlobalOptions,
  extraPacks: readonly AnyPack[],
  maxAttempts?: number,
): Promise<DeploymentConfig> {
  let config: DeploymentConfig = {};
  if (opts.config) {
    const [{ loadConfig }, { builtinPacks }] = await Promise.all([
      import("./packs.js"),
      import("../shared/packs/index.js"),
    ]);
    config = await loadConfig(opts.config, [...builtinPacks, ...extraPacks]);
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

interface Session {
  runtime: LocalRuntime;
  /** Which model answers, and any warning about it: for a person, before drafts run. */
  notices: string[];
}

/**
 * Checks everything the options name (model, cassette, packs, config) before printing or opening
 * anything, so that a usage error is the only line a person sees; then opens the runtime.
 */
async function openSession(
  opts: GlobalOptions,
  { maxAttempts, readOnly }: { maxAttempts?: number; readOnly?: boolean } = {},
): Promise<Session> {
  const [{ boundModel, chooseModel, liveModelFactory }, { isPriced }, runtimeModule] = await Promise.all([
    import("./model.js"),
    import("../shared/model/pricing.js"),
    import("../local/runtime.js"),
  ]);
  const choice = chooseModel(
    opts.llm,
    {
      ...(opts.model && { model: opts.model }),
      ...(opts.record && { record: opts.record }),
    },
    process.env,
    await liveModelFactory(opts.llm),
  );
  const packs: AnyPack[] = [];
  for (const file of opts.pack ?? []) packs.push(...(await (await import("./packs.js")).loadPacks(file)));
  const deployment = await deploymentConfig(opts, packs, maxAttempts);
  const runtime = await runtimeModule.LocalRuntime.open({
    // The committed state machine, read by the runtime when it builds it (a listing never does).
    dataDir: resolve(opts.dataDir),
    model: boundModel(choice, deployment.modelConcurrency),
    deployment,
    extraPacks: packs,
    retryDelayMs: choice.live ? undefined : 0,
    ...(readOnly && { readOnly }),
  });
  const notices = [choice.description];
  if (choice.live && choice.model && !isPriced(choice.model.model))
    notices.push(
      `Warning: no price is known for ${choice.model.model}; costs show as unpriced and a cost budget cannot trip.`,
    );
  return { runtime, notices };
}

async function openRuntime(
  opts: GlobalOptions,
  extra: { maxAttempts?: number; quiet?: boolean; readOnly?: boolean } = {},
) {
  const { runtime, notices } = await openSession(opts, extra);
  if (!extra.quiet) for (const line of notices) say(line);
  if (runtime.interrupted.length > 0)
    say(
      `redraft: ${runtime.interrupted.length} run(s) whose process had ended were finished as failed (interrupted): ${runtime.interrupted.join(", ")}`,
    );
  return runtime;
}

/** `submit` from cli/run.ts, imported when a command first submits a draft. */
const submit: typeof import("./run.js").submit = async (...args) =>
  (await import("./run.js")).submit(...args);

/** What a command that ran to its end reports: 0, or 1 when its work failed as a whole (a failed batch). */
interface CommandResult {
  code: number;
}

function program(result: CommandResult = { code: 0 }): Command {
  const cli = new Command("redraft")
    .description(
      "Check LLM drafts against rules, schemas, tests and a judge; have Claude correct what fails; escalate the rest.",
    )
    .option(
      "--data-dir <dir>",
      "where runs, drafts and events are kept (default: the nearest .redraft in this folder or one above it, else ./.redraft)",
      DEFAULT_DATA_DIR,
    )
    .option(
      "--llm <model>",
      "anthropic | bedrock | replay:<cassette.json> | none (default: anthropic when ANTHROPIC_API_KEY is set, else none)",
    )
    .option("--model <id>", "model id for anthropic or bedrock")
    .option("--record <file>", "record the live model's answers into a cassette file")
    .option("--config <file>", "deployment config JSON: loop limits, caps, per-kind rule overrides")
    .option(
      "--pack <file>",
      "an extra pack to register, a declarative file (JSON) or a TypeScript/JavaScript module; repeat for more",
      collect,
    )
    .option("--debug", "on a system failure, print the stack too")
    .version(packageVersion(), "-V, --version", "print the version of redraft")
    // Without --data-dir, a subfolder of a project uses the project's data folder (cli/data-dir.ts).
    .hook("preAction", () => {
      if (cli.getOptionValueSource("dataDir") === "default")
        cli.setOptionValueWithSource("dataDir", findDataDir(), "default");
    })
    .option(
      "--stack <name>",
      "work on a deployed stack (its CloudFormation outputs name the resources): runs, show, export, batches, review",
    )
    .option("--table <name>", "cloud mode without --stack: the runs table")
    .option("--bucket <name>", "cloud mode without --stack: the drafts bucket")
    .option("--bus <name>", "cloud mode without --stack: the project's event bus")
    .option("--state-machine <arn>", "cloud mode without --stack: the per-draft state machine")
    // Errors are printed by main(), one line each; commander's own output is only --help, on stdout.
    .exitOverride()
    .configureOutput({ writeErr: () => {}, outputError: () => {} })
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft run examples/drafts/ --llm replay:examples/example.cassette.json\n  $ npx redraft runs --status needs_manual_review --explain\n  $ npx redraft run examples/pack-drafts/ --pack examples/packs/haiku.ts --pack examples/packs/abstract.pack.json --llm none",
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
        wholeNumber(0, LoopSettingsSchema.shape.maxAttempts.maxValue ?? undefined),
      ),
    )
    .addOption(
      new Option("--concurrency <n>", "drafts in flight at once").argParser(wholeNumber(1)).default(4),
    )
    .option("--no-progress", "no progress bar")
    .option(
      "--rerun",
      "run drafts again even when the same content already finished in this data folder (reprinted with duplicate: true otherwise)",
    )
    .option("--no-wait", "cloud mode (--stack): submit and print each run id, without following the runs")
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft run examples/drafts/ --json --llm replay:examples/example.cassette.json > results.jsonl",
    )
    .action(async (paths: string[], cmd) => {
      const opts = cli.opts<GlobalOptions>();
      if (inCloud(opts)) return (await cloud()).cloudRun(opts, paths, cmd);
      const { runCommand } = await import("./run.js");
      await runCommand(paths, cmd, opts.dataDir, () =>
        openRuntime(opts, { ...(cmd.maxAttempts !== undefined && { maxAttempts: cmd.maxAttempts }) }),
      );
    });

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
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft batch questions.jsonl --llm replay:examples/example.cassette.json --json > results.jsonl\n  $ npx redraft batch questions.jsonl --pricing batch --batch-latency 5 --llm replay:examples/example.cassette.json",
    )
    .action(async (manifest: string, cmd) => {
      await (await import("./batch.js")).checkManifestReadable(manifest);
      const runtime = await openRuntime(cli.opts<GlobalOptions>());
      try {
        const { batchCommand } = await import("./batch.js");
        result.code = await batchCommand(runtime, manifest, cmd);
      } finally {
        await runtime.close();
      }
    });

  cli
    .command("batches")
    .description("list batches, newest first, with their counts per status")
    .addOption(new Option("--limit <n>", "at most this many").argParser(wholeNumber(1)).default(50))
    .option("--json", "one JSON batch record per line")
    .action(async (cmd: { limit: number; json?: boolean }) => {
      if (inCloud(cli.opts<GlobalOptions>()))
        return (await cloud()).cloudBatches(cli.opts<GlobalOptions>(), cmd);
      const runtime = await openRuntime(cli.opts<GlobalOptions>(), { quiet: true, readOnly: true });
      try {
        const { batchesTable } = await import("./batch.js");
        const records = await runtime.batches.list(cmd.limit);
        if (cmd.json) for (const r of records) process.stdout.write(`${JSON.stringify(r)}\n`);
        else process.stdout.write(records.length ? `${batchesTable(records)}\n` : "No batches.\n");
      } finally {
        await runtime.close();
      }
    });

  cli
    .command("runs")
    .description("list runs, newest first (the review queue with --status needs_manual_review)")
    .addOption(new Option("--status <status>", "only runs in this status").choices(RunStatusSchema.options))
    .option("--draft <id>", "only runs of this draft")
    .addOption(new Option("--limit <n>", "at most this many").argParser(wholeNumber(1)).default(50))
    .option("--json", "one JSON run record per line")
    .option("--after <run>", "the runs after this one (the last of the previous page), for paging")
    .option("--explain", "after the table, what each reason listed means")
    .addHelpText("after", "\nExample:\n  $ npx redraft runs --status needs_manual_review --explain")
    .action(
      async (cmd: {
        status?: string;
        draft?: string;
        limit: number;
        json?: boolean;
        explain?: boolean;
        after?: string;
      }) => {
        if (inCloud(cli.opts<GlobalOptions>()))
          return (await cloud()).cloudRuns(cli.opts<GlobalOptions>(), cmd);
        const runtime = await openRuntime(cli.opts<GlobalOptions>(), { quiet: true, readOnly: true });
        try {
          const [{ runsTable }, { localRunIds }, { pageLocalRuns, writePage }, { resolveRun }] =
            await Promise.all([
              import("./format.js"),
              import("./ids.js"),
              import("./runs.js"),
              import("./run-id.js"),
            ]);
          // Read a page at a time: a --json listing of every run is written as it is read.
          const runs: RunRecord[] = [];
          await pageLocalRuns(
            runtime,
            {
              status: cmd.status === undefined ? undefined : RunStatusSchema.parse(cmd.status),
              draft: cmd.draft,
              limit: cmd.limit,
              after: cmd.after,
            },
            (given) =>
              resolveRun(runtime.runs, given, cli.opts<GlobalOptions>().dataDir, localRunIds(runtime)),
            async (page) => {
              if (cmd.json) await writePage(page.map((r) => `${JSON.stringify(r)}\n`).join(""));
              else runs.push(...page);
            },
          );
          if (cmd.json) return;
          process.stdout.write(
            runs.length ? `${runsTable(runs, undefined, await localRunIds(runtime)())}\n` : "No runs.\n",
          );
          if (cmd.explain && !cmd.json && runs.length)
            process.stdout.write(
              `${(await import("./explain.js")).reasonsLegend(runs.map((r) => r.reason))}\n`,
            );
        } finally {
          await runtime.close();
        }
      },
    );

  cli
    .command("show")
    .description(
      "the attempt timeline of a run: repairs, violations, judge findings, diffs, analysis, tokens and cost by purpose, and the execution path",
    )
    .argument(
      "<runId>",
      "a run id, or a unique prefix of one; or a batch id (b-…): its counts and items by status",
    )
    .option("--json", "the full run result as JSON")
    .addHelpText("after", "\nExample:\n  $ npx redraft show 3f2c9a1e")
    .action(async (runId: string, cmd: { json?: boolean }) => {
      const opts = cli.opts<GlobalOptions>();
      if (inCloud(opts)) return (await cloud()).cloudShow(opts, runId, cmd);
      const runtime = await openRuntime(opts, { quiet: true, readOnly: true });
      try {
        const [{ resolveRun }, { buildRunResult }, { loadRunEvidence, timeline }, ids] = await Promise.all([
          import("./run-id.js"),
          import("../shared/loop/run.js"),
          import("./show.js"),
          import("./ids.js"),
        ]);
        const listIds = ids.localRunIds(runtime);
        if (runId.startsWith("b-")) {
          // A batch id: the batch's summary and its items by status.
          const { showBatch } = await import("./batch.js");
          const batches = runtime.batches;
          const batch =
            (await batches.get(runId)) ??
            (await batches.get(ids.batchMatching(runId, await listIds()) ?? runId));
          if (batch) {
            process.stdout.write(`${await showBatch(runtime, batch, cmd.json === true, await listIds())}\n`);
            return;
          }
        }
        const run = await resolveRun(runtime.runs, runId, opts.dataDir, listIds);
        const result = await buildRunResult(run.runId, runtime.deps);
        const execution = await runtime.history(run.runId);
        if (cmd.json) process.stdout.write(`${JSON.stringify({ ...result, execution })}\n`);
        else {
          const evidence = await loadRunEvidence(result, runtime.deps);
          process.stdout.write(`${timeline(result, run, evidence, execution)}\n`);
        }
      } finally {
        await runtime.close();
      }
    });

  cli
    .command("export")
    .description("write a run's best draft as a JSON file, ready to edit and resubmit with review … edit")
    .argument("<runId>", "a run id, or a unique prefix of one")
    .option("--out <file>", "the file to write (default: stdout)")
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft export 3f2c9a1e --out fixed.json && $EDITOR fixed.json\n  $ npx redraft review 3f2c9a1e edit fixed.json",
    )
    .action(async (runId: string, cmd: { out?: string }) => {
      const opts = cli.opts<GlobalOptions>();
      if (inCloud(opts)) return (await cloud()).cloudExport(opts, runId, cmd);
      const runtime = await openRuntime(opts, { quiet: true, readOnly: true });
      try {
        const [{ resolveRun }, { writeBestDraft }, { localRunIds }] = await Promise.all([
          import("./run-id.js"),
          import("./export.js"),
          import("./ids.js"),
        ]);
        const run = await resolveRun(runtime.runs, runId, opts.dataDir, localRunIds(runtime));
        await writeBestDraft(run, runtime.deps, cmd.out);
      } finally {
        await runtime.close();
      }
    });

  cli
    .command("packs")
    .description(
      "the kinds of draft, each rule (id, default severity, description) and each setting (type, default) a config can name",
    )
    .argument("[kind]", "only this kind")
    .option("--json", "the same as JSON")
    .addHelpText(
      "after",
      "\nExamples:\n  $ npx redraft packs mcq\n  $ npx redraft packs --pack examples/packs/haiku.ts --json",
    )
    .action(async (kind: string | undefined, cmd: { json?: boolean }) => {
      const [{ loadPacks }, { builtinPacks }, { catalogText, packCatalog }, { stdoutStyle }] =
        await Promise.all([
          import("./packs.js"),
          import("../shared/packs/index.js"),
          import("./pack-catalog.js"),
          import("./output.js"),
        ]);
      const extra: AnyPack[] = [];
      for (const file of cli.opts<GlobalOptions>().pack ?? []) extra.push(...(await loadPacks(file)));
      const entries = packCatalog([...builtinPacks, ...extra], kind);
      process.stdout.write(
        cmd.json ? `${JSON.stringify(entries, null, 2)}\n` : `${catalogText(entries, stdoutStyle())}\n`,
      );
    });

  cli
    .command("review")
    .description(
      "record a person's decision on a draft that needs review; edit resubmits the edited draft as a new run",
    )
    .argument("<runId>")
    .addArgument(new Argument("<decision>").choices(REVIEW_DECISIONS))
    .argument("[file]", "the edited draft (edit only)")
    .option("--note <text>", "why")
    .option("--reviewer <name>", "who decided", process.env.USER ?? "reviewer")
    .option("--json", "the run as the decision left it, as one JSON line")
    .addHelpText(
      "after",
      "\nExamples:\n  $ npx redraft review 3f2c9a1e approve --note 'homogeneity is fine here'\n  $ npx redraft review 3f2c9a1e edit fixed.json",
    )
    .action(
      async (
        runId: string,
        decision: ReviewDecision,
        file: string | undefined,
        cmd: { note?: string; reviewer: string; json?: boolean },
      ) => {
        if (decision === "edit" && !file) throw new UsageError("review … edit needs the edited draft's file");
        if (decision !== "edit" && file)
          throw new UsageError(`review … ${decision} takes no file (only edit does): ${file}`);
        if (inCloud(cli.opts<GlobalOptions>())) {
          const outcome = await (await cloud()).cloudReview(cli.opts<GlobalOptions>(), runId, decision, {
            ...(file && { file }),
            ...(cmd.note && { note: cmd.note }),
            reviewer: cmd.reviewer,
          });
          process.stdout.write(`${outcome}\n`);
          return;
        }
        const { runtime, notices } = await openSession(cli.opts<GlobalOptions>());
        try {
          const [{ reviewDecision }, { localRunIds }] = await Promise.all([
            import("./review.js"),
            import("./ids.js"),
          ]);
          const outcome = await reviewDecision(runtime, runId, decision, {
            listIds: localRunIds(runtime),
            where: cli.opts<GlobalOptions>().dataDir,
            ...(file && { file }),
            ...(cmd.note && { note: cmd.note }),
            reviewer: cmd.reviewer,
            submit: (source, parentRunId) => submit(runtime, source, randomUUID(), parentRunId),
          });
          // Which model answered the edit, said once it was accepted: a refused edit stays one line.
          if (decision === "edit") for (const line of notices) say(line);
          process.stdout.write(`${cmd.json ? JSON.stringify(outcome) : outcome.message}\n`);
        } finally {
          await runtime.close();
        }
      },
    );

  cli
    .command("asl")
    .description("print the state machine (infra/state-machine.asl.json), or a Mermaid flowchart of it")
    .option("--mermaid", "a Mermaid flowchart instead of the ASL JSON")
    .addHelpText("after", "\nExample:\n  $ npx redraft asl --mermaid")
    .action(async (cmd: { mermaid?: boolean }) => {
      const { loadAsl, readAslArtifact } = await import("../local/state-machine.js");
      if (cmd.mermaid) {
        const { aslToMermaid } = await import("../local/mermaid.js");
        process.stdout.write(`${aslToMermaid(await loadAsl())}\n`);
      }
      // The committed file as it is, its placeholders for deployed names included.
      else process.stdout.write(await readAslArtifact());
    });

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
      const { watchCommand } = await import("./run.js");
      await watchCommand(dir, cmd, () => openRuntime(cli.opts<GlobalOptions>()));
    });

  cli
    .command("doctor")
    .description(
      "read the whole database of the data dir; --repair rebuilds a damaged one from what can be read",
    )
    .option(
      "--repair",
      "move the database aside, then rebuild it from what can be read; no redraft may have the folder open",
    )
    .action(async (cmd: { repair?: boolean }) => {
      const opts = cli.opts<GlobalOptions>();
      if (cmd.repair) {
        const { repairDatabase } = await import("../local/repair.js");
        const copy = await repairDatabase(opts.dataDir);
        say(`Rebuilt the database in ${opts.dataDir}; the database as it was is kept in ${copy}.`);
      }
      const runtime = await openRuntime(opts, { quiet: true, readOnly: true });
      try {
        const { checkDatabase } = await import("./doctor.js");
        const items = await checkDatabase(runtime);
        process.stdout.write(`The database in ${opts.dataDir} reads whole: ${items} items.\n`);
      } finally {
        await runtime.close();
      }
    });

  definePlan(cli.command("plan"));

  cli
    .command("ui")
    .description("a local web page over the data dir: runs, each run's path and attempts, reviews, live")
    .addOption(
      new Option("--port <n>", "port on 127.0.0.1 (0: any free port)")
        .argParser(wholeNumber(0, 65535))
        .default(4321),
    )
    .option("--reviewer <name>", "who decides the reviews made in the page", process.env.USER ?? "reviewer")
    .addHelpText("after", "\nExample:\n  $ npx redraft ui --port 4321")
    .action(async (cmd: { port: number; reviewer: string }) => {
      const [{ serveUntilStopped }, { loadAsl }] = await Promise.all([
        import("../ui/server.js"),
        import("../local/state-machine.js"),
      ]);
      const runtime = await openRuntime(cli.opts<GlobalOptions>());
      try {
        await serveUntilStopped(
          {
            runtime,
            asl: await loadAsl(),
            port: cmd.port,
            reviewer: cmd.reviewer,
            submit: (source, parentRunId) => submit(runtime, source, randomUUID(), parentRunId),
          },
          say,
        );
      } finally {
        await runtime.close();
      }
    });

  cli
    .command("completion")
    .description("print a shell completion script for redraft's commands and options")
    .addArgument(new Argument("<shell>").choices(COMPLETION_SHELLS))
    .addHelpText(
      "after",
      "\nExamples:\n  $ source <(npx redraft completion bash)      # in ~/.bashrc\n  $ npx redraft completion fish | source",
    )
    .action(async (shell: CompletionShell) => {
      process.stdout.write(completionScript(cli, shell));
    });

  registerSchemaCommand(cli);
  return cli;
}

/** The version in redraft's own package.json. */
function packageVersion(): string {
  const parsed: unknown = JSON.parse(readFileSync(join(installRoot(), "package.json"), "utf8"));
  return typeof parsed === "object" && parsed !== null && "version" in parsed
    ? String(parsed.version)
    : "unknown";
}

/** A message that spans lines (zod's, a compiler's) joined into one, so an error stays one line. */
const oneLine = (text: string) => text.trim().replace(/\s*\n\s*/g, " ");

/**
 * Says what went wrong and returns the exit code: 2 for a usage error (one line naming the problem,
 * nothing else), 1 for a system failure (its name and message on one line; the stack with --debug).
 */
function reportError(error: unknown, cli: Command): number {
  if (error instanceof CommanderError) {
    // --help (and `redraft help`) end with these codes and exit code 0; the help is on stdout.
    if (error.exitCode === 0) return 0;
    if (error.code === "commander.help") {
      const commands = cli.commands.map((c) => c.name()).join(", ");
      say(`redraft: missing command: one of ${commands} (redraft --help describes them)`);
    } else {
      say(`redraft: ${oneLine(error.message.replace(/^error: /, ""))}`);
    }
    return 2;
  }
  if (
    error instanceof UsageError ||
    (error instanceof Error &&
      (error.name === ErrorNames.InvalidPack ||
        error.name === "DataDirError" ||
        error.name === "RepairRefusedError" ||
        error.name === "ReviewConflictError"))
  ) {
    say(`redraft: ${oneLine(error.message)}`);
    return 2;
  }
  const e = error instanceof Error ? error : new Error(String(error));
  const debug = cli.opts<GlobalOptions>().debug === true;
  // A full disk, a damaged database, a lock held elsewhere: what it is and what to do, in one line.
  const fault = dataDirFault(error, cli.opts<GlobalOptions>().dataDir);
  if (fault) {
    say(`redraft: ${oneLine(fault)}`);
    if (debug)
      say(
        (e.stack ?? "")
          .split("\n")
          .filter((line) => /^\s+at /.test(line))
          .join("\n"),
      );
    return 1;
  }
  const hint = debug ? "" : " (--debug shows the stack)";
  say(`redraft: system failure: ${e.name}: ${oneLine(e.message)}${hint}`);
  const frames = (e.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line));
  if (debug && frames.length > 0) say(frames.join("\n"));
  return 1;
}

/**
 * Runs the command line and returns its exit code, never calling process.exit: 0 when the command
 * did its work (whatever the drafts' outcomes), 2 on a usage error, 1 on a system failure.
 */
export async function main(argv: string[] = process.argv): Promise<number> {
  const result: CommandResult = { code: 0 };
  const cli = program(result);
  try {
    await cli.parseAsync(argv);
    return result.code;
  } catch (error) {
    return reportError(error, cli);
  }
}
