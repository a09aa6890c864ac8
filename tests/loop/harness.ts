import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";
import type { DeploymentConfig } from "../../shared/pack.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";

/** A model answer as the cassette stores it. */
export function answer(
  draftId: string,
  content: unknown,
  usage: { input_tokens: number; output_tokens: number } = { input_tokens: 1000, output_tokens: 500 },
  extra: { analysis?: string; fixDescription?: string } = {},
) {
  return {
    draftId,
    purpose: "correct" as const,
    output: {
      content,
      analysis: extra.analysis ?? "analysis",
      fixDescription: extra.fixDescription ?? "fix",
    },
    usage,
  };
}

/** Test double around the replay client that remembers every request it saw. */
class SpyModel implements ModelClient {
  readonly provider = "replay";
  readonly model = "replay";
  readonly requests: ModelRequest[] = [];
  constructor(private readonly inner: ModelClient) {}
  complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    return this.inner.complete(request);
  }
}

/** Core deps over in-memory stores and a replay cassette; a clock that ticks one second per call. */
export function makeDeps(responses: unknown[] | undefined, config: DeploymentConfig = {}) {
  let t = Date.parse("2026-02-19T14:00:00Z");
  const model = responses
    ? new SpyModel(ReplayModelClient.fromCassette({ version: 1, responses }))
    : undefined;
  const runs = new MemoryRunStore();
  const blobs = new MemoryBlobStore();
  const deps: LoopDeps & { retryDelayMs: number } = {
    registry: new PackRegistry(config),
    runs,
    blobs,
    model,
    clock: () => {
      t += 1000;
      return new Date(t);
    },
    retryDelayMs: 0,
  };
  return { deps, model, runs, blobs };
}
