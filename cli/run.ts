import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { withPackHint } from "../app/explain.js";
import { type DraftSource, draftSources, UsageError } from "../app/inputs.js";
import type { ExecutionInput, LocalRuntime } from "../local/runtime.js";
import { holdingPlace } from "../shared/slot.js";
import { DRAFTS_PREFIX } from "../shared/store/bucket-layout.js";
import type { SourcedResult } from "./format.js";

/**
 * `redraft run`, and the submission of one draft that `run`, `watch`, `review … edit` and the viewer
 * share: an upload under `drafts/`, then an execution of the state machine.
 */

const say = (text: string) => process.stderr.write(`${text}\n`);

/**
 * What submitting a draft needs, imported by the first draft: `import()` resolves its specifier
 * again at every call, a cost a thousand drafts should pay once.
 */
let submitModules:
  | Promise<
      [
        typeof import("../shared/hash.js"),
        typeof import("../local/state-machine.js"),
        typeof import("../shared/loop/run.js"),
        typeof import("../shared/loop/steps/failure.js"),
      ]
    >
  | undefined;
const loadSubmitModules = () =>
  (submitModules ??= Promise.all([
    import("../shared/hash.js"),
    import("../local/state-machine.js"),
    import("../shared/loop/run.js"),
    import("../shared/loop/steps/failure.js"),
  ]));

/**
 * Where a draft is uploaded: under `drafts/<submissionId>/`, named by its label made safe and by
 * the hash of label and content, so that a changed file is a new upload (never an overwrite) and
 * two labels that look alike once made safe cannot share a key.
 */
async function uploadKey(source: DraftSource, submissionId: string): Promise<string> {
  const [{ sha256 }] = await loadSubmitModules();
  const safe = source.label.replace(/[^A-Za-z0-9._-]+/g, "_").slice(-120);
  const hash = sha256(`${source.label}\n${source.body}`).slice(0, 16);
  return `${DRAFTS_PREFIX}${submissionId}/${hash}-${safe}${safe.endsWith(".json") ? "" : ".json"}`;
}

/** Uploads one draft under `drafts/` (never overwriting) and runs the state machine on it. */
export async function submit(
  runtime: LocalRuntime,
  source: DraftSource,
  submissionId: string,
  parentRunId?: string,
  runId: string = randomUUID(),
): Promise<SourcedResult> {
  const [, { LOCAL_BUCKET }, { buildRunResult }, { recordFailure }] = await loadSubmitModules();
  const key = await uploadKey(source, submissionId);
  // A path that could not be read uploads nothing: Validate records its rejection.
  if (!source.rejectWith) await runtime.blobs.putIfAbsent(key, source.body);
  const input: ExecutionInput = {
    ...(source.rejectWith ? { rejectWith: source.rejectWith } : { draftRef: { bucket: LOCAL_BUCKET, key } }),
    submissionId,
    ...(parentRunId && { parentRunId }),
  };
  const { execution, run } = await runtime.executeAndRead(input, runId);
  if (!run) {
    // The execution failed before any run record existed (Validate never ran): record the failure
    // as the state machine would, so this draft has its line and `redraft show` knows the run.
    await recordFailure(runtime.deps, {
      runId,
      draft: source.body,
      at: new Date().toISOString(),
      reason: "system_error",
      message: `${source.label}: ${execution.error?.error ?? "ExecutionFailed"}: ${execution.error?.cause ?? ""}`,
    });
  }
  // The run as the execution left it, read once (a run recorded just above is read again).
  const result: SourcedResult = { ...(await buildRunResult(runId, runtime.deps, run)), source: source.label };
  if (result.status === "rejected" && result.message) {
    // Name the file the person gave, never the upload key, wherever the message put it.
    const message = result.message.replaceAll(`${key}: `, "").replaceAll(key, source.label);
    result.message = withPackHint(
      message.startsWith(source.label) ? message : `${source.label}: ${message}`,
      result.reason,
    );
  }
  return result;
}

/** Writes to stdout, waiting when the reader is behind: a slow pipe must not fill this process's memory. */
export async function writeOut(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, "drain");
}

/**
 * Drafts that may wait parked beyond `concurrency` (shared/slot.ts): each holds its draft in memory,
 * so there is a bound, far above a run's hostile drafts.
 */
const MAX_PARKED = 64;

/**
 * Runs `take` on each item of `items` with at most `concurrency` at once, pulling the next item only
 * when a worker is free: the items are read as they are needed, never all ahead. An item that parks
 * (its work waits for a slow lane that is not this thread's, shared/slot.ts) gives its place to the
 * next item while it waits, up to MAX_PARKED parked at once, so the items parked there do not hold the
 * others (issue 34: hostile json patterns beside benign drafts).
 */
export async function eachBounded<T>(
  items: AsyncIterable<T>,
  concurrency: number,
  take: (item: T) => Promise<void>,
): Promise<void> {
  const iterator = items[Symbol.asyncIterator]();
  let failed = false;
  let parked = 0;
  const workers: Promise<void>[] = [];
  const worker = async () => {
    // An async generator queues concurrent next() calls, so each item goes to exactly one worker.
    while (!failed) {
      const next = await iterator.next();
      if (next.done) return;
      let gaveUp = false;
      const release = () => {
        if (gaveUp || failed || parked >= MAX_PARKED) return;
        gaveUp = true;
        parked += 1;
        workers.push(worker());
      };
      try {
        await holdingPlace(release, () => take(next.value));
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        if (gaveUp) parked -= 1;
      }
      // Its place went to another worker when it parked: this one ends with its item.
      if (gaveUp) return;
    }
  };
  for (let i = 0; i < concurrency; i++) workers.push(worker());
  // Every worker ends its item before the first failure is thrown: the runtime closes after them
  // (workers started while waiting, by items that parked, are waited for too).
  let ended: PromiseSettledResult<void>[] = [];
  while (ended.length < workers.length) ended = await Promise.allSettled([...workers]);
  await iterator.return?.(undefined);
  const failure = ended.find((e) => e.status === "rejected");
  if (failure) throw failure.reason;
}

/** How many drafts `redraft run` shows a line for; the others are in the sums (and in `--json`). */
const TABLE_ROWS = 200;

export interface RunCommandOptions {
  json?: boolean;
  maxAttempts?: number;
  concurrency: number;
  progress: boolean;
  rerun?: boolean;
}

/**
 * `redraft run`: the drafts under `paths`, read as they are needed, `concurrency` at a time, each
 * result written as it ends (`--json`) or added to the closing table, so that memory does not grow
 * with the number of drafts. `open` opens the runtime, once the first draft is known to exist.
 */
export async function runCommand(
  paths: string[],
  cmd: RunCommandOptions,
  dataDirLabel: string,
  open: () => Promise<LocalRuntime>,
): Promise<void> {
  const [{ LOCAL_SUBMISSION_ID }, { buildRunResult }, { jsonLine, ResultsTable }] = await Promise.all([
    import("../local/runtime.js"),
    import("../shared/loop/run.js"),
    import("./format.js"),
  ]);
  const sources = draftSources(paths);
  // The first draft is read before the data folder is opened: no draft at all is a usage error alone.
  const first = await sources.next();
  if (first.done) {
    throw new UsageError(`no drafts found in ${paths.join(", ")} (looking for .json, .jsonl files)`);
  }
  const runtime = await open();
  try {
    const showBar = cmd.progress && process.stderr.isTTY && !cmd.json;
    // The bar's module is loaded only where a bar is drawn (a terminal), not by --json or a pipe.
    const cliProgress = showBar ? (await import("cli-progress")).default : undefined;
    const bar = cliProgress
      ? new cliProgress.SingleBar(
          { format: "{bar} {value}/{total} drafts read | {status}", stream: process.stderr },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
    let read = 0;
    bar?.start(1, 0, { status: "" });
    async function* all(): AsyncGenerator<DraftSource> {
      yield first.value as DraftSource;
      for await (const source of sources) {
        read += 1;
        bar?.setTotal(read + 1);
        yield source;
      }
    }
    const table = new ResultsTable(TABLE_ROWS);
    let example: { runId: string; attempts: number } | undefined;
    // Counted over every draft, for the lines under the table (which shows the first TABLE_ROWS).
    let duplicates = 0;
    let unknownKinds = 0;
    await eachBounded(all(), cmd.concurrency, async (source) => {
      // Content that already ran to an end in this folder is not run again: its result is reprinted.
      const admitted = source.rejectWith
        ? { runId: randomUUID() }
        : await runtime.admit(source.body, {
            ...(cmd.rerun && { rerun: true }),
            // The owner record names the upload from the start: submit does not write it again.
            draftRef: await uploadKey(source, LOCAL_SUBMISSION_ID),
          });
      const result: SourcedResult & { duplicate?: true } = admitted.duplicateOf
        ? {
            ...(await buildRunResult(admitted.duplicateOf, runtime.deps)),
            source: source.label,
            duplicate: true,
          }
        : await submit(runtime, source, LOCAL_SUBMISSION_ID, undefined, admitted.runId);
      if (admitted.runId) await runtime.release(admitted.runId);
      if (cmd.json)
        await writeOut(
          `${result.duplicate ? JSON.stringify({ ...JSON.parse(jsonLine(result)), duplicate: true }) : jsonLine(result)}\n`,
        );
      else table.add(result);
      if (result.duplicate) duplicates += 1;
      if (result.reason === "unknown_kind") unknownKinds += 1;
      if (!example || (example.attempts === 0 && result.attempts > 0))
        example = { runId: result.runId, attempts: result.attempts };
      bar?.increment({ status: `${result.draftId}: ${result.status}` });
    });
    bar?.stop();
    if (!cmd.json) {
      const [{ localRunIds }, { DEFAULT_DATA_DIR }] = await Promise.all([
        import("../app/ids.js"),
        import("./data-dir.js"),
      ]);
      await writeOut(`${table.render(undefined, await localRunIds(runtime)())}\n`);
      if (duplicates)
        say(
          `${duplicates} draft(s) had already run to an end in this data folder: their earlier runs are shown, nothing ran again (--rerun runs them again).`,
        );
      if (unknownKinds)
        say(
          `${unknownKinds} draft(s) rejected as unknown_kind, a kind with no rule pack: register packs with --pack <file> (redraft packs lists the kinds known).`,
        );
      if (example)
        say(
          `See one run's timeline: npx redraft show ${example.runId}${dataDirLabel !== DEFAULT_DATA_DIR ? ` --data-dir ${dataDirLabel}` : ""}`,
        );
    }
  } finally {
    await runtime.close();
  }
}

export interface WatchCommandOptions {
  json?: boolean;
  /** Only files that appear or change after the watch starts; those already there are left alone. */
  newOnly?: boolean;
}

/** Files a watched folder may hold that are drafts: as `run` reads them, hidden files aside. */
const WATCHED = /\.(json|jsonl|ndjson)$/i;
/** Editors and copies fire several events per file: a file is read once it has been quiet this long. */
const SETTLE_MS = 250;
/** Files run at once; a file's own drafts run one after the other. */
const WATCH_CONCURRENCY = 4;

/**
 * `redraft watch <dir>`: files dropped into the folder are run like uploads under `drafts/`. The
 * folder is checked before anything is printed or opened; the watcher starts before the data folder
 * is opened (a second or more), its events held until the runtime is ready, so a file dropped while
 * the command starts is not missed; then the files already there are run (unless `newOnly`). A file
 * is run again when its size or time changes, not when an event repeats. Stops on SIGINT or SIGTERM,
 * once the files under way are done.
 */
export async function watchCommand(
  dir: string,
  cmd: WatchCommandOptions,
  open: () => Promise<LocalRuntime>,
): Promise<void> {
  const [{ lstat, stat, readdir }, { watch }, { join }, { draftsInFile }, { jsonLine }, { default: pLimit }] =
    await Promise.all([
      import("node:fs/promises"),
      import("node:fs"),
      import("node:path"),
      import("../app/inputs.js"),
      import("./format.js"),
      import("p-limit"),
    ]);
  const info = await stat(dir).catch((error: NodeJS.ErrnoException) => error);
  if (info instanceof Error)
    throw new UsageError(
      info.code === "ENOENT" ? `no such folder: ${dir}` : `cannot watch ${dir}: ${info.message}`,
    );
  if (!info.isDirectory()) throw new UsageError(`not a folder: ${dir} (watch takes a folder of drafts)`);

  let resolveRuntime: (runtime: LocalRuntime) => void = () => {};
  const ready = new Promise<LocalRuntime>((resolve) => {
    resolveRuntime = resolve;
  });
  const limit = pLimit(WATCH_CONCURRENCY);
  const timers = new Map<string, NodeJS.Timeout>();
  /** Size and time of each file as it was last run: an event that changed nothing runs nothing. */
  const seen = new Map<string, string>();
  const running = new Set<Promise<void>>();
  let stopping = false;

  const runFile = async (name: string) => {
    const runtime = await ready;
    const file = join(dir, name);
    // Gone again (deleted, renamed away): nothing to run. Anything else unreadable is reported.
    const entry = await lstat(file).catch(() => undefined);
    if (!entry || entry.isDirectory()) return;
    // A link that cannot be followed (a loop, a dangling target) is read below, and reported.
    const now = (await stat(file).catch(() => undefined)) ?? entry;
    const signature = `${now.size}:${now.mtimeMs}`;
    if (seen.get(name) === signature) return;
    seen.set(name, signature);
    for await (const source of draftsInFile(file, file)) {
      try {
        // Same content dropped twice within the dedupe window is a duplicate, like an S3 redelivery.
        const result = await submit(runtime, source, "watch");
        await writeOut(
          cmd.json
            ? `${jsonLine(result)}\n`
            : `${source.label}: ${result.draftId} ${result.status}${result.reason ? ` (${result.reason})` : ""} run ${result.runId}\n`,
        );
      } catch (error) {
        // One draft's system failure must not stop the watch, nor the file's other drafts.
        say(`redraft: ${source.label}: ${(error as Error).name}: ${(error as Error).message}`);
      }
    }
  };
  const schedule = (name: string, delay = SETTLE_MS) => {
    if (stopping || !WATCHED.test(name) || name.startsWith(".")) return;
    clearTimeout(timers.get(name));
    timers.set(
      name,
      setTimeout(() => {
        timers.delete(name);
        const task = limit(() => runFile(name));
        running.add(task);
        void task.finally(() => running.delete(task));
      }, delay),
    );
  };

  let watchError: Error | undefined;
  let wake: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const watcher = watch(dir, (_event, name) => {
    if (name) schedule(String(name));
  });
  watcher.on("error", (error) => {
    watchError = error;
    wake();
  });
  const stop = () => wake();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  let runtime: LocalRuntime | undefined;
  try {
    runtime = await open();
    resolveRuntime(runtime);
    say(`Watching ${dir} for drafts (Ctrl-C to stop).`);
    if (!cmd.newOnly)
      for (const name of (await readdir(dir)).sort((a, b) => a.localeCompare(b))) schedule(name, 0);
    await stopped;
  } finally {
    stopping = true;
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    watcher.close();
    for (const t of timers.values()) clearTimeout(t);
    // Files under way finish (their runs end with a status); those not started yet are left.
    limit.clearQueue();
    if (runtime) {
      await Promise.allSettled([...running]);
      await runtime.close();
    }
  }
  if (watchError) throw watchError;
}
