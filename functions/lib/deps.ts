import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import { type LoopEnv, LoopEnvSchema, readEnv } from "../../contracts/env.js";
import { ModelNotConfiguredError } from "../../shared/errors.js";
import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import { isPriced } from "../../shared/model/pricing.js";
import type { ModelClient } from "../../shared/model/types.js";
import { PackRegistry } from "../../shared/registry.js";
import { BATCHES_PREFIX, DRAFTS_PREFIX, SOURCES_PREFIX } from "../../shared/store/bucket-layout.js";
import { DynamoRunStore } from "./dynamo-store.js";
import { tracer } from "./observability.js";
import { S3BlobStore } from "./s3-blobs.js";

/**
 * The model SDK this bundle carries, fixed when it is bundled (esbuild `define`, set per function by
 * `lambdaBundling` in infra/bundling.ts): `"none"` for validate and revalidate, the
 * deployment's provider for correct and judge. esbuild folds the comparisons below to constants and
 * leaves out the branches that cannot run, with the SDK they import, so a step that never calls a
 * model carries no model SDK. Unbundled (tsx, tests) the name is undeclared: every provider is there.
 */
declare const REDRAFT_MODEL_SDK: "anthropic" | "bedrock" | "none";

// A bundle that calls the model loads its SDK (and the secret reader) at cold start, in Lambda's init
// phase, where the cost is measured (bench:coldstart) and paid once, not in the first draft's step.
if (typeof REDRAFT_MODEL_SDK !== "undefined" && REDRAFT_MODEL_SDK === "anthropic") {
  await Promise.all([
    import("../../shared/model/anthropic.js"),
    import("@aws-lambda-powertools/parameters/secrets"),
  ]);
}
if (typeof REDRAFT_MODEL_SDK !== "undefined" && REDRAFT_MODEL_SDK === "bedrock") {
  await import("../../shared/model/bedrock.js");
}

/** Reads the Anthropic key from Secrets Manager (cached by Powertools across invocations). */
async function anthropicKey(secretArn: string): Promise<string> {
  // Imported here, not at the top: only a step that calls the model reads a secret, and the
  // Secrets Manager client costs the others' cold start nothing.
  const { getSecret } = await import("@aws-lambda-powertools/parameters/secrets");
  const secret = await getSecret(secretArn, { maxAge: 300 });
  if (typeof secret !== "string" || !secret.trim()) throw new Error(`secret ${secretArn} holds no API key`);
  // The secret may be the bare key or a JSON object {"apiKey": "..."}.
  try {
    const parsed = JSON.parse(secret) as { apiKey?: unknown };
    if (typeof parsed.apiKey === "string") return parsed.apiKey;
  } catch {
    // not JSON: the bare key
  }
  return secret.trim();
}

async function modelFromEnv(env: LoopEnv): Promise<ModelClient | undefined> {
  // Each request is bounded so that it, and the SDK's retries of it, end before the Lambda does.
  const limits = { timeoutMs: env.MODEL_TIMEOUT_MS, maxRetries: env.MODEL_MAX_RETRIES };
  // The conditions on REDRAFT_MODEL_SDK stay inline: esbuild folds them only there.
  if (
    env.MODEL_PROVIDER === "anthropic" &&
    (typeof REDRAFT_MODEL_SDK === "undefined" || REDRAFT_MODEL_SDK === "anthropic")
  ) {
    const apiKey = await anthropicKey(env.ANTHROPIC_SECRET_ARN ?? "");
    const { AnthropicModelClient } = await import("../../shared/model/anthropic.js");
    return new AnthropicModelClient({ apiKey, ...limits, ...(env.MODEL_ID && { model: env.MODEL_ID }) });
  }
  if (
    env.MODEL_PROVIDER === "bedrock" &&
    (typeof REDRAFT_MODEL_SDK === "undefined" || REDRAFT_MODEL_SDK === "bedrock")
  ) {
    // IAM credentials come from the function's role: no key.
    const { BedrockModelClient } = await import("../../shared/model/bedrock.js");
    return new BedrockModelClient({
      ...limits,
      ...(env.MODEL_ID && { model: env.MODEL_ID }),
      ...(env.MODEL_INFERENCE_PROFILE_ARN && { inferenceProfileArn: env.MODEL_INFERENCE_PROFILE_ARN }),
      ...(env.AWS_REGION && { awsRegion: env.AWS_REGION }),
    });
  }
  if (env.MODEL_PROVIDER === "none") return undefined;
  // A bundle made for another provider (or for a step that never calls a model) was asked for one.
  throw new ModelNotConfiguredError(
    `this bundle carries no ${env.MODEL_PROVIDER} SDK (bundled with ${
      typeof REDRAFT_MODEL_SDK === "undefined" ? "every SDK" : REDRAFT_MODEL_SDK
    }); redeploy with MODEL_PROVIDER=${env.MODEL_PROVIDER} in the stack's config`,
  );
}

/**
 * A cost budget needs prices: with an unpriced model every call would cost $0 and the budget would
 * never trip, so such a deployment fails at cold start instead of silently overspending.
 */
function pricedFor(env: LoopEnv, model: ModelClient | undefined): ModelClient | undefined {
  const config = env.DEPLOYMENT_CONFIG;
  const costBudget =
    config.caps?.maxCostUsd ??
    config.loop?.maxCostUsd ??
    Object.values(config.packs ?? {}).find((p) => p.loop?.maxCostUsd)?.loop?.maxCostUsd;
  if (model && costBudget && !isPriced(model.model)) {
    throw new Error(
      `a cost budget is configured but model "${model.model}" has no price in shared/model/pricing.ts`,
    );
  }
  return model;
}

const cached = new Map<boolean, Promise<LoopDeps>>();

/**
 * The loop's dependencies in Lambda, built once per container from the environment. Only the
 * steps that call the model build a client (and read its key); the others only learn from
 * MODEL_PROVIDER whether one is configured. The local runtime builds the same shape from its data
 * folder's store instead (SQLite by default; dynalite for a folder made before it).
 */
export function depsFromEnv(options: { model: boolean }): Promise<LoopDeps> {
  let deps = cached.get(options.model);
  if (!deps) {
    deps = (async () => {
      const env = readEnv(LoopEnvSchema);
      const dynamo = tracer.captureAWSv3Client(new DynamoDBClient({}));
      const s3 = tracer.captureAWSv3Client(new S3Client({}));
      return {
        registry: new PackRegistry(env.DEPLOYMENT_CONFIG),
        runs: new DynamoRunStore({ client: dynamo, tableName: env.TABLE_NAME, ttlDays: env.RETENTION_DAYS }),
        // Uploads are sized before they are read: an oversized one is rejected without a download.
        blobs: new S3BlobStore({
          client: s3,
          bucket: env.BUCKET_NAME,
          uploads: { prefix: DRAFTS_PREFIX, maxBytes: env.MAX_DRAFT_BYTES },
          textPrefixes: [SOURCES_PREFIX, BATCHES_PREFIX],
        }),
        model: options.model ? pricedFor(env, await modelFromEnv(env)) : undefined,
        modelAvailable: env.MODEL_PROVIDER !== "none",
        dedupeWindowMs: env.DEDUPE_WINDOW_MS,
        maxDraftBytes: env.MAX_DRAFT_BYTES,
        maxDraftDepth: env.MAX_DRAFT_DEPTH,
      };
    })();
    // A failed start (a throttled secret read) must not poison the container for its whole life.
    deps.catch(() => cached.delete(options.model));
    cached.set(options.model, deps);
  }
  return deps;
}
