import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import type { Draft, ValidationReport, Violation } from "../../shared/draft.js";
import { inspectWithPack, resolvePack } from "../../shared/engine.js";
import { InvalidPackError } from "../../shared/errors.js";
import type { DeploymentConfig } from "../../shared/pack.js";
import {
  DEFAULT_MCQ_SETTINGS,
  type McqContent,
  McqContentSchema,
  type McqSettings,
  McqSettingsSchema,
  mcqPack,
} from "../../shared/packs/mcq/mcq.js";
import { PackRegistry } from "../../shared/registry.js";
import { inspectDraft, validateDraft } from "../../shared/validate.js";
import {
  DRAFT_WITH_ERRORS,
  FULLY_CORRECTED_DRAFT,
  PARTIALLY_CORRECTED_DRAFT,
  SEED004_EXPECTED_ERRORS,
} from "../fixtures/seed004.js";

const CLEAN = FULLY_CORRECTED_DRAFT.content as McqContent;
const resolved = resolvePack(mcqPack);

/** A draft built from the fully corrected seed question (which breaks no rule) with some fields changed. */
function draftWith(patch: Partial<McqContent>, rest: Partial<Draft> = {}): Draft {
  return { ...FULLY_CORRECTED_DRAFT, ...rest, content: { ...CLEAN, ...patch } };
}

function withOption(index: number, text: string): McqContent["options"] {
  return CLEAN.options.map((o, i) => (i === index ? { ...o, text } : o));
}

function check(draft: Draft): ValidationReport {
  return inspectWithPack(resolved, draft).report;
}

function byRule(report: ValidationReport, ruleId: string): Violation[] {
  return report.violations.filter((v) => v.ruleId === ruleId);
}

function errorIds(report: ValidationReport): string[] {
  return report.violations.filter((v) => v.severity === "error").map((v) => v.ruleId);
}

describe("mcq pack", () => {
  it("has the rule ids users configure by, each described", () => {
    expect(mcqPack.rules.map((r) => r.id).sort()).toEqual(
      [
        "ext_metadata_completeness",
        "ext_rationale_completeness",
        "mcq_answer_key_valid",
        "mcq_correct_not_longest",
        "mcq_duplicate_options",
        "mcq_no_all_none_of_above",
        "mcq_option_count",
        "mcq_stem_asks_question",
        "mcq_unknown_keys",
        "mcq_whitespace",
        "nbme_absolute_terms",
        "nbme_answer_homogeneity",
        "nbme_negation_detection",
      ].sort(),
    );
    for (const rule of mcqPack.rules) expect(rule.description.length).toBeGreaterThan(20);
    expect(McqSettingsSchema.safeParse(DEFAULT_MCQ_SETTINGS).success).toBe(true);
  });

  it("finds nothing at all in a clean question", () => {
    const report = check(FULLY_CORRECTED_DRAFT);
    expect(report.violations).toEqual([]);
    expect(report.repairs).toEqual([]);
    expect(report.score).toBe(1);
  });

  type Case = {
    ruleId: string;
    severity: "error" | "warning" | "info";
    trips: Draft;
    path: string;
    passes: Draft;
  };
  const cases: Case[] = [
    {
      ruleId: "nbme_negation_detection",
      severity: "error",
      trips: draftWith({ stem: "Which of the following is NOT a treatment for MI?" }),
      path: "/stem",
      passes: draftWith({ stem: "Which of the following is the most appropriate treatment for acute MI?" }),
    },
    {
      ruleId: "nbme_absolute_terms",
      severity: "error",
      trips: draftWith({ options: withOption(1, "Never give thrombolytics") }),
      path: "/options/1/text",
      passes: draftWith({ options: withOption(1, "Give thrombolytics within 30 minutes") }),
    },
    {
      ruleId: "ext_rationale_completeness",
      severity: "error",
      trips: draftWith({ rationale: "See AHA guidelines." }),
      path: "/rationale",
      passes: draftWith({
        rationale: "Aspirin and PCI are first-line treatments for acute MI per AHA guidelines.",
      }),
    },
    {
      ruleId: "nbme_answer_homogeneity",
      severity: "error",
      trips: PARTIALLY_CORRECTED_DRAFT,
      path: "/options",
      passes: FULLY_CORRECTED_DRAFT,
    },
    {
      ruleId: "ext_metadata_completeness",
      severity: "warning",
      trips: draftWith({}, { metadata: { course_id: "c1", slo_ids: ["s1"], bloom_level: "Apply" } }),
      path: "/metadata/difficulty",
      passes: draftWith(
        {},
        {
          metadata: { course: "Cardiology", objective: "Treat MI", bloom_level: "Apply", difficulty: "hard" },
        },
      ),
    },
    {
      ruleId: "mcq_answer_key_valid",
      severity: "error",
      trips: draftWith({ correct_answer: "F" }),
      path: "/correct_answer",
      passes: draftWith({ correct_answer: "E" }),
    },
    {
      ruleId: "mcq_duplicate_options",
      severity: "error",
      trips: draftWith({ options: withOption(3, "  prescribe BROAD-SPECTRUM   antibiotics.") }),
      path: "/options/3/text",
      passes: draftWith({ options: withOption(3, "Prescribe narrow-spectrum antibiotics") }),
    },
    {
      ruleId: "mcq_option_count",
      severity: "error",
      trips: draftWith({ options: CLEAN.options.slice(0, 2), correct_answer: "A" }),
      path: "/options",
      passes: draftWith({ options: CLEAN.options.slice(0, 3) }),
    },
    {
      ruleId: "mcq_no_all_none_of_above",
      severity: "error",
      trips: draftWith({ options: withOption(4, "None of the above") }),
      path: "/options/4/text",
      passes: draftWith({ options: withOption(4, "Initiate beta-blocker therapy") }),
    },
    {
      ruleId: "mcq_correct_not_longest",
      severity: "warning",
      trips: draftWith({
        options: withOption(
          2,
          "Prescribe broad-spectrum intravenous antibiotics and continue them for two weeks",
        ),
      }),
      path: "/options/2/text",
      passes: draftWith({ correct_answer: "B" }),
    },
    {
      ruleId: "mcq_stem_asks_question",
      severity: "error",
      trips: draftWith({ stem: "The most appropriate treatment for acute MI is:" }),
      path: "/stem",
      passes: draftWith({ stem: "Which of the following is the most appropriate treatment for acute MI" }),
    },
  ];

  describe.each(cases)("$ruleId", ({ ruleId, severity, trips, path, passes }) => {
    it("reports a draft that breaks it, with severity, path and a suggestion", () => {
      const found = byRule(check(trips), ruleId);
      expect(found.length).toBeGreaterThan(0);
      for (const v of found) {
        expect(v.severity).toBe(severity);
        expect(v.source).toBe("rule");
        expect(v.message.length).toBeGreaterThan(0);
        expect(v.suggestion?.length).toBeGreaterThan(10);
        expect(v.path).toMatch(/^\//);
      }
      expect(found.map((v) => v.path)).toContain(path);
    });

    it("passes a draft that keeps it", () => {
      expect(byRule(check(passes), ruleId)).toEqual([]);
    });
  });

  describe("nbme_negation_detection", () => {
    it.each([
      "Which of the following is not a treatment for MI?",
      "All of the following are treatments for MI EXCEPT",
      "Which of the following is least likely to cause chest pain?",
      "Which of the following statements about MI is false?",
      "Which drug should NOT be given?",
    ])("flags %j", (stem) => {
      expect(byRule(check(draftWith({ stem })), "nbme_negation_detection")).toHaveLength(1);
    });

    it.each([
      "Which of the following explains this false-positive troponin result?",
      "Which of the following is most appropriate for a patient with at least two risk factors?",
      "Which NOTCH pathway gene is most likely mutated in this patient?",
    ])("does not flag %j", (stem) => {
      expect(byRule(check(draftWith({ stem })), "nbme_negation_detection")).toEqual([]);
    });

    it("names the negation it found", () => {
      const [v] = byRule(check(DRAFT_WITH_ERRORS), "nbme_negation_detection");
      expect(v?.message).toContain("NOT");
    });
  });

  describe("nbme_absolute_terms", () => {
    it("reports each option with an absolute term at that option's text", () => {
      const options = CLEAN.options.map((o, i) =>
        i === 0
          ? { ...o, text: "Always administer aspirin" }
          : i === 3
            ? { ...o, text: "Completely avoid nitrates" }
            : o,
      );
      const found = byRule(check(draftWith({ options })), "nbme_absolute_terms");
      expect(found.map((v) => v.path)).toEqual(["/options/0/text", "/options/3/text"]);
      expect(found[0]?.message).toContain('"Always"');
      expect(found[0]?.suggestion).toContain('"Always"');
    });

    it("matches whole words only and leaves 'all of the above' to its own rule", () => {
      const options = withOption(4, "Install a pacemaker; tall stature; none of the above");
      expect(byRule(check(draftWith({ options })), "nbme_absolute_terms")).toEqual([]);
    });
  });

  describe("ext_rationale_completeness", () => {
    it("reports a missing rationale", () => {
      const { rationale: _dropped, ...content } = CLEAN;
      const [v] = byRule(check({ ...FULLY_CORRECTED_DRAFT, content }), "ext_rationale_completeness");
      expect(v?.message).toBe("Rationale is missing");
      expect(v?.suggestion).toContain("option C");
    });

    it("reports an empty or blank rationale", () => {
      const [v] = byRule(check(draftWith({ rationale: "   " })), "ext_rationale_completeness");
      expect(v?.message).toBe("Rationale is empty");
    });
  });

  describe("nbme_answer_homogeneity", () => {
    it("names the longest and shortest options when lengths differ too much", () => {
      const [v, ...rest] = byRule(check(PARTIALLY_CORRECTED_DRAFT), "nbme_answer_homogeneity");
      expect(rest).toEqual([]);
      expect(v?.message).toContain("option A has 6 words");
      expect(v?.suggestion).toContain("expand options C, D");
    });

    it("reports options that mix bare terms with full sentences", () => {
      const options = [
        { key: "A", text: "Start heparin right away." },
        { key: "B", text: "Give aspirin by mouth." },
        { key: "C", text: "Beta blockers" },
        { key: "D", text: "Nitroglycerin spray" },
      ];
      const found = byRule(check(draftWith({ options })), "nbme_answer_homogeneity");
      expect(found).toHaveLength(1);
      expect(found[0]?.message).toMatch(/mix forms: C, D are short terms, A, B are full sentences/);
    });

    it("treats an empty option as infinitely shorter", () => {
      const found = byRule(check(draftWith({ options: withOption(1, "") })), "nbme_answer_homogeneity");
      expect(found[0]?.message).toContain("ratio ∞");
    });
  });

  describe("ext_metadata_completeness", () => {
    it("reports every missing item when the draft has no metadata", () => {
      const { metadata: _dropped, ...draft } = FULLY_CORRECTED_DRAFT;
      const found = byRule(check(draft), "ext_metadata_completeness");
      expect(found.map((v) => v.path)).toEqual([
        "/metadata/course_id",
        "/metadata/slo_ids",
        "/metadata/difficulty",
        "/metadata/bloom_level",
      ]);
      expect(check(draft).passed).toBe(true);
    });

    it("does not count an empty objective list", () => {
      const metadata = { ...FULLY_CORRECTED_DRAFT.metadata, slo_ids: [] };
      const found = byRule(check(draftWith({}, { metadata })), "ext_metadata_completeness");
      expect(found.map((v) => v.path)).toEqual(["/metadata/slo_ids"]);
    });
  });

  describe("mcq_answer_key_valid", () => {
    it("reports a missing answer key", () => {
      const { correct_answer: _dropped, ...content } = CLEAN;
      const [v] = byRule(check({ ...FULLY_CORRECTED_DRAFT, content }), "mcq_answer_key_valid");
      expect(v?.message).toBe("correct_answer is missing");
    });

    it("points out an answer key that holds an option's text instead of its key", () => {
      const [v] = byRule(
        check(draftWith({ correct_answer: "Start IV nitroglycerin infusion" })),
        "mcq_answer_key_valid",
      );
      expect(v?.suggestion).toContain('set it to the key "D"');
    });
  });

  describe("mcq_duplicate_options", () => {
    it("reports a repeated key at the later option's key", () => {
      const options = CLEAN.options.map((o, i) => (i === 4 ? { ...o, key: "A" } : o));
      const found = byRule(check(draftWith({ options })), "mcq_duplicate_options");
      expect(found.map((v) => v.path)).toEqual(["/options/4/key"]);
    });
  });

  describe("mcq_option_count", () => {
    it("reports too many options", () => {
      const options = "ABCDEFGHI".split("").map((key) => ({ key, text: `Treatment ${key}` }));
      const [v] = byRule(check(draftWith({ options, correct_answer: "A" })), "mcq_option_count");
      expect(v?.message).toContain("more than the maximum of 8");
    });
  });

  describe("mcq_stem_asks_question", () => {
    it("accepts a vignette-style stem whose last sentence is the lead-in", () => {
      const stem = "A 54-year-old man has crushing chest pain. Which of the following is the best next step";
      expect(byRule(check(draftWith({ stem })), "mcq_stem_asks_question")).toEqual([]);
    });

    it("reports an empty stem", () => {
      const [v] = byRule(check(draftWith({ stem: "" })), "mcq_stem_asks_question");
      expect(v?.message).toBe("Stem is empty");
    });
  });

  describe("mcq_whitespace", () => {
    const untidy = draftWith({
      stem: "  Which of the following is the most appropriate treatment for acute MI?\n",
      options: CLEAN.options.map((o, i) => (i === 1 ? { key: " B ", text: `${o.text}  ` } : o)),
    });

    it("reports untrimmed fields as info when checked without its repair", () => {
      const rule = mcqPack.rules.find((r) => r.id === "mcq_whitespace");
      expect(rule?.severity).toBe("info");
      const findings = rule?.check({
        draft: untidy,
        content: untidy.content as McqContent,
        settings: mcqPack.settings,
      });
      expect(findings?.map((f) => f.path)).toEqual(["/stem", "/options/1/key", "/options/1/text"]);
      for (const f of findings ?? []) expect(f.suggestion).toMatch(/^Trim/);
    });

    it("trims and records every trim as a repair, without mutating the input", () => {
      const before = structuredClone(untidy);
      const { draft, report } = inspectWithPack(resolved, untidy);
      expect(untidy).toEqual(before);
      expect(report.repairs).toEqual([
        expect.objectContaining({ ruleId: "mcq_whitespace", action: "trim", path: "/stem" }),
        expect.objectContaining({ action: "trim", path: "/options/1/key", before: " B ", after: "B" }),
        expect.objectContaining({ action: "trim", path: "/options/1/text" }),
      ]);
      const content = draft.content as McqContent;
      expect(content.stem).toBe("Which of the following is the most appropriate treatment for acute MI?");
      expect(content.options[1]).toEqual({ key: "B", text: "Administer thrombolytics within 30 minutes" });
      expect(content.options[0]).toBe(CLEAN.options[0]);
      expect(report.violations).toEqual([]);
    });

    it("works on deep-frozen input and returns the same content when nothing needs trimming", () => {
      const rule = mcqPack.rules.find((r) => r.id === "mcq_whitespace");
      const ctx = { draft: FULLY_CORRECTED_DRAFT, content: CLEAN, settings: mcqPack.settings };
      const result = rule?.repair?.(ctx);
      expect(result?.content).toBe(CLEAN);
      expect(result?.repairs).toEqual([]);
    });
  });

  describe("content schema", () => {
    it("tolerates what rules report, unknown keys included: mcq_unknown_keys removes those, recorded", () => {
      const parsed = McqContentSchema.safeParse({ stem: "", options: [], rationale: null, explanation: "x" });
      expect(parsed.success).toBe(true);
      const { draft, report } = inspectWithPack(resolved, draftWith({ explanation: "x" }));
      expect(draft.content).not.toHaveProperty("explanation");
      expect(report.repairs).toEqual([
        expect.objectContaining({ ruleId: "mcq_unknown_keys", action: "remove", path: "/explanation" }),
      ]);
    });

    it("leaves shape errors to the schema, and no rule runs on them", async () => {
      const report = await validateDraft({
        ...FULLY_CORRECTED_DRAFT,
        content: { ...CLEAN, options: "A, B" },
      });
      expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([["content_shape", "/options"]]);
    });

    it("offers the model a JSON Schema the corrected seed answer satisfies and the first draft does not", () => {
      const schema = mcqPack.contentJsonSchema?.(FULLY_CORRECTED_DRAFT);
      const validate = new Ajv().compile(schema ?? {});
      expect(validate(CLEAN)).toBe(true);
      expect(validate(DRAFT_WITH_ERRORS.content)).toBe(false);
      expect(mcqPack.instructions).toMatch(/NOT, EXCEPT, LEAST/);
      expect(mcqPack.loop).toBeUndefined();
    });
  });
});

describe("seed 004", () => {
  it("DRAFT_WITH_ERRORS has exactly the seed's three errors", async () => {
    const report = await validateDraft(DRAFT_WITH_ERRORS);
    expect(errorIds(report).sort()).toEqual([...SEED004_EXPECTED_ERRORS.DRAFT_WITH_ERRORS].sort());
    expect(report.violations.find((v) => v.ruleId === "nbme_absolute_terms")?.path).toBe("/options/0/text");
    expect(report.passed).toBe(false);
  });

  it("PARTIALLY_CORRECTED_DRAFT has exactly one error, nbme_answer_homogeneity", async () => {
    const report = await validateDraft(PARTIALLY_CORRECTED_DRAFT);
    expect(errorIds(report)).toEqual(SEED004_EXPECTED_ERRORS.PARTIALLY_CORRECTED_DRAFT);
  });

  it("FULLY_CORRECTED_DRAFT has no error", async () => {
    const report = await validateDraft(FULLY_CORRECTED_DRAFT);
    expect(errorIds(report)).toEqual([]);
    expect(report.passed).toBe(true);
  });

  it("does not change the drafts it inspects", async () => {
    const { draft } = await inspectDraft(DRAFT_WITH_ERRORS);
    expect(draft).toEqual(DRAFT_WITH_ERRORS);
  });
});

describe("deployment overrides", () => {
  const registryWith = (mcq: NonNullable<DeploymentConfig["packs"]>[string]) =>
    new PackRegistry({ packs: { mcq } });

  it("disables a rule without code", async () => {
    const registry = registryWith({ disabledRules: ["nbme_answer_homogeneity"] });
    const report = await validateDraft(PARTIALLY_CORRECTED_DRAFT, { registry });
    expect(report.passed).toBe(true);
    expect(report.rulesApplied).not.toContain("nbme_answer_homogeneity");
  });

  it("re-grades a rule's severity", async () => {
    const registry = registryWith({ rules: { nbme_negation_detection: { severity: "warning" } } });
    const report = await validateDraft(DRAFT_WITH_ERRORS, { registry });
    expect(byRule(report, "nbme_negation_detection").map((v) => v.severity)).toEqual(["warning"]);
    expect(errorIds(report).sort()).toEqual(["ext_rationale_completeness", "nbme_absolute_terms"]);
  });

  it("changes thresholds and word lists through settings", async () => {
    const registry = registryWith({
      settings: { maxLengthRatio: 6, absoluteTerms: ["administer"], rationaleMinWords: 20 },
    });
    const partial = await validateDraft(PARTIALLY_CORRECTED_DRAFT, { registry });
    expect(byRule(partial, "nbme_answer_homogeneity")).toEqual([]);
    const full = await validateDraft(FULLY_CORRECTED_DRAFT, { registry });
    expect(byRule(full, "nbme_absolute_terms").map((v) => v.path)).toEqual([
      "/options/0/text",
      "/options/1/text",
    ]);
    expect(byRule(full, "ext_rationale_completeness")).toHaveLength(1);
    // The default registry, compiled from the default word lists, is unaffected.
    expect(errorIds(await validateDraft(FULLY_CORRECTED_DRAFT))).toEqual([]);
  });

  it("measures homogeneity in characters when asked", async () => {
    const settings: Partial<McqSettings> = { homogeneityUnit: "chars", maxLengthRatio: 3 };
    const report = await validateDraft(DRAFT_WITH_ERRORS, { registry: registryWith({ settings }) });
    expect(byRule(report, "nbme_answer_homogeneity")[0]?.message).toContain("25 chars");
  });

  it("rejects bad settings when the registry is built, not on the first draft", () => {
    expect(() => registryWith({ settings: { maxLengthRatoi: 6 } })).toThrow(InvalidPackError);
    expect(() => registryWith({ settings: { minOptions: 6, maxOptions: 4 } })).toThrow(/minOptions/);
    expect(() => registryWith({ settings: { negationPhrases: "not" } })).toThrow(InvalidPackError);
  });
});
