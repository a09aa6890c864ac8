import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { inspectWithPack, resolvePack } from "../../shared/engine.js";
import { ErrorNames, InvalidPackError } from "../../shared/errors.js";
import type { Pack } from "../../shared/pack.js";
import { loadPackFile, packFromDefinition } from "../../shared/packs/declarative.js";
import { builtinPacks } from "../../shared/packs/index.js";
import { JSON_RULE_IDS, OMIT_OPTIONAL_RULE } from "../../shared/packs/json/json.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

const EXAMPLE = fileURLToPath(new URL("../../examples/packs/abstract.pack.json", import.meta.url));

const goodAbstract = {
  title: "Daily walking and blood pressure in adults over 60",
  abstract:
    "In a cohort of 1,204 adults aged 60 to 85 followed for five years, walking at least 30 minutes a day " +
    "was associated with a 4 mmHg lower systolic blood pressure after adjustment for age, sex and medication.",
  keywords: ["walking", "hypertension", "ageing"],
  studyType: "cohort study",
  doi: "10.1234/bp.2024.017",
  publishedOn: "2024-03-14",
  sampleSize: 1204,
};

function draftOf(content: unknown, kind = "abstract"): Draft {
  return { id: "abs-1", kind, content };
}

function ruleIds(pack: Pack, content: unknown): string[] {
  return inspectWithPack(resolvePack(pack), draftOf(content, pack.kind)).report.violations.map(
    (v) => v.ruleId,
  );
}

/** A one-rule pack over `{ text, items }` content, to trip each rule type alone. */
function single(rule: Record<string, unknown>): Pack {
  return packFromDefinition({ kind: "probe", description: "one rule", rules: [{ id: "r", ...rule }] });
}

describe("the worked example: examples/packs/abstract.pack.json", () => {
  let pack: Pack;
  beforeAll(async () => {
    pack = await loadPackFile(EXAMPLE);
  });

  it("loads and registers beside the built-in packs", async () => {
    const registry = new PackRegistry({}, [...builtinPacks, pack]);
    expect(registry.kinds()).toEqual(expect.arrayContaining(["abstract", "json", "mcq"]));
    expect(registry.get("abstract").loop.maxAttempts).toBe(2);
    const report = await validateDraft(draftOf(goodAbstract), { registry });
    expect(report).toMatchObject({ passed: true, score: 1, violations: [], repairs: [] });
    expect(report.rulesApplied).toEqual([
      JSON_RULE_IDS.schema,
      "title_required",
      "no_hype",
      "abstract_length",
      "keyword_count",
      "study_type",
      "title_no_first_person",
    ]);
  });

  it("can also be added to an existing registry with register()", async () => {
    const registry = new PackRegistry().register(pack);
    expect(registry.has("abstract")).toBe(true);
    const report = await validateDraft(draftOf({ ...goodAbstract, studyType: "survey" }), { registry });
    expect(report.violations.map((v) => v.ruleId)).toEqual(["study_type"]);
  });

  it("reports a hyped, short, untitled abstract with a bad DOI, and repairs what needs no model", async () => {
    const registry = new PackRegistry({}, [...builtinPacks, pack]);
    const draft = draftOf({
      abstract: "A groundbreaking, truly REVOLUTIONARY result.",
      keywords: ["x"],
      studyType: "vibes",
      doi: "",
      notes: "internal",
    });
    const report = await validateDraft(draft, { registry });
    expect(report.repairs.map((r) => [r.ruleId, r.path])).toEqual([
      [JSON_RULE_IDS.repair, "/doi"],
      [JSON_RULE_IDS.repair, "/notes"],
    ]);
    expect(report.violations.map((v) => [v.ruleId, v.severity, v.path])).toEqual([
      ["schema:minLength", "error", "/keywords/0"],
      ["title_required", "error", "/title"],
      ["no_hype", "error", "/abstract"],
      ["no_hype", "error", "/abstract"],
      ["abstract_length", "error", "/abstract"],
      ["keyword_count", "warning", "/keywords"],
      ["study_type", "error", "/studyType"],
    ]);
    expect(report.violations[1]?.suggestion).toBe("Give the paper's title exactly as the source states it.");
    expect(report.violations.slice(2, 4).map((v) => v.message)).toEqual([
      '/abstract uses the forbidden word "groundbreaking"',
      '/abstract uses the forbidden word "revolutionary"',
    ]);
    expect(report.score).toBeGreaterThan(0);
    expect(report.score).toBeLessThan(1);
  });

  it("gives the model the schema and the pack's instructions with the omit rule", () => {
    expect(pack.contentJsonSchema?.(draftOf({}))).toMatchObject({ required: ["abstract", "studyType"] });
    expect(pack.instructions).toContain("do not guess a DOI");
    expect(pack.instructions?.toLowerCase()).toContain(OMIT_OPTIONAL_RULE);
  });
});

describe("declarative rule types", () => {
  it("required: trips on missing, null and blank values, passes on a value", () => {
    const pack = single({ type: "required", path: "/text" });
    expect(ruleIds(pack, {})).toEqual(["r"]);
    expect(ruleIds(pack, { text: null })).toEqual(["r"]);
    expect(ruleIds(pack, { text: "  " })).toEqual(["r"]);
    expect(ruleIds(pack, { text: "present" })).toEqual([]);
    const nested = inspectWithPack(
      resolvePack(single({ type: "required", path: "/a/b" })),
      draftOf({}, "probe"),
    );
    expect(nested.report.violations[0]).toMatchObject({
      path: "/a/b",
      message: "/a/b is missing; it is required",
    });
  });

  it("required with a wildcard checks every element", () => {
    const pack = single({ type: "required", path: "/authors/*/name" });
    const { report } = inspectWithPack(
      resolvePack(pack),
      draftOf({ authors: [{ name: "A" }, {}, { name: "" }] }, "probe"),
    );
    expect(report.violations.map((v) => v.path)).toEqual(["/authors/1/name", "/authors/2/name"]);
    expect(ruleIds(pack, {})).toEqual([]);
  });

  it("regex: mustMatch true requires a match, false forbids one; flags apply", () => {
    const must = single({ type: "regex", path: "/text", pattern: "^[A-Z]", mustMatch: true });
    expect(ruleIds(must, { text: "lower" })).toEqual(["r"]);
    expect(ruleIds(must, { text: "Upper" })).toEqual([]);
    const mustNot = single({ type: "regex", path: "/text", pattern: "todo", flags: "i", mustMatch: false });
    expect(ruleIds(mustNot, { text: "left a TODO here" })).toEqual(["r"]);
    expect(ruleIds(mustNot, { text: "done" })).toEqual([]);
    // Each string of an array is checked on its own.
    const { report } = inspectWithPack(resolvePack(must), draftOf({ text: ["Ok", "bad"] }, "probe"));
    expect(report.violations.map((v) => v.path)).toEqual(["/text/1"]);
  });

  it("forbidden_words: whole words, any case, phrases across whitespace", () => {
    const pack = single({ type: "forbidden_words", path: "/text", words: ["novel", "paradigm shift"] });
    expect(ruleIds(pack, { text: "A NOVEL method." })).toEqual(["r"]);
    expect(ruleIds(pack, { text: "a paradigm\n shift" })).toEqual(["r"]);
    expect(ruleIds(pack, { text: "novelty and novels, a paradigm" })).toEqual([]);
    expect(ruleIds(pack, { text: "novel and novel again, a paradigm shift" })).toEqual(["r", "r"]);
  });

  it("length: characters of a string (code points), items of an array", () => {
    const pack = single({ type: "length", path: "/text", min: 2, max: 4 });
    expect(ruleIds(pack, { text: "a" })).toEqual(["r"]);
    expect(ruleIds(pack, { text: "abcde" })).toEqual(["r"]);
    expect(ruleIds(pack, { text: "😀😀😀" })).toEqual([]);
    expect(ruleIds(pack, { text: ["a"] })).toEqual(["r"]);
    expect(ruleIds(pack, { text: ["a", "b", "c"] })).toEqual([]);
    const message = inspectWithPack(resolvePack(pack), draftOf({ text: "a" }, "probe")).report.violations[0]
      ?.message;
    expect(message).toBe("/text has 1 characters, fewer than the minimum of 2");
  });

  it("enum: the value must be one of the listed values", () => {
    const pack = single({ type: "enum", path: "/text", values: ["a", 1, null] });
    expect(ruleIds(pack, { text: "b" })).toEqual(["r"]);
    expect(ruleIds(pack, { text: "1" })).toEqual(["r"]);
    expect(ruleIds(pack, { text: 1 })).toEqual([]);
    expect(ruleIds(pack, { text: null })).toEqual([]);
  });

  it("a path that does not exist passes every rule type except required", () => {
    const rules = [
      { id: "a", type: "regex", path: "/nope", pattern: "x" },
      { id: "b", type: "forbidden_words", path: "/nope", words: ["x"] },
      { id: "c", type: "length", path: "/nope/deeper", min: 1 },
      { id: "d", type: "enum", path: "/nope", values: ["x"] },
      { id: "e", type: "required", path: "/nope" },
    ];
    const pack = packFromDefinition({ kind: "probe", description: "paths", rules });
    expect(ruleIds(pack, { text: "x" })).toEqual(["e"]);
  });

  it("uses a custom message with {path} and {value}, and the rule's severity", () => {
    const pack = single({
      type: "enum",
      path: "/text",
      values: ["a"],
      severity: "warning",
      message: "{path} is {value}",
    });
    const { report } = inspectWithPack(resolvePack(pack), draftOf({ text: "b" }, "probe"));
    expect(report.violations).toEqual([
      {
        ruleId: "r",
        severity: "warning",
        source: "rule",
        path: "/text",
        message: '/text is "b"',
        suggestion: 'Use one of "a".',
      },
    ]);
    expect(report.passed).toBe(true);
  });

  it("keeps a field a required rule names even where the schema calls it optional", () => {
    const pack = packFromDefinition({
      kind: "probe",
      description: "keep",
      schema: {
        type: "object",
        properties: { title: { type: "string", pattern: "^\\S" }, sub: { type: "string", pattern: "^\\S" } },
      },
      rules: [{ id: "title", type: "required", path: "/title" }],
    });
    const { report, draft } = inspectWithPack(resolvePack(pack), draftOf({ title: " ", sub: "" }, "probe"));
    expect(report.repairs.map((r) => r.path)).toEqual(["/sub"]);
    expect(draft.content).toEqual({ title: " " });
    expect(report.violations.map((v) => v.ruleId)).toEqual(["schema:pattern", "title"]);
    const noRepair = resolvePack(pack, { settings: { repair: "off" } });
    expect(inspectWithPack(noRepair, draftOf({ sub: "" }, "probe")).report.repairs).toEqual([]);
  });
});

describe("bad pack files", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "redraft-packs-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function loadText(name: string, text: string): Promise<unknown> {
    const path = join(dir, name);
    await writeFile(path, text);
    return loadPackFile(path).then(
      () => undefined,
      (error: unknown) => error,
    );
  }

  it("names a missing file", async () => {
    const path = join(dir, "absent.pack.json");
    const error = await loadPackFile(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidPackError);
    expect(error).toMatchObject({ name: ErrorNames.InvalidPack, code: "invalid_pack" });
    expect((error as Error).message).toBe(`pack file ${path} cannot be read: does not exist`);
  });

  it("names a file that is not JSON", async () => {
    const error = await loadText("broken.pack.json", "{ kind: abstract");
    expect(error).toBeInstanceOf(InvalidPackError);
    expect((error as Error).message).toMatch(/^pack file .*broken\.pack\.json is not valid JSON: /);
  });

  const base = { kind: "probe", description: "d" };
  const cases: [string, unknown, RegExp][] = [
    ["no description", { kind: "probe" }, /: description: /],
    ["a bad kind", { ...base, kind: "Bad Kind" }, /kind: must be a lower-case name/],
    ["an unknown top-level field", { ...base, rulez: [] }, /Unrecognized key: "rulez"/],
    [
      "an unknown rule type",
      { ...base, rules: [{ id: "r", type: "spell", path: "/a" }] },
      /rules\[0\]\.type/,
    ],
    [
      "a regex without pattern",
      { ...base, rules: [{ id: "r", type: "regex", path: "/a" }] },
      /rules\[0\]\.pattern/,
    ],
    [
      "an invalid regex",
      { ...base, rules: [{ id: "r", type: "regex", path: "/a", pattern: "(" }] },
      /rules\[0\]\.pattern is not a valid regular expression/,
    ],
    [
      "a stateful regex flag",
      { ...base, rules: [{ id: "r", type: "regex", path: "/a", pattern: "a", flags: "g" }] },
      /rules\[0\]\.flags: may hold only/,
    ],
    [
      "a path that is no pointer",
      { ...base, rules: [{ id: "r", type: "required", path: "title" }] },
      /rules\[0\]\.path: must be a JSON pointer/,
    ],
    [
      "a length without bounds",
      { ...base, rules: [{ id: "r", type: "length", path: "/a" }] },
      /rules\[0\]\.min: needs min, max or both/,
    ],
    [
      "a length with min above max",
      { ...base, rules: [{ id: "r", type: "length", path: "/a", min: 5, max: 2 }] },
      /rules\[0\]\.min: must not be greater than max/,
    ],
    [
      "empty forbidden words",
      { ...base, rules: [{ id: "r", type: "forbidden_words", path: "/a", words: [] }] },
      /rules\[0\]\.words/,
    ],
    [
      "a duplicate rule id",
      {
        ...base,
        rules: [
          { id: "r", type: "required", path: "/a" },
          { id: "r", type: "required", path: "/b" },
        ],
      },
      /rules\[1\]\.id "r" is used twice/,
    ],
    ["an invalid schema", { ...base, schema: { type: "strnig" } }, /: schema: the JSON Schema is invalid/],
    ["bad loop settings", { ...base, loop: { maxAttempts: 99 } }, /loop\.maxAttempts/],
  ];
  for (const [what, definition, message] of cases) {
    it(`rejects ${what}, naming the field`, async () => {
      const error = await loadText("bad.pack.json", JSON.stringify(definition));
      expect(error).toBeInstanceOf(InvalidPackError);
      expect((error as Error).message).toMatch(/^pack file .*bad\.pack\.json: /);
      expect((error as Error).message).toMatch(message);
    });
  }

  it("packFromDefinition rejects a definition that is not an object", () => {
    expect(() => packFromDefinition([])).toThrow(InvalidPackError);
    expect(() => packFromDefinition(null)).toThrow(/pack definition: /);
  });
});
