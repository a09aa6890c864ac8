import { describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Violation } from "../../shared/draft.js";
import { modelFor } from "../../shared/loop/ladder.js";
import { applyPatch, patchJsonSchema, patchScope } from "../../shared/loop/patch.js";
import { extractJsonObject, parseCorrectionAnswer } from "../../shared/loop/response.js";
import { costUsd } from "../../shared/model/pricing.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";
import { DRAFT_WITH_ERRORS } from "../fixtures/seed004.js";
import { makeDeps } from "./harness.js";

const ID = DRAFT_WITH_ERRORS.id;
const usage = { input_tokens: 400, output_tokens: 60 };
const patchAnswer = (patch: unknown[]) => ({
  draftId: ID,
  purpose: "correct" as const,
  output: { patch },
  usage,
});

/** A fix of seed 004's three errors (stem, option A, rationale) as changed values only. */
const GOOD_PATCH = [
  { path: "/stem", value: "Which of the following is the most appropriate initial treatment for acute MI?" },
  { path: "/options/0/text", value: "Aspirin" },
  { path: "/correct_answer", value: "A" },
  {
    path: "/rationale",
    value:
      "Aspirin is the first treatment for acute MI because it stops platelet aggregation; PCI comes after it, antibiotics treat no part of MI, thrombolytics are second line and beta blockers do not reperfuse.",
  },
];

describe("field-level corrections: a patch over the violated paths, every other field locked", () => {
  it("asks for a patch when every violation names a field, and shows the patch as applied in the attempt and its diff", async () => {
    const { deps, model } = makeDeps([patchAnswer(GOOD_PATCH)]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    const request = model?.requests[0];
    expect(request?.tool.inputSchema).toMatchObject({ required: ["patch"] });
    expect(request?.subject?.open).toEqual(["/correct_answer", "/options/0/text", "/rationale", "/stem"]);
    const attempt = result.attemptsDetail[0];
    expect(attempt?.failure).toBeUndefined();
    expect(attempt?.patch).toEqual(GOOD_PATCH.map((o) => ({ op: "set", ...o })));
    const diffPaths = (attempt?.diff ?? []).map((d) => d.path);
    for (const o of GOOD_PATCH) expect(diffPaths).toContain(`/content${o.path}`);
    // Nothing outside the patch moved: every other field is the draft's.
    expect(result.finalDraft?.content).toMatchObject({
      vignette: (DRAFT_WITH_ERRORS.content as { vignette: string }).vignette,
      options: expect.arrayContaining([{ key: "B", text: "PCI" }]),
    });
  });

  it("refuses a patch's change to a locked field as a regression (counted, not applied) and applies the rest", async () => {
    const { deps } = makeDeps([
      patchAnswer([...GOOD_PATCH, { path: "/vignette", value: "A 60-year-old man has chest pain." }]),
    ]);
    const result = await correctDraft({ ...DRAFT_WITH_ERRORS, options: { maxAttempts: 1 } }, deps);
    const attempt = result.attemptsDetail[0];
    expect(attempt?.refusedPaths).toEqual(["/vignette"]);
    expect(attempt?.patch).toEqual(GOOD_PATCH.map((o) => ({ op: "set", ...o })));
    expect((attempt?.diff ?? []).map((d) => d.path)).not.toContain("/content/vignette");
    expect((result.finalDraft?.content as { vignette: string } | undefined)?.vignette).toBe(
      (DRAFT_WITH_ERRORS.content as { vignette: string }).vignette,
    );
  });

  it("refuses a patch that touches only locked fields: a failed attempt, the draft unchanged, the next prompt told", async () => {
    const { deps, model } = makeDeps([
      patchAnswer([{ path: "/vignette", value: "A 60-year-old man has chest pain." }]),
      patchAnswer(GOOD_PATCH),
    ]);
    const result = await correctDraft({ ...DRAFT_WITH_ERRORS, options: { maxAttempts: 2 } }, deps);
    const [first] = result.attemptsDetail;
    expect(first?.failure).toMatch(/only locked fields \(\/vignette\)/);
    expect(first?.refusedPaths).toEqual(["/vignette"]);
    expect(first?.rolledBack).toBe(true);
    expect(first?.draftRef).toBeUndefined();
    expect(model?.requests[1]?.user).toMatch(/changes to locked fields were refused: \/vignette/);
  });

  it("refuses a patch path that reaches the prototype, and writes hostile keys as own data", () => {
    const scope = { open: ["/meta"] };
    const result = applyPatch(
      { meta: {} },
      [{ op: "set", path: "/meta/__proto__", value: { polluted: 1 } }],
      scope,
    );
    expect(result.ok).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(applyPatch({ a: 1 }, [{ op: "set", path: "/b", value: 2 }], scope)).toMatchObject({
      ok: false,
      refused: ["/b"],
    });
  });

  it("asks for the whole draft when the structure itself is wrong", () => {
    const v = (path: string | undefined): Violation => ({
      ruleId: "r",
      severity: "error",
      source: "schema",
      message: "m",
      ...(path !== undefined && { path }),
    });
    expect(patchScope("json", { a: 1 }, [v("")])).toBeUndefined();
    expect(patchScope("json", { a: 1 }, [v(undefined)])).toBeUndefined();
    expect(patchScope("json", [1, 2], [v("/0")])).toBeUndefined();
    expect(patchScope("code", { a: 1 }, [v("/a")])).toBeUndefined();
    expect(patchScope("json", { a: { b: 1 } }, [v("/a"), v("/a/b")])).toEqual({ open: ["/a"] });
  });
});

describe("the patch tool's value schema", () => {
  it("types the value from the content schema, drops descriptions and bounds, and keeps fields named like keywords", () => {
    const schema = {
      type: "object",
      properties: {
        n: { type: "integer", minimum: 1 },
        meta: {
          type: "object",
          description: "about",
          properties: { description: { type: "string", minLength: 2 } },
          additionalProperties: false,
        },
      },
    };
    const value = (open: string[]) =>
      (patchJsonSchema({ open }, schema).items as { properties: { value: unknown } }).properties.value;
    expect(value(["/n"])).toEqual({ anyOf: [{ type: "string" }, { type: "number" }, { type: "boolean" }] });
    expect(value(["/meta"])).toMatchObject({
      anyOf: expect.arrayContaining([
        { type: "object", properties: { description: { type: "string" } }, additionalProperties: false },
      ]),
    });
    // A path the schema does not describe: the value stays untyped (and the answer unconstrained).
    expect(value(["/other"])).toEqual({});
  });
});

describe("answers wrapped in prose", () => {
  const json = { content: { stem: "Which {one} is it?" }, analysis: "a } b", fixDescription: "f" };
  const response = (raw: string): ModelResponse => ({
    raw,
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
    model: "m",
    latencyMs: 0,
  });

  it("parses one JSON object in prose, braces inside its strings included", () => {
    const parsed = parseCorrectionAnswer(
      response(`Sure {not json}! Here is the fix: ${JSON.stringify(json)} Let me know if {anything} else.`),
    );
    expect(parsed).toEqual({ ok: true, answer: json });
  });

  it("parses a fenced answer and a bare one, and still refuses text with no object", () => {
    expect(parseCorrectionAnswer(response(`\`\`\`json\n${JSON.stringify(json, null, 2)}\n\`\`\``)).ok).toBe(
      true,
    );
    expect(parseCorrectionAnswer(response(JSON.stringify(json))).ok).toBe(true);
    expect(parseCorrectionAnswer(response("I fixed it, see {above}."))).toMatchObject({
      ok: false,
      failure: expect.stringMatching(/not JSON/),
    });
    expect(() => extractJsonObject('{"a": "\\"}" ')).toThrow(SyntaxError);
  });
});

/** A provider double answering as whichever model the request names, a rewrite that fixes nothing. */
class TwoModels implements ModelClient {
  readonly provider = "double";
  readonly model = "claude-sonnet-5-5";
  readonly asked: (string | undefined)[] = [];
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.asked.push(request.model);
    return {
      output: { patch: [{ path: "/rationale", value: "Too short." }] },
      usage: { input: 1000, output: 100, cacheRead: 0, cacheWrite: 0 },
      model: request.model ?? this.model,
      latencyMs: 0,
    };
  }
}

describe("the model ladder", () => {
  it("moves a rule still failing after the cheap model's attempt to the strong model, and prices each attempt by its model", async () => {
    const { deps } = makeDeps([], {
      loop: {
        models: [{ model: "claude-haiku-5-5" }, { model: "claude-sonnet-5-5", after: 1 }],
        breakerAfter: 5,
        stuckAfter: 5,
      },
    });
    const model = new TwoModels();
    const result = await correctDraft(
      { ...DRAFT_WITH_ERRORS, options: { maxAttempts: 3 } },
      { ...deps, model },
    );
    expect(model.asked).toEqual(["claude-haiku-5-5", "claude-sonnet-5-5", "claude-sonnet-5-5"]);
    const attempts = result.attemptsDetail;
    expect(attempts.map((a) => a.model)).toEqual([
      "claude-haiku-5-5",
      "claude-sonnet-5-5",
      "claude-sonnet-5-5",
    ]);
    const u = { input: 1000, output: 100, cacheRead: 0, cacheWrite: 0 };
    expect(attempts[0]?.costUsd).toBeCloseTo(costUsd("claude-haiku-5-5", u), 10);
    expect(attempts[1]?.costUsd).toBeCloseTo(costUsd("claude-sonnet-5-5", u), 10);
    expect(attempts[0]?.costUsd).toBeLessThan(attempts[1]?.costUsd ?? 0);
    expect(result.costUsd).toBeCloseTo(
      costUsd("claude-haiku-5-5", u) + 2 * costUsd("claude-sonnet-5-5", u),
      10,
    );
  });

  it("moves only the rules a rung names, and keeps the client's model without a ladder", () => {
    const v = (ruleId: string): Violation => ({
      ruleId,
      severity: "error",
      source: "rule",
      message: "m",
      path: "/x",
    });
    const rungs = [{ model: "cheap" }, { model: "strong", after: 2, rules: ["hard"] }];
    const state = { ruleFailures: { easy: 5, hard: 1 }, initialErrorRules: [] };
    expect(modelFor(rungs, [v("easy"), v("hard")], state, 3)).toBe("cheap");
    expect(modelFor(rungs, [v("hard")], { ...state, ruleFailures: { hard: 2 } }, 3)).toBe("strong");
    expect(modelFor(undefined, [v("hard")], state, 3)).toBeUndefined();
  });
});
