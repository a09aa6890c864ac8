import { BaseAnthropic } from "@anthropic-ai/sdk/client";
import { Messages } from "@anthropic-ai/sdk/resources/messages";
import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  type MessagesApi,
  MessagesModelClient,
} from "./messages.js";
import { DEFAULT_ANTHROPIC_MODEL } from "./pricing.js";

export interface AnthropicModelClientOptions {
  /** @default the SDK's own lookup (`ANTHROPIC_API_KEY`, then Anthropic profiles) */
  apiKey?: string;
  /** @default DEFAULT_ANTHROPIC_MODEL */
  model?: string;
  /** @default https://api.anthropic.com (or `ANTHROPIC_BASE_URL`) */
  baseURL?: string;
  /** Per attempt; the SDK retries a timed-out attempt, up to `maxRetries` times. @default 60 000 */
  timeoutMs?: number;
  /** @default 2 */
  maxRetries?: number;
  /** An SDK client built elsewhere; the options above that configure one are then ignored. */
  client?: MessagesApi;
}

/**
 * The SDK's client with only the Messages API, the one resource redraft calls. The SDK's full
 * `Anthropic` class builds every resource (beta, files, skills, organization…): about 300 KiB more
 * in a bundle, for methods nobody calls. `BaseAnthropic` is the SDK's own base for such clients.
 */
class MessagesOnlyClient extends BaseAnthropic {
  readonly messages: Messages = new Messages(this);
}

/** Claude through the Anthropic API (`@anthropic-ai/sdk`). */
export class AnthropicModelClient extends MessagesModelClient {
  constructor(options: AnthropicModelClientOptions = {}) {
    const client =
      options.client ??
      new MessagesOnlyClient({
        ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
        ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      });
    super("anthropic", options.model ?? DEFAULT_ANTHROPIC_MODEL, client);
  }
}
