import {
  APIConnectionTimeoutError,
  APIError,
  OverloadedError,
  RateLimitError,
  RequestTimeoutError,
} from "@anthropic-ai/sdk";
import type {
  Message,
  MessageCreateParamsNonStreaming,
  TextBlockParam,
  Tool,
  ToolChoice,
} from "@anthropic-ai/sdk/resources/messages";
import {
  type ModelError,
  ModelOverloadedError,
  ModelRateLimitedError,
  ModelRequestFailedError,
  ModelTimeoutError,
} from "../errors.js";
import { isPriced, normalizeModelId } from "./pricing.js";
import { type OutputMode, supportsStructuredOutputs, toStrictSchema } from "./structured.js";
import type { ModelClient, ModelRequest, ModelResponse, TokenUsage } from "./types.js";

/** The one method of the SDK both providers share; an injected test double only needs this. */
export interface MessagesApi {
  messages: {
    create(body: MessageCreateParamsNonStreaming): PromiseLike<Message>;
  };
}

/**
 * Models that reject a forced `tool_choice` (`tool` or `any`) with a 400: Claude Sonnet 5.5,
 * Opus 5.5 and Fable 5.1. They are asked with `auto`; an answer without the tool call then
 * arrives as `raw` text and counts as a failed attempt, like any unparseable answer.
 */
const FORCED_TOOL_CHOICE_REJECTED = ["claude-sonnet-5-5", "claude-opus-5-5", "claude-fable-5-1"];

/** Whether `model` accepts `tool_choice: {type: "tool"}`. */
export function acceptsForcedToolChoice(model: string): boolean {
  const id = normalizeModelId(model);
  return !FORCED_TOOL_CHOICE_REJECTED.some((rejected) => id === rejected || id.startsWith(`${rejected}-`));
}

/**
 * How the answer is asked for: constrained when the model has structured outputs and the tool's
 * schema fits their subset (a strict tool where a forced tool choice is accepted, else
 * `output_config.format`, since a model asked with `tool_choice: auto` may answer in text), plain
 * tool use otherwise. The schema is the one {@link toStrictSchema} made, bounds moved to descriptions.
 */
export function outputModeFor(
  request: ModelRequest,
  model: string,
): { mode: OutputMode; schema: Record<string, unknown> } {
  const strict = supportsStructuredOutputs(model)
    ? toStrictSchema({ ...request.tool.inputSchema, type: "object" })
    : undefined;
  if (!strict) return { mode: "tool", schema: { ...request.tool.inputSchema, type: "object" } };
  return { mode: acceptsForcedToolChoice(model) ? "strict_tool" : "json_schema", schema: strict };
}

/**
 * The Messages API request for a ModelRequest: the system prompt as text blocks with a cache
 * breakpoint on the last block marked `cache`, one user message, and the answer tool (strict when
 * {@link outputModeFor} says so) or, for `json_schema`, the answer's schema as `output_config.format`.
 */
export function buildMessageParams(request: ModelRequest, model: string): MessageCreateParamsNonStreaming {
  const lastCached = request.system.findLastIndex((block) => block.cache === true);
  const system = request.system.map(
    (block, i): TextBlockParam =>
      i === lastCached
        ? { type: "text", text: block.text, cache_control: { type: "ephemeral" } }
        : { type: "text", text: block.text },
  );
  const base = {
    model,
    max_tokens: request.maxTokens,
    system,
    messages: [{ role: "user" as const, content: request.user }],
  };
  const { mode, schema } = outputModeFor(request, model);
  if (mode === "json_schema") {
    // No tool: the answer is the text, constrained to the schema (the parser reads it as JSON).
    return { ...base, output_config: { format: { type: "json_schema", schema } } };
  }
  const toolChoice: ToolChoice = acceptsForcedToolChoice(model)
    ? { type: "tool", name: request.tool.name, disable_parallel_tool_use: true }
    : { type: "auto", disable_parallel_tool_use: true };
  return {
    ...base,
    tools: [
      {
        name: request.tool.name,
        description: request.tool.description,
        input_schema: schema as Tool.InputSchema,
        ...(mode === "strict_tool" && { strict: true }),
      },
    ],
    tool_choice: toolChoice,
  };
}

/** Token usage from a Messages API answer; the cache fields are null when caching did not apply. */
export function usageFrom(message: Message): TokenUsage {
  return {
    input: message.usage.input_tokens,
    output: message.usage.output_tokens,
    cacheRead: message.usage.cache_read_input_tokens ?? 0,
    cacheWrite: message.usage.cache_creation_input_tokens ?? 0,
  };
}

/**
 * A ModelResponse from a Messages API answer: the answer tool's input, the text blocks joined,
 * usage and stop reason. `model` is the id the API reports, unless only the requested id is
 * priced (Bedrock can answer with a name of its own), so cost is never lost to a naming detail.
 */
export function toModelResponse(
  message: Message,
  toolName: string,
  requestedModel: string,
  latencyMs: number,
): ModelResponse {
  const toolUse =
    message.content.find((block) => block.type === "tool_use" && block.name === toolName) ??
    message.content.find((block) => block.type === "tool_use");
  const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : []));
  const model = !isPriced(message.model) && isPriced(requestedModel) ? requestedModel : message.model;
  return {
    ...(toolUse?.type === "tool_use" ? { output: toolUse.input } : {}),
    ...(text.length > 0 ? { raw: text.join("") } : {}),
    usage: usageFrom(message),
    model,
    latencyMs,
    ...(message.stop_reason ? { stopReason: message.stop_reason } : {}),
  };
}

/**
 * Translates an SDK failure into the named error the state machine matches: throttling, overload and
 * timeouts are transient (retried with backoff), everything else ends the run visibly.
 */
export function toModelError(error: unknown, provider: string): ModelError {
  const detail = error instanceof Error ? error.message : String(error);
  if (error instanceof APIConnectionTimeoutError) {
    return new ModelTimeoutError(`${provider} call timed out: ${detail}`, { cause: error });
  }
  if (!(error instanceof APIError)) {
    return new ModelRequestFailedError(`${provider} call failed: ${detail}`, "model_request_failed", {
      cause: error,
    });
  }
  // A spend limit is a 429 too, but waiting minutes does not lift it: that run must end visibly.
  if (error instanceof RateLimitError && !error.errorCode?.endsWith("spend_limit_reached")) {
    return new ModelRateLimitedError(`${provider} rate limit reached: ${detail}`, { cause: error });
  }
  // 529 is Anthropic's overloaded status; a plain 503 is how Bedrock reports ServiceUnavailableException
  // (a 503 with an error code, such as an unreachable encryption key, is not load).
  if (
    error instanceof OverloadedError ||
    error.type === "overloaded_error" ||
    (error.status === 503 && error.errorCode === null)
  ) {
    return new ModelOverloadedError(`${provider} is overloaded: ${detail}`, { cause: error });
  }
  // 408 is how Bedrock reports ModelTimeoutException.
  if (error instanceof RequestTimeoutError) {
    return new ModelTimeoutError(`${provider} call timed out: ${detail}`, { cause: error });
  }
  const status = error.status === undefined ? "no status" : `status ${error.status}`;
  return new ModelRequestFailedError(
    `${provider} call failed (${status}): ${detail}`,
    "model_request_failed",
    {
      cause: error,
    },
  );
}

/**
 * The ModelClient shared by every provider speaking the Messages API (Anthropic, Claude on Bedrock):
 * builds the request, calls the SDK, maps the answer and translates the SDK's errors.
 */
export class MessagesModelClient implements ModelClient {
  constructor(
    readonly provider: string,
    readonly model: string,
    private readonly api: MessagesApi,
  ) {}

  async complete(request: ModelRequest): Promise<ModelResponse> {
    // A model ladder names the model per request; the client's model otherwise.
    const model = request.model ?? this.model;
    const params = this.requestParams(request);
    const started = performance.now();
    let message: Message;
    try {
      message = await this.api.messages.create(params);
    } catch (error) {
      throw toModelError(error, this.provider);
    }
    const latencyMs = Math.round(performance.now() - started);
    return {
      ...toModelResponse(message, request.tool.name, model, latencyMs),
      outputMode: outputModeFor(request, model).mode,
    };
  }

  /** The request body; a provider adds what its endpoint needs. `request.model` overrides the client's. */
  protected requestParams(request: ModelRequest): MessageCreateParamsNonStreaming {
    return buildMessageParams(request, request.model ?? this.model);
  }
}
