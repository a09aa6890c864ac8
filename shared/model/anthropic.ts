import Anthropic from "@anthropic-ai/sdk";
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

/** Claude through the Anthropic API (`@anthropic-ai/sdk`). */
export class AnthropicModelClient extends MessagesModelClient {
  constructor(options: AnthropicModelClientOptions = {}) {
    const client =
      options.client ??
      new Anthropic({
        ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
        ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      });
    super("anthropic", options.model ?? DEFAULT_ANTHROPIC_MODEL, client);
  }
}
