import { describe, expect, it } from "vitest";
import { loadPlanData } from "../../cli/plan.js";
import type { CountsFile } from "../../shared/plan/counts.js";
import { DEFAULT_MIX, type PlanInput, plan } from "../../shared/plan/planner.js";
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
      "prod's model steps are bounded by its reserved concurrency",
      { draftsPerDay: 1_000_000, env: "prod" },
      (p) => {
        expect(p.bottleneck).toBe("Lambda reserved concurrency: correct");
        expect(p.keepsUp).toBe(false);
        expect(p.raiseFirst[0]?.raise).toContain("modelConcurrency");
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
        expect(component(p, "Model")?.costPerDraftUsd).toBeCloseTo(
          (component(onDemand, "Model")?.costPerDraftUsd ?? 0) / 2,
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
        expect(component(p, "Model")?.name).toContain("Anthropic tier 1");
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
