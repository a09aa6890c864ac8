import { describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../shared/errors.js";
import { correctStep } from "../../shared/loop/steps/correct.js";
import { revalidateStep } from "../../shared/loop/steps/revalidate.js";
import { validateStep } from "../../shared/loop/steps/validate.js";
import type { BlobStore } from "../../shared/store/types.js";
import { DRAFT_WITH_ERRORS, FULLY_CORRECTED_DRAFT } from "../fixtures/seed004.js";
import { answer, makeDeps } from "./harness.js";

/** A blob store whose first write under a key fragment fails as S3 throttling would. */
function failingOnce(blobs: BlobStore, fragment: string): BlobStore {
  let failed = false;
  return new Proxy(blobs, {
    get(target, name) {
      if (name === "put") {
        return (key: string, body: string) => {
          if (!failed && key.includes(fragment)) {
            failed = true;
            return Promise.reject(new StoreUnavailableError(`PutObject ${key}`, new Error("SlowDown")));
          }
          return target.put(key, body);
        };
      }
      const value = Reflect.get(target, name) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("a retried correction task pays for its model call once", () => {
  it("reuses the stored answer when a later write failed, so the run's tokens are what the model billed", async () => {
    const { deps, model, runs } = makeDeps([
      answer(DRAFT_WITH_ERRORS.id, FULLY_CORRECTED_DRAFT.content, { input_tokens: 1200, output_tokens: 300 }),
      answer(DRAFT_WITH_ERRORS.id, FULLY_CORRECTED_DRAFT.content, {
        input_tokens: 9999,
        output_tokens: 9999,
      }),
    ]);
    const validated = await validateStep({ runId: "r1", draft: DRAFT_WITH_ERRORS }, deps);
    const flaky = { ...deps, blobs: failingOnce(deps.blobs, "/candidate.json") };
    await expect(correctStep(validated, flaky)).rejects.toThrow(StoreUnavailableError);
    // Step Functions retries the task with the same input.
    const corrected = await correctStep(validated, flaky);
    expect(model?.requests).toHaveLength(1);
    const next = await revalidateStep({ ...corrected, counters: { execution: 1, logic: 0 } }, deps);
    expect(next.verdict.errors).toBe(0);
    expect((await runs.getRun("r1"))?.tokens).toMatchObject({ input: 1200, output: 300, total: 1500 });
  });
});
