import type { Resubmission, ResubmitFilter } from "../app/resubmit.js";
import type { ReviewDecision } from "../app/review.js";
import type { BatchRecord } from "../shared/batch/record.js";
import type { Draft } from "../shared/draft.js";
import { type RunRecord, RunStatusSchema } from "../shared/store/types.js";
import { say } from "./options.js";
import type { WatchCommandOptions } from "./run.js";
import type {
  BatchOptions,
  CommandRuntime,
  ReviewRequest,
  RunOptions,
  RunStory,
  RunsOptions,
  ViewerCommandOptions,
} from "./runtime.js";
import {
  type GlobalOptions,
  openRuntime,
  openSession,
  READ_ONLY,
  submitter,
  withRuntime,
} from "./session.js";

/**
 * The command line over a data folder (local/runtime.ts, opened by cli/session.ts): each operation
 * opens the runtime as it needs it (read-only for a listing, with the model's notices for work that
 * runs drafts) and closes it, and imports what it uses only when it runs.
 */
export class LocalCommands implements CommandRuntime {
  readonly #opts: GlobalOptions;

  constructor(opts: GlobalOptions) {
    this.#opts = opts;
  }

  async run(paths: string[], cmd: RunOptions): Promise<void> {
    const opts = this.#opts;
    const { runCommand } = await import("./run.js");
    await runCommand(paths, cmd, opts.dataDir, () =>
      openRuntime(opts, {
        ...(cmd.maxAttempts !== undefined && { maxAttempts: cmd.maxAttempts }),
        ...(cmd.modelSlots !== undefined && { modelSlots: cmd.modelSlots }),
      }),
    );
  }

  async batch(manifest: string, cmd: BatchOptions): Promise<number> {
    const batch = await import("./batch.js");
    const text = await batch.readManifest(manifest);
    return withRuntime(this.#opts, {}, (runtime) => batch.batchCommand(runtime, manifest, text, cmd));
  }

  listBatches(limit: number): Promise<BatchRecord[]> {
    return withRuntime(this.#opts, READ_ONLY, (runtime) => runtime.batches.list(limit));
  }

  async runs(cmd: RunsOptions): Promise<void> {
    const opts = this.#opts;
    await withRuntime(opts, READ_ONLY, async (runtime) => {
      const [{ runsTable }, { localRunIds }, { pageLocalRuns, writePage }, { resolveRun }] =
        await Promise.all([
          import("./format.js"),
          import("../app/ids.js"),
          import("./runs.js"),
          import("../app/run-id.js"),
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
        (given) => resolveRun(runtime.runs, given, opts.dataDir, localRunIds(runtime)),
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
          `${(await import("../app/explain.js")).reasonsLegend(runs.map((r) => r.reason))}\n`,
        );
    });
  }

  async showBatch(batchId: string, json: boolean): Promise<string | undefined> {
    return withRuntime(this.#opts, READ_ONLY, async (runtime) => {
      const [{ showBatch }, ids] = await Promise.all([import("./batch-view.js"), import("../app/ids.js")]);
      const listIds = ids.localRunIds(runtime);
      // The id as given, else the one batch it is a unique prefix of.
      const batches = runtime.batches;
      const batch =
        (await batches.get(batchId)) ??
        (await batches.get(ids.batchMatching(batchId, await listIds()) ?? batchId));
      return batch && showBatch(runtime, batch, json, await listIds());
    });
  }

  async readRun(runId: string, read: { evidence: boolean }): Promise<RunStory> {
    const opts = this.#opts;
    return withRuntime(opts, READ_ONLY, async (runtime) => {
      const [{ resolveRun }, { buildRunResult }, { loadRunEvidence }, ids] = await Promise.all([
        import("../app/run-id.js"),
        import("../shared/loop/run.js"),
        import("./show.js"),
        import("../app/ids.js"),
      ]);
      const run = await resolveRun(runtime.runs, runId, opts.dataDir, ids.localRunIds(runtime));
      const result = await buildRunResult(run.runId, runtime.deps);
      const execution = await runtime.history(run.runId);
      // A run under way may be waiting for a model slot in the process that runs it.
      const since =
        run.status === "draft" || run.status === "correcting"
          ? await (await import("../local/waiting.js")).waitingSince(runtime.dataDir, run.runId)
          : undefined;
      return {
        run,
        result,
        execution,
        ...(read.evidence && { evidence: await loadRunEvidence(result, runtime.deps) }),
        ...(since && {
          waiting: {
            state: "waiting_for_model_slot" as const,
            since,
            ageSeconds: Math.max(0, Math.round((Date.now() - Date.parse(since)) / 1000)),
          },
        }),
      };
    });
  }

  async bestDraft(runId: string): Promise<{ run: RunRecord; finalDraft: Draft | null }> {
    const opts = this.#opts;
    return withRuntime(opts, READ_ONLY, async (runtime) => {
      const [{ resolveRun }, { buildRunResult }, { localRunIds }] = await Promise.all([
        import("../app/run-id.js"),
        import("../shared/loop/run.js"),
        import("../app/ids.js"),
      ]);
      const run = await resolveRun(runtime.runs, runId, opts.dataDir, localRunIds(runtime));
      return { run, finalDraft: (await buildRunResult(run.runId, runtime.deps, run)).finalDraft };
    });
  }

  async review(runId: string, decision: ReviewDecision | "undo", request: ReviewRequest): Promise<string> {
    const opts = this.#opts;
    // A session rather than withRuntime: the model's notices are said only once an edit is accepted.
    const { runtime, notices } = await openSession(opts);
    try {
      const [{ reviewDecision, undoReview }, { localRunIds }] = await Promise.all([
        import("../app/review.js"),
        import("../app/ids.js"),
      ]);
      const where = { listIds: localRunIds(runtime), where: opts.dataDir, reviewer: request.reviewer };
      const outcome =
        decision === "undo"
          ? await undoReview(runtime, runId, where)
          : await reviewDecision(runtime, runId, decision, {
              ...where,
              ...(request.file && { file: request.file }),
              ...(request.note && { note: request.note }),
              ...(request.override && { override: true }),
              submit: submitter(runtime),
            });
      // Which model answered the edit, said once it was accepted: a refused edit stays one line.
      if (decision === "edit") for (const line of notices) say(line);
      return request.json ? JSON.stringify(outcome) : outcome.message;
    } finally {
      await runtime.close();
    }
  }

  async resubmitFailed(
    filter: ResubmitFilter,
    onEach: (entry: Resubmission) => void,
  ): Promise<Resubmission[]> {
    const { runtime, notices } = await openSession(this.#opts);
    try {
      const [{ resubmitFailed }, { submit }, { LOCAL_SUBMISSION_ID }] = await Promise.all([
        import("../app/resubmit.js"),
        import("./run.js"),
        import("../local/runtime.js"),
      ]);
      let told = false;
      return await resubmitFailed(
        {
          runs: runtime.runs,
          blobs: runtime.blobs,
          failedRuns: () => runtime.runs.listRuns({ status: "failed" }),
          choosesRunId: true,
          submit: async (source, parentRunId, runId) => {
            // Which model answers, said once something runs.
            if (!told) for (const line of notices) say(line);
            told = true;
            // The local submission id: the content claim of the failed run is taken over, and
            // content another run has since finished is a duplicate of it, not run again.
            const result = await submit(runtime, source, LOCAL_SUBMISSION_ID, parentRunId, runId);
            return { runId: result.runId, status: result.status };
          },
        },
        filter,
        onEach,
      );
    } finally {
      await runtime.close();
    }
  }

  async ui(cmd: ViewerCommandOptions): Promise<void> {
    const [{ serveUntilStopped }, { loadAsl }] = await Promise.all([
      import("../ui/server.js"),
      import("../local/state-machine.js"),
    ]);
    await withRuntime(this.#opts, {}, async (runtime) =>
      serveUntilStopped(
        {
          runtime,
          asl: await loadAsl(),
          port: cmd.port,
          reviewer: cmd.reviewer,
          submit: submitter(runtime),
        },
        say,
      ),
    );
  }

  async watch(dir: string, cmd: WatchCommandOptions): Promise<void> {
    const { watchCommand } = await import("./run.js");
    // The folder is checked before the runtime opens (watchCommand opens it), so a missing one is one line.
    await watchCommand(dir, cmd, () => openRuntime(this.#opts));
  }

  async doctor(cmd: { repair?: boolean }): Promise<void> {
    const opts = this.#opts;
    if (cmd.repair) {
      const { repairDatabase } = await import("../local/repair.js");
      const { checkDatabase } = await import("./doctor.js");
      const outcome = await repairDatabase(opts.dataDir, () =>
        withRuntime(opts, READ_ONLY, checkDatabase).then(
          () => true,
          () => false,
        ),
      );
      say(
        outcome.repaired
          ? `Rebuilt the database in ${opts.dataDir}; the database as it was is kept in ${outcome.copy}.`
          : `The database in ${opts.dataDir} is not damaged: nothing to repair, it is left as it was.`,
      );
    }
    await withRuntime(opts, READ_ONLY, async (runtime) => {
      const { checkDatabase } = await import("./doctor.js");
      const items = await checkDatabase(runtime);
      process.stdout.write(`The database in ${opts.dataDir} reads whole: ${items} items.\n`);
    });
  }
}
