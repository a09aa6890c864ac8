import { randomUUID } from "node:crypto";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { LocalRuntime } from "../local/runtime.js";
import type { AnyPack, DeploymentConfig } from "../shared/pack.js";
import { say } from "./options.js";
import type { CommandRuntime } from "./runtime.js";

// Everything here is imported by the command that uses it: `redraft --help` loads commander and
// the option schemas, `redraft runs` the database but no state machine, model SDK or viewer.
// The state machine's interpreter, the handlers and the packs load only when a draft is run.

/** The options given before the command, read by every command. */
export interface GlobalOptions {
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

/** What a command that ran to its end reports: 0, or 1 when its work failed as a whole (a failed batch). */
export interface CommandResult {
  code: number;
}

/**
 * What every command file is given: the program (for the global options), where to put its exit
 * code, and the runtime the global options name (cli/runtime.ts: the data folder's or a stack's).
 */
export interface CommandContext {
  readonly program: Command;
  readonly result: CommandResult;
  runtime(): Promise<CommandRuntime>;
}

export const globalOptions = (ctx: CommandContext) => ctx.program.opts<GlobalOptions>();

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

interface OpenOptions {
  maxAttempts?: number;
  /** `--model-slots`: model calls in flight at once, the rest waiting in the model queue. */
  modelSlots?: number;
  readOnly?: boolean;
}

/**
 * Checks everything the options name (model, cassette, packs, config) before printing or opening
 * anything, so that a usage error is the only line a person sees; then opens the runtime.
 */
export async function openSession(
  opts: GlobalOptions,
  { maxAttempts, readOnly, modelSlots }: OpenOptions = {},
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
  // Only beside a live corrector: a replayed or absent model never brings a live judge with it.
  const judgeModel = choice.live ? await judgeClientFor(deployment, choice.model?.provider) : undefined;
  const runtime = await runtimeModule.LocalRuntime.open({
    // The committed state machine, read by the runtime when it builds it (a listing never does).
    dataDir: resolve(opts.dataDir),
    model: boundModel(choice, modelSlots ?? deployment.modelConcurrency),
    ...(judgeModel && { judgeModel }),
    deployment,
    ...(modelSlots !== undefined && { modelSlots }),
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

/**
 * A live client for the judge when the deployment's `judge.model` (deployment-wide or per kind) is
 * `anthropic:<id>` or `bedrock:<id>` and the corrector is of another provider: the judge is then
 * not the author (README, "Grounded in the source"). Built like `--llm`'s, from the environment.
 */
async function judgeClientFor(deployment: DeploymentConfig, authorProvider: string | undefined) {
  const named = [
    deployment.judge?.model,
    ...Object.values(deployment.packs ?? {}).map((p) => p.judge?.model),
  ];
  const provider = named
    .map((m) => m?.match(/^(anthropic|bedrock):/)?.[1])
    .find((p) => p !== undefined && p !== authorProvider);
  if (!provider) return undefined;
  const { createModelClient } = await import("../shared/model/index.js");
  if (provider === "anthropic") {
    const apiKey = process.env.ANTHROPIC_API_KEY ?? "";
    if (!apiKey) {
      const { UsageError } = await import("../app/inputs.js");
      throw new UsageError("judge.model names anthropic: it needs ANTHROPIC_API_KEY in the environment");
    }
    return createModelClient({ provider: "anthropic", apiKey });
  }
  return createModelClient({
    provider: "bedrock",
    ...(process.env.AWS_REGION && { region: process.env.AWS_REGION }),
  });
}

/** A session whose notices (and the runs an earlier process left unfinished) are said on stderr. */
export async function openRuntime(
  opts: GlobalOptions,
  extra: OpenOptions & { quiet?: boolean } = {},
): Promise<LocalRuntime> {
  const { runtime, notices } = await openSession(opts, extra);
  if (!extra.quiet) for (const line of notices) say(line);
  if (runtime.interrupted.length > 0)
    say(
      `redraft: ${runtime.interrupted.length} run(s) whose process had ended were finished as failed (interrupted): ${runtime.interrupted.join(", ")}`,
    );
  return runtime;
}

/**
 * The one way a command uses the local runtime: open it, do the work, close it whatever happens
 * (a runtime left open keeps the data dir's lock and the process alive).
 */
export async function withRuntime<T>(
  opts: GlobalOptions,
  extra: OpenOptions & { quiet?: boolean },
  work: (runtime: LocalRuntime) => Promise<T>,
): Promise<T> {
  const runtime = await openRuntime(opts, extra);
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
  }
}

/** A listing's session: no notices, and nothing written. */
export const READ_ONLY = { quiet: true, readOnly: true } as const;

/** Submits one draft (`submit` from cli/run.ts, imported when a command first submits one) as a new run. */
export const submitter =
  (runtime: LocalRuntime) =>
  async (source: Parameters<typeof import("./run.js").submit>[1], parentRunId?: string) =>
    (await import("./run.js")).submit(runtime, source, randomUUID(), parentRunId);
