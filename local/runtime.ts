import "./polyfill.js";
import { randomUUID } from "node:crypto";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type DynamoDBClient,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import { createCorrectHandler } from "../functions/correct.js";
import { createJudgeHandler } from "../functions/judge.js";
import { DynamoRunStore } from "../functions/lib/dynamo-store.js";
import { createRevalidateHandler } from "../functions/revalidate.js";
import { createValidateHandler } from "../functions/validate.js";
import type { AslDefinition } from "../infra/asl.js";
import { StateNames } from "../infra/state-names.js";
import { DraftTooDeepError, SelfCorrectionError } from "../shared/errors.js";
import { canonicalJson, sha256 } from "../shared/hash.js";
import { topLevelField, valueDepth } from "../shared/json-depth.js";
import type { InputRejection, LoopDeps } from "../shared/loop/steps.js";
import type { ModelClient } from "../shared/model/types.js";
import type { AnyPack, DeploymentConfig } from "../shared/pack.js";
import { builtinPacks } from "../shared/packs/index.js";
import { PackRegistry } from "../shared/registry.js";
import type { RunStatus } from "../shared/store/types.js";
import { DEFAULT_MAX_DRAFT_DEPTH, parseDraft } from "../shared/validate.js";
import { ensureTable } from "./dynalite.js";
import { FsBlobStore } from "./fs-blobs.js";
import { writeAtomic } from "./lock.js";
import {
  finishInterrupted,
  markOwned,
  ownerAlive,
  readOwner,
  recoverInterrupted,
  releaseOwned,
} from "./recovery.js";
import { SharedDynamo } from "./shared-db.js";

/** The bucket name the local runtime gives the state machine; blobs live in `<dataDir>/blobs`. */
export const LOCAL_BUCKET = "redraft-local";
export const LOCAL_TABLE = "redraft-local";
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
/** Stands for `$$.State.EnteredTime` in the local context; replaced by the time of the call. */
const ENTERED_TIME_MARKER = "1970-01-01T00:00:00.000Z#entered";

/** What starts an execution: the state machine's input, as the triggers build it in the cloud. */
export interface ExecutionInput {
  draft?: unknown;
  draftRef?: { bucket: string; key: string };
  submissionId?: string;
  parentRunId?: string;
  /** An input the submitter could not read (a missing path, a symlink loop): the run is rejected with it. */
  rejectWith?: InputRejection;
}

/** One entry of an execution's event history, as the Step Functions console lists them. */
export interface HistoryEvent {
  type: string;
  at: string;
  state?: string;
  stateType?: string;
  error?: string;
  cause?: string;
  retry?: { attempt: number };
  /** The state's input and output, as the console shows them. */
  input?: unknown;
  output?: unknown;
}

export interface ExecutionSummary {
  runId: string;
  status: "SUCCEEDED" | "FAILED";
  /** The last state entered: DraftValidated, DraftNeedsReview, InputRejected, CorrectionFailed… */
  terminalState: string;
  output?: unknown;
  error?: { error: string; cause: string };
  history: HistoryEvent[];
}

export interface LocalRuntimeOptions {
  /** Folder holding the database, blobs, event log and execution histories. */
  dataDir: string;
  /** The synthesized state machine (see `loadAsl`). */
  asl: AslDefinition;
  model?: ModelClient | undefined;
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
  /** Told when the folder's database is held by another process that is not answering yet. @default stderr */
  onWait?: (message: string) => void;
  /** How long to wait for the folder's database. @default 60_000 */
  dbTimeoutMs?: number;
}

/** What `admit` decided: run the draft under `runId`, or print the finished run `duplicateOf`. */
export type Admission =
  | { runId: string; duplicateOf?: undefined }
  | { duplicateOf: string; runId?: undefined };

type TaskHandler = (input: unknown) => Promise<unknown>;

/**
 * The deployed state machine, run in-process: the ASL synthesized from `infra/`, every Lambda task
 * bound to the real handler, every direct service integration bound to a local adapter doing the
 * same call against dynalite, a folder, and an event log.
 */
export class LocalRuntime {
  readonly runs: DynamoRunStore;
  readonly blobs: FsBlobStore;
  readonly deps: LoopDeps;
  readonly #machine: StateMachine;
  readonly #handlers: Record<string, TaskHandler>;
  readonly #retryOverrides: Record<string, number> | undefined;
  readonly #close: () => Promise<void>;
  /** Executions this runtime owns (see local/recovery.ts); released when their run is final. */
  readonly #owned = new Set<string>();
  /** Runs of this folder found interrupted (their process gone) when the runtime opened. */
  interrupted: string[] = [];

  private constructor(
    readonly dataDir: string,
    asl: AslDefinition,
    dynamo: DynamoDBClient,
    deps: LoopDeps,
    retryDelayMs: number | undefined,
    close: () => Promise<void>,
  ) {
    this.deps = deps;
    this.runs = deps.runs as DynamoRunStore;
    this.blobs = deps.blobs as FsBlobStore;
    this.#close = close;
    // Building the machine validates the definition (~170 ms): once per runtime, not per draft.
    this.#machine = new StateMachine(asl as unknown as StateMachineDefinition, {
      validationOptions: { checkArn: false },
    });
    this.#handlers = this.#bindTasks(asl, dynamo);
    this.#retryOverrides =
      retryDelayMs === undefined
        ? undefined
        : Object.fromEntries(
            Object.entries(asl.States)
              .filter(([, s]) => Array.isArray(s.Retry))
              .map(([name]) => [name, retryDelayMs]),
          );
  }

  static async open(options: LocalRuntimeOptions): Promise<LocalRuntime> {
    const { dataDir } = options;
    await mkdir(join(dataDir, "executions"), { recursive: true });
    const db = await SharedDynamo.open(dataDir, {
      onWait: options.onWait ?? ((message) => process.stderr.write(`${message}\n`)),
      ...(options.dbTimeoutMs !== undefined && { timeoutMs: options.dbTimeoutMs }),
    });
    try {
      await ensureTable(db.client, LOCAL_TABLE);
    } catch (error) {
      await db.close();
      throw error;
    }
    const deps: LoopDeps = {
      registry: new PackRegistry(options.deployment ?? {}, [...builtinPacks, ...(options.extraPacks ?? [])]),
      runs: new DynamoRunStore({ client: db.client, tableName: LOCAL_TABLE }),
      blobs: new FsBlobStore(join(dataDir, "blobs")),
      model: options.model,
      ...(options.dedupeWindowMs !== undefined && { dedupeWindowMs: options.dedupeWindowMs }),
      ...(options.maxDraftBytes !== undefined && { maxDraftBytes: options.maxDraftBytes }),
      ...(options.maxDraftDepth !== undefined && { maxDraftDepth: options.maxDraftDepth }),
    };
    const runtime = new LocalRuntime(dataDir, options.asl, db.client, deps, options.retryDelayMs, () =>
      db.close(),
    );
    try {
      runtime.interrupted = await recoverInterrupted(dataDir, deps);
    } catch (error) {
      await db.close();
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
  async admit(body: string, options: { rerun?: boolean } = {}): Promise<Admission> {
    const runId = randomUUID();
    let contentHash: string;
    try {
      const draft = parseDraft(body, {
        maxDraftBytes: this.deps.maxDraftBytes,
        maxDraftDepth: this.deps.maxDraftDepth,
      });
      contentHash = sha256(`${canonicalJson(draft)}\n${LOCAL_SUBMISSION_ID}`);
    } catch (error) {
      if (error instanceof SelfCorrectionError) return { runId };
      throw error;
    }
    await this.#own(runId);
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

  async #own(runId: string, draftRef?: string): Promise<void> {
    this.#owned.add(runId);
    await markOwned(this.dataDir, runId, draftRef);
  }

  /** Gives up ownership of an execution whose run has its final status (or never started). */
  async release(runId: string): Promise<void> {
    this.#owned.delete(runId);
    await releaseOwned(this.dataDir, runId);
  }

  /** Binds each Task state by name, as aws-local-stepfunctions' overrides require. */
  #bindTasks(asl: AslDefinition, dynamo: DynamoDBClient): Record<string, TaskHandler> {
    const getDeps = async () => this.deps;
    const correct = createCorrectHandler(getDeps);
    const revalidate = createRevalidateHandler(getDeps);
    const lambdas: Record<string, (event: unknown) => Promise<unknown>> = {
      [StateNames.Validate]: createValidateHandler(getDeps, { bucketName: LOCAL_BUCKET }),
      [StateNames.CorrectExecution]: correct,
      [StateNames.Revalidate]: revalidate,
      [StateNames.Judge]: createJudgeHandler(getDeps),
      [StateNames.CorrectLogic]: correct,
      [StateNames.RevalidateLogic]: revalidate,
    };
    const handlers: Record<string, TaskHandler> = {};
    for (const [name, state] of Object.entries(asl.States)) {
      if (state.Type !== "Task") continue;
      const resource = String(state.Resource);
      const lambda = lambdas[name];
      if (lambda) {
        // `lambda:invoke` hands over {FunctionName, Payload} and expects the Invoke response back.
        handlers[name] = resource.endsWith(":lambda:invoke")
          ? async (input) => ({
              StatusCode: 200,
              ExecutedVersion: "$LATEST",
              Payload: await lambda((input as { Payload: unknown }).Payload),
            })
          : lambda;
      } else if (resource.endsWith(":dynamodb:updateItem")) {
        handlers[name] = (input) => this.#updateItem(dynamo, input as UpdateItemCommandInput);
      } else if (resource.endsWith(":s3:copyObject")) {
        handlers[name] = (input) =>
          this.#copyObject(input as { Bucket: string; CopySource: string; Key: string });
      } else if (resource.endsWith(":events:putEvents")) {
        handlers[name] = (input) => this.#putEvents(input as { Entries: Record<string, unknown>[] });
      } else {
        throw new Error(`the local runtime has no adapter for task state "${name}" (${resource})`);
      }
    }
    return handlers;
  }

  /** The state's own UpdateItem, against dynalite; errors named as Step Functions names them. */
  async #updateItem(dynamo: DynamoDBClient, input: UpdateItemCommandInput): Promise<unknown> {
    // Step Functions fills `$$.State.EnteredTime` per state; aws-local-stepfunctions has one context
    // per execution, so the runtime passes a marker there and stamps the real time here.
    const values = JSON.stringify(input.ExpressionAttributeValues ?? {}).replaceAll(
      ENTERED_TIME_MARKER,
      new Date().toISOString(),
    );
    try {
      const out = await dynamo.send(
        new UpdateItemCommand({
          ...input,
          ExpressionAttributeValues: JSON.parse(values),
          TableName: LOCAL_TABLE,
        }),
      );
      return { Attributes: out.Attributes };
    } catch (error) {
      const e = error as Error;
      const named = new Error(e.message);
      named.name = `DynamoDB.${e.name}`;
      throw named;
    }
  }

  async #copyObject(input: { Bucket: string; CopySource: string; Key: string }): Promise<unknown> {
    const source = decodeURIComponent(input.CopySource.replace(/^\/?[^/]+\//, ""));
    await this.blobs.put(input.Key, await this.blobs.get(source));
    return { CopyObjectResult: { LastModified: new Date().toISOString() } };
  }

  /** Publishes an outcome event outside an execution (a reviewer's decision), like the Announce states. */
  async publish(detailType: string, detail: Record<string, unknown>): Promise<void> {
    await this.#putEvents({
      Entries: [{ Source: "redraft", DetailType: detailType, Detail: detail, EventBusName: "local" }],
    });
  }

  /** EventBridge, locally: one JSON line per event in `<dataDir>/events.jsonl`. */
  async #putEvents(input: { Entries: Record<string, unknown>[] }): Promise<unknown> {
    const lines = input.Entries.map((entry) => {
      const detail = typeof entry.Detail === "string" ? JSON.parse(entry.Detail) : entry.Detail;
      return JSON.stringify({ id: randomUUID(), time: new Date().toISOString(), ...entry, Detail: detail });
    });
    await appendFile(join(this.dataDir, "events.jsonl"), `${lines.join("\n")}\n`);
    return { FailedEntryCount: 0, Entries: lines.map(() => ({ EventId: randomUUID() })) };
  }

  /**
   * An inline draft too deep for the engine's JSONPath handling, which recurses over the input and
   * would overflow before Validate runs, is refused here with the reason Validate would give.
   */
  #bounded(input: ExecutionInput): ExecutionInput {
    if (input.draft === undefined) return input;
    const limit = this.deps.maxDraftDepth ?? DEFAULT_MAX_DRAFT_DEPTH;
    const depth = valueDepth(input.draft, limit);
    if (depth <= limit) return input;
    const { draft, ...rest } = input;
    const draftId = topLevelField(draft, "id");
    return {
      ...rest,
      rejectWith: {
        reason: "too_deep",
        message: new DraftTooDeepError(depth, limit).message,
        ...(draftId && { draftId }),
      },
    };
  }

  /** Runs one execution to its end, keeping its event history like the console does. */
  async execute(input: ExecutionInput, runId: string = randomUUID()): Promise<ExecutionSummary> {
    await this.#own(runId, input.draftRef?.key);
    const execution = this.#machine.run(this.#bounded(input) as never, {
      overrides: {
        taskResourceLocalHandlers: this.#handlers as never,
        ...(this.#retryOverrides && { retryIntervalOverrides: this.#retryOverrides }),
      },
      context: {
        Execution: { Name: runId, Id: `arn:aws:states:local:000000000000:execution:redraft:${runId}` },
        State: { EnteredTime: ENTERED_TIME_MARKER },
      },
    });
    const history: HistoryEvent[] = [];
    const collecting = (async () => {
      for await (const event of execution.eventLogs) history.push(toHistory(event as LibraryEvent));
    })();
    let summary: ExecutionSummary;
    try {
      const output = await execution.result;
      await collecting;
      summary = { runId, status: "SUCCEEDED", terminalState: lastState(history), output, history };
    } catch (error) {
      // An engine fault outside any state ends no event stream: take the events so far, do not wait.
      await Promise.race([collecting, new Promise((resolve) => setImmediate(resolve))]);
      const e = error as Error & { cause?: { name?: string; message?: string } };
      const failed = [...history].reverse().find((h) => h.type === "ExecutionFailed");
      summary = {
        runId,
        status: "FAILED",
        terminalState: lastState(history),
        error: { error: failed?.error ?? e.name, cause: failed?.cause ?? e.message },
        history,
      };
    }
    // Atomic: `redraft show` in another process may read it while it is written.
    await writeAtomic(join(this.dataDir, "executions", `${runId}.json`), JSON.stringify(summary, null, 2));
    const run = await this.runs.getRun(runId).catch(() => undefined);
    // A run without a record yet stays owned: its submitter records the failure, then releases it.
    if (run && run.status !== "draft" && run.status !== "correcting") await this.release(runId);
    return summary;
  }

  /** The stored event history of an execution, or undefined if this data folder never ran it. */
  async history(runId: string): Promise<ExecutionSummary | undefined> {
    try {
      return JSON.parse(
        await readFile(join(this.dataDir, "executions", `${runId}.json`), "utf8"),
      ) as ExecutionSummary;
    } catch {
      return undefined;
    }
  }

  /** Releases what this runtime still owns (every execution has ended), then the database. */
  async close(): Promise<void> {
    await Promise.all([...this.#owned].map((runId) => this.release(runId)));
    await this.#close();
  }
}

function lastState(history: readonly HistoryEvent[]): string {
  return [...history].reverse().find((h) => h.type === "StateEntered")?.state ?? "";
}

/** aws-local-stepfunctions does not export its event type; these are the fields read here. */
interface LibraryEvent {
  type: string;
  timestamp: number;
  state?: { name: string; type: string; input?: unknown; output?: unknown };
  Error?: unknown;
  Cause?: unknown;
  retry?: { attempt: number };
}

function toHistory(event: LibraryEvent): HistoryEvent {
  const h: HistoryEvent = { type: event.type, at: new Date(event.timestamp).toISOString() };
  if (event.state) {
    h.state = event.state.name;
    h.stateType = event.state.type;
    if (event.type === "StateEntered") h.input = event.state.input;
    if (event.type === "StateExited") h.output = event.state.output;
  }
  if (event.Error !== undefined) {
    h.error = String(event.Error);
    h.cause = typeof event.Cause === "string" ? event.Cause : JSON.stringify(event.Cause);
  }
  if (event.retry) h.retry = { attempt: event.retry.attempt };
  return h;
}
