import { randomUUID } from "node:crypto";
import { appendFileSync, closeSync, openSync } from "node:fs";
import { join } from "node:path";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { StateMachine } from "aws-local-stepfunctions";
import type { AslDefinition } from "../contracts/asl.js";
import { SelfCorrectionError } from "../shared/errors.js";
import type { LoopDeps } from "../shared/loop/steps/deps.js";
import type { InputRejection } from "../shared/loop/steps/input.js";
import { DEFAULT_MODEL_CONCURRENCY } from "../shared/model/limited.js";
import type { ModelClient } from "../shared/model/types.js";
import type { AnyPack, DeploymentConfig } from "../shared/pack.js";
import type { PackRegistry } from "../shared/registry.js";
import { claimHash } from "../shared/store/claim.js";
import type { RunFacets, RunFilter, RunTotals } from "../shared/store/totals.js";
import type { BlobStore, RunQuery, RunRecord, RunStatus } from "../shared/store/types.js";
import type { parseDraft } from "../shared/validate.js";
import type { ExecutionSummary, PutEventsInput, TaskHandler } from "./asl-interpreter.js";
import {
  type LocalBackend,
  type LocalBatchStore,
  type LocalRunStore,
  type LocalStoreKind,
  openSqliteBackend,
  storeOf,
} from "./backend.js";
import { prepareDataDir } from "./data-dir.js";
import { LocalModelQueue } from "./model-queue.js";
import {
  finishInterrupted,
  markOwned,
  ownerAlive,
  readOwner,
  recoverInterrupted,
  releaseOwned,
} from "./recovery.js";
import { readLocalSource } from "./source.js";
import type { RunCursor } from "./sqlite-store.js";
import { LOCAL_BUCKET, LOCAL_EVENT_BUS, loadAsl } from "./state-machine.js";
import { clearWaiting, markWaiting } from "./waiting.js";

export type { ExecutionSummary, HistoryEvent } from "./asl-interpreter.js";
export { LOCAL_BUCKET };
/**
 * The submission id of every local `run`: the content claim is `sha256(draft, submission)`, so with
 * one fixed id the same content is one claim in a data folder, whichever process or day submits it.
 */
export const LOCAL_SUBMISSION_ID = "local";
/** A local claim never goes stale by age: only a failed holder, or `--rerun`, gives it up. */
const LOCAL_CLAIM_WINDOW_MS = 100 * 365 * 24 * 3600 * 1000;
/** Statuses whose result a re-run reprints instead of running again (a failed run is retried). */
const FINISHED: readonly RunStatus[] = ["validated", "needs_manual_review", "rejected"];
const WAIT_FOR_HOLDER_MS = 200;

/** What starts an execution: the state machine's input, as the triggers build it in the cloud. */
export interface ExecutionInput {
  draft?: unknown;
  draftRef?: { bucket: string; key: string };
  submissionId?: string;
  parentRunId?: string;
  /** An input the submitter could not read (a missing path, a symlink loop): the run is rejected with it. */
  rejectWith?: InputRejection;
}

export interface LocalRuntimeOptions {
  /** Folder holding the database, blobs, event log and execution histories. */
  dataDir: string;
  /**
   * Which store keeps the folder. @default the folder's own (dynalite for a folder made before
   * SQLite), else `$REDRAFT_LOCAL_STORE`, else SQLite: see `storeOf` in local/backend.ts
   */
  store?: LocalStoreKind;
  /**
   * The state machine. @default the committed contracts/state-machine.asl.json, as `loadAsl` reads it,
   * read when the state machine is first needed (not by a read-only runtime that runs nothing)
   */
  asl?: AslDefinition | undefined;
  model?: ModelClient | undefined;
  /** A client of another provider for the judge (`judge.model: "<provider>:<id>"`). */
  judgeModel?: ModelClient | undefined;
  deployment?: DeploymentConfig;
  /** Packs beyond the built-in ones (a user's declarative or TypeScript packs). */
  extraPacks?: readonly AnyPack[];
  dedupeWindowMs?: number;
  /** @default DEFAULT_MAX_DRAFT_BYTES */
  maxDraftBytes?: number;
  /** @default DEFAULT_MAX_DRAFT_DEPTH */
  maxDraftDepth?: number;
  /**
   * Wait before a retry, in ms, instead of the ASL's backoff. Replayed and absent models need no
   * backoff; a live model keeps the deployed backoff with jitter (undefined).
   */
  retryDelayMs?: number | undefined;
  /**
   * Model calls in flight at once (`redraft run --model-slots N`): the model states' work waits in
   * an in-process queue for one of these slots, as it waits in the cloud's model queue.
   * @default the deployment's modelConcurrency, else DEFAULT_MODEL_CONCURRENCY
   */
  modelSlots?: number | undefined;
  /** The clock the model queue checks run deadlines against. @default the wall clock */
  modelQueueClock?: (() => Date) | undefined;
  /** dynalite: told when the folder's database is held by another process that is not answering yet. @default stderr */
  onWait?: (message: string) => void;
  /** How long to wait for the folder's database. @default 60_000 */
  dbTimeoutMs?: number;
  /**
   * Only reads runs and histories (`redraft runs`, `show`, `export`): the state machine and the
   * handlers (a second of imports) are then loaded by the first `execute`, not by `open`.
   * @default false
   */
  readOnly?: boolean;
}

/** What checking a draft needs beyond the registry in `deps`. */
interface Checks {
  parseDraft: typeof parseDraft;
}

/** The state machine, its tasks bound, and the engine that runs it (local/asl-interpreter.ts). */
interface Executor {
  engine: typeof import("./asl-interpreter.js");
  machine: StateMachine;
  handlers: Record<string, TaskHandler>;
  retryIntervals: Record<string, number> | undefined;
}

/** What `admit` decided: run the draft under `runId`, or print the finished run `duplicateOf`. */
export type Admission =
  | { runId: string; duplicateOf?: undefined }
  | { duplicateOf: string; runId?: undefined };

/**
 * The deployed state machine, run in-process: the ASL synthesized from `infra/` and committed as
 * contracts/state-machine.asl.json (see `loadAsl`), every Lambda task
 * bound to the real handler, every direct service integration bound to a local adapter doing the
 * same call against the data folder's store (local/backend.ts), and an event log.
 */
export class LocalRuntime {
  readonly runs: LocalRunStore;
  readonly blobs: BlobStore;
  readonly deps: LoopDeps;
  readonly #asl: AslDefinition | undefined;
  readonly #backend: LocalBackend;
  readonly #retryDelayMs: number | undefined;
  /** Where the model states' work waits for a slot (local/model-queue.ts). */
  readonly modelQueue: LocalModelQueue;
  readonly #loadChecks: () => Promise<Checks>;
  #checks: Promise<Checks> | undefined;
  #executor: Promise<Executor> | undefined;
  readonly #close: () => Promise<void>;
  /**
   * Executions this runtime owns (see local/recovery.ts), with the upload their owner record
   * names; released when their run is final.
   */
  readonly #owned = new Map<string, string | undefined>();
  /** Runs of this folder found interrupted (their process gone) when the runtime opened. */
  interrupted: string[] = [];
  /** `<dataDir>/events.jsonl`'s descriptor, opened for appending by the first event and kept open until close. */
  #events: number | undefined;

  private constructor(
    readonly dataDir: string,
    asl: AslDefinition | undefined,
    backend: LocalBackend,
    deps: LoopDeps,
    retryDelayMs: number | undefined,
    loadChecks: () => Promise<Checks>,
    close: () => Promise<void>,
    modelQueue: LocalModelQueue,
  ) {
    this.deps = deps;
    this.modelQueue = modelQueue;
    this.#loadChecks = loadChecks;
    this.runs = backend.runs;
    this.blobs = deps.blobs;
    this.#close = close;
    this.#asl = asl;
    this.#backend = backend;
    this.#retryDelayMs = retryDelayMs;
  }

  /** The folder's store: its batch records, its state machines' DynamoDB integrations. */
  get backend(): LocalBackend {
    return this.#backend;
  }

  /** Which store keeps this folder. */
  get store(): LocalStoreKind {
    return this.#backend.kind;
  }

  /** The batch records of this folder. */
  get batches(): LocalBatchStore {
    return this.#backend.batches;
  }

  /** The DynamoDB client of a folder kept by dynalite (tests that reach into its table). */
  get dynamo(): DynamoDBClient {
    if (!this.#backend.dynamo) throw new Error(`${this.dataDir} is kept by SQLite, not dynalite`);
    return this.#backend.dynamo;
  }

  /** Every run id of the folder, from the store's index. */
  runIds(): Promise<string[]> {
    return this.#backend.runIds();
  }

  /** A page of runs, newest first, after `after` (`redraft runs --after`). */
  listPage(query: RunQuery & { after?: RunCursor | undefined }): Promise<RunRecord[]> {
    return this.#backend.listPage(query);
  }

  /** Totals over every run `filter` matches, counted by the store, and the kinds and reasons of all runs. */
  runTotals(filter: RunFilter): Promise<{ totals: RunTotals; facets: RunFacets }> {
    return this.#backend.runTotals(filter);
  }

  /** A page of the runs `filter` matches, newest first, after `after` (the viewer's list). */
  filteredPage(filter: RunFilter, limit: number, after?: RunCursor): Promise<RunRecord[]> {
    return this.#backend.filteredPage(filter, limit, after);
  }

  /** Reads the whole store (`redraft doctor`); returns how many records it holds. */
  checkStore(): Promise<number> {
    return this.#backend.check();
  }

  /** The packs (and the registry in `deps`) and the draft parser, loaded once, on first need. */
  #checksReady(): Promise<Checks> {
    this.#checks ??= this.#loadChecks();
    return this.#checks;
  }

  /** The state machine with every task bound, built once, on first need. */
  #executorReady(): Promise<Executor> {
    this.#executor ??= (async () => {
      const [engine, validate, correct, revalidate, judge, , asl] = await Promise.all([
        import("./asl-interpreter.js"),
        import("../functions/steps/validate.js"),
        import("../functions/steps/correct.js"),
        import("../functions/steps/revalidate.js"),
        import("../functions/steps/judge.js"),
        this.#checksReady(),
        this.#asl ?? loadAsl(),
      ]);
      const getDeps = async () => this.deps;
      const handlers = engine.bindTasks(
        asl,
        {
          validate: validate.createValidateHandler(getDeps, { bucketName: LOCAL_BUCKET }),
          correct: correct.createCorrectHandler(getDeps),
          revalidate: revalidate.createRevalidateHandler(getDeps),
          judge: judge.createJudgeHandler(getDeps),
        },
        {
          updateItem: (input) => this.#backend.updateItem(input),
          copyObject: engine.copyObjectIn(this.blobs),
          putEvents: async (input) => {
            try {
              return await this.#putEvents(input);
            } catch (error) {
              // The local bus took none of the entries: each failed, as PutEvents would answer.
              throw engine.failedEntryError(input.Entries.length, error);
            }
          },
        },
        this.modelQueue,
      );
      return {
        engine,
        machine: engine.buildMachine(asl),
        handlers,
        retryIntervals: engine.retryIntervals(asl, this.#retryDelayMs),
      };
    })();
    return this.#executor;
  }

  static async open(options: LocalRuntimeOptions): Promise<LocalRuntime> {
    const { dataDir } = options;
    // A path that cannot be a data folder is refused here, in one line, before anything waits on it.
    await prepareDataDir(dataDir);
    const backend =
      storeOf(dataDir, options.store) === "sqlite"
        ? await openSqliteBackend(dataDir, { readOnly: options.readOnly === true })
        : await (await import("./dynalite-backend.js")).openDynaliteBackend(dataDir, {
            onWait: options.onWait ?? ((message) => process.stderr.write(`${message}\n`)),
            ...(options.dbTimeoutMs !== undefined && { dbTimeoutMs: options.dbTimeoutMs }),
          });
    // The packs (Ajv, QuickJS: a fifth of a second to import) are loaded by what runs drafts, not by
    // a listing: until then the registry is not there to be read, which only the loop's steps do.
    let registry: PackRegistry | undefined;
    const loadChecks = async (): Promise<Checks> => {
      const [{ PackRegistry }, { builtinPacks }, validate] = await Promise.all([
        import("../shared/registry.js"),
        import("../shared/packs/index.js"),
        import("../shared/validate.js"),
      ]);
      registry ??= new PackRegistry(options.deployment ?? {}, [
        ...builtinPacks,
        ...(options.extraPacks ?? []),
      ]);
      return { parseDraft: validate.parseDraft };
    };
    const deps: LoopDeps = {
      get registry(): PackRegistry {
        if (!registry)
          throw new Error(
            "the packs are loaded with the state machine, which this runtime has not built yet",
          );
        return registry;
      },
      runs: backend.runs,
      blobs: backend.blobs,
      model: options.model,
      ...(options.judgeModel && { judgeModel: options.judgeModel }),
      readSource: readLocalSource,
      ...(options.dedupeWindowMs !== undefined && { dedupeWindowMs: options.dedupeWindowMs }),
      ...(options.maxDraftBytes !== undefined && { maxDraftBytes: options.maxDraftBytes }),
      ...(options.maxDraftDepth !== undefined && { maxDraftDepth: options.maxDraftDepth }),
    };
    const runtime = new LocalRuntime(
      dataDir,
      options.asl,
      backend,
      deps,
      options.retryDelayMs,
      loadChecks,
      () => backend.close(),
      new LocalModelQueue({
        slots: options.modelSlots ?? options.deployment?.modelConcurrency ?? DEFAULT_MODEL_CONCURRENCY,
        // The ASL's retry intervals replaced by retryDelayMs: the deadline check waits that long.
        ...(options.retryDelayMs !== undefined && { longestWaitMs: options.retryDelayMs }),
        ...(options.modelQueueClock && { now: options.modelQueueClock }),
        onWait: (runId, since) => markWaiting(dataDir, runId, since),
        onLeave: (runId) => clearWaiting(dataDir, runId),
      }),
    );
    try {
      // Built at open unless only reading, so that a state machine the engine refuses fails here.
      if (!options.readOnly) await runtime.#executorReady();
      runtime.interrupted = await recoverInterrupted(dataDir, deps);
    } catch (error) {
      await backend.close().catch(() => undefined);
      throw error;
    }
    return runtime;
  }

  /**
   * Decides whether a local draft runs: identical content whose run in this folder finished
   * (validated, needs review, rejected) is a duplicate of that run; content being run by a live
   * process is waited for, then a duplicate too; content whose run failed or was interrupted runs
   * again. `rerun` always runs, taking the content's claim over. A body that is no valid draft
   * always runs, for Validate to reject with its reason.
   *
   * The claim is the store's content claim, keyed like Validate's with LOCAL_SUBMISSION_ID, so the
   * Validate of the admitted run finds it already its own; the owner record is written first, so a
   * claim is never held by a run nobody can be seen to own.
   */
  async admit(body: string, options: { rerun?: boolean; draftRef?: string } = {}): Promise<Admission> {
    const runId = randomUUID();
    const { parseDraft } = await this.#checksReady();
    let contentHash: string;
    try {
      const draft = parseDraft(body, {
        maxDraftBytes: this.deps.maxDraftBytes,
        maxDraftDepth: this.deps.maxDraftDepth,
      });
      contentHash = claimHash(draft, LOCAL_SUBMISSION_ID);
    } catch (error) {
      if (error instanceof SelfCorrectionError) return { runId };
      throw error;
    }
    await this.#own(runId, options.draftRef);
    const claim = (replace?: string) =>
      this.runs.claimContent(contentHash, runId, new Date().toISOString(), LOCAL_CLAIM_WINDOW_MS, replace);
    let holder = await claim();
    while (holder !== runId) {
      // The owner first, the run second: an owner record goes only once its run is final, so a
      // holder found ownerless and still unfinished really has nobody behind it.
      const alive = await ownerAlive(this.dataDir, holder);
      const run = await this.runs.getRun(holder);
      if (!options.rerun && run && FINISHED.includes(run.status)) {
        await this.release(runId);
        return { duplicateOf: holder };
      }
      const failed = run?.status === "failed";
      if (options.rerun || failed || !alive) {
        if (!failed && !options.rerun)
          await finishInterrupted(this.deps, holder, await readOwner(this.dataDir, holder));
        holder = await claim(holder);
        continue;
      }
      // A live process runs this content now: its outcome will be ours to print.
      await new Promise((resolve) => setTimeout(resolve, WAIT_FOR_HOLDER_MS));
      holder = await claim();
    }
    return { runId };
  }

  /** Writes the owner record, unless this runtime wrote it already with as much to say. */
  async #own(runId: string, draftRef?: string): Promise<void> {
    if (this.#owned.has(runId) && (draftRef === undefined || this.#owned.get(runId) === draftRef)) return;
    this.#owned.set(runId, draftRef);
    await markOwned(this.dataDir, runId, draftRef);
  }

  /** Gives up ownership of an execution whose run has its final status (or never started); once. */
  async release(runId: string): Promise<void> {
    if (!this.#owned.delete(runId)) return;
    await releaseOwned(this.dataDir, runId);
  }

  /** Publishes an outcome event outside an execution (a reviewer's decision), like the Announce states. */
  async publish(detailType: string, detail: Record<string, unknown>): Promise<void> {
    await this.#putEvents({
      Entries: [{ Source: "redraft", DetailType: detailType, Detail: detail, EventBusName: LOCAL_EVENT_BUS }],
    });
  }

  /**
   * EventBridge, locally: one JSON line per event in `<dataDir>/events.jsonl`. The file is opened in
   * append mode once per runtime rather than once per event, and written synchronously, in one
   * write per call (a round trip to the thread pool costs more than appending a line); every write
   * still lands at the end, whoever else appends.
   */
  async #putEvents(input: PutEventsInput): Promise<unknown> {
    const lines = input.Entries.map((entry) => {
      const detail = typeof entry.Detail === "string" ? JSON.parse(entry.Detail) : entry.Detail;
      return JSON.stringify({ id: randomUUID(), time: new Date().toISOString(), ...entry, Detail: detail });
    });
    this.#events ??= openSync(join(this.dataDir, "events.jsonl"), "a");
    appendFileSync(this.#events, `${lines.join("\n")}\n`);
    return { FailedEntryCount: 0, Entries: lines.map(() => ({ EventId: randomUUID() })) };
  }

  /** Runs one execution to its end, keeping its event history like the console does. */
  async execute(input: ExecutionInput, runId: string = randomUUID()): Promise<ExecutionSummary> {
    return (await this.#execute(input, runId, { strict: false })).execution;
  }

  /**
   * {@link execute}, also returning the run record as the execution left it (undefined when it
   * never got one), which the runtime reads anyway to know whether the run is final. A failure to
   * read it is thrown, not taken for a missing run.
   */
  executeAndRead(
    input: ExecutionInput,
    runId: string = randomUUID(),
  ): Promise<{ execution: ExecutionSummary; run: RunRecord | undefined }> {
    return this.#execute(input, runId, { strict: true });
  }

  async #execute(
    input: ExecutionInput,
    runId: string,
    { strict }: { strict: boolean },
  ): Promise<{ execution: ExecutionSummary; run: RunRecord | undefined }> {
    const { engine, machine, handlers, retryIntervals } = await this.#executorReady();
    await this.#own(runId, input.draftRef?.key);
    const summary = await engine.runExecution(
      machine,
      engine.boundInlineDraft(input, this.deps.maxDraftDepth),
      runId,
      { handlers, retryIntervals },
    );
    await this.#backend.saveHistory(runId, summary);
    const run = await this.runs.getRun(runId).catch((error: unknown) => {
      if (strict) throw error;
      return undefined;
    });
    // A run without a record yet stays owned: its submitter records the failure, then releases it.
    if (run && run.status !== "draft" && run.status !== "correcting") await this.release(runId);
    return { execution: summary, run };
  }

  /** The stored event history of an execution, or undefined if this data folder never ran it. */
  async history(runId: string): Promise<ExecutionSummary | undefined> {
    return (await this.#backend.history(runId)) as ExecutionSummary | undefined;
  }

  /** Keeps an execution's history (a batch's executions are kept by their own names). */
  saveHistory(name: string, summary: ExecutionSummary): Promise<void> {
    return this.#backend.saveHistory(name, summary);
  }

  /** Releases what this runtime still owns (every execution has ended), then the event log and the database. */
  async close(): Promise<void> {
    await Promise.all([...this.#owned.keys()].map((runId) => this.release(runId)));
    const events = this.#events;
    this.#events = undefined;
    if (events !== undefined) closeSync(events);
    await this.#close();
  }
}
