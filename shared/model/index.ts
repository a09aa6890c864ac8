import { ModelNotConfiguredError } from "../errors.js";
import { AnthropicModelClient } from "./anthropic.js";
import { BedrockModelClient } from "./bedrock.js";
import { ReplayModelClient } from "./replay.js";
import type { ModelClient } from "./types.js";

export * from "./anthropic.js";
export * from "./bedrock.js";
export * from "./limited.js";
export * from "./messages.js";
export * from "./pricing.js";
export * from "./recorder.js";
export * from "./replay.js";
export * from "./types.js";

/** Which model answers: Claude (API key or Bedrock), a recorded cassette, or none at all. */
export type ModelClientSpec =
  | { provider: "anthropic"; apiKey: string; model?: string }
  | { provider: "bedrock"; region?: string; model?: string }
  | { provider: "replay"; cassette: string }
  | { provider: "none" };

/**
 * Builds the ModelClient a deployment or the local runtime asked for (once, at cold start).
 * `none` gives undefined: the loop then validates and repairs without correcting.
 */
export function createModelClient(spec: ModelClientSpec): ModelClient | undefined {
  const provider = (spec as { provider?: unknown } | null | undefined)?.provider;
  switch (spec?.provider) {
    case "anthropic":
      if (typeof spec.apiKey !== "string" || spec.apiKey.trim() === "")
        throw new ModelNotConfiguredError(
          'the Anthropic provider needs an API key: createModelClient({ provider: "anthropic", apiKey: process.env.ANTHROPIC_API_KEY })',
        );
      return new AnthropicModelClient({
        apiKey: spec.apiKey,
        ...(spec.model !== undefined ? { model: spec.model } : {}),
      });
    case "bedrock":
      return new BedrockModelClient({
        ...(spec.region !== undefined ? { awsRegion: spec.region } : {}),
        ...(spec.model !== undefined ? { model: spec.model } : {}),
      });
    case "replay":
      return ReplayModelClient.fromFile(spec.cassette);
    case "none":
      return undefined;
    default:
      // A JavaScript caller (or a config file) can name any provider: an unknown one is an error, not `undefined`.
      throw new ModelNotConfiguredError(
        `unknown model provider ${JSON.stringify(provider) ?? String(provider)}: one of anthropic, bedrock, replay, none`,
      );
  }
}
