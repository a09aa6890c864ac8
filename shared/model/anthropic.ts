import { BaseAnthropic, type ClientOptions } from "@anthropic-ai/sdk/client";
import { Messages } from "@anthropic-ai/sdk/resources/messages";
import type {
  BatchCreateParams,
  MessageBatch,
  MessageBatchIndividualResponse,
  MessageBatchResult,
} from "@anthropic-ai/sdk/resources/messages/batches";
import { ErrorNames } from "../errors.js";
import type {
  BatchJobStatus,
  BatchModelService,
  BatchRequestLine,
  BatchResult,
  BatchServiceLimits,
} from "./batch.js";
import {
  buildMessageParams,
  type MessagesApi,
  MessagesModelClient,
  toModelError,
  toModelResponse,
} from "./messages.js";
import { DEFAULT_ANTHROPIC_MODEL } from "./pricing.js";
import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS } from "./types.js";

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

// ── Message Batches ─────────────────────────────────────────────────────────────────────────────

/**
 * The Message Batches API's limits on one batch: requests or 256 MB, whichever comes first. The
 * guide (platform.claude.com/docs/en/build-with-claude/batch-processing, "Batch limitations") says
 * 100,000 requests, one copy of the API reference 10,000: parts are sized by the smaller, so a round
 * is accepted under either reading (more parts, same price). The bytes are the requests as
 * `requestBytes` counts them, so the body's `{"requests":[` and `]}` come off the limit; and 256 MB
 * is read as 256,000,000 bytes, the smaller of its two readings.
 */
export const ANTHROPIC_BATCH_LIMITS: BatchServiceLimits = {
  maxRequests: 10_000,
  maxBytes: 256_000_000 - '{"requests":[]}'.length,
  minRequests: 1,
};

/** The part of the SDK the batch service calls: `client.messages.batches`. */
export interface MessageBatchesApi {
  messages: {
    batches: {
      create(body: BatchCreateParams, options?: { maxRetries?: number }): PromiseLike<MessageBatch>;
      retrieve(id: string): PromiseLike<MessageBatch>;
      cancel(id: string): PromiseLike<MessageBatch>;
      results(id: string): PromiseLike<AsyncIterable<MessageBatchIndividualResponse>>;
    };
  };
}

/** Anthropic's error type of a failed batch request → the named error the same failure on demand gets. */
const ERRORS_BY_TYPE: Record<string, string> = {
  rate_limit_error: ErrorNames.ModelRateLimited,
  overloaded_error: ErrorNames.ModelOverloaded,
  timeout_error: ErrorNames.ModelTimeout,
};

/** One line of a batch's results as a provider-neutral {@link BatchResult}. */
export function batchResultOf(result: MessageBatchResult, requestedModel: string): BatchResult {
  switch (result.type) {
    case "succeeded":
      // The tool's name is not in the result; the answer holds one tool call at most.
      return { type: "succeeded", response: toModelResponse(result.message, "", requestedModel, 0) };
    case "errored": {
      const { type, message } = result.error.error;
      return {
        type: "errored",
        error: {
          name: ERRORS_BY_TYPE[type] ?? ErrorNames.ModelRequestFailed,
          message: `${type}: ${message}`,
        },
      };
    }
    default:
      return { type: result.type };
  }
}

export interface AnthropicBatchServiceOptions extends Omit<AnthropicModelClientOptions, "client"> {
  /** An SDK client built elsewhere (a test double). */
  client?: MessageBatchesApi;
  /** The `fetch` the SDK client sends its requests with. @default the global fetch */
  fetch?: ClientOptions["fetch"];
}

/**
 * Batch-priced corrections on the Message Batches API (`client.messages.batches`): each request is
 * the same Messages API body an on-demand call sends (buildMessageParams: cache breakpoints and the
 * forced tool included, so prompt caching applies inside the batch), under a custom id.
 */
export class AnthropicBatchService implements BatchModelService {
  readonly provider = "anthropic";
  readonly model: string;
  readonly limits = ANTHROPIC_BATCH_LIMITS;
  readonly #api: MessageBatchesApi;

  constructor(options: AnthropicBatchServiceOptions = {}) {
    this.model = options.model ?? DEFAULT_ANTHROPIC_MODEL;
    this.#api =
      options.client ??
      new MessagesOnlyClient({
        ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
        ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
        ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      });
  }

  #entry(line: BatchRequestLine): BatchCreateParams.Request {
    return { custom_id: line.customId, params: buildMessageParams(line.request, this.model) };
  }

  requestBytes(line: BatchRequestLine): number {
    // Each request as it sits in the body's `requests` array, with its comma.
    return Buffer.byteLength(JSON.stringify(this.#entry(line))) + 1;
  }

  /**
   * One create, never retried by the SDK: the API takes no idempotency key, so a retry after a lost
   * response (a timeout) would be a second paid batch nobody collects. The state machine's Retry
   * asks again only after SubmitRound saved the ids of the parts already created.
   */
  async submit(_name: string, lines: readonly BatchRequestLine[]): Promise<string> {
    try {
      const batch = await this.#api.messages.batches.create(
        { requests: lines.map((l) => this.#entry(l)) },
        { maxRetries: 0 },
      );
      return batch.id;
    } catch (error) {
      throw toModelError(error, this.provider);
    }
  }

  async status(jobId: string): Promise<BatchJobStatus> {
    try {
      const batch = await this.#api.messages.batches.retrieve(jobId);
      return { ended: batch.processing_status === "ended", status: batch.processing_status };
    } catch (error) {
      throw toModelError(error, this.provider);
    }
  }

  async results(jobId: string): Promise<Map<string, BatchResult>> {
    const results = new Map<string, BatchResult>();
    try {
      for await (const line of await this.#api.messages.batches.results(jobId))
        results.set(line.custom_id, batchResultOf(line.result, this.model));
    } catch (error) {
      throw toModelError(error, this.provider);
    }
    return results;
  }

  async cancel(jobId: string): Promise<void> {
    try {
      await this.#api.messages.batches.cancel(jobId);
    } catch (error) {
      throw toModelError(error, this.provider);
    }
  }
}
