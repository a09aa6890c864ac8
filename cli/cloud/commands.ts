import { UsageError } from "../../app/inputs.js";
import type { Resubmission, ResubmitFilter } from "../../app/resubmit.js";
import { type ReviewDecision, reviewRun, undoReview } from "../../app/review.js";
import { resolveRun } from "../../app/run-id.js";
import type { BatchRecord } from "../../shared/batch/record.js";
import type { Draft } from "../../shared/draft.js";
import { buildRunResult } from "../../shared/loop/run.js";
import { BATCHES_PREFIX } from "../../shared/store/bucket-layout.js";
import { isActiveStatus, type RunRecord, RunStatusSchema } from "../../shared/store/types.js";
import type { ViewerOptions } from "../../ui/server.js";
import type { SourcedResult } from "../format.js";
import type {
  BatchOptions,
  CommandRuntime,
  ReviewRequest,
  RunOptions,
  RunStory,
  RunsOptions,
  ViewerCommandOptions,
} from "../runtime.js";
import { type CloudOptions, resolveResources } from "./resources.js";
import { CloudRuntime } from "./runtime.js";
import {
  followRun,
  POLL_MS,
  type SubmittedBatch,
  submitBatch,
  submitDraft,
  submitUploadedDraft,
  type Via,
} from "./submit.js";

const out = (text: string) => process.stdout.write(`${text}\n`);
const say = (text: string) => process.stderr.write(`${text}\n`);

/** The deployment the global options name, through the SDK's standard chain. */
export async function openCloud(opts: CloudOptions): Promise<CloudRuntime> {
  return new CloudRuntime(await resolveResources(opts));
}

/** `redraft --stack S runs`: the deployment's runs, newest first, as offline. */
export async function cloudRuns(
  opts: CloudOptions,
  cmd: { status?: string; draft?: string; limit: number; json?: boolean },
): Promise<void> {
  const cloud = await openCloud(opts);
  const { runsTable } = await import("../format.js");
  const runs = await cloud.runs.listRuns({
    ...(cmd.status && { status: RunStatusSchema.parse(cmd.status) }),
    ...(cmd.draft && { draftId: cmd.draft }),
    limit: cmd.limit,
  });
  if (cmd.json) for (const r of runs) out(JSON.stringify(r));
  else out(runs.length ? runsTable(runs) : "No runs.");
}

/** `redraft --stack S show <b-…>`: the batch record, as JSON (indented for a person). */
async function cloudShowBatch(
  opts: CloudOptions,
  batchId: string,
  json: boolean,
): Promise<string | undefined> {
  const batch = await (await openCloud(opts)).batches.get(batchId);
  return batch && (json ? JSON.stringify(batch) : JSON.stringify(batch, null, 2));
}

/** `redraft --stack S show <runId>`: the offline timeline's parts, the execution path from GetExecutionHistory, and the console link. */
async function cloudReadRun(
  opts: CloudOptions,
  runId: string,
  read: { evidence: boolean },
): Promise<RunStory> {
  const cloud = await openCloud(opts);
  const run = await resolveRun(cloud.runs, runId, cloud.where);
  const result = await buildRunResult(run.runId, cloud.deps);
  // A run under way may be waiting for a model slot: its history has the queued model task open.
  const { execution, waiting } = await cloud.historyAndWait(run.runId, isActiveStatus(run.status));
  const queue = waiting && (await cloud.queueDepthOf(waiting));
  const consoleUrl = cloud.consoleUrl(run.runId);
  const evidence = read.evidence
    ? await (await import("../show.js")).loadRunEvidence(result, cloud.deps)
    : undefined;
  return {
    run,
    result,
    execution,
    ...(evidence && { evidence }),
    // The fields local `show` prints (cli/runtime.ts RunStory.waiting); the state's name stays here.
    ...(waiting && {
      waiting: {
        state: waiting.state,
        since: waiting.since,
        ageSeconds: waiting.ageSeconds,
        ...(queue && { queue }),
      },
    }),
    ...(consoleUrl && { consoleUrl }),
  };
}

/** `redraft --stack S export <runId>`: the run and its best draft, from the table and the bucket. */
async function cloudBestDraft(
  opts: CloudOptions,
  runId: string,
): Promise<{ run: RunRecord; finalDraft: Draft | null }> {
  const cloud = await openCloud(opts);
  const run = await resolveRun(cloud.runs, runId, cloud.where);
  return { run, finalDraft: (await buildRunResult(run.runId, cloud.deps, run)).finalDraft };
}

/** How long a submitted draft (or an edit's) is followed before the command says where it stands. */
const FOLLOW_MS = 15 * 60 * 1000;

/** `redraft --stack S review <runId> approve|reject|edit [file]`: the same decision as offline, on the deployment's records. */
export async function cloudReview(
  opts: CloudOptions,
  runId: string,
  decision: ReviewDecision | "undo",
  cmd: { file?: string; note?: string; reviewer: string; override?: boolean },
): Promise<string> {
  const cloud = await openCloud(opts);
  const run = await resolveRun(cloud.runs, runId, cloud.where);
  if (decision === "undo")
    return (await undoReview(cloud, run.runId, { reviewer: cmd.reviewer, where: cloud.where })).message;
  return reviewRun(cloud, run.runId, decision, {
    ...(cmd.file && { file: cmd.file }),
    ...(cmd.note && { note: cmd.note }),
    ...(cmd.override && { override: true }),
    reviewer: cmd.reviewer,
    submit: async (source, parentRunId) =>
      followRun(cloud, await submitDraft(cloud, source, "event", { parentRunId }), FOLLOW_MS),
  });
}

/** The largest draft a `Draft Submitted` event carries inline (EventBridge takes 256 KB per entry, the event's envelope included). */
const EVENT_DRAFT_MAX_BYTES = 200 * 1024;

/**
 * `redraft --stack S resubmit`: the deployment's failed runs run again (app/resubmit.ts), each as a
 * `Draft Submitted` with the draft the run kept and `parentRunId`, as an edit is submitted. Not
 * followed: each new run's id is printed, `runs` and `show` follow it.
 */
export async function cloudResubmit(
  opts: CloudOptions,
  filter: import("../../app/resubmit.js").ResubmitFilter,
  onEach: (entry: import("../../app/resubmit.js").Resubmission) => void,
): Promise<import("../../app/resubmit.js").Resubmission[]> {
  const cloud = await openCloud(opts);
  const { resubmitFailed } = await import("../../app/resubmit.js");
  return resubmitFailed(
    {
      runs: cloud.runs,
      blobs: cloud.blobs,
      failedRuns: () => cloud.runs.listRuns({ status: "failed" }),
      choosesRunId: false,
      submit: async (source, parentRunId, _runId, uploadRef) => {
        const bytes = Buffer.byteLength(source.body);
        if (bytes > EVENT_DRAFT_MAX_BYTES) {
          // Too large to carry: a draft that came as an upload is named where it lies (its key and
          // version under drafts/, which a run may read); one that came in an event was smaller.
          if (!uploadRef)
            throw new Error(
              `the draft is ${bytes} bytes, more than a Draft Submitted event carries (${EVENT_DRAFT_MAX_BYTES}), and it was not uploaded: upload it under drafts/ instead`,
            );
          const submitted = await submitUploadedDraft(cloud, source.label, uploadRef, { parentRunId });
          return { runId: submitted.runIds[0] as string };
        }
        const submitted = await submitDraft(cloud, source, "event", { parentRunId });
        return { runId: submitted.runIds[0] as string };
      },
    },
    filter,
    onEach,
  );
}

/**
 * What `redraft --stack S ui` serves: the viewer over the deployment (CloudRuntime gives it the runs,
 * attempts, objects, execution histories and review writes it reads locally from a data folder),
 * each run with its execution's ARN and console link; an edit made in the page is submitted as a
 * `Draft Submitted` and followed, as `review … edit` does.
 */
export async function cloudViewer(
  opts: CloudOptions,
  cmd: { port: number; reviewer: string },
): Promise<ViewerOptions> {
  const [{ loadAsl }, { storeRunIds }] = await Promise.all([
    import("../../local/state-machine.js"),
    import("../../app/ids.js"),
  ]);
  const cloud = await openCloud(opts);
  return {
    runtime: cloud,
    // The graph is the committed state machine: what this version of redraft deploys.
    asl: await loadAsl(),
    port: cmd.port,
    reviewer: cmd.reviewer,
    listIds: storeRunIds(cloud.runs),
    submit: async (source, parentRunId) =>
      followRun(cloud, await submitDraft(cloud, source, "event", { parentRunId }), FOLLOW_MS),
  };
}

/** `redraft --stack S ui`: {@link cloudViewer}, served until stopped. */
export async function cloudUi(
  opts: CloudOptions,
  cmd: { port: number; reviewer: string },
  say: (line: string) => void,
): Promise<void> {
  const { serveUntilStopped } = await import("../../ui/server.js");
  const viewer = await cloudViewer(opts, cmd);
  say(`Viewing ${(viewer.runtime as CloudRuntime).where}.`);
  await serveUntilStopped(viewer, say);
}

/**
 * `redraft --stack S run <paths…>`: each draft submitted as the stack takes drafts (uploaded under
 * `drafts/`, or `--via event`: a `Draft Submitted`), then followed to its outcome and printed as
 * offline: the progress bar on a terminal, `--json` lines, or the results table. `--no-wait` prints
 * each run id as it is submitted and returns.
 */
export async function cloudRun(
  opts: CloudOptions,
  paths: string[],
  cmd: { json?: boolean; wait: boolean; concurrency: number; progress: boolean; via: Via },
): Promise<void> {
  const [{ collectDrafts }, { jsonLine, ResultsTable }, { default: pLimit }, { default: cliProgress }] =
    await Promise.all([
      import("../../app/inputs.js"),
      import("../format.js"),
      import("p-limit"),
      import("cli-progress"),
    ]);
  const sources = await collectDrafts(paths);
  if (sources.length === 0)
    throw new UsageError(`no drafts found in ${paths.join(", ")} (looking for .json, .jsonl files)`);
  const cloud = await openCloud(opts);
  const limit = pLimit(cmd.concurrency);
  const bar =
    cmd.wait && cmd.progress && process.stderr.isTTY && !cmd.json
      ? new cliProgress.SingleBar(
          { format: "{bar} {value}/{total} drafts | {status}", stream: process.stderr },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  bar?.start(sources.length, 0, { status: "" });
  const results: SourcedResult[] = [];
  await Promise.all(
    sources.map((source) =>
      limit(async () => {
        // A path that could not be read never reaches the stack: said here, as offline it is a rejected line.
        if (source.rejectWith) {
          say(`redraft: ${source.rejectWith.message}`);
          bar?.increment();
          return;
        }
        const submitted = await submitDraft(cloud, source, cmd.via);
        if (!cmd.wait) {
          const runId = submitted.runIds[0] ?? "";
          out(
            cmd.json
              ? JSON.stringify({ runId, source: source.label, to: submitted.to })
              : `${source.label}: run ${runId}`,
          );
          return;
        }
        const result = { ...(await followRun(cloud, submitted, FOLLOW_MS)), source: source.label };
        bar?.increment({ status: `${result.draftId}: ${result.status}` });
        if (cmd.json) out(jsonLine(result));
        results.push(result);
      }),
    ),
  );
  bar?.stop();
  if (cmd.wait && !cmd.json && results.length > 0) {
    const table = new ResultsTable();
    for (const r of results) table.add(r);
    out(table.render());
    const example = results.find((r) => r.attempts > 0) ?? results[0];
    if (example)
      say(`See one run's timeline: npx redraft --stack ${opts.stack ?? "…"} show ${example.runId}`);
  }
}

/**
 * `redraft --stack S batch <manifest>`: the manifest uploaded under `batches/` (or, `--via event`, a
 * `Batch Submitted` for a manifest already there), then followed: its items' runs on the progress bar
 * as they end, then the batch's summary (or `--json` lines) as offline. `--no-wait` prints the batch id.
 * Returns the exit code: 1 when the batch failed.
 */
export async function cloudBatch(
  opts: CloudOptions,
  manifest: string,
  cmd: { json?: boolean; wait: boolean; progress: boolean; via: Via; pricing?: string },
): Promise<number> {
  const [batch, view, { splitManifest }, { childRunId }, { default: cliProgress }] = await Promise.all([
    import("../batch.js"),
    import("../batch-view.js"),
    import("../../shared/batch/manifest.js"),
    import("../../shared/batch/record.js"),
    import("cli-progress"),
  ]);
  const cloud = await openCloud(opts);
  let submitted: SubmittedBatch;
  let lines: number | undefined;
  if (cmd.via === "event") {
    if (!manifest.startsWith(BATCHES_PREFIX))
      throw new UsageError(
        `with --via event the manifest is a key already under batches/ in the bucket (${manifest} is not); without it the file is uploaded`,
      );
    submitted = await submitBatch(cloud, { key: manifest }, cmd.pricing);
  } else {
    if (cmd.pricing)
      throw new UsageError(
        "--pricing goes with --via event: an uploaded manifest runs at the deployment's default pricing",
      );
    const text = await batch.readManifest(manifest);
    lines = splitManifest(text).length;
    submitted = await submitBatch(cloud, { file: manifest, text });
  }
  const batchId = submitted.batchIds[0] ?? "";
  if (!cmd.wait) {
    out(
      cmd.json
        ? JSON.stringify({ batchIds: submitted.batchIds, manifest: submitted.manifestKey })
        : `${manifest}: batch ${batchId}`,
    );
    return 0;
  }
  const bar =
    cmd.progress && process.stderr.isTTY && !cmd.json && lines
      ? new cliProgress.SingleBar(
          { format: "{bar} {value}/{total} items | {counts}", stream: process.stderr, hideCursor: true },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  bar?.start(lines ?? 0, 0, { counts: "" });
  const deadline = Date.now() + FOLLOW_MS;
  let record: Awaited<ReturnType<typeof cloud.batches.get>>;
  let id = batchId;
  for (;;) {
    for (const candidate of submitted.batchIds) {
      record = await cloud.batches.get(candidate);
      if (record) {
        id = candidate;
        break;
      }
    }
    if (record && record.status !== "running") break;
    if (bar && lines) {
      // The items' runs as they end: a child's run id is `<batchId>-<line>`.
      const counts: Record<string, number> = {};
      let ended = 0;
      for (let line = 1; line <= lines; line++) {
        const run = await cloud.runs.getRun(childRunId(id, line));
        if (run && !isActiveStatus(run.status)) {
          ended++;
          counts[run.status] = (counts[run.status] ?? 0) + 1;
        }
      }
      bar.update(ended, {
        counts: Object.entries(counts)
          .map(([s, n]) => `${s} ${n}`)
          .join(" · "),
      });
    }
    if (Date.now() > deadline)
      throw new Error(
        `batch ${submitted.batchIds.join(" or ")} has not ended after ${Math.round(FOLLOW_MS / 60000)} min (${record?.status ?? "not started yet"})`,
      );
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  bar?.stop();
  const done = record as NonNullable<typeof record>;
  if (cmd.json) {
    for (const item of await view.batchItems(cloud, done)) out(await view.itemLine(cloud, id, item, false));
    out(view.summaryLine(done));
  } else {
    out(view.batchSummary(done));
    say(`See its items: npx redraft --stack ${opts.stack ?? "…"} show ${id}`);
  }
  return done.status === "failed" ? 1 : 0;
}

/**
 * The command line over a deployed stack (cli/runtime.ts's interface): each operation opens the
 * deployment through its outputs ({@link openCloud}) and does what the functions above do. `watch`
 * and `doctor` work on a data folder only: asked of a stack, they say so in one line.
 */
export class CloudCommands implements CommandRuntime {
  readonly #opts: CloudOptions;

  constructor(opts: CloudOptions) {
    this.#opts = opts;
  }

  run(paths: string[], cmd: RunOptions): Promise<void> {
    return cloudRun(this.#opts, paths, cmd);
  }

  batch(manifest: string, cmd: BatchOptions): Promise<number> {
    return cloudBatch(this.#opts, manifest, cmd);
  }

  /** `redraft --stack S batches`: the deployment's batch records, newest first. */
  async listBatches(limit: number): Promise<BatchRecord[]> {
    return (await openCloud(this.#opts)).batches.list(limit);
  }

  runs(cmd: RunsOptions): Promise<void> {
    return cloudRuns(this.#opts, cmd);
  }

  readRun(runId: string, read: { evidence: boolean }): Promise<RunStory> {
    return cloudReadRun(this.#opts, runId, read);
  }

  showBatch(batchId: string, json: boolean): Promise<string | undefined> {
    return cloudShowBatch(this.#opts, batchId, json);
  }

  bestDraft(runId: string): Promise<{ run: RunRecord; finalDraft: Draft | null }> {
    return cloudBestDraft(this.#opts, runId);
  }

  /** The decision's message (the stack's review has no `--json` form of the run yet). */
  review(runId: string, decision: ReviewDecision | "undo", request: ReviewRequest): Promise<string> {
    const { json: _json, ...cmd } = request;
    return cloudReview(this.#opts, runId, decision, cmd);
  }

  resubmitFailed(filter: ResubmitFilter, onEach: (entry: Resubmission) => void): Promise<Resubmission[]> {
    return cloudResubmit(this.#opts, filter, onEach);
  }

  ui(cmd: ViewerCommandOptions): Promise<void> {
    return cloudUi(this.#opts, cmd, say);
  }

  async watch(): Promise<void> {
    throw new UsageError(
      "watch runs a folder's files in the local data folder, not on a deployed stack: send them with run --stack instead",
    );
  }

  async doctor(): Promise<void> {
    throw new UsageError(
      "doctor reads the local data folder's database, not a deployed stack: leave out the cloud options (--stack, --table, …)",
    );
  }
}
