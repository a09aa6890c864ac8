import pLimit, { type LimitFunction } from "p-limit";
import { ErrorNames } from "../errors.js";
import type { ModelClient, ModelRequest, ModelResponse } from "./types.js";

/** Model calls in flight at once when a deployment does not say (`modelConcurrency`). */
export const DEFAULT_MODEL_CONCURRENCY = 4;

export interface LimitedModelOptions {
  /** Calls in flight at once; the others wait their turn, first come first served. @default 4 */
  concurrency?: number;
  /** Longest total backoff for one call while the model answers 429, in ms. @default 60 000 */
  maxWaitMs?: number;
  /** First backoff ceiling, doubled on each 429 (full jitter below it), in ms. @default 1 000 */
  baseDelayMs?: number;
  /** Largest single backoff ceiling, in ms. @default 20 000 */
  maxDelayMs?: number;
  /**
   * Most retries of one call after 429s. Bounds the loop when backoff is 0 (a replayed model).
   * @default 30
   */
  maxRetries?: number;
  /** How to wait; tests pass a clock that does not sleep. @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
  /** A number in [0, 1) for the jitter. @default Math.random */
  random?: () => number;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The wait a rate-limited error asks for, in ms: a `retryAfterMs` it carries, or the provider
 * response's `retry-after-ms` / `retry-after` header (seconds or an HTTP date) on its cause.
 */
export function retryAfterMs(error: unknown, now = Date.now()): number | undefined {
  const own = (error as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  if (typeof own === "number" && Number.isFinite(own) && own >= 0) return own;
  const headers = (error as { cause?: { headers?: unknown } } | undefined)?.cause?.headers;
  const header = (name: string): string | undefined => {
    if (headers instanceof Headers) return headers.get(name) ?? undefined;
    if (typeof headers === "object" && headers !== null) {
      const value = (headers as Record<string, unknown>)[name];
      return typeof value === "string" ? value : undefined;
    }
    return undefined;
  };
  const ms = Number(header("retry-after-ms"));
  if (header("retry-after-ms") !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const after = header("retry-after");
  if (after === undefined) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const isRateLimited = (error: unknown) =>
  error instanceof Error && error.name === ErrorNames.ModelRateLimited;

/**
 * A ModelClient that bounds the calls in flight and waits out rate limits, so a burst of drafts
 * queues instead of ending as `model_error`.
 *
 * Calls beyond `concurrency` wait in a FIFO queue (p-limit: promises, no polling). A call the model
 * answers with 429 (ModelRateLimitedError) is retried after a backoff with full jitter, or after
 * the retry-after the error carries, until the next wait would take its total past `maxWaitMs`;
 * then the 429 is thrown, for the state machine's own Retry. The call keeps its slot while it
 * backs off: a 429 says the model wants fewer calls at once, and handing the slot to a queued
 * call would only earn that call the same answer. Other errors pass through untouched.
 */
export class LimitedModelClient implements ModelClient {
  readonly provider: string;
  readonly model: string;
  readonly concurrency: number;
  readonly #limit: LimitFunction;
  readonly #options: Required<Omit<LimitedModelOptions, "concurrency">>;

  constructor(
    readonly inner: ModelClient,
    options: LimitedModelOptions = {},
  ) {
    this.provider = inner.provider;
    this.model = inner.model;
    this.concurrency = options.concurrency ?? DEFAULT_MODEL_CONCURRENCY;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1)
      throw new RangeError(`model concurrency must be a whole number from 1 up, got ${this.concurrency}`);
    this.#limit = pLimit(this.concurrency);
    this.#options = {
      maxWaitMs: options.maxWaitMs ?? 60_000,
      baseDelayMs: options.baseDelayMs ?? 1_000,
      maxDelayMs: options.maxDelayMs ?? 20_000,
      maxRetries: options.maxRetries ?? 30,
      sleep: options.sleep ?? realSleep,
      random: options.random ?? Math.random,
    };
  }

  /** Calls running now (holding a slot, backoff included). */
  get active(): number {
    return this.#limit.activeCount;
  }

  /** Calls waiting for a slot. */
  get pending(): number {
    return this.#limit.pendingCount;
  }

  complete(request: ModelRequest): Promise<ModelResponse> {
    return this.#limit(() => this.#withBackoff(request));
  }

  async #withBackoff(request: ModelRequest): Promise<ModelResponse> {
    const { maxWaitMs, baseDelayMs, maxDelayMs, maxRetries, sleep, random } = this.#options;
    let waited = 0;
    for (let retry = 0; ; retry++) {
      try {
        return await this.inner.complete(request);
      } catch (error) {
        if (!isRateLimited(error) || retry >= maxRetries) throw error;
        const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** retry);
        const delay = retryAfterMs(error) ?? Math.floor(random() * ceiling);
        if (waited + delay > maxWaitMs) throw error;
        waited += delay;
        await sleep(delay);
      }
    }
  }
}

/**
 * Wraps `model` in a LimitedModelClient, or gives undefined back when there is no model.
 * `backoff: false` (a replayed model) retries a 429 at once, as the local Retry does.
 */
export function limitModel(
  model: ModelClient | undefined,
  options: LimitedModelOptions & { backoff?: boolean } = {},
): ModelClient | undefined {
  if (model === undefined) return undefined;
  const { backoff = true, ...rest } = options;
  return new LimitedModelClient(model, backoff ? rest : { ...rest, baseDelayMs: 0 });
}
