import { randomUUID } from "node:crypto";
import type * as z from "zod";
import type { AslDefinition } from "../contracts/asl.js";
import { buildRunResult, type RunResult } from "../shared/loop/run.js";
import {
  type ContentSchema,
  draftWithSchema,
  type TypedRunResult,
  typedResult,
} from "../shared/loop/schema-option.js";
import { LoopStateSchema } from "../shared/loop/state.js";
import { correctStep } from "../shared/loop/steps/correct.js";
import type { LoopDeps } from "../shared/loop/steps/deps.js";
import { recordFailure } from "../shared/loop/steps/failure.js";
import type { ValidateEvent } from "../shared/loop/steps/input.js";
import { judgeStep } from "../shared/loop/steps/judge.js";
import { revalidateStep } from "../shared/loop/steps/revalidate.js";
import { validateStep } from "../shared/loop/steps/validate.js";
import {
  bindTasks,
  boundInlineDraft,
  buildMachine,
  copyObjectIn,
  type Integrations,
  retryIntervals,
  runExecution,
} from "./asl-interpreter.js";
import type { ExecutionSummary, LambdaSteps } from "./execution-types.js";
import type { LocalModelQueue } from "./model-queue.js";
import { loadAsl } from "./state-machine.js";
import { statusUpdateIn } from "./update-item.js";

/** Where the state machine's outcome events go in-process (Announce*): EventBridge's stand-in. */
export interface EventSink {
  publish(detailType: string, detail: Record<string, unknown>): Promise<void>;
}

export interface CorrectDraftOptions {
  runId?: string;
  events?: EventSink;
  parentRunId?: string;
  submissionId?: string;
  /**
   * Wait before each retry, in ms, instead of the ASL's backoff (which errors are retried, and how
   * often, stays the ASL's). @default 0 for a replayed or absent model, the ASL's own backoff for a live one
   */
  retryDelayMs?: number | undefined;
  /**
   * How each Lambda step is invoked: the identity by default. An emulated deployment wraps them the
   * way Lambda stands between Step Functions and a function (tests/cloud/burst.ts, bench:burst: reserved concurrency).
   */
  invoke?: ((steps: LambdaSteps) => LambdaSteps) | undefined;
  /**
   * The model queue the model states wait in: share one between drafts for them to share its slots.
   * @default a queue of DEFAULT_MODEL_CONCURRENCY slots for this draft alone
   */
  modelQueue?: LocalModelQueue | undefined;
  /** Told of each execution as it ends, with its event history (tests/cloud/burst.ts, bench:burst, counts its transitions). */
  onExecution?: ((execution: ExecutionSummary) => void) | undefined;
  /**
   * A zod schema (v4) for a json draft's content: the loop checks the content against
   * `z.toJSONSchema(schema)` as the draft's `context.schema`, and the result's `finalDraft.content`
   * is typed `z.output<typeof schema>` once `status` is `validated` (see TypedRunResult).
   */
  schema?: ContentSchema | undefined;
}

/** `correctDraft` called without what it needs: what is missing, and how to give it. */
class CorrectDraftUsageError extends TypeError {
  override readonly name = "CorrectDraftUsageError";
}

/** Each dependency `correctDraft` cannot run without, named with the fix, before anything runs. */
function checkDeps(deps: unknown): void {
  const given = (deps ?? {}) as Partial<Record<keyof LoopDeps, unknown>>;
  const missing: string[] = [];
  const has = (value: unknown, method: string) =>
    typeof value === "object" &&
    value !== null &&
    typeof (value as Record<string, unknown>)[method] === "function";
  if (!has(given.registry, "get"))
    missing.push(
      "registry (new PackRegistry(), or with your packs: new PackRegistry({}, [...builtinPacks, myPack]))",
    );
  if (!has(given.runs, "createRun"))
    missing.push("runs (a RunStore: new MemoryRunStore() keeps runs in memory)");
  if (!has(given.blobs, "put")) missing.push("blobs (a BlobStore: new MemoryBlobStore())");
  if (given.model !== undefined && !has(given.model, "complete"))
    missing.push(
      "model (a ModelClient from createModelClient(…), or leave it out to validate and repair only)",
    );
  if (missing.length > 0)
    throw new CorrectDraftUsageError(`correctDraft(draft, deps) needs deps.${missing.join("; deps.")}`);
}

let machine: Promise<{ asl: AslDefinition; machine: ReturnType<typeof buildMachine> }> | undefined;

/** The committed state machine, built (and so validated) once per process. */
function stateMachine() {
  machine ??= loadAsl().then((asl) => ({ asl, machine: buildMachine(asl) }));
  return machine;
}

/**
 * Corrects one draft in-process: the committed state machine (contracts/state-machine.asl.json) runs in
 * aws-local-stepfunctions with each Lambda state bound to its core step over the given stores, and
 * each direct integration (UpdateItem, CopyObject, PutEvents) to the same stores and `events`. Every
 * Choice, Retry and Catch is the ASL's. Returns the run result; a model or system failure ends the
 * run as `failed` with the reason recorded, not as an exception.
 */
export async function correctDraft<S extends ContentSchema>(
  draft: unknown,
  deps: LoopDeps & CorrectDraftOptions & { schema: S },
): Promise<TypedRunResult<z.output<S>>>;
export async function correctDraft(draft: unknown, deps: LoopDeps & CorrectDraftOptions): Promise<RunResult>;
export async function correctDraft(given: unknown, deps: LoopDeps & CorrectDraftOptions): Promise<RunResult> {
  checkDeps(deps);
  const { schema } = deps;
  const typed = schema === undefined ? { ok: true as const, draft: given } : draftWithSchema(given, schema);
  if (!typed.ok) throw new CorrectDraftUsageError(typed.problem);
  const draft = typed.draft;
  const { asl, machine } = await stateMachine();
  const runId = deps.runId ?? randomUUID();
  const now = () => deps.clock?.() ?? new Date();
  const ownSteps: LambdaSteps = {
    validate: (event) => {
      const { runId, input } = event as ValidateEvent;
      return validateStep(
        {
          runId,
          ...(input.draft !== undefined && { draft: input.draft }),
          ...(input.submissionId && { submissionId: input.submissionId }),
          ...(input.parentRunId && { parentRunId: input.parentRunId }),
          ...(input.rejectWith && { rejectWith: input.rejectWith }),
        },
        deps,
      );
    },
    correct: (event) => correctStep(LoopStateSchema.parse(event), deps),
    revalidate: (event) => revalidateStep(LoopStateSchema.parse(event), deps),
    judge: (event) => judgeStep(LoopStateSchema.parse(event), deps),
  };
  const steps = deps.invoke?.(ownSteps) ?? ownSteps;
  const integrations: Integrations = {
    updateItem: statusUpdateIn(deps.runs, now),
    copyObject: copyObjectIn(deps.blobs),
    putEvents: async ({ Entries }) => {
      for (const entry of Entries) {
        const detail = typeof entry.Detail === "string" ? JSON.parse(entry.Detail) : entry.Detail;
        await deps.events?.publish(String(entry.DetailType), detail as Record<string, unknown>);
      }
      return { FailedEntryCount: 0, Entries: Entries.map(() => ({ EventId: randomUUID() })) };
    },
  };
  const replayed = deps.model === undefined || deps.model.provider === "replay";
  const delayMs = "retryDelayMs" in deps ? deps.retryDelayMs : replayed ? 0 : undefined;
  const input = boundInlineDraft(
    {
      draft,
      ...(deps.submissionId && { submissionId: deps.submissionId }),
      ...(deps.parentRunId && { parentRunId: deps.parentRunId }),
    } as ValidateEvent["input"],
    deps.maxDraftDepth,
  );
  const execution = await runExecution(machine, input, runId, {
    handlers: bindTasks(asl, steps, integrations, deps.modelQueue),
    retryIntervals: retryIntervals(asl, delayMs),
  });
  deps.onExecution?.(execution);
  if (!(await deps.runs.getRun(runId))) {
    // The execution failed before any run record existed (Validate itself failed for good): record
    // it as the CLI does, so the caller still gets a result.
    await recordFailure(deps, {
      runId,
      draft,
      at: now().toISOString(),
      reason: "system_error",
      message: `${execution.error?.error ?? "ExecutionFailed"}: ${execution.error?.cause ?? ""}`,
    });
  }
  const result = await buildRunResult(runId, deps);
  return schema === undefined ? result : typedResult(result, schema);
}
