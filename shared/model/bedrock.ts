import { AnthropicBedrock } from "@anthropic-ai/bedrock-sdk";
import type { MessageCreateParamsNonStreaming } from "@anthropic-ai/sdk/resources/messages";
import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  type MessagesApi,
  MessagesModelClient,
} from "./messages.js";
import { DEFAULT_BEDROCK_MODEL } from "./pricing.js";
import type { ModelRequest } from "./types.js";

export interface BedrockModelClientOptions {
  /** @default `AWS_REGION`, else us-east-1 */
  awsRegion?: string;
  /** A Bedrock model or inference-profile id. @default DEFAULT_BEDROCK_MODEL */
  model?: string;
  /** @default https://bedrock-runtime.<region>.amazonaws.com (or `ANTHROPIC_BEDROCK_BASE_URL`) */
  baseURL?: string;
  /** Per attempt; the SDK retries a timed-out attempt, up to `maxRetries` times. @default 60 000 */
  timeoutMs?: number;
  /** @default 2 */
  maxRetries?: number;
  /** An SDK client built elsewhere; the options above that configure one are then ignored. */
  client?: MessagesApi;
}

/**
 * The API version older Bedrock models (ARN-versioned ids such as
 * `anthropic.claude-sonnet-4-5-20250929-v1:0`) accept. The SDK (1.x) otherwise sends its own
 * `2026-10-21`, which Bedrock serves only for Claude 4.7 and later, and the older ids answer 400.
 */
const LEGACY_BEDROCK_API_VERSION = "bedrock-2023-05-31";
const ARN_VERSIONED_ID = /-v\d+(:\d+)?$/;

/**
 * Claude on Amazon Bedrock (`@anthropic-ai/bedrock-sdk`), signed with the IAM credentials of the
 * environment (Lambda role, `AWS_*` variables, profile); no API key.
 */
export class BedrockModelClient extends MessagesModelClient {
  constructor(options: BedrockModelClientOptions = {}) {
    const client =
      options.client ??
      new AnthropicBedrock({
        // `null` keeps the SDK from taking AWS_BEARER_TOKEN_BEDROCK: this client signs with IAM.
        apiKey: null,
        ...(options.awsRegion !== undefined ? { awsRegion: options.awsRegion } : {}),
        ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      });
    super("bedrock", options.model ?? DEFAULT_BEDROCK_MODEL, client);
  }

  protected override requestParams(request: ModelRequest): MessageCreateParamsNonStreaming {
    const params = super.requestParams(request);
    if (!ARN_VERSIONED_ID.test(this.model)) return params;
    // The SDK's Bedrock adapter keeps an `anthropic_version` already in the body.
    return Object.assign(params, { anthropic_version: LEGACY_BEDROCK_API_VERSION });
  }
}
