import { errorOfResult } from "../../shared/batch/rounds.js";
import { TRANSIENT_MODEL_ERRORS } from "../../shared/errors.js";
import type { BatchResult } from "../../shared/model/batch.js";

/**
 * What a batch request's failed result is to the loop, as the batch-service tests of both providers
 * check it: the error an on-demand call would have thrown, and whether the state machine retries it.
 */
export function failureOf(results: ReadonlyMap<string, BatchResult>, id: string) {
  const result = results.get(id);
  if (!result || result.type === "succeeded") throw new Error(`${id} is no failure`);
  const error = errorOfResult(result);
  return { name: error.name, transient: (TRANSIENT_MODEL_ERRORS as readonly string[]).includes(error.name) };
}
