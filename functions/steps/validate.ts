// λ validate's handler over whatever deps it is given, apart from its Lambda entry (functions/validate.ts,
// deps from the environment): the local runtime binds it to a data folder's store and so loads none
// of the AWS SDK clients the entry imports.
import { ValidateEventSchema } from "../../shared/loop/steps/input.js";
import { validateStep } from "../../shared/loop/steps/validate.js";
import { refusedDraftKey } from "../../shared/store/draft-ref.js";
import { type DepsProvider, stepHandler } from "../lib/handler.js";
import { emitOutcome, MetricUnit, metrics } from "../lib/observability.js";

export interface ValidateHandlerOptions {
  /** The only bucket drafts may be read from; references to others are rejected, not fetched. */
  bucketName?: string | undefined;
}

export function createValidateHandler(getDeps: DepsProvider, options: ValidateHandlerOptions = {}) {
  return stepHandler(
    "validate",
    ValidateEventSchema,
    async ({ runId, input }, deps) => {
      const ref = typeof input.draftRef === "string" ? { key: input.draftRef } : input.draftRef;
      const foreign = ref?.bucket && options.bucketName && ref.bucket !== options.bucketName;
      // A key the run may not read is refused before anything is read (shared/store/draft-ref.ts).
      const refused = ref && !foreign ? refusedDraftKey(ref.key, runId) : undefined;
      const readable = ref && !foreign && !refused;
      const versionId = ref && "versionId" in ref ? ref.versionId : undefined;
      const state = await validateStep(
        {
          runId,
          ...(input.draft !== undefined && { draft: input.draft }),
          ...(readable && { draftRef: ref.key }),
          ...(readable && versionId && { draftVersion: versionId }),
          // Only an S3 notification's key may be URL-encoded, and only with the version it names is
          // its decoded form the same upload: any other key is matched exactly.
          ...(readable &&
            versionId &&
            "keyForm" in ref &&
            ref.keyForm === "notification" && { decodeKey: true }),
          ...(input.submissionId && { submissionId: input.submissionId }),
          ...(input.parentRunId && { parentRunId: input.parentRunId }),
          ...(foreign && {
            rejectWith: `draft reference points at bucket "${ref?.bucket}", not this deployment's bucket`,
          }),
          ...(refused && { rejectWith: refused }),
          ...(input.draft === undefined &&
            !ref && { rejectWith: "the event carries neither a draft nor a draftRef" }),
          ...(input.rejectWith && {
            rejectWith: {
              reason: input.rejectWith.reason,
              message: input.rejectWith.message,
              ...(input.rejectWith.draftId !== undefined && { draftId: input.rejectWith.draftId }),
            },
          }),
        },
        deps,
      );
      metrics.addDimension("kind", state.kind);
      if (state.decision === "rejected") metrics.addMetric("DraftsRejected", MetricUnit.Count, 1);
      else if (state.decision === "duplicate") metrics.addMetric("DuplicateDeliveries", MetricUnit.Count, 1);
      else metrics.addMetric("DraftsReceived", MetricUnit.Count, 1);
      // Rejections end here (InputRejected / DuplicateIgnored): this is where their outcome is counted.
      if (state.decision !== "correct") emitOutcome("rejected", state.kind, state.reason);
      return state;
    },
    getDeps,
  );
}
