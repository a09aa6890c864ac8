import { BlobNotFoundError } from "../../errors.js";
import type { ModelResponse } from "../../model/types.js";
import type { LoopDeps } from "./deps.js";

/**
 * The model's answer for one attempt or judge round, asked for at most once. A task retried after
 * a later write failed (S3 throttled) finds the answer it already paid for and uses it, instead of
 * calling the model again and losing the first call's tokens from the run's totals. The answer is
 * stored before anything else happens; only a failure of that one write can still cost a second call.
 */
export async function answerOnce(
  deps: LoopDeps,
  key: string,
  call: () => Promise<ModelResponse>,
): Promise<ModelResponse> {
  const stored = await deps.blobs.get(key).catch((error: unknown) => {
    if (error instanceof BlobNotFoundError) return undefined;
    throw error;
  });
  if (stored !== undefined) return JSON.parse(stored) as ModelResponse;
  const response = await call();
  await deps.blobs.put(key, JSON.stringify(response));
  return response;
}
