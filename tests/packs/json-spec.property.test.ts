/**
 * Issue 17's invariants, as properties over generated schemas and instances. The schemas use the
 * constructs redraft's walks must agree with Ajv on: `$ref` into `$defs`, `$dynamicRef` (a recursive
 * tree), `allOf`/`anyOf`/`oneOf`, `if`/`then`/`else`, `dependentSchemas` (draft-07: `dependencies`),
 * `unevaluatedProperties`, `patternProperties`, `additionalProperties`, tuple `prefixItems` (draft-07:
 * `items` arrays with `additionalItems`), and property names Object.prototype also has.
 *
 * 1. before repair, redraft's verdict equals plain Ajv's (configured for the draft);
 * 2. repair never changes an instance Ajv accepts;
 * 3. after repair, the schema violations left are exactly Ajv's errors on the repaired instance;
 * 4. repair never removes a property the schema requires (Ajv never reports a removed one missing);
 * 5. repair is idempotent.
 */
import { Ajv, type AnySchema } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { inspectWithPack, resolvePack } from "../../shared/engine.js";
import { InvalidSchemaError } from "../../shared/errors.js";
import { compileJsonSchema, jsonPack } from "../../shared/packs/json/json.js";

const addFormats = addFormatsModule.default;
type Json = Record<string, unknown>;
type Dialect = "draft-07" | "2020-12";

/** Keys of schemas and instances alike, so that generated instances meet their schemas' keywords. */
const KEYS = ["a", "b", "c", "x-note", "constructor", "toString", "__proto__"] as const;
const key = fc.constantFrom(...KEYS);
/** redraft refuses a schema whose `properties` names __proto__ (Ajv cannot check it): required only. */
const propertyKey = fc.constantFrom(...KEYS.filter((k) => k !== "__proto__"));

const leaf: fc.Arbitrary<unknown> = fc.constantFrom<unknown>(
  { type: "string", pattern: "^[a-z]+$" },
  { enum: ["a", "b"] },
  { type: "integer", minimum: 0 },
  { type: "string", minLength: 2 },
  { const: 5 },
  { type: ["string", "null"] },
  true,
);

/** Sets a key as an own property, "__proto__" included. */
function put(target: Json, k: string, value: unknown): void {
  Object.defineProperty(target, k, { value, writable: true, enumerable: true, configurable: true });
}

function objectOf(entries: readonly (readonly [string, unknown])[]): Json {
  const out: Json = {};
  for (const [k, v] of entries) put(out, k, v);
  return out;
}

function schemaArb(dialect: Dialect, depth: number): fc.Arbitrary<unknown> {
  const modern = dialect === "2020-12";
  const child: fc.Arbitrary<unknown> =
    depth <= 0
      ? leaf
      : fc.oneof(
          { weight: 5, arbitrary: leaf },
          { weight: 2, arbitrary: schemaArb(dialect, depth - 1) },
          { weight: 1, arbitrary: arrayArb(dialect, depth - 1) },
          { weight: 1, arbitrary: fc.constant({ $ref: modern ? "#/$defs/item" : "#/definitions/item" }) },
          ...(modern ? [{ weight: 1, arbitrary: fc.constant({ $dynamicRef: "#node" }) }] : []),
        );
  const small = fc
    .record({ k: propertyKey, s: leaf, req: fc.boolean() })
    .map(({ k, s, req }) => ({ properties: objectOf([[k, s]]), ...(req ? { required: [k] } : {}) }));
  return fc
    .record(
      {
        properties: fc.uniqueArray(fc.tuple(propertyKey, child), {
          selector: ([k]) => k,
          minLength: 1,
          maxLength: 4,
        }),
        required: fc.uniqueArray(key, { maxLength: 2 }),
        additional: fc.constantFrom<unknown>(undefined, undefined, false, { type: "string" }),
        patterns: fc.boolean(),
        unevaluated: fc.boolean(),
        allOf: fc.option(small, { nil: undefined }),
        alternatives: fc.option(fc.tuple(fc.constantFrom("anyOf", "oneOf"), small, small), {
          nil: undefined,
        }),
        condition: fc.option(fc.tuple(propertyKey, propertyKey, leaf), { nil: undefined }),
        dependent: fc.option(fc.tuple(key, key), { nil: undefined }),
      },
      { requiredKeys: ["properties", "required"] },
    )
    .map((g) => {
      const schema: Json = { type: "object", properties: objectOf(g.properties) };
      if (g.required.length > 0) schema.required = g.required;
      if (g.additional !== undefined) schema.additionalProperties = g.additional;
      if (g.patterns) schema.patternProperties = { "^x-": { type: "string", minLength: 2 } };
      if (g.unevaluated && modern) schema.unevaluatedProperties = false;
      if (g.allOf) schema.allOf = [g.allOf];
      if (g.alternatives) schema[g.alternatives[0]] = [g.alternatives[1], g.alternatives[2]];
      if (g.condition) {
        const [k, k2, s] = g.condition;
        schema.if = { properties: objectOf([[k, { const: "a" }]]), required: [k] };
        // `then` through put: a literal `then` key makes linters take the schema for a thenable.
        put(schema, "then", { required: [k2] });
        schema.else = { properties: objectOf([[k2, s]]) };
      }
      if (g.dependent) {
        const [k, k2] = g.dependent;
        if (modern) schema.dependentSchemas = objectOf([[k, { required: [k2] }]]);
        else schema.dependencies = objectOf([[k, { required: [k2] }]]);
      }
      return schema;
    });
}

function arrayArb(dialect: Dialect, depth: number): fc.Arbitrary<unknown> {
  const element = schemaArb(dialect, depth);
  return fc
    .tuple(element, fc.option(element, { nil: undefined }))
    .map(([first, rest]) =>
      dialect === "2020-12"
        ? { type: "array", prefixItems: [first], ...(rest ? { items: rest } : {}) }
        : { type: "array", items: [first], ...(rest ? { additionalItems: rest } : {}) },
    );
}

/** A whole schema: the object grammar at the root, a `$defs` item and the tree anchor its refs use. */
function rootArb(dialect: Dialect): fc.Arbitrary<Json> {
  return fc.tuple(schemaArb(dialect, 2), schemaArb(dialect, 0)).map(([root, item]) => {
    const schema = root as Json;
    if (dialect === "2020-12") {
      return {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        $id: "https://example.com/generated",
        $dynamicAnchor: "node",
        ...schema,
        $defs: { item },
      };
    }
    return { $schema: "http://json-schema.org/draft-07/schema#", ...schema, definitions: { item } };
  });
}

const scalar = fc.constantFrom<unknown>("", "abc", "ABC", "a", 5, -1, 2.5, null, true);
const instanceArb: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown; object: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    { weight: 4, arbitrary: scalar },
    { weight: 2, arbitrary: tie("object") },
    { weight: 1, arbitrary: fc.array(tie("object"), { maxLength: 2 }) },
  ),
  object: fc
    .uniqueArray(fc.tuple(key, tie("value")), { selector: ([k]) => k, maxLength: 4 })
    .map((entries) => objectOf(entries)),
})).object;

/** A value each leaf schema accepts. */
const GOOD: Record<string, unknown> = {
  '{"type":"string","pattern":"^[a-z]+$"}': "abc",
  '{"enum":["a","b"]}': "a",
  '{"type":"integer","minimum":0}': 3,
  '{"type":"string","minLength":2}': "abc",
  '{"const":5}': 5,
  '{"type":["string","null"]}': null,
};

/**
 * An instance that follows the schema's own properties (the required ones always, the others now and
 * then, a good value or a bad one): most of these conform, which the free-form instances rarely do.
 */
function guidedArb(schema: unknown, depth = 0): fc.Arbitrary<unknown> {
  if (typeof schema !== "object" || schema === null || depth > 4) return scalar;
  const node = schema as Json;
  const good = GOOD[JSON.stringify(node)];
  if (good !== undefined || JSON.stringify(node) in GOOD)
    return fc.oneof({ weight: 5, arbitrary: fc.constant(good) }, { weight: 1, arbitrary: scalar });
  if (node.type === "array") {
    const first = Array.isArray(node.prefixItems)
      ? node.prefixItems[0]
      : Array.isArray(node.items)
        ? node.items[0]
        : node.items;
    return fc.array(guidedArb(first, depth + 1), { maxLength: 2 });
  }
  if (typeof node.properties !== "object" || node.properties === null) return fc.constant({});
  const required = new Set(Array.isArray(node.required) ? node.required : []);
  // A required key the properties do not describe gets a value all the same.
  const described = node.properties as Json;
  const extra = [...required].filter((k) => typeof k === "string" && !Object.hasOwn(described, k));
  const entries = [...Object.entries(described), ...extra.map((k) => [k, true] as const)].map(([k, sub]) => {
    const value = guidedArb(sub, depth + 1);
    return (required.has(k) ? value : fc.option(value, { nil: undefined, freq: 2 })).map(
      (v) => [k, v] as const,
    );
  });
  return fc
    .tuple(...entries)
    .map((pairs) => objectOf(pairs.filter(([, v]) => v !== undefined) as [string, unknown][]));
}

const caseArb = fc.constantFrom<Dialect>("2020-12", "2020-12", "2020-12", "draft-07").chain((dialect) =>
  rootArb(dialect).chain((schema) =>
    fc.record({
      dialect: fc.constant(dialect),
      schema: fc.constant(schema),
      instances: fc.array(fc.oneof(instanceArb, guidedArb(schema)), { minLength: 1, maxLength: 4 }),
    }),
  ),
);

function plainAjv(dialect: Dialect): Ajv | Ajv2020 {
  const options = { strict: false, ownProperties: true, allErrors: true, logger: false } as const;
  const ajv = dialect === "draft-07" ? new Ajv(options) : new Ajv2020(options);
  addFormats(ajv);
  return ajv;
}

// Aggressive repair removes the most, so it exercises the walk's reading of the schema the most; the
// lossless default removes a subset of the same places (json-repair.property.test.ts).
const withRepair = resolvePack(jsonPack, { settings: { repair: "aggressive" } });
const withoutRepair = resolvePack(jsonPack, { settings: { repair: "off" } });

const escapeSegment = (segment: string) => segment.replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * Ajv's errors as a sorted list of keyword and place, the way redraft's violations name them: a missing
 * or a not-allowed property at its own pointer, every other error where Ajv puts it.
 */
function ajvErrors(validate: ReturnType<Ajv["compile"]>, data: unknown): string[] {
  if (validate(data)) return [];
  return (validate.errors ?? [])
    .map((e) => {
      const p = e.params as Record<string, unknown>;
      const named = p.missingProperty ?? p.additionalProperty ?? p.unevaluatedProperty;
      const keyed = ["required", "dependentRequired", "additionalProperties", "unevaluatedProperties"];
      const path = keyed.includes(e.keyword)
        ? `${e.instancePath}/${escapeSegment(String(named))}`
        : e.instancePath;
      return `${e.keyword} ${path}`;
    })
    .sort();
}

describe("json pack against Ajv, on generated schemas and instances (issue 17)", () => {
  it("agrees with Ajv before and after repair, never touches what Ajv accepts, never removes what is required, is idempotent", () => {
    const seen = { cases: 0, valid: 0, repaired: 0, stepAside: 0, ajvThrows: 0 };
    fc.assert(
      fc.property(caseArb, ({ dialect, schema, instances }) => {
        const ajv = plainAjv(dialect).compile(schema as AnySchema);
        const lookup = compileJsonSchema(schema);
        if (!lookup.ok) throw new Error(lookup.problem.message);
        for (const content of instances) {
          seen.cases += 1;
          const draft = { id: "p", kind: "json", content, context: { schema } } as Draft;
          let accepted: boolean;
          try {
            accepted = ajv(content) === true;
          } catch {
            // Ajv's own code fails on this schema: redraft must say so with a named error, nothing else.
            seen.ajvThrows += 1;
            expect(() => inspectWithPack(withoutRepair, draft)).toThrow(InvalidSchemaError);
            expect(() => inspectWithPack(withRepair, draft)).toThrow(InvalidSchemaError);
            continue;
          }
          if (accepted) seen.valid += 1;

          // 1. Before repair: the same verdict, the same errors.
          const plain = inspectWithPack(withoutRepair, draft).report;
          expect(plain.passed).toBe(accepted);
          expect(schemaViolations(plain.violations)).toEqual(ajvErrors(ajv, content));

          const { report, draft: after } = inspectWithPack(withRepair, draft);
          if (report.violations.some((v) => v.ruleId === "json_repair_skipped")) seen.stepAside += 1;
          // 2. What Ajv accepts, repair leaves as it is (the very same object).
          if (accepted) {
            expect(report.repairs).toEqual([]);
            expect(after.content).toBe(content);
          }
          if (report.repairs.length > 0) seen.repaired += 1;
          // 3. After repair: exactly Ajv's errors on the repaired instance.
          expect(schemaViolations(report.violations)).toEqual(ajvErrors(ajv, after.content));
          expect(report.passed).toBe(ajv(after.content) === true);
          // 4. Nothing removed is then missing where the schema requires it.
          const removed = new Set(report.repairs.map((r) => r.path));
          ajv(after.content);
          for (const e of ajv.errors ?? []) {
            if (e.keyword !== "required" && e.keyword !== "dependentRequired") continue;
            const missing = String((e.params as { missingProperty: string }).missingProperty);
            expect(removed.has(`${e.instancePath}/${escapeSegment(missing)}`)).toBe(false);
          }
          // 5. Idempotent.
          const again = lookup.schema.repair(after.content, { mode: "aggressive" });
          expect(again.repairs).toEqual([]);
          expect(again.content).toBe(after.content);
        }
      }),
      { numRuns: 200, endOnFailure: true },
    );
    // The generator must reach both verdicts and make repair work, or the properties say little.
    expect(seen.valid).toBeGreaterThan(seen.cases / 20);
    expect(seen.repaired).toBeGreaterThan(seen.cases / 10);
    expect(seen.stepAside).toBeGreaterThan(0);
    expect(seen.ajvThrows).toBeLessThan(seen.cases / 10);
  }, 120_000);
});

function schemaViolations(violations: readonly { ruleId: string; path?: string | undefined }[]): string[] {
  return violations
    .filter((v) => v.ruleId.startsWith("schema:"))
    .map((v) => `${v.ruleId.slice("schema:".length)} ${v.path ?? ""}`)
    .sort();
}
