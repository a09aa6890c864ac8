import { randomUUID } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { PutItemCommandInput } from "@aws-sdk/client-dynamodb";
import pLimit from "p-limit";
import type { AslDefinition, AslState } from "../contracts/asl.js";
import { BatchStateNames } from "../contracts/state-names.js";
import { createBatchHandler } from "../functions/batch.js";
import { createRoundsHandler } from "../functions/rounds.js";
import { createRevalidateHandler } from "../functions/steps/revalidate.js";
import { createValidateHandler } from "../functions/steps/validate.js";
import { type BatchRecord, rerunId, wasInterrupted } from "../shared/batch/record.js";
import { lineOfRunId, type Pricing, type RoundTiming } from "../shared/batch/rounds.js";
import { ModelNotConfiguredError } from "../shared/errors.js";
import type { BatchModelService } from "../shared/model/batch.js";
import { batchKeys } from "../shared/store/bucket-layout.js";
import { isActiveStatus, type RunRecord } from "../shared/store/types.js";
import type { ExecutionSummary, TaskHandler } from "./asl-interpreter.js";
import * as engine from "./asl-interpreter.js";
import type { LocalBatchStore } from "./backend.js";
import { LocalBatchService } from "./batch-service.js";
import { isAlive, type ProcessIdentity, readIfExists, SELF, writeAtomic } from "./lock.js";
import { batchOwnerFile, holdForBatch, markOwned, releaseOwned } from "./recovery.js";
import type { ExecutionInput, LocalRuntime } from "./runtime.js";
import { LOCAL_BUCKET } from "./state-machine.js";

/** λ rounds' states between the round Maps: SubmitRound, PollBatch, CollectRound. */
const ROUND_STATES = new Set<string>([
  BatchStateNames.SubmitRound,
  BatchStateNames.PollBatch,
  BatchStateNames.CollectRound,
  BatchStateNames.AbandonRounds,
]);

/**
 * The batch state machine (contracts/batch-state-machine.asl.json) on the local runtime. The
 * interpreter runs every state of it; what it lacks of a Distributed Map is supplied here, each
 * stand-in doing what the service documents (README "Batches", tests/workflow/batch.test.ts):
 *
 * - **ItemReader** (`s3:getObject`, JSONL or JSON): the item list is read from the blob folder.
 * - **ItemSelector / ItemProcessor / MaxConcurrency**: each item runs the Map's own item processor
 *   through the interpreter (its own inline Map of one item, so `$$.Map.Item.Value` and the
 *   ItemSelector resolve as in the cloud), at most MaxConcurrency at once (`--concurrency`
 *   overrides it).
 * - **ToleratedFailurePercentage**: failed items are counted as they end; once the share is
 *   exceeded no new item starts and the Map fails with `States.ExceedToleratedFailureThreshold`.
 * - **ResultWriter**: `manifest.json`, `SUCCEEDED_0.json` and `FAILED_0.json` under the prefix and a
 *   map run id, in the blob folder; the Map's output is `{ MapRunArn, ResultWriterDetails }`.
 * - **`states:startExecution.sync:2`**: the child runs on this runtime as its own execution named
 *   as the ASL names it (its run id), with its own history; a name already used is
 *   `StepFunctions.ExecutionAlreadyExistsException`, as Step Functions answers for a closed one.
 * - **Redrive**: a batch whose process died is resumed from PrepareItems (what Step Functions'
 *   redrive does from the failed state): finished children are found by name and not run again.
 */

const DISTRIBUTED_MAP_RESOURCE = "arn:aws:states:::redraft-local:distributedMap";
const START_SYNC = ":states:startExecution.sync:2";

interface ItemEnded {
  line: number;
  runId: string;
  /** The child's run status, or `failed` when its execution failed before recording one. */
  status: string;
  /** Whether the child had run before (a redrive, or a repeated item): nothing ran now. */
  existing: boolean;
  /** The child had been interrupted (its process killed) and was run again now, under a rerun id. */
  rerun?: true;
}

export interface BatchRunOptions {
  /** Overrides the ASL's MaxConcurrency. */
  concurrency?: number | undefined;
  /** How the batch's corrections are priced; absent: the state machine's default (on demand). */
  pricing?: Pricing | undefined;
  /** Batch pricing: how long the local batch service takes to end a batch request. @default 0 */
  batchLatencyMs?: number | undefined;
  /** Batch pricing: the deadline settings. @default LOCAL_ROUND_TIMING */
  timing?: Partial<RoundTiming> | undefined;
  /** Batch pricing: the batch service. @default a LocalBatchService over the runtime's model */
  service?: BatchModelService | undefined;
  /** Batch pricing: the clock the deadline is checked with (tests move it). @default Date.now */
  now?: (() => number) | undefined;
  /** Told when an item's child has ended: for a progress bar. */
  onItem?: ((item: ItemEnded) => void) | undefined;
  /** Told once the item list is read: how many items the Map runs. */
  onItems?: ((count: number) => void) | undefined;
}

/**
 * The progress callbacks as a person reads them: the total once (a batch-priced batch runs a Map per
 * round, each over the items still correcting, and its fallback another), and each item's end once
 * (an item ended by a round, then seen again by a resumed or fallback Map, counts one time).
 */
function progressOnce(options: BatchRunOptions): Pick<BatchRunOptions, "onItem" | "onItems"> {
  let told = false;
  const ended = new Set<string>();
  return {
    onItems: (count) => {
      if (told) return;
      told = true;
      options.onItems?.(count);
    },
    onItem: (item) => {
      if (ended.has(item.runId)) return;
      ended.add(item.runId);
      options.onItem?.(item);
    },
  };
}

export interface BatchRun {
  batchId: string;
  /** The batch record after the run (or as found, for a duplicate). */
  record: BatchRecord | undefined;
  /** The batch execution itself; undefined when this submission was a duplicate of a finished batch. */
  execution?: ExecutionSummary;
  /** This manifest version's batch existed already: nothing ran. */
  duplicate: boolean;
  /** The batch had been interrupted and was resumed. */
  resumed: boolean;
}

/**
 * Batch pricing's deadline settings on the local runtime: a batch has a day, rounds are expected to
 * take a minute, and polls start at once and stay short (the local service ends a batch request
 * after `--batch-latency`).
 */
const LOCAL_ROUND_TIMING: RoundTiming = {
  deadlineMinutes: 24 * 60,
  roundEstimateMinutes: 1,
  fallbackReserveMinutes: 0,
  pollFirstSeconds: 0,
  pollMaxSeconds: 2,
  maxModelRetries: 4,
};

/** Replaces each Distributed Map by a Task bound to the local stand-in, keeping its paths and transitions. */
export function standInDistributedMaps(asl: AslDefinition): {
  asl: AslDefinition;
  maps: Record<string, AslState>;
} {
  const maps: Record<string, AslState> = {};
  const states: Record<string, AslState> = {};
  for (const [name, state] of Object.entries(asl.States)) {
    const processor = state.ItemProcessor as { ProcessorConfig?: { Mode?: string } } | undefined;
    if (state.Type !== "Map" || processor?.ProcessorConfig?.Mode !== "DISTRIBUTED") {
      states[name] = state;
      continue;
    }
    maps[name] = state;
    const reader = state.ItemReader as { Parameters?: Record<string, unknown> } | undefined;
    const {
      ItemProcessor,
      ItemReader,
      ItemSelector,
      MaxConcurrency,
      ResultWriter,
      ToleratedFailurePercentage,
      Type,
      ...kept
    } = state;
    states[name] = {
      ...kept,
      Type: "Task",
      Resource: DISTRIBUTED_MAP_RESOURCE,
      // A Map state has no timeout of its own; the interpreter gives a Task 60 s unless told.
      TimeoutSeconds: asl.TimeoutSeconds ?? 365 * 24 * 3600,
      // The interpreter resolves the reader's paths against the Map's input, as the service does.
      Parameters: { "input.$": "$", reader: reader?.Parameters ?? {} },
    };
  }
  return { asl: { ...asl, States: states }, maps };
}

/** A Step Functions error with the name the ASL's Retry and Catch match. */
function named(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

export class LocalBatchRunner {
  readonly batches: LocalBatchStore;
  #rounds: TaskHandler | undefined;
  /** Lines whose child had already ended failed when this run of the batch found it. */
  readonly #failedBefore = new Set<number>();

  constructor(
    readonly runtime: LocalRuntime,
    readonly asl: AslDefinition,
  ) {
    this.batches = runtime.batches;
  }

  /**
   * Runs the batch of a manifest already in the blob folder. The batch id identifies the manifest
   * version: a second submission of it finds the record and runs nothing (a finished batch), or
   * resumes it when the process that ran it has died.
   */
  async run(batchId: string, manifestKey: string, options: BatchRunOptions = {}): Promise<BatchRun> {
    // λ rounds is built per batch: its service and clock are this batch's options.
    this.#rounds = undefined;
    const existing = await this.batches.get(batchId);
    let resumed = false;
    if (existing) {
      const owner = await readOwner(this.runtime.dataDir, batchId);
      const alive = owner !== undefined && isAlive(owner);
      // A delivery of a batch that exists: the ASL's own CreateBatch refuses it (BatchAlreadyStarted).
      if (existing.status !== "running" || alive) {
        const execution = await this.#execute(
          this.asl,
          batchId,
          manifestKey,
          `${batchId}.${randomUUID().slice(0, 8)}`,
          options,
        );
        return { batchId, record: existing, execution, duplicate: true, resumed };
      }
      resumed = true;
    }
    await mkdir(join(this.runtime.dataDir, "batch-owners"), { recursive: true });
    await writeAtomic(batchOwnerFile(this.runtime.dataDir, batchId), JSON.stringify(SELF));
    try {
      // A redrive starts after the batch record, which exists: CreateBatch is skipped. It goes on as
      // the batch began, priced as its record says (as a redrive in the cloud reruns the execution's
      // own input), whatever this invocation asked; a record from before pricing leaves it to the options.
      const definition = resumed ? redriveFrom(this.asl, BatchStateNames.CreateBatch) : this.asl;
      const pricing = (resumed && existing?.pricing) || options.pricing;
      const execution = await this.#execute(definition, batchId, manifestKey, batchId, {
        ...options,
        ...progressOnce(options),
        pricing,
      });
      return {
        batchId,
        record: await this.batches.get(batchId),
        execution,
        duplicate: execution.terminalState === BatchStateNames.BatchAlreadyStarted,
        resumed,
      };
    } finally {
      await rm(batchOwnerFile(this.runtime.dataDir, batchId), { force: true });
    }
  }

  /** One execution of the batch state machine (its Distributed Maps stood in for), its history kept. */
  async #execute(
    definition: AslDefinition,
    batchId: string,
    manifestKey: string,
    name: string,
    options: BatchRunOptions,
  ): Promise<ExecutionSummary> {
    const { asl, maps } = standInDistributedMaps(definition);
    const execution = await engine.runExecution(
      engine.buildMachine(asl),
      {
        batchId,
        manifestRef: { bucket: LOCAL_BUCKET, key: manifestKey },
        ...(options.pricing && { pricing: options.pricing }),
      },
      name,
      { handlers: this.#handlers(asl, maps, options), retryIntervals: engine.retryIntervals(asl, 0) },
    );
    await this.runtime.saveHistory(name, execution);
    return execution;
  }

  #handlers(
    asl: AslDefinition,
    maps: Record<string, AslState>,
    options: BatchRunOptions,
  ): Record<string, TaskHandler> {
    const { runtime } = this;
    const batchStep = createBatchHandler(async () => ({
      blobs: runtime.blobs,
      runs: runtime.runs,
      bucketName: LOCAL_BUCKET,
      batches: this.batches,
    }));
    const rounds = this.#roundsHandler(options);
    const handlers: Record<string, TaskHandler> = {};
    for (const [name, state] of Object.entries(asl.States)) {
      if (state.Type !== "Task") continue;
      const resource = String(state.Resource);
      if (resource === DISTRIBUTED_MAP_RESOURCE) {
        const map = maps[name];
        if (!map) throw new Error(`no Distributed Map behind the stand-in "${name}"`);
        handlers[name] = (input) => this.#distributedMap(map, input as MapTaskInput, options);
      } else if (resource.endsWith(":dynamodb:putItem")) {
        handlers[name] = (input) => runtime.backend.putItem(input as PutItemCommandInput);
      } else if (resource.endsWith(":events:putEvents")) {
        handlers[name] = async (input) => {
          const entries = (input as { Entries: { DetailType: string; Detail: Record<string, unknown> }[] })
            .Entries;
          for (const entry of entries) await runtime.publish(entry.DetailType, entry.Detail);
          return { FailedEntryCount: 0, Entries: entries.map(() => ({ EventId: randomUUID() })) };
        };
      } else if (ROUND_STATES.has(name)) {
        handlers[name] = (input) => rounds(input);
      } else if (resource.includes(":lambda:") && resource.includes(":function:")) {
        // payloadResponseOnly: the Task's input is the payload, its output the function's answer.
        handlers[name] = (input) => batchStep(input);
      } else {
        throw new Error(`the local runtime has no adapter for batch task state "${name}" (${resource})`);
      }
    }
    return handlers;
  }

  /** The Distributed Map stand-in: see the module comment for what each part does. */
  async #distributedMap(map: AslState, task: MapTaskInput, options: BatchRunOptions): Promise<unknown> {
    const { runtime } = this;
    const readerConfig = (map.ItemReader as { ReaderConfig?: { InputType?: string } } | undefined)
      ?.ReaderConfig;
    const key = String(task.reader.Key ?? "");
    if (task.reader.Bucket !== undefined && task.reader.Bucket !== LOCAL_BUCKET)
      throw named("States.ItemReaderFailed", `the item reader names bucket ${task.reader.Bucket}`);
    let items: unknown[];
    try {
      const text = await runtime.blobs.get(key);
      items =
        readerConfig?.InputType === "JSONL"
          ? text
              .split("\n")
              .filter((line) => line.trim() !== "")
              .map((line) => JSON.parse(line))
          : (JSON.parse(text) as unknown[]);
    } catch (error) {
      throw named("States.ItemReaderFailed", `${key}: ${(error as Error).message}`);
    }
    options.onItems?.(items.length);

    const processor = map.ItemProcessor as { StartAt: string; States: Record<string, AslState> };
    const selector = (map.ItemSelector ?? map.Parameters) as Record<string, unknown> | undefined;
    // One item as an inline Map of one: the interpreter resolves ItemSelector against the Map's
    // input and `$$.Map.Item`, and runs the processor's Retry and Catch itself.
    const single: AslDefinition = {
      StartAt: "Item",
      States: {
        Item: {
          Type: "Map",
          ItemsPath: "$.__item",
          ...(selector && { ItemSelector: withIndexFrom(selector, "$.__index") }),
          ItemProcessor: { ...processor, ProcessorConfig: { Mode: "INLINE" } },
          End: true,
        },
      },
    };
    const machine = engine.buildMachine(single);
    const handlers = this.#itemHandlers(processor, options);
    const isLoopProcessor = !Object.values(processor.States).some((state) =>
      String(state.Resource ?? "").endsWith(START_SYNC),
    );
    const concurrency = options.concurrency ?? (Number(map.MaxConcurrency) || 1000);
    const tolerated = Number(map.ToleratedFailurePercentage ?? 0);
    const mapRunId = randomUUID();
    const succeeded: unknown[] = [];
    const failed: unknown[] = [];
    let exceeded = false;
    const limit = pLimit(concurrency);
    await Promise.all(
      items.map((value, index) =>
        limit(async () => {
          if (exceeded) return;
          const input = { ...task.input, __item: [value], __index: index };
          const summary = await engine.runExecution(machine, input, `${mapRunId}-${index}`, {
            handlers,
            retryIntervals: { ...engine.retryIntervals(single, 0), ...engine.retryIntervals(processor, 0) },
          });
          await this.#releaseEnded(summary, task.input.batchId);
          // A batch-priced round runs the correction loop in the item itself: an item whose run
          // ended here is told as a child's end is (one still waiting for a round is not).
          if (isLoopProcessor) await this.#tellEnded(value, options);
          const entry = { Input: JSON.stringify(value), Status: summary.status };
          const line = (value as { line?: unknown }).line;
          if (summary.status === "SUCCEEDED" && typeof line === "number" && this.#failedBefore.has(line)) {
            // Found already ended failed (a resumed batch): the tolerance is over what the batch produced.
            failed.push({ ...entry, Error: "States.TaskFailed", Cause: "the item's child had ended failed" });
            if ((failed.length / items.length) * 100 > tolerated) exceeded = true;
          } else if (summary.status === "SUCCEEDED") {
            succeeded.push({ ...entry, Output: JSON.stringify((summary.output as unknown[])[0]) });
          } else {
            failed.push({ ...entry, Error: summary.error?.error, Cause: summary.error?.cause });
            if ((failed.length / items.length) * 100 > tolerated) exceeded = true;
          }
        }),
      ),
    );

    const writer = map.ResultWriter as { Parameters?: { Prefix?: string } } | undefined;
    let details: { Bucket: string; Key: string } | undefined;
    if (writer) {
      const base = `${writer.Parameters?.Prefix ?? ""}/${mapRunId}`;
      const files = { SUCCEEDED: succeeded, FAILED: failed };
      for (const [status, list] of Object.entries(files))
        await runtime.blobs.put(`${base}/${status}_0.json`, JSON.stringify(list));
      const manifest = {
        DestinationBucket: LOCAL_BUCKET,
        MapRunArn: mapRunArn(mapRunId),
        ResultFiles: Object.fromEntries(
          Object.entries(files).map(([status, list]) => [
            status,
            [{ Key: `${base}/${status}_0.json`, Size: JSON.stringify(list).length }],
          ]),
        ),
      };
      details = { Bucket: LOCAL_BUCKET, Key: `${base}/manifest.json` };
      await runtime.blobs.put(details.Key, JSON.stringify(manifest));
    }
    if (exceeded || (items.length > 0 && (failed.length / items.length) * 100 > tolerated))
      throw named(
        "States.ExceedToleratedFailureThreshold",
        `${failed.length} of ${items.length} items failed; the Map tolerates ${tolerated}%`,
      );
    return { MapRunArn: mapRunArn(mapRunId), ...(details && { ResultWriterDetails: details }) };
  }

  /**
   * The item processor's Task states: a child execution for `startExecution.sync:2`; the correction
   * loop's states (a batch-priced round) bound as the local runtime binds the per-draft state
   * machine's, the model steps to λ rounds.
   */
  #itemHandlers(
    processor: { StartAt: string; States: Record<string, AslState> },
    options: BatchRunOptions,
  ): Record<string, TaskHandler> {
    const handlers: Record<string, TaskHandler> = {};
    const loopStates: Record<string, AslState> = {};
    for (const [name, state] of Object.entries(processor.States)) {
      if (state.Type !== "Task") continue;
      const resource = String(state.Resource);
      if (resource.endsWith(START_SYNC)) {
        // The fallback's child runs on the item's existing run: only an execution of that name counts.
        const byExecution = name === BatchStateNames.RunDraftOnDemand;
        handlers[name] = (input) => this.#startChild(input as StartInput, options, byExecution);
      } else loopStates[name] = state;
    }
    if (Object.keys(loopStates).length === 0) return handlers;
    return {
      ...handlers,
      ...this.#loopHandlers({ StartAt: processor.StartAt, States: loopStates }, options),
    };
  }

  /**
   * A round's item that has ended its part of the round: its run is no longer in flight in this
   * process (an item of a round holds its run from Validate; a child execution releases its own).
   * Ended, the run is released; parked, it is handed to its batch, which a resume goes on with if
   * this process dies while the batch request is out.
   */
  async #releaseEnded(summary: ExecutionSummary, batchId: unknown): Promise<void> {
    const output = summary.status === "SUCCEEDED" ? (summary.output as unknown[])[0] : undefined;
    const state = (output ?? {}) as { runId?: unknown; parked?: unknown };
    if (typeof state.runId !== "string") return;
    if (state.parked === undefined) await releaseOwned(this.runtime.dataDir, state.runId);
    else if (typeof batchId === "string") await holdForBatch(this.runtime.dataDir, state.runId, batchId);
  }

  /** The correction loop inside a round: the per-draft handlers, the model steps answered by the round. */
  #loopHandlers(asl: AslDefinition, options: BatchRunOptions): Record<string, TaskHandler> {
    const { runtime } = this;
    const getDeps = async () => runtime.deps;
    const validate = createValidateHandler(getDeps, { bucketName: LOCAL_BUCKET });
    const rounds = this.#roundsHandler(options);
    const dataDir = runtime.dataDir;
    return engine.bindTasks(
      asl,
      {
        // The item's run is this process's while it waits for its batch: no other command finishes it.
        validate: async (event) => {
          const runId = (event as { runId?: string }).runId;
          if (runId) await markOwned(dataDir, runId);
          return validate(event);
        },
        correct: rounds,
        judge: rounds,
        revalidate: createRevalidateHandler(getDeps),
      },
      {
        updateItem: (input) => runtime.backend.updateItem(input),
        copyObject: engine.copyObjectIn(runtime.blobs),
        putEvents: async (input) => {
          for (const entry of input.Entries as { DetailType: string; Detail: unknown }[]) {
            const detail = typeof entry.Detail === "string" ? JSON.parse(entry.Detail) : entry.Detail;
            await runtime.publish(entry.DetailType, detail as Record<string, unknown>);
          }
          return { FailedEntryCount: 0, Entries: input.Entries.map(() => ({ EventId: randomUUID() })) };
        },
      },
    );
  }

  /** λ rounds on the local runtime: the runtime's model behind the local batch service, unless given one. */
  #roundsHandler(options: BatchRunOptions): TaskHandler {
    this.#rounds ??= (() => {
      const { runtime } = this;
      const timing = { ...LOCAL_ROUND_TIMING, ...options.timing };
      const model = runtime.deps.model;
      // Without a model nothing can be sent, but a round with nothing waiting (every item ended
      // without a model call) or a failed batch with nothing out needs no service either.
      const service =
        options.service ??
        (model
          ? new LocalBatchService(model, { latencyMs: options.batchLatencyMs ?? 0, blobs: runtime.blobs })
          : noBatchService());
      return createRoundsHandler(async () => {
        return {
          loop: runtime.deps,
          round: {
            blobs: runtime.blobs,
            service,
            timing,
            bucketName: LOCAL_BUCKET,
            itemKey: batchKeys.item,
            recordRounds: (batchId, rounds) => this.batches.recordRounds(batchId, rounds),
            ...(options.now && { now: options.now }),
          },
        };
      });
    })();
    return this.#rounds;
  }

  /**
   * Tells `onItem` of a round's item whose run has an outcome now. Round 0's items are the Map items
   * (line and run id); a later round's are loop states, whose run id names the line.
   */
  async #tellEnded(value: unknown, options: BatchRunOptions): Promise<void> {
    if (!options.onItem) return;
    const runId = (value as { runId?: unknown }).runId;
    if (typeof runId !== "string") return;
    const run = await this.runtime.runs.getRun(runId);
    if (run && !isActiveStatus(run.status))
      options.onItem({ line: lineOfRunId(runId), runId, status: run.status, existing: false });
  }

  /** One child execution, waited for, answered like `DescribeExecution` (`.sync:2`: Output as JSON). */
  async #startChild(input: StartInput, options: BatchRunOptions, byExecution = false): Promise<unknown> {
    const { runtime } = this;
    const name = input.Name ?? randomUUID();
    const line = Number(name.slice(name.lastIndexOf("-") + 1));
    const arn = `arn:aws:states:local:000000000000:execution:redraft:${name}`;
    let existing: { status: string } | ExecutionSummary | undefined = byExecution
      ? await runtime.history(name)
      : ((await runtime.runs.getRun(name)) ?? (await runtime.history(name)));
    // A child whose process was killed under it runs again under its next rerun id (the interrupted
    // run stays as history, and AggregateBatch follows the item to its last run); one that already
    // ran again to an end is the item's run.
    let runName = name;
    if (!byExecution && existing && "reason" in existing && existing.status === "failed") {
      const batchId = name.slice(0, name.lastIndexOf("-"));
      let run = existing as RunRecord;
      for (let n = 1; wasInterrupted(run); n++) {
        runName = rerunId(batchId, line, n);
        const next = await runtime.runs.getRun(runName);
        if (!next) break;
        run = next;
      }
      existing = wasInterrupted(run) ? undefined : run;
      if (existing) runName = name;
    }
    if (existing) {
      // A failed item counts against the Map's tolerance however many runs of the batch it took.
      if ("status" in existing && existing.status === "failed") this.#failedBefore.add(line);
      options.onItem?.({
        line,
        runId: name,
        status: "status" in existing ? String(existing.status) : "failed",
        existing: true,
      });
      throw named("StepFunctions.ExecutionAlreadyExistsException", `Execution Already Exists: '${arn}'`);
    }
    const startDate = new Date().toISOString();
    const summary = await runtime.execute(input.Input as ExecutionInput, runName);
    const run = await runtime.runs.getRun(runName);
    options.onItem?.({
      line,
      runId: runName,
      status: run?.status ?? "failed",
      existing: false,
      ...(runName !== name && { rerun: true }),
    });
    const described = {
      ExecutionArn: arn,
      Name: runName,
      StateMachineArn: input.StateMachineArn,
      StartDate: startDate,
      StopDate: new Date().toISOString(),
      Status: summary.status,
      ...(summary.status === "SUCCEEDED"
        ? { Output: summary.output ?? {} }
        : { Error: summary.error?.error, Cause: summary.error?.cause }),
    };
    // `.sync`: a child that failed fails the task, with its description as the cause.
    if (summary.status !== "SUCCEEDED") throw named("States.TaskFailed", JSON.stringify(described));
    return described;
  }
}

interface MapTaskInput {
  input: Record<string, unknown>;
  reader: { Bucket?: string; Key?: string };
}

interface StartInput {
  StateMachineArn: string;
  Name?: string;
  Input: unknown;
}

const mapRunArn = (id: string) => `arn:aws:states:local:000000000000:mapRun:redraft-batch/${id}`;

/** The ItemSelector of the one-item Map, with `$$.Map.Item.Index` read from where the item's index is. */
function withIndexFrom(selector: Record<string, unknown>, indexPath: string): Record<string, unknown> {
  return JSON.parse(JSON.stringify(selector).replaceAll('"$$.Map.Item.Index"', JSON.stringify(indexPath)));
}

/**
 * The definition as a redrive of a batch runs it: the state that leads to `skip` (the batch record's
 * creation, done already) goes on to what follows it instead. States no longer reachable are left
 * out, as the interpreter requires.
 */
function redriveFrom(asl: AslDefinition, skip: string): AslDefinition {
  const after = asl.States[skip]?.Next as string | undefined;
  if (after === undefined) return asl;
  const states: Record<string, AslState> = Object.fromEntries(
    Object.entries(asl.States).map(([name, s]) => [name, s.Next === skip ? { ...s, Next: after } : s]),
  );
  const reachable = new Set<string>();
  const visit = (name: string | undefined) => {
    const s = name === undefined ? undefined : states[name];
    if (name === undefined || !s || reachable.has(name)) return;
    reachable.add(name);
    const rules = [...((s.Choices as { Next: string }[]) ?? []), ...((s.Catch as { Next: string }[]) ?? [])];
    for (const next of [s.Next as string, s.Default as string, ...rules.map((r) => r.Next)]) visit(next);
  };
  visit(asl.StartAt);
  return {
    ...asl,
    States: Object.fromEntries(Object.entries(states).filter(([name]) => reachable.has(name))),
  };
}

/** The batch service of a runtime without a model: any call to it is refused as on demand would be. */
function noBatchService(): BatchModelService {
  const refuse = async (): Promise<never> => {
    throw new ModelNotConfiguredError("batch pricing needs a model to answer its batches");
  };
  return {
    provider: "none",
    model: "none",
    limits: { maxRequests: 1, maxBytes: 1, minRequests: 1 },
    requestBytes: () => 0,
    submit: refuse,
    status: refuse,
    results: refuse,
    cancel: refuse,
  };
}

async function readOwner(dataDir: string, batchId: string): Promise<ProcessIdentity | undefined> {
  const text = await readIfExists(batchOwnerFile(dataDir, batchId));
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as ProcessIdentity;
  } catch {
    return undefined;
  }
}
