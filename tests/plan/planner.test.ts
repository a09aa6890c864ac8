import { describe, expect, it } from "vitest";
import { loadPlanData } from "../../cli/plan.js";
import type { CountsFile } from "../../shared/plan/counts.js";
import { DEFAULT_MIX, erlangC, type PlanInput, plan, TARGET_UTILISATION } from "../../shared/plan/planner.js";
import type { PricesFile } from "../../shared/plan/prices.js";

const { counts, prices } = await loadPlanData();
const only = (path: keyof typeof DEFAULT_MIX) =>
  Object.fromEntries(Object.keys(DEFAULT_MIX).map((p) => [p, p === path ? 1 : 0])) as typeof DEFAULT_MIX;
const pathOf = (path: string) => counts.paths.find((p) => p.path === path);
const component = (p: ReturnType<typeof plan>, prefix: string) =>
  p.components.find((c) => c.name.startsWith(prefix));

describe("the planner's per-draft counts", () => {
  // A mix of one path gives that path's measured counts (λ start added to the invocations).
  it.each([
    "validated_at_once",
    "corrected_once",
    "corrected_twice",
    "judge_loop",
    "needs_review",
    "rejected",
  ] as const)("%s alone: the path's measured transitions, writes and invocations", (path) => {
    const measured = pathOf(path);
    const p = plan({ draftsPerDay: 10_000, mix: only(path) }, counts, prices);
    expect(p.counts.transitions).toBeCloseTo(measured?.transitions ?? Number.NaN, 6);
    expect(p.counts.writes).toBeCloseTo(measured?.dynamo.writeUnits ?? Number.NaN, 6);
    expect(p.counts.reads).toBeCloseTo(measured?.dynamo.readUnits ?? Number.NaN, 6);
    const invocations = Object.values(measured?.invocations ?? {}).reduce((s, i) => s + i.count, 0);
    expect(p.counts.invocations).toBeCloseTo(invocations + 1, 6);
  });

  it("weighs the paths by the mix", () => {
    const half = { ...only("validated_at_once"), rejected: 1 };
    const p = plan({ draftsPerDay: 10_000, mix: half }, counts, prices);
    const mean =
      ((pathOf("validated_at_once")?.transitions ?? 0) + (pathOf("rejected")?.transitions ?? 0)) / 2;
    expect(p.counts.transitions).toBeCloseTo(mean, 6);
  });

  it.each([
    [1, "corrected_once"],
    [2, "corrected_twice"],
  ] as const)("--attempts %d gives the measured %s path", (attempts, path) => {
    const p = plan({ draftsPerDay: 10_000, mix: only("corrected_once"), attempts }, counts, prices);
    expect(p.counts.transitions).toBeCloseTo(pathOf(path)?.transitions ?? Number.NaN, 6);
  });

  it("--attempts 3 adds the second attempt's increment once more", () => {
    const once = pathOf("corrected_once")?.transitions ?? 0;
    const twice = pathOf("corrected_twice")?.transitions ?? 0;
    const p = plan({ draftsPerDay: 10_000, mix: only("corrected_twice"), attempts: 3 }, counts, prices);
    expect(p.counts.transitions).toBeCloseTo(twice + (twice - once), 6);
  });
});

describe("the planner's answer", () => {
  const cases: [string, PlanInput, (p: ReturnType<typeof plan>) => void][] = [
    [
      "prod's model is bounded by Bedrock's tokens per minute, drawn 5x per output token",
      { draftsPerDay: 1_000_000, env: "prod" },
      (p) => {
        expect(p.bottleneck).toMatch(/^Model \(.*Bedrock cross-Region/);
        expect(p.keepsUp).toBe(false);
        const tpm = prices.items["bedrock.crossRegionTpm"]?.values["us-east-1"] ?? Number.NaN;
        // 3,000 input + 5 x 800 output quota tokens per call, not 3,800.
        expect(p.modelQuota.outputBurndown).toBe(5);
        expect(p.modelQuota.quotaTokensPerCall).toBe(3_000 + 5 * 800);
        expect(component(p, "Model (")?.ceilingPerSecond).toBeCloseTo(
          tpm / (p.counts.modelCalls * 7_000) / 60,
          9,
        );
        expect(p.unconfirmed).toContain("bedrock.laterClaude.outputBurndown");
        // Raising modelConcurrency leaves Bedrock's tokens per minute as the limit.
        expect(p.bottleneckAfterConfig.name).toMatch(/^Model \(.*Bedrock/);
      },
    ],
    [
      "without corrections the model is idle and Step Functions' start rate or DynamoDB's hot partition binds",
      { backlog: 1_000_000, mix: only("validated_at_once") },
      (p) => {
        expect(p.counts.modelCalls).toBe(0);
        expect(
          ["Step Functions StartExecution", "Lambda account concurrency"].some((n) =>
            p.bottleneck.startsWith(n),
          ) || p.bottleneck.startsWith("DynamoDB"),
        ).toBe(true);
        expect(p.drainHours).toBeCloseTo(
          1_000_000 / (component(p, p.bottleneck)?.ceilingPerSecond ?? 1) / 3600,
          6,
        );
      },
    ],
    [
      "batch pricing halves the model's cost per draft",
      { draftsPerDay: 10_000, pricing: "batch" },
      (p) => {
        const onDemand = plan({ draftsPerDay: 10_000 }, counts, prices);
        expect(component(p, "Model (")?.costPerDraftUsd).toBeCloseTo(
          (component(onDemand, "Model (")?.costPerDraftUsd ?? 0) / 2,
          9,
        );
        expect(p.via).toBe("batch");
        // The judge path's three model calls wait for three rounds of prod's 90-minute estimate.
        expect(p.drainHours).toBeGreaterThanOrEqual((3 * 90) / 60);
      },
    ],
    [
      "a Region without a row uses us-east-1's and says so",
      { draftsPerDay: 10_000, region: "ap-southeast-3" },
      (p) => {
        expect(p.numbersUsed.find((u) => u.id === "sfn.standard.transitionUsd")?.fallback).toBe(true);
      },
    ],
    [
      "a Region with its own row uses it",
      { draftsPerDay: 10_000, region: "sa-east-1" },
      (p) => {
        const used = p.numbersUsed.find((u) => u.id === "sfn.standard.transitionUsd");
        expect(used?.value).toBe(0.0000375);
        expect(component(p, "Step Functions state transitions")?.costPerDraftUsd).toBeCloseTo(
          p.counts.transitions * 0.0000375,
          12,
        );
      },
    ],
    [
      "dev calls Anthropic: its tier's limits bound the model",
      { draftsPerDay: 10_000, env: "dev", tier: 1 },
      (p) => {
        expect(component(p, "Model (")?.name).toContain("Anthropic tier 1");
        expect(p.unconfirmed).toContain("anthropic.tier1.otpm");
      },
    ],
  ];
  it.each(cases)("%s", (_name, input, check) => check(plan(input, counts, prices)));

  it("adds the components' costs up to the cost per draft, and the transitions' share of it", () => {
    const p = plan({ draftsPerDay: 1_000_000 }, counts, prices);
    expect(p.costPerDraftUsd).toBeCloseTo(
      p.components.reduce((s, c) => s + c.costPerDraftUsd, 0),
      12,
    );
    expect(p.transitionShare).toBeCloseTo(p.express.standardOrchestrationUsd / p.costPerDraftUsd, 12);
  });

  it("marks a component whose numbers are unconfirmed, and lists every unconfirmed number used", () => {
    const p = plan({ draftsPerDay: 1_000_000 }, counts, prices);
    for (const c of p.components.filter((c) => c.unconfirmed)) expect(c.source).not.toBe("");
    for (const id of p.unconfirmed) expect(prices.items[id]?.status).toBe("unconfirmed");
  });

  it("refuses an unknown environment, and both a daily volume and a backlog", () => {
    expect(() => plan({ env: "qa" }, counts, prices)).toThrow(/unknown environment "qa"/);
    expect(() => plan({ draftsPerDay: 1, backlog: 1 }, counts, prices)).toThrow(/not both/);
  });

  it("refuses a prices file whose number has no us-east-1 row (the default)", async () => {
    const { PricesFileSchema } = await import("../../shared/plan/prices.js");
    const broken = structuredClone(prices) as PricesFile;
    const item = broken.items["lambda.requestUsd"];
    if (item) item.values = { "eu-west-1": 1 };
    expect(PricesFileSchema.safeParse(broken).success).toBe(false);
  });

  it("refuses a mix whose every weight is 0", () => {
    const zeros = Object.fromEntries(Object.keys(DEFAULT_MIX).map((p) => [p, 0]));
    expect(() => plan({ mix: zeros as typeof DEFAULT_MIX }, counts as CountsFile, prices)).toThrow();
  });
});

/** counts.json with one environment's model replaced, for the burndown per model family. */
const withModel = (env: string, modelId: string): CountsFile => {
  const copy = structuredClone(counts);
  const e = copy.environments[env];
  if (e) e.modelId = modelId;
  return copy;
};

describe("the model's quotas", () => {
  const tpm = prices.items["bedrock.crossRegionTpm"]?.values["us-east-1"] ?? Number.NaN;

  it.each([
    ["global.anthropic.claude-sonnet-4-5-20250929-v1:0", 5, "bedrock.claude4.outputBurndown"],
    ["us.anthropic.claude-opus-4-1-20250805-v1:0", 5, "bedrock.claude4.outputBurndown"],
    ["global.anthropic.claude-sonnet-5-5", 5, "bedrock.laterClaude.outputBurndown"],
    ["anthropic.claude-3-5-haiku-20241022-v1:0", 1, null],
    ["amazon.nova-pro-v1:0", 1, null],
  ] as const)("%s on Bedrock draws %d quota tokens per output token", (modelId, multiplier, id) => {
    const p = plan({ draftsPerDay: 10_000, env: "prod" }, withModel("prod", modelId), prices);
    expect(p.modelQuota.outputBurndown).toBe(multiplier);
    expect(p.modelQuota.outputBurndownSource).toBe(id);
    expect(p.modelQuota.quotaTokensPerCall).toBe(3_000 + multiplier * 800);
  });

  it("the Anthropic API counts output tokens 1:1 (they have their own per-minute quota)", () => {
    const p = plan({ draftsPerDay: 10_000, env: "dev" }, counts, prices);
    expect(p.modelQuota.outputBurndown).toBe(1);
    expect(p.modelQuota.reservedPerCall).toBe(8192);
  });

  it("has a tokens-per-day quota, by default the minute's x 1,440, and says how much of it a day uses", () => {
    const p = plan({ draftsPerDay: 1_000_000, env: "prod" }, counts, prices);
    expect(p.modelQuota.tokensPerDay).toBe(tpm * 1440);
    expect(p.modelQuota.tokensPerDayUsed).toBeCloseTo(
      (1_000_000 * p.counts.modelCalls * 7_000) / (tpm * 1440),
      9,
    );
    expect(component(p, "Model tokens per day")?.ceilingPerSecond).toBeCloseTo(
      (tpm * 1440) / (p.counts.modelCalls * 7_000) / 86_400,
      9,
    );
    expect(p.numbersUsed.map((u) => u.id)).toContain("bedrock.tokensPerDayPerTpm");
  });

  it("counts max_tokens as reserved while a call is in flight: a lower max_tokens lets more calls start", () => {
    const p = plan({ draftsPerDay: 10_000, env: "prod" }, counts, prices);
    expect(p.modelQuota.maxTokens).toBe(8192);
    expect(p.modelQuota.reservedPerCall).toBe(3_000 + 8192);
    expect(p.modelQuota.callsInFlight).toBeCloseTo(tpm / (3_000 + 8192), 9);
    const lower = plan({ draftsPerDay: 10_000, env: "prod", maxTokens: 2_000 }, counts, prices);
    expect(lower.modelQuota.callsInFlight).toBeCloseTo(tpm / 5_000, 9);
    expect(component(lower, "Model max_tokens reservation")?.ceilingPerSecond).toBeGreaterThan(
      component(p, "Model max_tokens reservation")?.ceilingPerSecond ?? Number.POSITIVE_INFINITY,
    );
  });
});

describe("the model-slot queue", () => {
  it("Erlang C: an M/M/1 queue waits with probability rho; two slots at load 1 with 1/3", () => {
    expect(erlangC(1, 0.5)).toBeCloseTo(0.5, 12);
    expect(erlangC(2, 1)).toBeCloseTo(1 / 3, 12);
    expect(erlangC(4, 4)).toBe(1);
  });

  it("never fails a draft for load; a volume it does not serve waits, and past the deadline ends `deadline`", () => {
    const p = plan({ draftsPerDay: 1_000_000, env: "prod" }, counts, prices);
    const q = p.queue;
    expect(q.failedByLoad).toBe(0);
    expect(q.servicePerSecond).toBeCloseTo(component(p, p.bottleneck)?.ceilingPerSecond ?? 0, 12);
    expect(q.utilisation).toBeGreaterThan(1);
    expect(q.peakWaitHours).toBe(24);
    // The queue serves mu a second; of the day's arrivals, those it cannot serve within the deadline fail.
    const lambda = 1_000_000 / 86_400;
    const t0 = (24 * 3600 * q.servicePerSecond) / (lambda - q.servicePerSecond);
    expect(q.failedByDeadlineShare).toBeCloseTo(
      ((86_400 - t0) / 86_400) * (1 - q.servicePerSecond / lambda),
      12,
    );
    // A longer deadline fails fewer.
    const longer = plan({ draftsPerDay: 1_000_000, env: "prod", deadlineHours: 72 }, counts, prices);
    expect(longer.queue.failedByDeadlineShare).toBeLessThan(q.failedByDeadlineShare);
  });

  it("a backlog waits at once: drained in backlog / rate, and nothing fails within the deadline", () => {
    const p = plan({ backlog: 10_000, env: "prod" }, counts, prices);
    const q = p.queue;
    expect(q.arrival).toBe("burst");
    expect(q.peakWaitHours).toBeCloseTo(10_000 / q.servicePerSecond / 3600, 9);
    expect(q.failedByDeadlineShare).toBe(0);
    const huge = plan({ backlog: 1_000_000, env: "prod" }, counts, prices).queue;
    expect(huge.peakWaitHours).toBe(24);
    expect(huge.failedByDeadlineShare).toBeCloseTo(1 - (huge.servicePerSecond * 24 * 3600) / 1_000_000, 9);
  });

  it("prints the settings a daily volume needs, each with where it is set, its source and whether it is confirmed; deployed, they keep up", () => {
    const p = plan({ draftsPerDay: 1_000_000, env: "prod" }, counts, prices);
    const names = (p.settings ?? []).map((s) => s.name);
    expect(names).toEqual([
      "model slots",
      "Lambda concurrent executions",
      "Bedrock tokens per minute (cross-Region)",
      "Bedrock tokens per day",
      "batch concurrency",
    ]);
    for (const s of p.settings ?? []) {
      expect(s.source).not.toBe("");
      expect(s.where).toMatch(/^(infra\/config\.ts|Service Quotas)/);
      expect(typeof s.confirmed).toBe("boolean");
    }
    const tpmSetting = p.settings?.find((s) => s.name.startsWith("Bedrock tokens per minute"));
    expect(tpmSetting?.confirmed).toBe(false);
    expect(tpmSetting?.value).toBeGreaterThanOrEqual(
      ((1_000_000 / 86_400) * 60 * p.counts.modelCalls * 7_000) / TARGET_UTILISATION,
    );
    const slots = p.settings?.find((s) => s.name === "model slots");
    // Every slot's max_tokens reservation fits in the minute's quota requested.
    expect((tpmSetting?.value ?? 0) / p.modelQuota.reservedPerCall).toBeGreaterThanOrEqual(slots?.value ?? 0);
    expect(p.withSettings?.keepsUp).toBe(true);
    expect(p.withSettings?.queue.failedByLoad).toBe(0);
    expect(p.withSettings?.queue.failedByDeadlineShare).toBeLessThan(1e-9);
    expect(p.withSettings?.queue.utilisation).toBeLessThanOrEqual(TARGET_UTILISATION + 1e-9);
  });

  it("a backlog prints no daily settings", () => {
    expect(plan({ backlog: 1_000, env: "prod" }, counts, prices).settings).toBeUndefined();
  });
});
