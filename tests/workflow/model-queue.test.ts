import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StateNames } from "../../contracts/state-names.js";
import type { TaskHandler } from "../../local/asl-interpreter.js";
import { LocalBatchRunner } from "../../local/batch.js";
import { correctDraft } from "../../local/in-process.js";
import { LocalModelQueue } from "../../local/model-queue.js";
import { LocalRuntime } from "../../local/runtime.js";
import { loadBatchAsl } from "../../local/state-machine.js";
import { waitingSince } from "../../local/waiting.js";
import { childRunId } from "../../shared/batch/record.js";
import { ErrorNames, ModelRateLimitedError } from "../../shared/errors.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";
import { path, synthesizedAsl } from "./harness.js";

/**
 * Model work waits for a slot (infra/constructs/model-queue.ts; locally local/model-queue.ts): the
 * committed state machine's model states send their work to a queue with a task token, a burst
 * beyond the slots waits there instead of being throttled, a 429 puts the work back, and only the
 * run's deadline ends the wait, as failed / deadline.
 */

const template = JSON.parse(
  await readFile(new URL("../../examples/drafts/json-corrected.json", import.meta.url), "utf8"),
) as { id: string; content: Record<string, unknown> };
const draft = (i: number) => ({ ...template, id: `${template.id}-${i}` });

/**
 * A model answering each correction with the draft's content and the missing field added. It counts
 * the calls in flight, and answers 429 to the first `throttle(draftId)` calls of a draft.
 */
class CountingModel implements ModelClient {
  readonly provider = "test";
  readonly model = "claude-sonnet-5-5";
  inFlight = 0;
  maxInFlight = 0;
  calls = 0;
  throttled = 0;
  readonly #seen = new Map<string, number>();
  constructor(private readonly throttle: (draftId: string) => number = () => 0) {}
  async complete(request: ModelRequest): Promise<ModelResponse> {
    const seen = this.#seen.get(request.draftId) ?? 0;
    this.#seen.set(request.draftId, seen + 1);
    if (seen < this.throttle(request.draftId)) {
      this.throttled += 1;
      throw new ModelRateLimitedError("429 from the test model");
    }
    this.calls += 1;
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    // A turn of the event loop, so that calls admitted together overlap.
    await new Promise((resolve) => setImmediate(resolve));
    this.inFlight -= 1;
    const content = (request.subject?.content ?? {}) as Record<string, unknown>;
    return {
      output: { content: { ...content, year: 2025 }, analysis: "year missing", fixDescription: "added year" },
      usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0 },
      model: this.model,
      latencyMs: 1,
    };
  }
}

/**
 * Lambda's reserved concurrency on a function: an invoke beyond `slots` in flight fails at once. One
 * gate per function, shared by every draft's binding of it.
 */
function reservedConcurrency(slots: number, refused: { count: number }) {
  let inFlight = 0;
  return (fn: TaskHandler): TaskHandler =>
    async (input) => {
      if (inFlight >= slots) {
        refused.count += 1;
        throw Object.assign(new Error("Rate Exceeded."), { name: "Lambda.TooManyRequestsException" });
      }
      inFlight += 1;
      try {
        return await fn(input);
      } finally {
        inFlight -= 1;
      }
    };
}

const opened: { runtime: LocalRuntime; dataDir: string }[] = [];
afterEach(async () => {
  for (const { runtime, dataDir } of opened.splice(0)) {
    await runtime.close();
    await rm(dataDir, { recursive: true, force: true });
  }
});

async function open(model: ModelClient, options: { slots: number; clock?: () => Date }) {
  const dataDir = await mkdtemp(join(tmpdir(), "redraft-queue-"));
  const runtime = await LocalRuntime.open({
    dataDir,
    asl: await synthesizedAsl(),
    model,
    retryDelayMs: 0,
    modelSlots: options.slots,
    ...(options.clock && { modelQueueClock: options.clock }),
  });
  opened.push({ runtime, dataDir });
  return runtime;
}

describe("model work waits for a slot", () => {
  it("the model states send their work to the model queue with a task token, bounded by the deadline", async () => {
    const asl = await synthesizedAsl();
    for (const name of [StateNames.CorrectExecution, StateNames.Judge, StateNames.CorrectLogic]) {
      const state = asl.States[name] as unknown as Record<string, unknown> & {
        Parameters: { MessageBody: Record<string, unknown> };
        Catch: { ErrorEquals: string[]; Next: string }[];
      };
      expect(state.Resource).toBe("arn:aws:states:::sqs:sendMessage.waitForTaskToken");
      expect(state.Parameters.MessageBody["taskToken.$"]).toBe("$$.Task.Token");
      expect(state.TimeoutSeconds).toBe(state.Parameters.MessageBody.deadlineSeconds);
      expect(state.Catch[0]).toMatchObject({
        ErrorEquals: [ErrorNames.DeadlinePassed, "States.Timeout"],
        Next: StateNames.RecordDeadline,
      });
    }
  });

  it("throttle → wait → success: a burst beyond the reserved concurrency waits in the queue, no invoke is refused", async () => {
    const model = new CountingModel();
    const queue = new LocalModelQueue({ slots: 2, longestWaitMs: 0 });
    const refused = { count: 0 };
    const correctGate = reservedConcurrency(2, refused);
    const judgeGate = reservedConcurrency(2, refused);
    const runs = new MemoryRunStore();
    const deps = {
      registry: new PackRegistry(),
      runs,
      blobs: new MemoryBlobStore(),
      model,
      retryDelayMs: 0,
      modelQueue: queue,
      // λ correct and λ judge at 2 of reserved concurrency, as Lambda applies it.
      invoke: (steps: Parameters<NonNullable<Parameters<typeof correctDraft>[1]["invoke"]>>[0]) => ({
        ...steps,
        correct: correctGate(steps.correct),
        judge: judgeGate(steps.judge),
      }),
    };
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => correctDraft(draft(i), { ...deps, runId: `burst-${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(12).fill("validated"));
    expect(refused.count).toBe(0);
    expect(model.maxInFlight).toBeLessThanOrEqual(2);
    expect(model.calls).toBe(12);
    // The burst waited: more work than slots was queued at once.
    expect(queue.peakDepth).toBeGreaterThan(0);
    expect(queue.depth).toBe(0);
  });

  it("429 → requeue → success: more 429s than the old retry allowed, and the draft is still corrected", async () => {
    // Six 429s: MODEL_RETRY gave up after four and failed the run with model_error.
    const model = new CountingModel(() => 6);
    const runtime = await open(model, { slots: 1 });
    const execution = await runtime.execute({ draft: draft(1) }, "r-429");
    const run = await runtime.runs.getRun("r-429");
    expect(run?.status).toBe("validated");
    const retried = execution.history.filter(
      (h) => h.type === "StateRetried" && h.state === StateNames.CorrectExecution,
    );
    expect(retried).toHaveLength(6);
    expect(path(execution.history).filter((s) => s === StateNames.CorrectExecution)).toHaveLength(1);
  });

  it("deadline passed → failed / deadline: a draft answered 429 until its deadline is recorded so", async () => {
    const model = new CountingModel(() => Number.POSITIVE_INFINITY);
    // The third 429 arrives a day and an hour after the execution started.
    const runtime = await open(model, {
      slots: 1,
      clock: () => new Date(Date.now() + (model.throttled >= 3 ? 25 * 3600_000 : 0)),
    });
    const execution = await runtime.execute({ draft: draft(2) }, "r-deadline");
    const run = await runtime.runs.getRun("r-deadline");
    expect(run).toMatchObject({ status: "failed", reason: "deadline" });
    expect(run?.message).toContain(ErrorNames.DeadlinePassed);
    expect(path(execution.history)).toContain(StateNames.RecordDeadline);
    expect(model.throttled).toBe(3);
  });

  it("work taken from the queue after its deadline is not started", async () => {
    const model = new CountingModel();
    const runtime = await open(model, { slots: 1, clock: () => new Date(Date.now() + 25 * 3600_000) });
    await runtime.execute({ draft: draft(3) }, "r-expired");
    expect(await runtime.runs.getRun("r-expired")).toMatchObject({ status: "failed", reason: "deadline" });
    expect(model.calls).toBe(0);
  });

  it("while a run waits for a slot, the data folder says since when (redraft show reads it); once taken, no longer", async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const model = new CountingModel();
    const answer = model.complete.bind(model);
    let holding = false;
    model.complete = async (request) => {
      if (request.draftId.endsWith("-10")) {
        holding = true;
        await held;
      }
      return answer(request);
    };
    const runtime = await open(model, { slots: 1 });
    const first = runtime.execute({ draft: draft(10) }, "r-holds");
    // The first draft holds the only slot; the second's model work queues behind it.
    while (!holding) await new Promise((r) => setImmediate(r));
    const second = runtime.execute({ draft: draft(11) }, "r-waits");
    while (runtime.modelQueue.depth === 0) await new Promise((r) => setImmediate(r));
    expect(runtime.modelQueue.positionOf("r-waits")).toMatchObject({ position: 1 });
    expect(await waitingSince(runtime.dataDir, "r-waits")).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await waitingSince(runtime.dataDir, "r-holds")).toBeUndefined();
    release();
    await Promise.all([first, second]);
    expect(await waitingSince(runtime.dataDir, "r-waits")).toBeUndefined();
    expect((await runtime.runs.getRun("r-waits"))?.status).toBe("validated");
  });

  it("a batch at slot count 1 completes: every item corrected, none failed", async () => {
    const model = new CountingModel((id) => (id.endsWith("-3") ? 2 : 0));
    const runtime = await open(model, { slots: 1 });
    const lines = Array.from({ length: 8 }, (_, i) => JSON.stringify(draft(i)));
    await runtime.blobs.put("batches/slots.jsonl", lines.join("\n"));
    const runner = new LocalBatchRunner(runtime, await loadBatchAsl());
    const outcome = await runner.run("b-slots", "batches/slots.jsonl", { concurrency: 8 });
    expect(outcome.record?.status).toBe("completed");
    expect(outcome.record?.counts).toEqual({ validated: 8 });
    for (let line = 1; line <= 8; line++)
      expect((await runtime.runs.getRun(childRunId("b-slots", line)))?.status).toBe("validated");
    expect(model.maxInFlight).toBe(1);
    expect(runtime.modelQueue.peakDepth).toBeGreaterThan(0);
  });
});
