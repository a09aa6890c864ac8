import { describe, expect, it } from "vitest";
import type { Draft, Violation } from "../../shared/draft.js";
import { type Inspection, inspectWithPack, resolvePack } from "../../shared/engine.js";
import {
  clearJsonSchemaCache,
  compileJsonSchema,
  dialectOf,
  JSON_RULE_IDS,
  jsonPack,
  jsonSchemaCacheStats,
  OMIT_OPTIONAL_RULE,
} from "../../shared/packs/json/json.js";

const withRepair = resolvePack(jsonPack);
const withoutRepair = resolvePack(jsonPack, { settings: { repair: "off" } });
const aggressiveRepair = resolvePack(jsonPack, { settings: { repair: "aggressive" } });

function draftOf(content: unknown, schema: unknown): Draft {
  return { id: "rec-1", kind: "json", content, context: { schema } };
}

function inspect(content: unknown, schema: unknown, repair = true): Inspection {
  return inspectWithPack(repair ? withRepair : withoutRepair, draftOf(content, schema));
}

function inspectAggressive(content: unknown, schema: unknown): Inspection {
  return inspectWithPack(aggressiveRepair, draftOf(content, schema));
}

function only(violations: readonly Violation[], ruleId: string): Violation[] {
  return violations.filter((v) => v.ruleId === ruleId);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** A paper record, the kind of extraction seed 001 is about. */
const paperSchema = {
  type: "object",
  required: ["title", "authors"],
  additionalProperties: false,
  properties: {
    title: { type: "string", minLength: 1 },
    doi: { type: "string", pattern: "^10\\.\\d{4,9}/\\S+$" },
    year: { type: "integer", minimum: 1900, maximum: 2100 },
    studyType: { enum: ["trial", "cohort", "review"] },
    contact: { type: "string", format: "email" },
    authors: { type: "array", minItems: 1, items: { $ref: "#/$defs/author" } },
  },
  $defs: {
    author: {
      type: "object",
      required: ["name"],
      additionalProperties: false,
      properties: {
        name: { type: "string", pattern: "^\\S" },
        orcid: { type: "string", pattern: "^\\d{4}-\\d{4}-\\d{4}-\\d{3}[\\dX]$" },
      },
    },
  },
};

describe("json pack: violations", () => {
  it("passes a conforming record with score 1 and no repairs", () => {
    const content = {
      title: "T",
      doi: "10.1000/xyz",
      authors: [{ name: "Ada", orcid: "0000-0002-1825-0097" }],
    };
    const { report, draft } = inspect(content, paperSchema);
    expect(report).toMatchObject({ passed: true, score: 1, violations: [], repairs: [] });
    expect(report.rulesApplied).toEqual([JSON_RULE_IDS.schema]);
    expect(draft.content).toBe(content); // nothing repaired: nothing copied
  });

  it("reports a missing required property at the pointer of the missing property", () => {
    const { report } = inspect({ authors: [{}] }, paperSchema);
    expect(only(report.violations, "schema:required")).toEqual([
      expect.objectContaining({ path: "/title", severity: "error", source: "schema" }),
      expect.objectContaining({
        path: "/authors/0/name",
        message: 'required property "name" is missing in /authors/0',
      }),
    ]);
    expect(report.violations[0]?.suggestion).toMatch(/Add "title"/);
  });

  it("reports a forbidden property at its own pointer when repair is off", () => {
    const { report } = inspect(
      { title: "T", authors: [{ name: "A", affiliation: "X" }], notes: "n" },
      paperSchema,
      false,
    );
    const extra = only(report.violations, "schema:additionalProperties");
    expect(extra.map((v) => v.path)).toEqual(["/notes", "/authors/0/affiliation"]);
    expect(extra[0]?.suggestion).toContain("allowed here: title, doi, year");
  });

  it("reports value keywords with readable messages", () => {
    const schema = {
      type: "object",
      required: ["code", "level", "ratio", "tag", "kind", "count"],
      properties: {
        code: { type: "string", pattern: "^[A-Z]{3}$" },
        level: { enum: ["low", "high"] },
        ratio: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
        tag: { type: "string", minLength: 2, maxLength: 4 },
        kind: { const: "paper" },
        count: { type: "integer" },
      },
    };
    const { report } = inspect(
      { code: "ab", level: "mid", ratio: 1, tag: "toolong", kind: "blog", count: 1.5 },
      schema,
    );
    const byRule = Object.fromEntries(report.violations.map((v) => [v.ruleId, v]));
    expect(Object.keys(byRule).sort()).toEqual([
      "schema:const",
      "schema:enum",
      "schema:exclusiveMaximum",
      "schema:maxLength",
      "schema:pattern",
      "schema:type",
    ]);
    expect(byRule["schema:pattern"]?.message).toBe("/code does not match the pattern ^[A-Z]{3}$");
    expect(byRule["schema:enum"]?.message).toBe('/level is not one of "low", "high"');
    expect(byRule["schema:const"]?.message).toBe('/kind must be "paper"');
    expect(byRule["schema:type"]?.message).toBe("/count must be integer (got number)");
    // Required fields cannot be omitted, and the suggestion says so.
    expect(byRule["schema:pattern"]?.suggestion).toBe(
      "Give a value that matches ^[A-Z]{3}$; the field is required, so it cannot be omitted.",
    );
  });

  it("tells the model to omit an optional pattern field rather than emit an empty string", () => {
    const { report } = inspect({ title: "T", doi: "", authors: [{ name: "A" }] }, paperSchema, false);
    const [pattern] = only(report.violations, "schema:pattern");
    expect(pattern?.path).toBe("/doi");
    expect(pattern?.suggestion).toContain(
      "Omit the field if you have no valid value; never emit an empty string",
    );
  });

  it("reports minimum, maximum and dependentRequired", () => {
    const schema = {
      type: "object",
      properties: {
        low: { minimum: 5 },
        high: { maximum: 5 },
        card: { type: "string" },
        cvv: { type: "string" },
      },
      dependentRequired: { card: ["cvv"] },
    };
    const { report } = inspect({ low: 1, high: 9, card: "4111" }, schema, false);
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:minimum", "/low"],
      ["schema:maximum", "/high"],
      ["schema:dependentRequired", "/cvv"],
    ]);
  });

  it("checks formats: email, date-time and uri", () => {
    const schema = {
      type: "object",
      required: ["email", "at", "url"],
      properties: {
        email: { type: "string", format: "email" },
        at: { type: "string", format: "date-time" },
        url: { type: "string", format: "uri" },
      },
    };
    const good = inspect(
      { email: "ada@example.org", at: "2024-05-01T12:30:00Z", url: "https://example.org/a" },
      schema,
    );
    expect(good.report.passed).toBe(true);
    const bad = inspect({ email: "ada-at-example", at: "yesterday", url: "not a uri" }, schema);
    expect(bad.report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:format", "/email"],
      ["schema:format", "/at"],
      ["schema:format", "/url"],
    ]);
    expect(bad.report.violations[1]?.message).toBe("/at is not a valid date-time");
  });

  it("reports a missing schema as a violation", () => {
    const { report } = inspect({ a: 1 }, undefined);
    expect(report.passed).toBe(false);
    expect(report.violations).toEqual([
      expect.objectContaining({
        ruleId: JSON_RULE_IDS.missing,
        severity: "error",
        source: "schema",
        message: expect.stringMatching(/context\.schema is missing/),
      }),
    ]);
    const noContext = inspectWithPack(withRepair, { id: "x", kind: "json", content: {} });
    expect(noContext.report.violations[0]?.ruleId).toBe(JSON_RULE_IDS.missing);
  });

  it("rejects an unusable schema with InvalidSchemaError, never a crash or a violation", () => {
    const cases: [unknown, RegExp][] = [
      ["{}", /must be an object or a boolean, got string/],
      [{ type: "strnig" }, /schema\/type must be equal to one of the allowed values/],
      [{ $ref: "#/$defs/nowhere" }, /can't resolve reference/],
      [{ type: "string", pattern: "(" }, /Invalid regular expression/],
      [{ $schema: "http://json-schema.org/draft-03/schema#" }, /unsupported \$schema/],
      [{ $schema: "http://json-schema.org/draft-04/schema#", type: "strnig" }, /schema\/type must be/],
    ];
    for (const [schema, message] of cases) {
      for (const repair of [true, false]) {
        expect(() => inspect({ a: 1 }, schema, repair)).toThrow(
          expect.objectContaining({
            name: "InvalidSchemaError",
            code: "invalid_schema",
            message: expect.stringMatching(message),
          }),
        );
      }
    }
  });
});

describe("json pack: dialects", () => {
  it("picks 2020-12 when $schema is absent or says so, draft-07 when it says draft-07", () => {
    expect(dialectOf({})).toBe("2020-12");
    expect(dialectOf({ $schema: "https://json-schema.org/draft/2020-12/schema" })).toBe("2020-12");
    expect(dialectOf({ $schema: "http://json-schema.org/draft-07/schema#" })).toBe("draft-07");
    expect(dialectOf({ $schema: "http://json-schema.org/draft-04/schema#" })).toBe("draft-04");
    expect(dialectOf({ $schema: "http://json-schema.org/draft-06/schema" })).toBe("draft-06");
    expect(dialectOf({ $schema: "http://json-schema.org/draft-03/schema#" })).toBeUndefined();
  });

  it("checks a draft-07 schema: definitions, tuple items, additionalItems", () => {
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        point: { type: "array", items: [{ type: "number" }, { type: "number" }], additionalItems: false },
        owner: { $ref: "#/definitions/person" },
      },
      definitions: {
        person: { type: "object", required: ["name"], properties: { name: { type: "string" } } },
      },
    };
    expect(inspect({ point: [1, 2], owner: { name: "Ada" } }, schema).report.passed).toBe(true);
    const { report } = inspect({ point: [1, "2", 3], owner: {} }, schema);
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:additionalItems", "/point"],
      ["schema:type", "/point/1"],
      ["schema:required", "/owner/name"],
    ]);
  });

  it("checks a 2020-12 schema: prefixItems, $defs, and rejects the draft-07 tuple form", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: {
        point: { type: "array", prefixItems: [{ type: "number" }, { type: "number" }], items: false },
        owner: { $ref: "#/$defs/person" },
      },
      $defs: { person: { type: "object", required: ["name"] } },
    };
    expect(inspect({ point: [1, 2], owner: { name: "Ada" } }, schema).report.passed).toBe(true);
    expect(inspect({ point: [1, 2, 3], owner: {} }, schema).report.violations.map((v) => v.ruleId)).toEqual([
      "schema:items",
      "schema:required",
    ]);
    const tupleIn2020 = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      items: [{ type: "number" }],
    };
    expect(() => inspect([1], tupleIn2020)).toThrow(/schema\/items must be object,boolean/);
  });
});

describe("json pack: compiled-schema cache", () => {
  it("compiles a schema once, whether it comes back as the same object, re-parsed JSON or reordered keys", () => {
    clearJsonSchemaCache();
    const schema = {
      type: "object",
      properties: { cacheProbe: { type: "string" } },
      required: ["cacheProbe"],
    };
    const start = jsonSchemaCacheStats().compilations;
    for (let i = 0; i < 20; i++) inspect({ cacheProbe: "x" }, schema);
    for (let i = 0; i < 20; i++) inspect({ cacheProbe: "x" }, JSON.parse(JSON.stringify(schema)));
    inspect(
      { cacheProbe: 1 },
      { required: ["cacheProbe"], properties: { cacheProbe: { type: "string" } }, type: "object" },
    );
    expect(jsonSchemaCacheStats().compilations - start).toBe(1);
    inspect({}, { type: "object", properties: { cacheProbe: { type: "number" } } });
    expect(jsonSchemaCacheStats().compilations - start).toBe(2);
  });

  it("caches invalid schemas too, and keeps at most 500 schemas", () => {
    clearJsonSchemaCache();
    const start = jsonSchemaCacheStats().compilations;
    for (let i = 0; i < 3; i++) expect(compileJsonSchema({ type: "nope" }).ok).toBe(false);
    expect(jsonSchemaCacheStats().compilations - start).toBe(1);
    for (let i = 0; i < 520; i++)
      compileJsonSchema({ type: "object", properties: { [`p${i}`]: { type: "string" } } });
    expect(jsonSchemaCacheStats().cached).toBe(500);
  });
});

describe("json pack: deterministic repair", () => {
  it("removes an empty string from an optional pattern field and records it", () => {
    const { report, draft } = inspect({ title: "T", doi: "", authors: [{ name: "A" }] }, paperSchema);
    expect(report.passed).toBe(true);
    expect(report.repairs).toEqual([
      {
        ruleId: JSON_RULE_IDS.repair,
        action: "remove",
        path: "/doi",
        before: "",
        message: 'removed optional field /doi: "" does not match the pattern ^10\\.\\d{4,9}/\\S+$',
      },
    ]);
    expect(draft.content).toEqual({ title: "T", authors: [{ name: "A" }] });
  });

  it("aggressive: removes optional fields breaking pattern, format, enum, minimum or type, never required ones", () => {
    const content = deepFreeze({
      title: "",
      doi: "n/a",
      year: 1850,
      studyType: "blog",
      contact: "nobody",
      authors: [
        { name: " x", orcid: "" },
        { name: "B", orcid: 1234 },
      ],
    });
    const { report, draft } = inspectAggressive(content, paperSchema);
    expect(report.repairs.map((r) => r.path)).toEqual([
      "/doi",
      "/year",
      "/studyType",
      "/contact",
      "/authors/0/orcid",
      "/authors/1/orcid",
    ]);
    expect(draft.content).toEqual({ title: "", authors: [{ name: " x" }, { name: "B" }] });
    // The required fields stayed and are reported.
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:minLength", "/title"],
      ["schema:pattern", "/authors/0/name"],
    ]);
  });

  it("removes properties the schema forbids, at any depth, keeping allowed pattern properties", () => {
    const schema = {
      type: "object",
      additionalProperties: false,
      properties: {
        meta: {
          type: "object",
          additionalProperties: false,
          patternProperties: { "^x-": { type: "string" } },
          properties: { source: { type: "string" } },
        },
      },
    };
    const content = { meta: { source: "s", "x-note": "kept", stray: 1 }, junk: { deep: true } };
    const { report, draft } = inspect(content, schema);
    expect(report.passed).toBe(true);
    expect(draft.content).toEqual({ meta: { source: "s", "x-note": "kept" } });
    expect(report.repairs.map((r) => [r.path, r.before])).toEqual([
      ["/meta/stray", 1],
      ["/junk", { deep: true }],
    ]);
    expect(report.repairs[0]?.message).toBe(
      'removed /meta/stray: the schema allows no property "stray" in /meta',
    );
  });

  it("aggressive: repairs deep inside nested objects, arrays of objects, $ref, draft-07 definitions and allOf", () => {
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        study: {
          type: "object",
          properties: {
            arms: {
              type: "array",
              items: {
                allOf: [
                  { $ref: "#/definitions/arm" },
                  { properties: { dose: { type: "number", exclusiveMinimum: 0 } } },
                ],
              },
            },
          },
        },
      },
      definitions: {
        arm: {
          type: "object",
          required: ["label"],
          properties: {
            label: { type: "string", minLength: 1 },
            duration: { type: "string", pattern: "^P" },
          },
        },
      },
    };
    const content = {
      study: {
        arms: [
          { label: "A", duration: "", dose: 0 },
          { label: "", duration: "P3D", dose: 5 },
        ],
      },
    };
    const { report, draft } = inspectAggressive(content, schema);
    expect(report.repairs.map((r) => r.path)).toEqual(["/study/arms/0/duration", "/study/arms/0/dose"]);
    // Lossless (the default) removes the empty duration only: the zero dose is a value, for the model.
    const kept = inspect(content, schema);
    expect(kept.report.repairs.map((r) => r.path)).toEqual(["/study/arms/0/duration"]);
    expect(kept.report.violations.map((v) => v.path)).toEqual(["/study/arms/0/dose", "/study/arms/1/label"]);
    expect(draft.content).toEqual({
      study: { arms: [{ label: "A" }, { label: "", duration: "P3D", dose: 5 }] },
    });
    expect(report.violations.map((v) => v.path)).toEqual(["/study/arms/1/label"]);
  });

  it("aggressive: removes an optional object of the wrong type, but repairs inside a right-typed one", () => {
    const schema = {
      type: "object",
      properties: {
        funding: { type: "object", properties: { grant: { type: "string", pattern: "^[A-Z]" } } },
        venue: { type: "object", properties: { name: { type: "string" } } },
      },
    };
    const { draft, report } = inspectAggressive({ funding: { grant: "" }, venue: "" }, schema);
    expect(draft.content).toEqual({ funding: {} });
    expect(report.repairs.map((r) => r.path)).toEqual(["/funding/grant", "/venue"]);
  });

  it("leaves fields alone that a condition, alternative or minProperties depends on", () => {
    const schema = {
      type: "object",
      properties: { a: { type: "string", pattern: "^a" }, b: { type: "string", pattern: "^b" } },
      anyOf: [{ required: ["a"] }, { required: ["b"] }],
    };
    const anyOf = inspect({ a: "" }, schema);
    expect(anyOf.report.repairs).toEqual([]);
    const minProps = {
      type: "object",
      minProperties: 1,
      properties: { c: { type: "string", pattern: "^c" } },
    };
    expect(inspect({ c: "" }, minProps).report.repairs).toEqual([]);
  });

  it("is pure: the input is never mutated, and a repaired copy shares untouched branches", () => {
    const content = deepFreeze({ title: "T", doi: "", authors: [{ name: "A" }] });
    const { draft } = inspect(content, paperSchema);
    expect(content.doi).toBe("");
    expect((draft.content as typeof content).authors).toBe(content.authors);
  });

  it("does nothing when repair is turned off in the settings", () => {
    const { report, draft } = inspect({ title: "T", doi: "", authors: [{ name: "A" }] }, paperSchema, false);
    expect(report.repairs).toEqual([]);
    expect(draft.content).toEqual({ title: "T", doi: "", authors: [{ name: "A" }] });
  });
});

describe("json pack: proportional score", () => {
  /** 10 groups of 19 fields plus the 10 group properties: 200 fields. */
  function wideSchema() {
    const properties: Record<string, unknown> = {};
    const content: Record<string, Record<string, unknown>> = {};
    for (let g = 0; g < 10; g++) {
      const fields: Record<string, unknown> = {};
      const values: Record<string, unknown> = {};
      for (let f = 0; f < 19; f++) {
        fields[`f${f}`] = { type: "string", pattern: "^[a-z]+$" };
        values[`f${f}`] = "ok";
      }
      properties[`g${g}`] = { type: "object", properties: fields, required: Object.keys(fields) };
      content[`g${g}`] = values;
    }
    return { schema: { type: "object", properties, required: Object.keys(properties) }, content };
  }

  it("scores 3 errors over 200 fields near 0.985, not 0", () => {
    const { schema, content } = wideSchema();
    const lookup = compileJsonSchema(schema);
    expect(lookup.ok && lookup.schema.units(content)).toBe(200);
    const broken = structuredClone(content);
    for (const g of ["g1", "g4", "g7"]) (broken[g] as Record<string, unknown>).f3 = "UPPER";
    const { report } = inspect(broken, schema);
    expect(report.counts.error).toBe(3);
    expect(report.score).toBeGreaterThanOrEqual(0.98);
    expect(report.score).toBeLessThanOrEqual(0.99);
    expect(report.score).toBeCloseTo(0.985, 6);
  });

  it("counts the item fields of an array of objects once per element, at least once", () => {
    const schema = {
      type: "object",
      properties: {
        title: { type: "string" },
        authors: { type: "array", items: { type: "object", properties: { name: {}, orcid: {}, email: {} } } },
      },
    };
    const lookup = compileJsonSchema(schema);
    if (!lookup.ok) throw new Error(lookup.problem.message);
    expect(lookup.schema.units({})).toBe(2 + 3);
    expect(lookup.schema.units({ authors: [] })).toBe(2 + 3);
    expect(lookup.schema.units({ authors: [{}, {}, {}, {}] })).toBe(2 + 4 * 3);
    // Where the schema leaves the shape open, the instance's own values count.
    expect(lookup.schema.units({ title: "t", extra: { a: 1, b: [1, 2] } })).toBe(2 + 3 + 1 + 4);
  });
});

describe("json pack: prompt support", () => {
  it("hands the model the exact schema and the omit-never-empty rule", () => {
    const draft = draftOf({}, paperSchema);
    expect(jsonPack.contentJsonSchema?.(draft)).toBe(paperSchema);
    expect(jsonPack.contentJsonSchema?.(draftOf({}, undefined))).toBeUndefined();
    expect(() => jsonPack.contentJsonSchema?.(draftOf({}, "nope"))).toThrow(/must be an object/);
    expect(jsonPack.instructions).toContain(OMIT_OPTIONAL_RULE);
    expect(OMIT_OPTIONAL_RULE).toBe(
      "omit an optional field you have no valid value for; never emit an empty string",
    );
  });
});
