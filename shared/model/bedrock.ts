import { BaseAnthropic, type Middleware } from "@anthropic-ai/sdk/client";
import type { APIRequest } from "@anthropic-ai/sdk/core/api";
import {
  type Message,
  type MessageCreateParamsNonStreaming,
  Messages,
} from "@anthropic-ai/sdk/resources/messages";
import { ErrorNames } from "../errors.js";
import type { BatchRequestLine, BatchResult } from "./batch.js";
import { buildMessageParams, type MessagesApi, MessagesModelClient, toModelResponse } from "./messages.js";
import { DEFAULT_BEDROCK_MODEL } from "./pricing.js";
import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, type ModelRequest } from "./types.js";

export interface BedrockModelClientOptions {
  /** @default `AWS_REGION`, else us-east-1 */
  awsRegion?: string;
  /** A Bedrock model or inference-profile id. @default DEFAULT_BEDROCK_MODEL */
  model?: string;
  /**
   * An application inference profile copied from `model` (the stack makes one per environment, so
   * the spend carries the stack's tags): requests for `model` invoke this ARN, while the responses,
   * their cost, the price checks and budgets, and the model's capabilities keep using `model`, since
   * the profile's ARN names no model. A request naming another model (a ladder's rung) invokes that
   * model itself: the profile routes to one model only.
   */
  inferenceProfileArn?: string;
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

/** The Messages API's path, which Bedrock serves as `/model/{id}/invoke`. */
const MESSAGES_PATH = "/v1/messages";

/** A model id as a path segment, encoded as the Bedrock SDK encodes it (`:` of `…-v1:0` kept). */
const encodeModelId = (id: string) => id.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@]+/g, encodeURIComponent);

/**
 * The Messages API on Bedrock, as `AnthropicBedrock` (`@anthropic-ai/bedrock-sdk`) calls it for one
 * non-streaming request: the same rewrite of the request into Bedrock's shape, SigV4-signed by the
 * same `getAuthHeaders` with the environment's IAM credentials (Lambda role, `AWS_*` variables,
 * profile), never a bearer token. `AnthropicBedrock` itself also builds every beta resource and the
 * event-stream decoding of streamed answers: about 350 KiB of a Lambda bundle and a few tens of
 * milliseconds of its cold start, for methods redraft never calls.
 */
class BedrockMessagesClient extends BaseAnthropic {
  readonly messages: Messages = new Messages(this);
  readonly #region: string;

  constructor(options: { awsRegion: string; baseURL: string; timeout: number; maxRetries: number }) {
    const { awsRegion, ...rest } = options;
    // `null`: no API key or token from ANTHROPIC_* or AWS_BEARER_TOKEN_BEDROCK; the request is signed.
    super({ ...rest, apiKey: null, authToken: null });
    this.#region = awsRegion;
  }

  // Auth is SigV4 only, added below once the request has Bedrock's shape; no Anthropic credentials.
  protected override _shouldResolveDefaultCredentials(): boolean {
    return false;
  }
  protected override validateHeaders(): void {}
  protected override async authHeaders(): Promise<undefined> {
    return undefined;
  }

  protected override backendMiddleware(): ReadonlyArray<Middleware> {
    return [async (request, next) => next(await this.#toBedrock(request))];
  }

  /** `POST …/v1/messages {model, …}` with `anthropic-version` → `POST …/model/{model}/invoke {anthropic_version, …}`, signed. */
  async #toBedrock(request: APIRequest): Promise<APIRequest> {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    const version = headers.get("anthropic-version");
    headers.delete("anthropic-version");
    const body = JSON.parse(String(request.body)) as Record<string, unknown>;
    // Bedrock reads the API version and the betas from the body, not from headers.
    if (version && !body.anthropic_version) body.anthropic_version = version;
    const betas = headers.get("anthropic-beta");
    if (betas !== null && !body.anthropic_beta) body.anthropic_beta = betas.split(",").map((b) => b.trim());
    if (url.pathname.endsWith(MESSAGES_PATH)) {
      if (body.stream === true) throw new Error("BedrockModelClient does not stream");
      const model = String(body.model);
      delete body.model;
      delete body.stream;
      url.pathname = `${url.pathname.slice(0, -MESSAGES_PATH.length)}/model/${encodeModelId(model)}/invoke`;
      url.searchParams.delete("beta");
    }
    const adapted: APIRequest = { ...request, url: url.toString(), headers, body: JSON.stringify(body) };
    // Loaded on the first request: the signer brings the AWS SDK's credential providers, which
    // `redraft/models` must not load (nor need installed) for a user of the Anthropic API alone.
    const { getAuthHeaders } = await import("@anthropic-ai/bedrock-sdk/core/auth");
    const signed = await getAuthHeaders(adapted, {
      url: adapted.url,
      regionName: this.#region,
      awsAccessKey: null,
      awsSecretKey: null,
      awsSessionToken: null,
    });
    for (const [name, value] of Object.entries(signed)) headers.set(name, value);
    return adapted;
  }
}

/**
 * Claude on Amazon Bedrock, signed with the IAM credentials of the environment (Lambda role,
 * `AWS_*` variables, profile); no API key.
 */
export class BedrockModelClient extends MessagesModelClient {
  readonly #inferenceProfileArn: string | undefined;

  constructor(options: BedrockModelClientOptions = {}) {
    // The defaults AnthropicBedrock takes: AWS_REGION, ANTHROPIC_BEDROCK_BASE_URL (unset when blank).
    const awsRegion = options.awsRegion ?? (process.env.AWS_REGION?.trim() || "us-east-1");
    const client =
      options.client ??
      new BedrockMessagesClient({
        awsRegion,
        baseURL:
          options.baseURL ??
          (process.env.ANTHROPIC_BEDROCK_BASE_URL?.trim() ||
            `https://bedrock-runtime.${awsRegion}.amazonaws.com`),
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      });
    super("bedrock", options.model ?? DEFAULT_BEDROCK_MODEL, client);
    this.#inferenceProfileArn = options.inferenceProfileArn?.trim() || undefined;
  }

  protected override requestParams(request: ModelRequest): MessageCreateParamsNonStreaming {
    const params = super.requestParams(request);
    // Built for the model id (tool choice, structured outputs), then sent to the profile: the
    // request rewrite puts `model` in the path, `/model/<profile ARN>/invoke`, as AnthropicBedrock does.
    const model = request.model ?? this.model;
    if (this.#inferenceProfileArn !== undefined && model === this.model) {
      params.model = this.#inferenceProfileArn;
    }
    if (!ARN_VERSIONED_ID.test(this.model)) return params;
    // The request rewrite keeps an `anthropic_version` already in the body.
    return Object.assign(params, { anthropic_version: LEGACY_BEDROCK_API_VERSION });
  }
}

// ── Batch inference ─────────────────────────────────────────────────────────────────────────────

/** The API version the SDK sends for current models (its `anthropic-version` header). */
const CURRENT_BEDROCK_API_VERSION = "2026-10-21";

/**
 * One record of a Bedrock batch inference input file: `{recordId, modelInput}`, the model input
 * being the InvokeModel body an on-demand call sends (the Messages API body without `model`, with
 * `anthropic_version`), cache breakpoints and tool included.
 */
export function bedrockBatchRecord(line: BatchRequestLine, model: string): string {
  const { model: _model, ...body } = buildMessageParams(line.request, model);
  const modelInput = {
    anthropic_version: ARN_VERSIONED_ID.test(model)
      ? LEGACY_BEDROCK_API_VERSION
      : CURRENT_BEDROCK_API_VERSION,
    ...body,
  };
  return JSON.stringify({ recordId: line.customId, modelInput });
}

/** Bedrock's HTTP error code for a failed record → the named error the same failure on demand gets. */
function errorNameOfCode(code: number | string | undefined): string {
  const status = Number(code);
  if (status === 429) return ErrorNames.ModelRateLimited;
  if (status === 503 || status === 529) return ErrorNames.ModelOverloaded;
  if (status === 408) return ErrorNames.ModelTimeout;
  return ErrorNames.ModelRequestFailed;
}

/**
 * The results of a Bedrock batch inference output file (`<input>.jsonl.out`), by record id: each line
 * `{recordId, modelInput, modelOutput}` (the InvokeModel answer, a Messages API message) or
 * `{recordId, modelInput, error: {errorCode, errorMessage}}`.
 */
export function bedrockBatchResults(text: string, requestedModel: string): Map<string, BatchResult> {
  const results = new Map<string, BatchResult>();
  for (const raw of text.split("\n")) {
    if (raw.trim() === "") continue;
    const line = JSON.parse(raw) as {
      recordId?: string;
      modelOutput?: Message;
      error?: { errorCode?: number | string; errorMessage?: string };
    };
    if (!line.recordId) continue;
    if (line.modelOutput) {
      const message = { ...line.modelOutput, model: line.modelOutput.model ?? requestedModel };
      results.set(line.recordId, {
        type: "succeeded",
        response: toModelResponse(message, "", requestedModel, 0),
      });
    } else {
      results.set(line.recordId, {
        type: "errored",
        error: {
          name: errorNameOfCode(line.error?.errorCode),
          message: `bedrock batch record failed (${line.error?.errorCode ?? "no code"}): ${line.error?.errorMessage ?? ""}`,
        },
      });
    }
  }
  return results;
}
