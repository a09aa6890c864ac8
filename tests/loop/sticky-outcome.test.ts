import { describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import { ModelRequestFailedError } from "../../shared/errors.js";
import type { ModelClient } from "../../shared/model/types.js";
import { DRAFT_WITH_ERRORS } from "../fixtures/seed004.js";
import { makeDeps } from "./harness.js";

/**
 * In-process, RecordFailure and RecordModelFailure keep the ASL's own condition
 * (`#status IN (:from0, :from1)`: only a run still under way is failed there). A run that already
 * has an outcome when a late failure arrives keeps it, as it does on DynamoDB.
 */
describe("correctDraft: a late failure never overwrites an outcome", () => {
  it("keeps an outcome recorded while the model call was in flight", async () => {
    const { deps } = makeDeps(undefined);
    const model: ModelClient = {
      provider: "anthropic",
      model: "claude-sonnet-5-5",
      async complete() {
        // Something records an outcome for the run while this call is in flight…
        const [run] = await deps.runs.listRuns({ limit: 1 });
        if (run)
          await deps.runs.setStatus(run.runId, "needs_manual_review", new Date().toISOString(), {
            reason: "max_attempts",
          });
        // …then the call fails for good: RecordModelFailure's condition refuses to fail the run.
        throw new ModelRequestFailedError("the provider refused");
      },
    };
    const result = await correctDraft(DRAFT_WITH_ERRORS, { ...deps, model });
    expect(result.status).toBe("needs_manual_review");
    expect(result.reason).toBe("max_attempts");
  });
});
