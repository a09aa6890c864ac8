/**
 * redraft's model clients, the library's second entry (`redraft/models`): apart from index.ts
 * because they load the Anthropic and Bedrock SDKs. Each implements `ModelClient` (index.ts), which
 * is all `correctDraft` needs; `createModelClient` builds one from a plain spec.
 */
export { AnthropicModelClient, type AnthropicModelClientOptions } from "./shared/model/anthropic.js";
export { BedrockModelClient, type BedrockModelClientOptions } from "./shared/model/bedrock.js";
export { createModelClient, type ModelClientSpec } from "./shared/model/index.js";
export { DEFAULT_ANTHROPIC_MODEL, DEFAULT_BEDROCK_MODEL } from "./shared/model/pricing.js";
export { RecordingModelClient } from "./shared/model/recorder.js";
export { type Cassette, type CassetteEntry, ReplayModelClient } from "./shared/model/replay.js";
