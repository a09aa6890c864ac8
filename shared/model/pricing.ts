import type { TokenUsage } from "./types.js";

/** Rates in USD per million tokens. `cacheWrite` is the 5-minute TTL rate, the one `ephemeral` cache_control uses. */
export interface TokenRates {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * The price of one model. Some models bill a whole request at higher rates once its prompt
 * (input + cache reads + cache writes) is over a threshold; `longPrompt` carries those rates.
 */
export interface ModelPrice extends TokenRates {
  longPrompt?: TokenRates & { aboveTokens: number };
  /**
   * The same model through the Message Batches API or Bedrock batch inference: every rate (cache
   * reads and writes too) at half the on-demand price, long prompts included.
   */
  batch: TokenRates & { longPrompt?: TokenRates & { aboveTokens: number } };
}

/**
 * Which price a call is billed at: `on_demand` (one Messages API / InvokeModel call) or `batch`
 * (a request inside a Message Batch or a Bedrock model invocation job).
 */
export type PriceClass = "on_demand" | "batch";

/** Claude Sonnet 5.5: the current Sonnet (released 2026-09-28), $2 / $10 per million tokens. */
export const DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5";

/** Claude Sonnet 5.5 through Bedrock's global cross-region inference profile (routes to any commercial region). */
export const DEFAULT_BEDROCK_MODEL = "global.anthropic.claude-sonnet-5-5";

const rates = (input: number, output: number, cacheRead: number, cacheWrite: number): TokenRates => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});

/** Half of each rate: the batch discount Anthropic and Bedrock give every Claude model. */
const half = (r: TokenRates): TokenRates =>
  rates(r.input / 2, r.output / 2, r.cacheRead / 2, r.cacheWrite / 2);

/** A model's on-demand rates with their batch rates beside them. */
function priced(onDemand: TokenRates, longPrompt?: TokenRates & { aboveTokens: number }): ModelPrice {
  return {
    ...onDemand,
    ...(longPrompt && { longPrompt }),
    batch: {
      ...half(onDemand),
      ...(longPrompt && { longPrompt: { ...half(longPrompt), aboveTokens: longPrompt.aboveTokens } }),
    },
  };
}

const OPUS_4_5_TO_5 = rates(5, 25, 0.5, 6.25);
const OPUS_4_AND_4_1 = rates(15, 75, 1.5, 18.75);
const SONNET_4_X = rates(3, 15, 0.3, 3.75);
const FABLE_MYTHOS_5 = rates(10, 50, 1, 12.5);
const FABLE_MYTHOS_5_1 = rates(10, 50, 0.25, 12.5);

/**
 * The one price table (Anthropic list prices, platform.claude.com/docs/en/about-claude/pricing, checked
 * 2026-11). Keys are Claude API ids and aliases; dated ids (`claude-sonnet-4-5-20250929`), Bedrock ids
 * (`anthropic.claude-sonnet-4-5-20250929-v1:0`, `us.`/`eu.`/`global.`… profiles, ARNs) and Vertex ids
 * (`claude-sonnet-4-5@20250929`) resolve to them in {@link priceFor}. Bedrock is priced at these list
 * prices; AWS's surcharge on regional (non-global) profiles is not modelled. Each entry carries its
 * batch rates too (`batch`): the Message Batches API and Bedrock batch inference bill every token
 * class at 50 % of the on-demand rate (platform.claude.com/docs/en/build-with-claude/batch-processing,
 * "Pricing"; Bedrock's pricing page lists batch at half of on-demand for Claude).
 */
const PRICES: Readonly<Record<string, ModelPrice>> = {
  "claude-fable-5-1": priced(FABLE_MYTHOS_5_1),
  "claude-mythos-5-1": priced(FABLE_MYTHOS_5_1),
  "claude-fable-5": priced(FABLE_MYTHOS_5),
  "claude-mythos-5": priced(FABLE_MYTHOS_5),
  "claude-opus-5-5": priced(rates(4, 20, 0.2, 5)),
  "claude-opus-5": priced(OPUS_4_5_TO_5),
  "claude-opus-4-8": priced(OPUS_4_5_TO_5),
  "claude-opus-4-7": priced(OPUS_4_5_TO_5),
  "claude-opus-4-6": priced(OPUS_4_5_TO_5),
  "claude-opus-4-5": priced(OPUS_4_5_TO_5),
  "claude-opus-4-1": priced(OPUS_4_AND_4_1),
  "claude-opus-4-0": priced(OPUS_4_AND_4_1),
  "claude-opus-4-20250514": priced(OPUS_4_AND_4_1),
  // Sonnet 5.5 cache reads were cut from $0.20 to $0.10 on 2026-10-07.
  "claude-sonnet-5-5": priced(rates(2, 10, 0.1, 2.5)),
  "claude-sonnet-5": priced(rates(2, 10, 0.2, 2.5)),
  "claude-sonnet-4-6": priced(SONNET_4_X),
  "claude-sonnet-4-5": priced(SONNET_4_X),
  "claude-sonnet-4-0": priced(SONNET_4_X),
  "claude-sonnet-4-20250514": priced(SONNET_4_X),
  "claude-haiku-5-5": priced(rates(0.1, 0.5, 0.01, 0.125), {
    aboveTokens: 100_000,
    ...rates(0.5, 2.5, 0.05, 0.625),
  }),
  "claude-haiku-4-5": priced(rates(1, 5, 0.1, 1.25)),
};

const KNOWN_IDS = Object.keys(PRICES).sort((a, b) => b.length - a.length);

/**
 * What may follow a known id: a snapshot date, a Bedrock version (`-v1:0`), a Vertex `@date`.
 * Anything else (`claude-sonnet-5-7`) is a model this table does not know, not a variant of a known one.
 */
const VERSION_SUFFIX = /^(-\d{8})?(-v\d+(:\d+)?)?(@[\w.-]+)?$/;

/** Reduces a Bedrock ARN, inference-profile id or model id to the Claude API id it names. */
export function normalizeModelId(model: string): string {
  const lastSegment = model.slice(model.lastIndexOf("/") + 1).toLowerCase();
  return lastSegment.replace(/^(?:[a-z]+(?:-[a-z]+)?\.)?anthropic\./, "");
}

/**
 * The price of a model id, matched by the longest known id that starts it (after dropping any Bedrock
 * region prefix), followed only by a version suffix. Unknown models → undefined.
 */
export function priceFor(model: string): ModelPrice | undefined {
  const id = normalizeModelId(model);
  const known = KNOWN_IDS.find((k) => id.startsWith(k) && VERSION_SUFFIX.test(id.slice(k.length)));
  return known === undefined ? undefined : PRICES[known];
}

/** Whether {@link costUsd} knows this model; an unpriced model costs 0, so callers can say so. */
export function isPriced(model: string): boolean {
  return priceFor(model) !== undefined;
}

/**
 * The cost in USD of one call's usage at its price class (on demand unless said); 0 for a model
 * the table does not know (see {@link isPriced}).
 */
export function costUsd(model: string, usage: TokenUsage, priceClass: PriceClass = "on_demand"): number {
  const known = priceFor(model);
  if (known === undefined) return 0;
  const price = priceClass === "batch" ? known.batch : known;
  const prompt = usage.input + usage.cacheRead + usage.cacheWrite;
  const r =
    price.longPrompt !== undefined && prompt > price.longPrompt.aboveTokens ? price.longPrompt : price;
  return (
    (usage.input * r.input +
      usage.output * r.output +
      usage.cacheRead * r.cacheRead +
      usage.cacheWrite * r.cacheWrite) /
    1_000_000
  );
}
