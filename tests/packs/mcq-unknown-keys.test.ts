import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { inspectWithPack, resolvePack } from "../../shared/engine.js";
import { type McqContent, mcqPack } from "../../shared/packs/mcq/mcq.js";
import { validateDraft } from "../../shared/validate.js";
import { DRAFT_WITH_ERRORS, FULLY_CORRECTED_DRAFT } from "../fixtures/seed004.js";
import { answer, makeDeps } from "../loop/harness.js";

/** Issue 9: a correction cannot smuggle content in through keys the mcq kind does not define. */

const CLEAN = FULLY_CORRECTED_DRAFT.content as McqContent;
const resolved = resolvePack(mcqPack);
const SMUGGLED = "The answer is A; tell the examinee.";

/** The clean question with a hidden top-level field and an option that marks itself correct. */
const smuggling = {
  ...CLEAN,
  explanation_hidden: SMUGGLED,
  options: CLEAN.options.map((o, i) => (i === 0 ? { ...o, correct: true } : o)),
};

const removals = [
  {
    ruleId: "mcq_unknown_keys",
    action: "remove",
    path: "/explanation_hidden",
    message: 'Removed "explanation_hidden": not a field of a question',
    before: SMUGGLED,
  },
  {
    ruleId: "mcq_unknown_keys",
    action: "remove",
    path: "/options/0/correct",
    message: 'Removed "correct": not a field of an option',
    before: true,
  },
];

describe("mcq_unknown_keys", () => {
  it("removes unknown keys at initial validation, recording each removal with what it removed", () => {
    const draft: Draft = Object.freeze({ ...FULLY_CORRECTED_DRAFT, content: smuggling });
    const inspected = inspectWithPack(resolved, draft);
    expect(inspected.report.repairs).toEqual(removals);
    expect(inspected.report.passed).toBe(true);
    expect(inspected.draft.content).toEqual(CLEAN);
    expect(smuggling.explanation_hidden).toBe(SMUGGLED);
    expect(smuggling.options[0]).toHaveProperty("correct", true);
  });

  it("reports unknown keys as errors when checked without its repair", () => {
    const rule = mcqPack.rules.find((r) => r.id === "mcq_unknown_keys");
    expect(rule?.severity).toBe("error");
    const findings = rule?.check({
      draft: FULLY_CORRECTED_DRAFT,
      content: smuggling as McqContent,
      settings: mcqPack.settings,
    });
    expect(findings?.map((f) => [f.path, f.message])).toEqual([
      ["/explanation_hidden", '"explanation_hidden" is not a field of a question'],
      ["/options/0/correct", '"correct" is not a field of an option'],
    ]);
  });

  it("escapes odd key names in the pointer and removes an own __proto__ key", async () => {
    const raw = JSON.stringify({ ...FULLY_CORRECTED_DRAFT, content: CLEAN }).replace(
      '"stem":',
      '"a/b~c":1,"__proto__":{"polluted":true},"stem":',
    );
    const report = await validateDraft(raw);
    expect(report.repairs.map((r) => r.path)).toEqual(["/a~1b~0c", "/__proto__"]);
    expect(report.passed).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("removes what a correction adds, through the same repair, so the run validates without it", async () => {
    const { deps } = makeDeps([answer(DRAFT_WITH_ERRORS.id, smuggling)]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("validated");
    expect(result.attempts).toBe(1);
    expect(result.attemptsDetail[0]?.repairs).toEqual(removals);
    expect(result.finalDraft?.content).toEqual(CLEAN);
    expect(JSON.stringify(result.finalDraft)).not.toContain(SMUGGLED);
  });

  it("removes them from a submitted draft that needs no correction, with no model call", async () => {
    const { deps } = makeDeps(undefined);
    const result = await correctDraft({ ...FULLY_CORRECTED_DRAFT, content: smuggling }, deps);
    expect(result.status).toBe("validated");
    expect(result.finalDraft?.content).toEqual(CLEAN);
  });

  it("offers the model a JSON Schema that allows no extra key in the question or an option", () => {
    const validate = new Ajv().compile(mcqPack.contentJsonSchema?.(FULLY_CORRECTED_DRAFT) ?? {});
    expect(validate(CLEAN)).toBe(true);
    expect(validate({ ...CLEAN, explanation_hidden: SMUGGLED })).toBe(false);
    expect(validate({ ...CLEAN, options: smuggling.options })).toBe(false);
  });
});

describe("json drafts under additionalProperties: false", () => {
  const schema = {
    type: "object",
    required: ["title"],
    additionalProperties: false,
    properties: {
      title: { type: "string", minLength: 1 },
      authors: {
        type: "array",
        items: {
          type: "object",
          additionalProperties: false,
          properties: { name: { type: "string" } },
        },
      },
    },
  };
  const draft: Draft = { id: "paper-9", kind: "json", context: { schema }, content: { title: "" } };

  it("lose what a correction adds outside the schema, recorded on the attempt", async () => {
    const { deps } = makeDeps([
      answer(draft.id, { title: "T", hidden: SMUGGLED, authors: [{ name: "A", correct: true }] }),
    ]);
    const result = await correctDraft(draft, deps);
    expect(result.status).toBe("validated");
    expect(result.finalDraft?.content).toEqual({ title: "T", authors: [{ name: "A" }] });
    expect(result.attemptsDetail[0]?.repairs.map((r) => [r.action, r.path, r.before])).toEqual([
      ["remove", "/hidden", SMUGGLED],
      ["remove", "/authors/0/correct", true],
    ]);
  });
});
