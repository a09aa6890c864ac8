import { describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import { ModelRequestFailedError } from "../../shared/errors.js";
import type { ModelClient } from "../../shared/model/types.js";
import { DRAFT_WITH_ERRORS } from "../fixtures/seed004.js";
import { makeDeps } from "./harness.js";

/**
 * In-process, the record states keep the ASL's own condition (`#status IN (:from…)`): a run that
 * something else finished while its execution ran (the finalizer of an aborted execution, in the
 * cloud) keeps that outcome; the late RecordModelFailure is refused, not written over it.
 */
describe("correctDraft: an outcome reached elsewhere is kept", () => {
  it("does not overwrite a run failed by someone else while the model was called", async () => {
    const { deps } = makeDeps(undefined);
    let runId = "";
    const model: ModelClient = {
      provider: "anthropic",
      model: "claude-sonnet-5-5",
      async complete(request) {
        runId = String((request as { runId?: string }).runId ?? runId);
        // The finalizer ends the run (its execution was aborted) while this call is in flight…
        const [run] = await deps.runs.listRuns({ limit: 1 });
        if (run)
          await deps.runs.setStatus(run.runId, "failed", new Date().toISOString(), {
            reason: "aborted",
            message: "aborted elsewhere",
          });
        // …and then the call fails for good.
        throw new ModelRequestFailedError("the provider refused");
      },
    } as unknown as ModelClient;
    const result = await correctDraft(DRAFT_WITH_ERRORS, { ...deps, model });
    expect(result.status).toBe("failed");
    expect(result.reason).toBe("aborted");
    expect(result.message).toBe("aborted elsewhere");
  });
});
