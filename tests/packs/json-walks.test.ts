/**
 * The json pack's walks (repair, score units, messages) against the constructs issue 17 names: they
 * follow the specification where it can be followed statically and step aside, saying so, where not.
 * The first three blocks are the concrete failures.
 */
import { describe, expect, it } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { InvalidSchemaError } from "../../shared/errors.js";
import { compileJsonSchema, JSON_RULE_IDS } from "../../shared/packs/json/json.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

const D2020 = "https://json-schema.org/draft/2020-12/schema";
const D2019 = "https://json-schema.org/draft/2019-09/schema";
const noRepair = new PackRegistry({ packs: { json: { settings: { repair: "off" } } } });

function draftOf(schema: unknown, content: unknown): Draft {
  return { id: "walk-1", kind: "json", content, context: { schema } } as Draft;
}

function compiled(schema: unknown) {
  const lookup = compileJsonSchema(schema);
  if (!lookup.ok) throw new Error(lookup.problem.message);
  return lookup.schema;
}

/** A tree whose children refer back to the root by $dynamicRef, closed by unevaluatedProperties. */
const dynamicTree = {
  $schema: D2020,
  $id: "https://example.com/tree",
  $dynamicAnchor: "node",
  type: "object",
  properties: {
    data: true,
    children: { type: "array", items: { $dynamicRef: "#node" } },
    note: { type: "string", pattern: "^[a-z]+$" },
  },
  unevaluatedProperties: false,
};

describe("unevaluatedProperties with $dynamicRef (issue 17: stack overflow)", () => {
  it("answers a schema Ajv's own validator cannot evaluate with InvalidSchemaError, never a RangeError", async () => {
    // The conformance suite's schema: Ajv compiles it, and its validator then calls itself without end.
    const schema = {
      $schema: D2020,
      $id: "https://example.com/unevaluated-properties-with-dynamic-ref/derived",
      $ref: "./baseSchema",
      $defs: {
        derived: { $dynamicAnchor: "addons", properties: { bar: { type: "string" } } },
        baseSchema: {
          $id: "./baseSchema",
          unevaluatedProperties: false,
          properties: { foo: { type: "string" } },
          $dynamicRef: "#addons",
          $defs: { defaultAddons: { $dynamicAnchor: "addons" } },
        },
      },
    };
    for (const registry of [noRepair, new PackRegistry()]) {
      const outcome = validateDraft(draftOf(schema, { foo: "foo", bar: "bar" }), { registry });
      await expect(outcome).rejects.toBeInstanceOf(InvalidSchemaError);
      await expect(outcome).rejects.toThrow(/cannot be evaluated/);
    }
  });

  it("follows a $dynamicRef with one possible anchor: repairs at every depth, counts a bounded number of units", async () => {
    const content = {
      data: 1,
      stray: true,
      children: [{ data: 2, children: [{ data: 3, children: [], extra: "x", note: "" }] }],
    };
    const report = await validateDraft(draftOf(dynamicTree, content));
    expect(report.repairs.map((r) => r.path).sort()).toEqual([
      "/children/0/children/0/extra",
      "/children/0/children/0/note",
      "/stray",
    ]);
    expect(report.passed).toBe(true);
    // An absent recursive branch is counted once, not followed for ever.
    expect(compiled(dynamicTree).units({})).toBeLessThan(20);
  });

  it("follows $recursiveRef (2019-09) the same way", async () => {
    const schema = {
      $schema: D2019,
      $id: "https://example.com/rtree",
      $recursiveAnchor: true,
      type: "object",
      properties: { data: true, children: { type: "array", items: { $recursiveRef: "#" } } },
      unevaluatedProperties: false,
    };
    const report = await validateDraft(draftOf(schema, { children: [{ children: [{ x: 1 }] }] }));
    expect(report.repairs.map((r) => r.path)).toEqual(["/children/0/children/0/x"]);
    expect(report.passed).toBe(true);
  });

  it("steps aside where two $dynamicAnchors could be the target, and says so", async () => {
    const schema = {
      $schema: D2020,
      $id: "https://example.com/list",
      type: "object",
      properties: { items: { $dynamicRef: "#item" } },
      $defs: {
        a: { $id: "a", $dynamicAnchor: "item", type: "object", properties: { n: { type: "integer" } } },
        b: { $id: "b", $dynamicAnchor: "item", type: "object" },
        default: { $dynamicAnchor: "item", type: "object", properties: { n: { type: "integer" } } },
      },
    };
    // Every candidate wants an object: Ajv rejects the string whichever it picks, but the walk cannot
    // tell which one applies, so it does not remove the optional field.
    const report = await validateDraft(draftOf(schema, { items: "x" }));
    expect(report.repairs).toEqual([]);
    expect(report.violations[0]).toMatchObject({ ruleId: "schema:type", path: "/items" });
    const note = report.violations.find((v) => v.ruleId === JSON_RULE_IDS.repairSkipped);
    expect(note).toMatchObject({ severity: "info", path: "/items" });
    expect(note?.message).toMatch(/\$dynamicRef "#item"/);
  });
});

describe("unevaluatedProperties with if/then/else (issue 17: a property the `if` evaluated called not allowed)", () => {
  const schema = {
    $schema: D2020,
    type: "object",
    if: { properties: { foo: { const: "then" } }, required: ["foo"] },
    // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword, not a thenable
    then: { properties: { bar: { type: "string" } }, required: ["bar"] },
    else: { properties: { baz: { type: "string" } }, required: ["baz"] },
    unevaluatedProperties: false,
  };

  it("accepts what the if and the branch taken evaluated, with or without repair", async () => {
    for (const registry of [noRepair, new PackRegistry()]) {
      const then = await validateDraft(draftOf(schema, { foo: "then", bar: "bar" }), { registry });
      expect(then.violations).toEqual([]);
      const otherwise = await validateDraft(draftOf(schema, { baz: "baz" }), { registry });
      expect(otherwise.violations).toEqual([]);
      // A failing `if` evaluates nothing: its foo is then unevaluated, as the specification says.
      const failed = await validateDraft(draftOf(schema, { foo: "else", baz: "baz" }), { registry });
      expect(failed.violations[0]).toMatchObject({ ruleId: "schema:unevaluatedProperties", path: "/foo" });
    }
  });

  it("reports what neither evaluated, and repair steps aside there and says why", async () => {
    const report = await validateDraft(draftOf(schema, { foo: "then", bar: "bar", baz: "baz" }));
    expect(report.repairs).toEqual([]);
    expect(report.violations.map((v) => [v.ruleId, v.path, v.severity])).toEqual([
      ["schema:unevaluatedProperties", "/baz", "error"],
      [JSON_RULE_IDS.repairSkipped, "/baz", "info"],
    ]);
    expect(report.violations[1]?.message).toMatch(/unevaluatedProperties depends on/);
  });
});

describe("inherited member names (issue 17: constructor, toString, __proto__)", () => {
  const required = {
    type: "object",
    required: ["constructor", "toString", "__proto__"],
    properties: { constructor: { type: "number" }, note: { type: "string", pattern: "^[a-z]+$" } },
  };

  it("reports each required one missing, and never types a member the instance does not have", async () => {
    const report = await validateDraft(draftOf(required, {}), { registry: noRepair });
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:required", "/constructor"],
      ["schema:required", "/toString"],
      ["schema:required", "/__proto__"],
    ]);
    const typed = { type: "object", properties: { constructor: { type: "number" } } };
    expect((await validateDraft(draftOf(typed, {}), { registry: noRepair })).violations).toEqual([]);
  });

  it("keeps them through repair when the instance has them as own properties", async () => {
    const content = JSON.parse('{"constructor": "not a number", "toString": 1, "__proto__": 2, "note": ""}');
    const report = await validateDraft(draftOf(required, content));
    // The optional empty note goes; the required constructor stays, with its error reported.
    expect(report.repairs.map((r) => r.path)).toEqual(["/note"]);
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([["schema:type", "/constructor"]]);
  });
});

describe("a `properties` entry named __proto__, which Ajv cannot check", () => {
  it("is refused as an invalid schema, not checked wrong nor thrown as a TypeError", async () => {
    const schema = JSON.parse(
      '{"type": "object", "properties": {"__proto__": {"type": "number"}}, "unevaluatedProperties": false}',
    );
    for (const content of [{}, JSON.parse('{"__proto__": "not a number", "x-note": 1}')]) {
      const outcome = validateDraft(draftOf(schema, content));
      await expect(outcome).rejects.toBeInstanceOf(InvalidSchemaError);
      await expect(outcome).rejects.toThrow(/names "__proto__"/);
    }
  });
});

describe("the walks and the other applicators", () => {
  it("follows $ref to an $anchor and to an embedded $id, and repairs there", async () => {
    const schema = {
      $schema: D2020,
      type: "object",
      properties: { a: { $ref: "#thing" }, b: { $ref: "https://example.com/other" } },
      $defs: {
        thing: { $anchor: "thing", type: "object", properties: { code: { pattern: "^[A-Z]+$" } } },
        other: {
          $id: "https://example.com/other",
          type: "object",
          additionalProperties: false,
          properties: { n: { type: "integer" } },
        },
      },
    };
    const report = await validateDraft(draftOf(schema, { a: { code: "" }, b: { n: 1, junk: 2 } }));
    expect(report.repairs.map((r) => r.path).sort()).toEqual(["/a/code", "/b/junk"]);
    expect(report.passed).toBe(true);
  });

  it("leaves a key alone that a oneOf branch also constrains, even below it", async () => {
    const schema = {
      type: "object",
      properties: { a: { type: "object", properties: { b: { type: "string", pattern: "^x+$" } } } },
      oneOf: [{ properties: { a: { required: ["b"] } } }, { required: ["c"] }],
    };
    const report = await validateDraft(draftOf(schema, { a: { b: "y" } }));
    expect(report.repairs).toEqual([]);
    expect(report.violations.some((v) => v.ruleId === JSON_RULE_IDS.repairSkipped && v.path === "/a")).toBe(
      true,
    );
  });

  it("keeps a key a dependentSchemas branch requires", async () => {
    const schema = {
      type: "object",
      properties: { card: { type: "string" }, billing: { type: "string", pattern: "^[0-9]+$" } },
      dependentSchemas: { card: { required: ["billing"] } },
    };
    const report = await validateDraft(draftOf(schema, { card: "visa", billing: "" }));
    expect(report.repairs).toEqual([]);
    expect(report.violations.map((v) => v.ruleId)).toContain("schema:pattern");
  });

  it("repairs inside tuple items (prefixItems, draft-07 items array) and patternProperties", async () => {
    const tuple = {
      type: "object",
      properties: {
        pair: {
          type: "array",
          prefixItems: [{ type: "object", properties: { x: { type: "integer" } } }],
          items: { type: "object", additionalProperties: false },
        },
      },
      patternProperties: { "^x-": { type: "string", minLength: 2 } },
    };
    const report = await validateDraft(draftOf(tuple, { pair: [{ x: " " }, { y: 1 }], "x-a": "" }));
    expect(report.repairs.map((r) => r.path).sort()).toEqual(["/pair/0/x", "/pair/1/y", "/x-a"]);
    const draft07 = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        pair: {
          type: "array",
          items: [{ type: "object", properties: { x: { type: "integer" } } }],
          additionalItems: { type: "object", additionalProperties: false },
        },
      },
    };
    const old = await validateDraft(draftOf(draft07, { pair: [{ x: null }, { y: 1 }] }));
    expect(old.repairs.map((r) => r.path).sort()).toEqual(["/pair/0/x", "/pair/1/y"]);
  });

  it("steps aside under a reference it does not follow (a meta-schema), and still validates", async () => {
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { embedded: { $ref: "http://json-schema.org/draft-07/schema#" }, n: { type: "integer" } },
    };
    const report = await validateDraft(draftOf(schema, { embedded: { type: "nope" }, n: 1 }));
    expect(report.repairs).toEqual([]);
    expect(report.passed).toBe(false);
    expect(report.violations.find((v) => v.ruleId === JSON_RULE_IDS.repairSkipped)?.path).toBe("/embedded");
  });

  it("lets a 2019-09 or 2020-12 schema $ref the draft-07 meta-schema (a field that holds a schema)", async () => {
    for (const $schema of [D2020, D2019]) {
      const schema = {
        $schema,
        type: "object",
        properties: { output: { $ref: "http://json-schema.org/draft-07/schema#" } },
      };
      expect((await validateDraft(draftOf(schema, { output: { type: "string" } }))).passed).toBe(true);
      const report = await validateDraft(draftOf(schema, { output: { type: 5 } }));
      expect(report.passed).toBe(false);
    }
  });

  it("counts units through a cycle of $refs without end", () => {
    const schema = {
      type: "object",
      $defs: {
        a: { type: "object", properties: { b: { $ref: "#/$defs/b" }, v: { type: "string" } } },
        b: { type: "object", properties: { a: { $ref: "#/$defs/a" }, w: { type: "string" } } },
      },
      properties: { root: { $ref: "#/$defs/a" } },
    };
    const units = compiled(schema).units({ root: { b: { a: { v: "x" } } } });
    expect(units).toBeGreaterThan(3);
    expect(units).toBeLessThan(50);
  });
});
