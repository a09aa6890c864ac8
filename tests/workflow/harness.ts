import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AslDefinition } from "../../contracts/asl.js";
import { type ExecutionInput, LOCAL_BUCKET, LocalRuntime } from "../../local/runtime.js";
import { loadAsl } from "../../local/state-machine.js";
import { buildRunResult } from "../../shared/loop/run.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import type { DeploymentConfig } from "../../shared/pack.js";

/** The committed state machine, contracts/state-machine.asl.json: the one every local path runs. */
export function synthesizedAsl(): Promise<AslDefinition> {
  return loadAsl();
}

/**
 * A fresh local runtime over a temp data folder, answering from the given cassette entries, running
 * `asl` (by default the synthesized one).
 */
export async function openRuntime(
  responses: unknown[] | undefined,
  deployment: DeploymentConfig = {},
  asl?: AslDefinition,
) {
  const dataDir = await mkdtemp(join(tmpdir(), "redraft-wf-"));
  const model = responses ? ReplayModelClient.fromCassette({ version: 1, responses }) : undefined;
  const runtime = await LocalRuntime.open({
    dataDir,
    asl: asl ?? (await synthesizedAsl()),
    model,
    deployment,
    retryDelayMs: 0,
  });
  return {
    runtime,
    dataDir,
    /** Uploads a draft under drafts/ like S3 would, and runs the state machine on it. */
    async runUpload(
      body: string,
      key = `drafts/${Math.random().toString(36).slice(2)}.json`,
      runId?: string,
    ) {
      await runtime.blobs.putIfAbsent(key, body);
      const input: ExecutionInput = { draftRef: { bucket: LOCAL_BUCKET, key } };
      const execution = await runtime.execute(input, runId);
      return { execution, result: await buildRunResult(execution.runId, runtime.deps), key };
    },
    async runInline(draft: unknown, runId?: string) {
      const execution = await runtime.execute({ draft }, runId);
      return { execution, result: await buildRunResult(execution.runId, runtime.deps) };
    },
    async close() {
      await runtime.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The states an execution entered, in order. */
export const path = (history: { type: string; state?: string }[]) =>
  history.filter((h) => h.type === "StateEntered").map((h) => h.state);
