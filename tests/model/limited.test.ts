import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pLimit from "p-limit";
import { describe, expect, it, vi } from "vitest";
import { boundModel, chooseModel } from "../../cli/model.js";
import { LOCAL_BUCKET, LocalRuntime } from "../../local/runtime.js";
import {
  ErrorNames,
  ModelOverloadedError,
  ModelRateLimitedError,
  ModelTimeoutError,
} from "../../shared/errors.js";
import { buildRunResult } from "../../shared/loop/run.js";
import { LimitedModelClient, limitModel, retryAfterMs } from "../../shared/model/limited.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";
import { DeploymentConfigSchema } from "../../shared/pack.js";
import { DRAFT_WITH_ERRORS, FULLY_CORRECTED_DRAFT } from "../fixtures/seed004.js";
import { synthesizedAsl } from "../workflow/harness.js";

const USAGE = { input: 1000, output: 500, cacheRead: 0, cacheWrite: 0 };
const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const request = (draftId: string, runId = `run-${draftId}`): ModelRequest => ({
  runId,
  draftId,
  purpose: "correct",
  system: [{ text: "system" }],
  user: "user",
  tool: { name: "answer", description: "answer", inputSchema: {} },
  maxTokens: 100,
});

/**
 * A model with room for `capacity` calls at once: one more call in flight and it answers 429, as
 * Anthropic does past a rate limit. Otherwise it corrects the draft after `latencyMs`.
 */
class CrowdedModel implements ModelClient {
  readonly provider = "double";
  readonly model = "double";
  inFlight = 0;
  maxInFlight = 0;
  rateLimited = 0;
  answered = 0;
  readonly started: string[] = [];
  constructor(
    readonly capacity: number,
    readonly latencyMs = 3,
  ) {}

  async complete(req: ModelRequest): Promise<ModelResponse> {
    this.inFlight++;
    try {
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      if (this.inFlight > this.capacity) {
        this.rateLimited++;
        throw new ModelRateLimitedError("slow down");
      }
      this.started.push(req.draftId);
      await tick(this.latencyMs);
      this.answered++;
      return {
        output: { content: FULLY_CORRECTED_DRAFT.content, analysis: "a", fixDescription: "f" },
        usage: USAGE,
        model: "double",
        latencyMs: this.latencyMs,
      };
    } finally {
      this.inFlight--;
    }
  }
}

/** A model that fails each call with the errors listed, in order, then answers. */
class ScriptedModel implements ModelClient {
  readonly provider = "double";
  readonly model = "double";
  calls = 0;
  constructor(readonly failures: Error[]) {}
  async complete(): Promise<ModelResponse> {
    const failure = this.failures[this.calls++];
    if (failure) throw failure;
    return { output: {}, usage: USAGE, model: "double", latencyMs: 0 };
  }
}

/** A clock that records each wait and lets it pass at once. */
function fakeSleep() {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms: number) => {
      waits.push(ms);
    },
  };
}

describe("LimitedModelClient", () => {
  it("keeps at most `concurrency` calls in flight and starts queued calls first come, first served", async () => {
    const model = new CrowdedModel(Number.POSITIVE_INFINITY);
    const limited = new LimitedModelClient(model, { concurrency: 3 });
    const ids = Array.from({ length: 30 }, (_, i) => `d${i}`);
    const answers = await Promise.all(ids.map((id) => limited.complete(request(id))));
    expect(answers).toHaveLength(30);
    expect(model.maxInFlight).toBe(3);
    expect(model.started).toEqual(ids);
    expect(limited.active).toBe(0);
    expect(limited.pending).toBe(0);
  });

  it("waits out 429s with full jitter under a doubling ceiling, keeping its slot", async () => {
    const clock = fakeSleep();
    const model = new ScriptedModel([new ModelRateLimitedError(), new ModelRateLimitedError()]);
    const limited = new LimitedModelClient(model, {
      concurrency: 1,
      baseDelayMs: 1000,
      random: () => 0.5,
      sleep: async (ms) => {
        // Backing off still holds the slot: the next caller waits behind it.
        expect(limited.active).toBe(1);
        await clock.sleep(ms);
      },
    });
    await expect(limited.complete(request("q"))).resolves.toMatchObject({ model: "double" });
    expect(model.calls).toBe(3);
    expect(clock.waits).toEqual([500, 1000]);
  });

  it("waits what a retry-after asks for", async () => {
    const clock = fakeSleep();
    const own = Object.assign(new ModelRateLimitedError(), { retryAfterMs: 1234 });
    const header = new ModelRateLimitedError("429", {
      cause: { headers: new Headers({ "retry-after": "7" }) },
    });
    const model = new ScriptedModel([own, header]);
    await new LimitedModelClient(model, { sleep: clock.sleep }).complete(request("q"));
    expect(clock.waits).toEqual([1234, 7000]);
    expect(retryAfterMs({ cause: { headers: { "retry-after-ms": "250" } } })).toBe(250);
    expect(
      retryAfterMs({ cause: { headers: { "retry-after": "Thu, 01 Jan 1970 00:00:10 GMT" } } }, 4000),
    ).toBe(6000);
    expect(retryAfterMs(new ModelRateLimitedError())).toBeUndefined();
  });

  it("gives the 429 back once the next wait would take the total past maxWaitMs", async () => {
    const clock = fakeSleep();
    const model = new ScriptedModel(Array.from({ length: 100 }, () => new ModelRateLimitedError()));
    const limited = new LimitedModelClient(model, {
      maxWaitMs: 60_000,
      baseDelayMs: 1000,
      random: () => 0.999,
      sleep: clock.sleep,
    });
    await expect(limited.complete(request("q"))).rejects.toHaveProperty("name", ErrorNames.ModelRateLimited);
    const total = clock.waits.reduce((a, b) => a + b, 0);
    expect(total).toBeLessThanOrEqual(60_000);
    expect(total).toBeGreaterThan(40_000);
    expect(model.calls).toBe(clock.waits.length + 1);
  });

  it("bounds the retries when there is no backoff (a replayed model)", async () => {
    const model = new ScriptedModel(Array.from({ length: 100 }, () => new ModelRateLimitedError()));
    const limited = limitModel(model, { backoff: false, maxRetries: 5 });
    await expect(limited?.complete(request("q"))).rejects.toBeInstanceOf(ModelRateLimitedError);
    expect(model.calls).toBe(6);
    expect(limitModel(undefined)).toBeUndefined();
  });

  it("passes every other failure through untouched, for the state machine's Retry or Catch", async () => {
    for (const error of [new ModelOverloadedError(), new ModelTimeoutError(), new Error("boom")]) {
      const model = new ScriptedModel([error]);
      const clock = fakeSleep();
      await expect(new LimitedModelClient(model, { sleep: clock.sleep }).complete(request("q"))).rejects.toBe(
        error,
      );
      expect(model.calls).toBe(1);
      expect(clock.waits).toEqual([]);
    }
  });

  it("turns a burst at a model with less room than the bound into waits, not failures", async () => {
    const model = new CrowdedModel(2, 2);
    const limited = new LimitedModelClient(model, { concurrency: 4, baseDelayMs: 2, maxDelayMs: 20 });
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => limited.complete(request(`d${i}`))),
    );
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(model.rateLimited).toBeGreaterThan(0);
    expect(model.maxInFlight).toBeLessThanOrEqual(4);
  });

  it("refuses a bound that is not a whole number from 1 up", () => {
    const model = new ScriptedModel([]);
    expect(() => new LimitedModelClient(model, { concurrency: 0 })).toThrow(RangeError);
    expect(() => new LimitedModelClient(model, { concurrency: 1.5 })).toThrow(RangeError);
  });
});

describe("modelConcurrency, the deployment's bound", () => {
  it("is a whole number from 1 up, and optional", () => {
    expect(DeploymentConfigSchema.safeParse({ modelConcurrency: 8 }).success).toBe(true);
    expect(DeploymentConfigSchema.safeParse({}).success).toBe(true);
    for (const bad of [0, -1, 1.5, "4"])
      expect(DeploymentConfigSchema.safeParse({ modelConcurrency: bad }).success).toBe(false);
  });

  it("bounds the command line's model: 4 unless the config says, no backoff for a replayed model", async () => {
    const replay = chooseModel("replay:examples/example.cassette.json", {});
    const bounded = boundModel(replay);
    expect(bounded).toBeInstanceOf(LimitedModelClient);
    expect((bounded as LimitedModelClient).concurrency).toBe(4);
    expect((boundModel(replay, 9) as LimitedModelClient).concurrency).toBe(9);
    expect(boundModel(chooseModel("none", {}))).toBeUndefined();
    // Replayed 429s are retried at once, as the local Retry does for a replayed model.
    // Checked by the waits asked for, not by the wall clock, which a loaded machine stretches.
    const scripted = new ScriptedModel([new ModelRateLimitedError(), new ModelRateLimitedError()]);
    const timers = vi.spyOn(globalThis, "setTimeout");
    try {
      await boundModel({ model: scripted, live: false, description: "" })?.complete(request("q"));
      expect(scripted.calls).toBe(3);
      const waits = timers.mock.calls.map(([, ms]) => ms ?? 0);
      expect(waits.length).toBeGreaterThanOrEqual(2);
      expect(waits.filter((ms) => ms > 0)).toEqual([]);
    } finally {
      timers.mockRestore();
    }
  });
});

describe("a burst of drafts through the local runtime", () => {
  it("200 drafts at a model that says 429 past 4 calls in flight: none ends model_error", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "redraft-limited-"));
    const model = new CrowdedModel(4);
    const runtime = await LocalRuntime.open({
      dataDir,
      asl: await synthesizedAsl(),
      model: limitModel(model, { concurrency: 4, baseDelayMs: 2, maxDelayMs: 20 }),
      // No Retry backoff, as for a replayed model: a 429 that reached the state machine would fail fast.
      retryDelayMs: 0,
    });
    try {
      // Far more drafts in flight than the model has room for.
      const drive = pLimit(32);
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          drive(async () => {
            const key = `drafts/burst-${i}.json`;
            await runtime.blobs.putIfAbsent(key, JSON.stringify({ ...DRAFT_WITH_ERRORS, id: `burst-${i}` }));
            const { runId } = await runtime.execute({ draftRef: { bucket: LOCAL_BUCKET, key } });
            return buildRunResult(runId, runtime.deps);
          }),
        ),
      );
      expect(results.filter((r) => r.reason === "model_error")).toEqual([]);
      expect(results.every((r) => r.status === "validated")).toBe(true);
      expect(model.answered).toBe(200);
      expect(model.maxInFlight).toBeLessThanOrEqual(4);
    } finally {
      await runtime.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
