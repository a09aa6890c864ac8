import { describe, expect, it } from "vitest";
import {
  costUsd,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_BEDROCK_MODEL,
  isPriced,
  normalizeModelId,
  priceFor,
} from "../../shared/model/pricing.js";
import { ZERO_USAGE } from "../../shared/model/types.js";

const M = 1_000_000;

describe("priceFor", () => {
  it.each([
    ["claude-sonnet-5-5", { input: 2, output: 10, cacheRead: 0.1, cacheWrite: 2.5 }],
    ["claude-sonnet-5", { input: 2, output: 10, cacheRead: 0.2, cacheWrite: 2.5 }],
    ["claude-sonnet-4-5", { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }],
    ["claude-sonnet-4-20250514", { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }],
    ["claude-haiku-4-5", { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 }],
    ["claude-opus-5-5", { input: 4, output: 20, cacheRead: 0.2, cacheWrite: 5 }],
    ["claude-opus-4-8", { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 }],
    ["claude-opus-4-1", { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 }],
  ])("knows %s", (model, price) => {
    expect(priceFor(model)).toMatchObject(price);
  });

  it("resolves dated ids, Vertex ids and aliases to their model", () => {
    expect(priceFor("claude-sonnet-4-5-20250929")).toBe(priceFor("claude-sonnet-4-5"));
    expect(priceFor("claude-haiku-4-5-20251001")).toBe(priceFor("claude-haiku-4-5"));
    expect(priceFor("claude-opus-4-1-20250805")).toBe(priceFor("claude-opus-4-1"));
    expect(priceFor("claude-sonnet-4-5@20250929")).toBe(priceFor("claude-sonnet-4-5"));
    // An alias and its dated id are two keys of the table with equal prices.
    expect(priceFor("claude-sonnet-4-0")).toEqual(priceFor("claude-sonnet-4-20250514"));
  });

  it("matches the longest known id, so a point release is never priced as its parent", () => {
    expect(priceFor("claude-sonnet-5-5")?.cacheRead).toBe(0.1);
    expect(priceFor("claude-sonnet-5")?.cacheRead).toBe(0.2);
    expect(priceFor("claude-opus-4-5-20251101")?.input).toBe(5);
    expect(priceFor("claude-opus-4-20250514")?.input).toBe(15);
  });

  it.each([
    ["anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"],
    ["us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"],
    ["eu.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"],
    ["global.anthropic.claude-sonnet-5-5", "claude-sonnet-5-5"],
    ["apac.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4-20250514"],
    ["us-gov.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"],
    [
      "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-1-20250805-v1:0",
      "claude-opus-4-1",
    ],
  ])("prices the Bedrock id %s as %s", (bedrockId, apiId) => {
    expect(priceFor(bedrockId)).toBeDefined();
    expect(priceFor(bedrockId)).toBe(priceFor(apiId));
  });

  it("strips the region prefix and the ARN, keeping the version suffix", () => {
    expect(normalizeModelId("US.anthropic.claude-sonnet-4-5-20250929-v1:0")).toBe(
      "claude-sonnet-4-5-20250929-v1:0",
    );
    expect(normalizeModelId("claude-sonnet-5-5")).toBe("claude-sonnet-5-5");
  });

  it.each([
    "gpt-5",
    "replay",
    "claude-sonnet-5-7",
    "claude-opus-4-9",
    "anthropic.claude-3-nonexistent-v1:0",
    "",
  ])("does not price %j", (model) => {
    expect(priceFor(model)).toBeUndefined();
    expect(isPriced(model)).toBe(false);
  });

  it("prices both default models", () => {
    expect(isPriced(DEFAULT_ANTHROPIC_MODEL)).toBe(true);
    expect(priceFor(DEFAULT_BEDROCK_MODEL)).toBe(priceFor(DEFAULT_ANTHROPIC_MODEL));
  });
});

describe("costUsd", () => {
  it("prices each kind of token at its own rate", () => {
    const usage = { input: 1200, output: 800, cacheRead: 10_000, cacheWrite: 2_000 };

    // Sonnet 4.5: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million.
    const expected = (1200 * 3 + 800 * 15 + 10_000 * 0.3 + 2_000 * 3.75) / M;

    expect(costUsd("claude-sonnet-4-5", usage)).toBeCloseTo(expected, 12);
    expect(costUsd("us.anthropic.claude-sonnet-4-5-20250929-v1:0", usage)).toBeCloseTo(expected, 12);
    expect(expected).toBeCloseTo(0.0261, 12);
  });

  it("costs a million of each token exactly the table's rates", () => {
    expect(costUsd("claude-sonnet-5-5", { input: M, output: M, cacheRead: M, cacheWrite: M })).toBeCloseTo(
      2 + 10 + 0.1 + 2.5,
      10,
    );
  });

  it("bills a Haiku 5.5 request whose prompt passes 100k tokens at the long-prompt rates, output included", () => {
    const short = { input: 50_000, output: 1_000, cacheRead: 50_000, cacheWrite: 0 };
    const long = { input: 50_000, output: 1_000, cacheRead: 50_001, cacheWrite: 0 };

    expect(costUsd("claude-haiku-5-5", short)).toBeCloseTo(
      (50_000 * 0.1 + 1_000 * 0.5 + 50_000 * 0.01) / M,
      12,
    );
    expect(costUsd("claude-haiku-5-5", long)).toBeCloseTo(
      (50_000 * 0.5 + 1_000 * 2.5 + 50_001 * 0.05) / M,
      12,
    );
  });

  it("costs nothing for zero usage or an unknown model", () => {
    expect(costUsd("claude-sonnet-5-5", ZERO_USAGE)).toBe(0);
    expect(costUsd("replay", { input: 1000, output: 1000, cacheRead: 0, cacheWrite: 0 })).toBe(0);
  });
});

describe("batch prices (the Message Batches API, Bedrock batch inference)", () => {
  /** Every model of the table, by the ids the table is keyed on. */
  const MODELS = [
    "claude-fable-5-1",
    "claude-mythos-5-1",
    "claude-fable-5",
    "claude-mythos-5",
    "claude-opus-5-5",
    "claude-opus-5",
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-opus-4-5",
    "claude-opus-4-1",
    "claude-opus-4-0",
    "claude-opus-4-20250514",
    "claude-sonnet-5-5",
    "claude-sonnet-5",
    "claude-sonnet-4-6",
    "claude-sonnet-4-5",
    "claude-sonnet-4-0",
    "claude-sonnet-4-20250514",
    "claude-haiku-5-5",
    "claude-haiku-4-5",
  ];
  const CLASSES = ["input", "output", "cacheRead", "cacheWrite"] as const;

  it.each(MODELS)(
    "%s: every token class, cache reads and writes included, at half its on-demand rate",
    (model) => {
      const price = priceFor(model);
      if (!price) throw new Error(`${model} is not priced`);
      for (const c of CLASSES) expect(price.batch[c]).toBe(price[c] / 2);
      // A model billed higher past a prompt length is, in a batch, at half of those rates past the same length.
      if (price.longPrompt) {
        expect(price.batch.longPrompt?.aboveTokens).toBe(price.longPrompt.aboveTokens);
        for (const c of CLASSES) expect(price.batch.longPrompt?.[c]).toBe(price.longPrompt[c] / 2);
      } else expect(price.batch.longPrompt).toBeUndefined();
    },
  );

  it("costs a request half of what it costs on demand, whatever its mix of tokens", () => {
    const usages = [
      { input: 1200, output: 800, cacheRead: 10_000, cacheWrite: 2_000 },
      { input: 0, output: 0, cacheRead: M, cacheWrite: 0 },
      { input: 0, output: 0, cacheRead: 0, cacheWrite: M },
      { input: 7, output: 3_000, cacheRead: 0, cacheWrite: 0 },
    ];
    for (const model of [...MODELS, DEFAULT_BEDROCK_MODEL, "eu.anthropic.claude-haiku-4-5-20251001-v1:0"])
      for (const usage of usages)
        expect(costUsd(model, usage, "batch")).toBeCloseTo(costUsd(model, usage) / 2, 12);
  });

  it("prices Sonnet 5.5's cache reads and writes in a batch at half their own rates, not at a share of input", () => {
    // $2 in, $10 out, $0.10 cache read (cut on 2026-10-07), $2.50 cache write (5-minute TTL) per million.
    expect(
      costUsd("claude-sonnet-5-5", { input: M, output: M, cacheRead: M, cacheWrite: M }, "batch"),
    ).toBeCloseTo(1 + 5 + 0.05 + 1.25, 10);
  });

  it("bills a batch request whose prompt passes Haiku 5.5's 100k tokens at half the long-prompt rates", () => {
    const short = { input: 50_000, output: 1_000, cacheRead: 50_000, cacheWrite: 0 };
    const long = { input: 50_000, output: 1_000, cacheRead: 50_001, cacheWrite: 0 };
    expect(costUsd("claude-haiku-5-5", short, "batch")).toBeCloseTo(
      (50_000 * 0.05 + 1_000 * 0.25 + 50_000 * 0.005) / M,
      12,
    );
    expect(costUsd("claude-haiku-5-5", long, "batch")).toBeCloseTo(
      (50_000 * 0.25 + 1_000 * 1.25 + 50_001 * 0.025) / M,
      12,
    );
  });

  it("costs nothing in a batch for a model the table does not know, as on demand", () => {
    expect(costUsd("replay", { input: 1000, output: 1000, cacheRead: 0, cacheWrite: 0 }, "batch")).toBe(0);
  });
});
