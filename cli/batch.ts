import { basename } from "node:path";
import cliProgress from "cli-progress";
import { UsageError } from "../app/inputs.js";
import { readRegularFile } from "../app/regular-file.js";
import { decodeText } from "../app/text-encoding.js";
import { LocalBatchRunner } from "../local/batch.js";
import type { LocalRuntime } from "../local/runtime.js";
import { LOCAL_BUCKET, loadBatchAsl } from "../local/state-machine.js";
import { BATCH_LIMITS } from "../shared/batch/manifest.js";
import { batchIdFor } from "../shared/batch/record.js";
import type { Pricing } from "../shared/batch/rounds.js";
import { sha256 } from "../shared/hash.js";
import type { BatchModelService } from "../shared/model/batch.js";
import { BATCHES_PREFIX } from "../shared/store/bucket-layout.js";
import { batchItems, batchSummary, itemLine, SHORT, statusesIn, summaryLine } from "./batch-view.js";

/**
 * `redraft batch`: the batch state machine on the local runtime (local/batch.ts). What its records
 * say is printed by cli/batch-view.ts, which listing and `show` load without this runner.
 */

const say = (text: string) => process.stderr.write(`${text}\n`);

export interface BatchCommandOptions {
  json?: boolean;
  concurrency?: number;
  progress: boolean;
  rerun?: boolean;
  /** `--pricing`: absent, the state machine's default (on demand). */
  pricing?: Pricing;
  /** `--batch-latency`, in seconds. */
  batchLatency?: number;
  /** `--batch-deadline`, in minutes. */
  batchDeadline?: number;
}

/**
 * The batch service `--pricing batch` sends its rounds to: the Message Batches API itself when the
 * model is Claude through the Anthropic API, the local stand-in over a replayed model (its answers
 * matched by draft and purpose, as on demand). Bedrock batch inference needs the deployed stack
 * (an S3 bucket and a service role), so a local batch on Bedrock is refused.
 */
async function batchServiceFor(
  runtime: LocalRuntime,
  env = process.env,
): Promise<BatchModelService | undefined> {
  const model = runtime.deps.model;
  if (model === undefined)
    throw new UsageError(
      "--pricing batch needs a model to send rounds to (--llm anthropic or --llm replay:<file>); with --llm none nothing is corrected, so nothing is priced",
    );
  if (model.provider === "bedrock")
    throw new UsageError(
      "--pricing batch with --llm bedrock needs the deployed stack (Bedrock batch inference reads its input from S3); use --llm anthropic or replay:<file>",
    );
  if (model.provider !== "anthropic") return undefined;
  const { AnthropicBatchService } = await import("../shared/model/anthropic.js");
  return new AnthropicBatchService({ apiKey: env.ANTHROPIC_API_KEY ?? "", model: model.model });
}

/** A manifest that cannot be read, said in one line: no such file, a folder, no permission. */
function unreadableManifest(manifest: string, error: unknown): UsageError {
  const code = (error as NodeJS.ErrnoException).code;
  const why =
    code === "ENOENT"
      ? "no such file"
      : code === "EISDIR"
        ? "it is a folder (a manifest is one .jsonl or .json file)"
        : code === "EACCES"
          ? "permission denied"
          : (error as Error).message;
  return new UsageError(`cannot read the manifest ${manifest}: ${why}`);
}

/**
 * The manifest's text, read before anything opens or prints (a mistyped name is one line, not the
 * model's notice and then the error), and read as a draft file is (text-encoding.ts): a Latin-1
 * manifest is refused in one line, not uploaded with U+FFFD in its drafts; UTF-16 with a byte-order
 * mark is read as such.
 */
export async function readManifest(manifest: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readRegularFile(manifest);
  } catch (error) {
    throw unreadableManifest(manifest, error);
  }
  const decoded = decodeText(bytes);
  if ("problem" in decoded) throw new UsageError(`the manifest ${manifest} ${decoded.problem}`);
  return decoded.text;
}

/**
 * Uploads the manifest under `batches/` (keyed by its content, never overwritten) and runs the batch
 * state machine on it. The same manifest again is the same batch: its result is reprinted with
 * `"duplicate": true` and nothing runs, unless `--rerun`. Returns the exit code: 1 when the batch failed.
 */
export async function batchCommand(
  runtime: LocalRuntime,
  manifest: string,
  text: string,
  cmd: BatchCommandOptions,
): Promise<number> {
  if (Buffer.byteLength(text) > BATCH_LIMITS.maxManifestBytes)
    throw new UsageError(
      `${manifest} is larger than a batch takes (${BATCH_LIMITS.maxManifestBytes} bytes): split it into several`,
    );
  const digest = sha256(text).slice(0, 16);
  const key = `${BATCHES_PREFIX}${digest}-${basename(manifest).replace(/[^A-Za-z0-9._-]+/g, "_")}`;
  await runtime.blobs.putIfAbsent(key, text);
  // Like an upload's version id: the same content is the same delivery; --rerun is a new one.
  const batchId = batchIdFor(["upload", LOCAL_BUCKET, key, cmd.rerun ? new Date().toISOString() : "local"]);

  const showBar = cmd.progress && process.stderr.isTTY && !cmd.json;
  const counts: Record<string, number> = {};
  const bar = showBar
    ? new cliProgress.SingleBar(
        { format: "{bar} {value}/{total} items | {counts}", stream: process.stderr, hideCursor: true },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  const countsText = () =>
    statusesIn(Object.keys(counts).filter((s) => counts[s]))
      .map((s) => `${SHORT[s] ?? s} ${counts[s]}`)
      .join(" · ");
  let reruns = 0;
  const runner = new LocalBatchRunner(runtime, await loadBatchAsl());
  if ((cmd.batchLatency !== undefined || cmd.batchDeadline !== undefined) && cmd.pricing !== "batch")
    throw new UsageError("--batch-latency and --batch-deadline go with --pricing batch");
  // A batch of this manifest still `running` goes on priced as it began (the runner resumes it with
  // its record's pricing), so its rounds go to the same service whatever this command asked.
  const existing = await runner.batches.get(batchId);
  const pricing = (existing?.status === "running" && existing.pricing) || cmd.pricing;
  const batchPricing =
    pricing === "batch"
      ? {
          service: await batchServiceFor(runtime),
          batchLatencyMs: (cmd.batchLatency ?? 0) * 1000,
          // A service that takes seconds is polled every few seconds, the interval growing.
          timing: {
            ...(cmd.batchDeadline !== undefined && { deadlineMinutes: cmd.batchDeadline }),
            ...(cmd.batchLatency && {
              pollFirstSeconds: 1,
              pollMaxSeconds: Math.max(2, Math.ceil(cmd.batchLatency / 2)),
            }),
          },
        }
      : {};
  const outcome = await runner.run(batchId, key, {
    ...(pricing && { pricing }),
    ...batchPricing,
    concurrency: cmd.concurrency,
    onItems: (total) => bar?.start(total, 0, { counts: "" }),
    onItem: (item) => {
      if (item.rerun) reruns += 1;
      counts[item.status] = (counts[item.status] ?? 0) + 1;
      bar?.increment({ counts: countsText() });
    },
  });
  bar?.stop();
  const record = outcome.record;
  if (!record)
    throw new Error(
      `batch ${batchId} has no record: ${outcome.execution?.error?.error ?? "the execution failed"}: ${outcome.execution?.error?.cause ?? ""}`,
    );
  if (outcome.duplicate && record.status === "running")
    say(`redraft: batch ${batchId} of this manifest is running in another process; showing it as it is now.`);
  const items = await batchItems(runtime, record);
  // For a person, on stderr: --json's stdout holds only the result lines.
  if (outcome.duplicate && record.status !== "running")
    say(`This manifest already ran as batch ${batchId}: nothing ran again (--rerun runs it again).`);
  if (outcome.resumed)
    say(
      `Batch ${batchId} had been interrupted; it was resumed: its finished items were not run again` +
        (reruns > 0
          ? `, and ${reruns} item(s) cut short were run again (their interrupted runs stay as history: redraft runs --status failed).`
          : "."),
    );
  if (cmd.json) {
    for (const item of items)
      process.stdout.write(`${await itemLine(runtime, batchId, item, outcome.duplicate)}\n`);
    process.stdout.write(
      `${summaryLine(record, {
        ...(outcome.duplicate && { duplicate: true }),
        ...(outcome.resumed && { resumed: true, rerun: reruns }),
      })}\n`,
    );
  } else {
    process.stdout.write(`${batchSummary(record)}\n`);
    say(`See its items: npx redraft show ${batchId}`);
  }
  return record.status === "failed" ? 1 : 0;
}
