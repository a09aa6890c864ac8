import { UsageError } from "../app/inputs.js";
import { readRegularFileSync } from "../app/regular-file.js";
import { decodeText } from "../app/text-encoding.js";
import type { createModelClient } from "../shared/model/index.js";
import { DEFAULT_MODEL_CONCURRENCY, limitModel } from "../shared/model/limited.js";
import { RecordingModelClient } from "../shared/model/recorder.js";
import { cassetteProblem, ReplayModelClient } from "../shared/model/replay.js";
import type { ModelClient } from "../shared/model/types.js";

export interface ModelChoice {
  model: ModelClient | undefined;
  /** One plain sentence saying which model answers, printed at the start. */
  description: string;
  /** Replayed and absent models need no retry backoff. */
  live: boolean;
}

/** Builds a live client (`createModelClient`); the model SDKs behind it take a third of a second to import. */
export type LiveModelFactory = typeof createModelClient;

const specOf = (llm: string | undefined, env: NodeJS.ProcessEnv) =>
  llm ?? (env.ANTHROPIC_API_KEY ? "anthropic" : "none");

/** The factory for live models, imported only when `--llm` (or ANTHROPIC_API_KEY) names one. */
export async function liveModelFactory(
  llm: string | undefined,
  env = process.env,
): Promise<LiveModelFactory | undefined> {
  const spec = specOf(llm, env);
  if (spec !== "anthropic" && spec !== "bedrock") return undefined;
  return (await import("../shared/model/index.js")).createModelClient;
}

/**
 * `--llm`: Claude when ANTHROPIC_API_KEY is set (the default), `bedrock`, `replay:<file>`, or `none`.
 * `--record <file>` wraps a live model so its answers become a cassette. A live model is built with
 * `createLive`, from `liveModelFactory`.
 */
export function chooseModel(
  llm: string | undefined,
  options: { model?: string; record?: string },
  env = process.env,
  createLive?: LiveModelFactory,
): ModelChoice {
  const spec = specOf(llm, env);
  const buildLive: LiveModelFactory = (live) => {
    if (!createLive) throw new Error(`--llm ${spec} needs the live model factory (liveModelFactory)`);
    return createLive(live);
  };
  let choice: ModelChoice;
  if (spec === "anthropic") {
    const apiKey = env.ANTHROPIC_API_KEY ?? "";
    if (!apiKey) throw new UsageError("--llm anthropic needs ANTHROPIC_API_KEY in the environment");
    const model = buildLive({
      provider: "anthropic",
      apiKey,
      ...(options.model && { model: options.model }),
    });
    choice = { model, live: true, description: `Model: Claude via the Anthropic API (${model?.model}).` };
  } else if (spec === "bedrock") {
    const model = buildLive({
      provider: "bedrock",
      ...(options.model && { model: options.model }),
      ...(env.AWS_REGION && { region: env.AWS_REGION }),
    });
    choice = {
      model,
      live: true,
      description: `Model: Claude on Amazon Bedrock (${model?.model}), with your AWS credentials.`,
    };
  } else if (spec.startsWith("replay:")) {
    const file = spec.slice("replay:".length);
    if (!file) throw new UsageError("--llm replay:<file> needs a cassette file");
    choice = {
      model: replayClient(file),
      live: false,
      description: `Model: replayed answers from the cassette ${file} (no live model is called).`,
    };
  } else if (spec === "none") {
    choice = {
      model: undefined,
      live: false,
      description:
        "Model: none. Drafts are validated and repaired; those with errors go to review (set ANTHROPIC_API_KEY, or use --llm replay:<file>).",
    };
  } else {
    throw new UsageError(`unknown --llm "${spec}": use anthropic, bedrock, replay:<file> or none`);
  }
  if (options.record) {
    if (!choice.model || !choice.live)
      throw new UsageError("--record needs a live model (--llm anthropic or bedrock)");
    choice = {
      ...choice,
      model: new RecordingModelClient(choice.model, options.record),
      description: `${choice.description} Answers are recorded to ${options.record}.`,
    };
  }
  return choice;
}

/** `--llm replay:<file>`: a missing, unreadable or invalid cassette is the user's to fix, said in one line. */
function replayClient(file: string): ReplayModelClient {
  const flag = `--llm replay:${file}`;
  let bytes: Buffer;
  try {
    bytes = readRegularFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(`${flag}: ${code === "ENOENT" ? "no such file" : (error as Error).message}`);
  }
  // A cassette edited by hand and saved in Latin-1 would replay answers with U+FFFD in them.
  const decoded = decodeText(bytes);
  if ("problem" in decoded) throw new UsageError(`${flag}: the file ${decoded.problem}`);
  const { text } = decoded;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag}: not valid JSON: ${(error as Error).message}`);
  }
  const problem = cassetteProblem(value);
  if (problem !== undefined) throw new UsageError(`${flag}: ${problem}`);
  return ReplayModelClient.fromCassette(value);
}

/**
 * The chosen model behind the deployment's bound on calls in flight (`modelConcurrency`): a burst
 * waits its turn, and a 429 is waited out with jittered backoff (at once for a replayed model,
 * which, like the local Retry, needs no backoff). Outermost, so a recorder sees only real answers.
 */
export function boundModel(
  choice: ModelChoice,
  concurrency = DEFAULT_MODEL_CONCURRENCY,
): ModelClient | undefined {
  return limitModel(choice.model, { concurrency, backoff: choice.live });
}
