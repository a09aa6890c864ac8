import { BedrockClient } from "@aws-sdk/client-bedrock";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import * as z from "zod";
import { LoopEnvSchema, RoundsTimingEnvSchema, readEnv } from "../contracts/env.js";
import {
  abandonRound,
  collectRound,
  type ParkedState,
  pollRound,
  type RoundStepDeps,
  type RoundsState,
  RoundsStateSchema,
  roundModelStep,
  submitRound,
} from "../shared/batch/round-steps.js";
import type { RoundTiming } from "../shared/batch/rounds.js";
import { ModelNotConfiguredError } from "../shared/errors.js";
import { type LoopState, LoopStateSchema } from "../shared/loop/state.js";
import type { LoopDeps } from "../shared/loop/steps/deps.js";
import type { BatchModelService } from "../shared/model/batch.js";
import { batchKeys } from "../shared/store/bucket-layout.js";
import { DynamoBatchStore } from "./lib/batch-store.js";
import { BedrockBatchService } from "./lib/bedrock-batch.js";
import { depsFromEnv } from "./lib/deps.js";
import { logger, withRunKeys } from "./lib/observability.js";

/**
 * λ rounds: the Lambda steps of a batch-priced batch (infra/constructs/batch-rounds.ts). In each
 * round's Map, CorrectExecution, CorrectLogic and Judge run the unchanged loop steps with the
 * round's model (`step: correct | judge`): answered from the batch, or parked for the next one.
 * Between the Maps, SubmitRound, PollBatch and CollectRound talk to the batch service: the Message
 * Batches API or Bedrock batch inference, whichever the deployment uses.
 */

/**
 * The model SDK this bundle carries (esbuild `define`, as in functions/lib/deps.ts). A bundle made for
 * Anthropic folds the Bedrock branch below away, and with it the Bedrock control-plane client and
 * its batch service (about 120 KB it never calls). Unbundled (tsx, tests) the name is undeclared.
 */
declare const REDRAFT_MODEL_SDK: "anthropic" | "bedrock" | "none";

const ModelStepSchema = z.object({
  step: z.enum(["correct", "judge"]),
  state: LoopStateSchema,
});
const MapResultsSchema = z.object({ Bucket: z.string(), Key: z.string() });
const RoundStepSchema = z.discriminatedUnion("step", [
  z.object({
    step: z.literal("submit"),
    batchId: z.string(),
    rounds: RoundsStateSchema,
    map: z.looseObject({ ResultWriterDetails: MapResultsSchema }),
  }),
  z.object({ step: z.literal("poll"), batchId: z.string(), rounds: RoundsStateSchema }),
  z.object({ step: z.literal("collect"), batchId: z.string(), rounds: RoundsStateSchema }),
  z.object({ step: z.literal("abandon"), batchId: z.string(), rounds: RoundsStateSchema }),
]);

export interface RoundsHandlerDeps {
  loop: LoopDeps;
  round: RoundStepDeps;
}

export function createRoundsHandler(getDeps: () => Promise<RoundsHandlerDeps>) {
  return async (
    event: unknown,
  ): Promise<LoopState | ParkedState | RoundsState | Awaited<ReturnType<typeof abandonRound>>> => {
    const deps = await getDeps();
    try {
      const model = ModelStepSchema.safeParse(event);
      if (model.success) {
        const { step, state } = model.data;
        logger.appendKeys({ runId: state.runId });
        const next = await roundModelStep(step, state, deps.loop, deps.round.timing.maxModelRetries);
        withRunKeys(next);
        logger.info(`round ${step} done`, { parked: "parked" in next });
        return next;
      }
      const parsed = RoundStepSchema.parse(event);
      logger.appendKeys({ batchId: parsed.batchId, round: parsed.rounds.number });
      if (parsed.step === "abandon") {
        const abandoned = await abandonRound(parsed, deps.round);
        if (abandoned.failed.length > 0)
          logger.error("round batches not canceled", { failed: abandoned.failed });
        logger.info("round abandoned", { canceled: abandoned.canceled });
        return abandoned;
      }
      const rounds =
        parsed.step === "submit"
          ? await submitRound(
              { batchId: parsed.batchId, rounds: parsed.rounds, mapResults: parsed.map.ResultWriterDetails },
              deps.round,
            )
          : parsed.step === "poll"
            ? await pollRound(parsed, deps.round)
            : await collectRound(parsed, deps.round);
      logger.info(`round ${parsed.step} done`, {
        status: rounds.status,
        round: rounds.number,
        jobs: rounds.jobs,
      });
      return rounds;
    } catch (error) {
      logger.error("rounds step failed", error as Error);
      throw error;
    } finally {
      logger.resetKeys();
    }
  };
}

async function serviceFromEnv(
  deps: LoopDeps,
  bucketName: string,
  roleArn: string | undefined,
): Promise<BatchModelService> {
  const env = readEnv(LoopEnvSchema);
  if (env.MODEL_PROVIDER === "bedrock") {
    // The condition on REDRAFT_MODEL_SDK stays inline: esbuild folds it only there.
    if (typeof REDRAFT_MODEL_SDK === "undefined" || REDRAFT_MODEL_SDK === "bedrock") {
      if (!roleArn) throw new Error("BEDROCK_BATCH_ROLE_ARN is required for batch pricing on Bedrock");
      return new BedrockBatchService({
        client: new BedrockClient({}),
        blobs: deps.blobs,
        bucketName,
        roleArn,
        model: env.MODEL_ID ?? "",
      });
    }
    throw new ModelNotConfiguredError(
      `this bundle carries no Bedrock batch client (bundled for ${REDRAFT_MODEL_SDK}); redeploy with MODEL_PROVIDER=bedrock in the stack's config`,
    );
  }
  const { getSecret } = await import("@aws-lambda-powertools/parameters/secrets");
  const secret = String((await getSecret(env.ANTHROPIC_SECRET_ARN ?? "", { maxAge: 300 })) ?? "").trim();
  let apiKey = secret;
  try {
    const parsed = JSON.parse(secret) as { apiKey?: unknown };
    if (typeof parsed.apiKey === "string") apiKey = parsed.apiKey;
  } catch {
    // the bare key
  }
  const { AnthropicBatchService } = await import("../shared/model/anthropic.js");
  return new AnthropicBatchService({ apiKey, ...(env.MODEL_ID && { model: env.MODEL_ID }) });
}

let cloudDeps: Promise<RoundsHandlerDeps> | undefined;

export const handler = createRoundsHandler(() => {
  cloudDeps ??= (async () => {
    const env = readEnv(LoopEnvSchema);
    const timing = readEnv(RoundsTimingEnvSchema);
    const loop = await depsFromEnv({ model: false });
    const batches = new DynamoBatchStore({ client: new DynamoDBClient({}), tableName: env.TABLE_NAME });
    const round: RoundStepDeps = {
      blobs: loop.blobs,
      service: await serviceFromEnv(loop, env.BUCKET_NAME, timing.BEDROCK_BATCH_ROLE_ARN),
      timing: {
        deadlineMinutes: timing.BATCH_DEADLINE_MINUTES,
        roundEstimateMinutes: timing.BATCH_ROUND_ESTIMATE_MINUTES,
        fallbackReserveMinutes: timing.BATCH_FALLBACK_RESERVE_MINUTES,
        pollFirstSeconds: timing.BATCH_POLL_FIRST_SECONDS,
        pollMaxSeconds: timing.BATCH_POLL_MAX_SECONDS,
        maxModelRetries: timing.BATCH_MODEL_RETRIES,
      } satisfies RoundTiming,
      bucketName: env.BUCKET_NAME,
      itemKey: batchKeys.item,
      recordRounds: (batchId, rounds) => batches.recordRounds(batchId, rounds),
    };
    // The loop's model steps in a round never call a model directly: the batch answers them.
    return { loop: { ...loop, modelAvailable: true }, round };
  })();
  return cloudDeps;
});
