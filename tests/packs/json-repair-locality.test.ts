/**
 * After repair, a schema whose keywords each judge one value by itself gets the repaired instance's
 * errors from the original pass (shared/packs/json/locality.ts) instead of a second Ajv pass. They
 * must be exactly what a pass over the repaired instance reports: the same errors, in the same order,
 * each about the repaired value. Any other schema is checked again.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  cleanRecord,
  fillEmptyOptionals,
  JSON_MODEL_FAULT_IDS,
  JSON_MODEL_FAULTS,
  JSON_REPAIRABLE_FAULTS,
  studySchema,
} from "../../bench/lib/json-corpus.js";
import { Rng } from "../../bench/lib/rng.js";
import { CompiledJsonSchema, compileJsonSchema, dialectOf } from "../../shared/packs/json/json.js";
import { errorsStayLocal } from "../../shared/packs/json/locality.js";

type Schema = Record<string, unknown>;

const compile = (schema: Schema) => new CompiledJsonSchema(schema, dialectOf(schema) ?? "2020-12");

/**
 * Repairs `content` with `compiled` and returns whether repair removed anything; when it did, the errors
 * `compiled` holds for the repaired instance must equal those of a pass by `fresh` (the same schema).
 */
function expectErrorsOfAFreshPass(compiled: CompiledJsonSchema, fresh: CompiledJsonSchema, content: unknown) {
  const { content: repaired, repairs } = compiled.repair(content);
  if (repairs.length === 0) return false;
  // Same turn: the repaired instance's errors are those repair worked out, not a new pass.
  expect(compiled.errors(repaired)).toEqual(fresh.errors(repaired));
  return true;
}

describe("errors after repair without a second Ajv pass", () => {
  it("are taken only from schemas whose keywords judge each value by itself", () => {
    const base = { type: "object", properties: { a: { type: "string", pattern: "^a" } } };
    expect(errorsStayLocal(studySchema())).toBe(true);
    expect(errorsStayLocal(base)).toBe(true);
    for (const nonLocal of [
      { ...base, anyOf: [{ required: ["a"] }, { required: ["b"] }] },
      { ...base, maxProperties: 1 },
      { ...base, dependentRequired: { a: ["b"] } },
      { ...base, propertyNames: { maxLength: 1 } },
      { ...base, unevaluatedProperties: false },
      { type: "array", items: base, uniqueItems: true },
      { type: "array", contains: base },
      { ...base, not: { required: ["a"] } },
      { ...base, enum: [{ a: "a" }] },
      { ...base, const: { a: "a" } },
      { ...base, properties: { a: { $ref: "https://json-schema.org/draft/2020-12/schema" } } },
      { $defs: { x: { if: { type: "string" } } }, ...base },
    ]) {
      expect(errorsStayLocal(nonLocal)).toBe(false);
    }
  });

  it("equal a fresh pass's on the bench's study records", () => {
    const rng = new Rng(20260219);
    const schema = studySchema();
    const [compiled, fresh] = [compile(schema), compile(schema)];
    let repaired = 0;
    for (let i = 0; i < 300; i++) {
      const record = cleanRecord(rng, i, "typical");
      fillEmptyOptionals(record, rng, 0.3);
      if (rng.chance(0.5)) JSON_REPAIRABLE_FAULTS.bad_optional_enum?.(record, rng);
      if (i % 2 === 0) {
        for (const f of rng.sample(JSON_MODEL_FAULT_IDS, rng.int(1, 3))) JSON_MODEL_FAULTS[f]?.(record, rng);
      }
      if (expectErrorsOfAFreshPass(compiled, fresh, record)) repaired += 1;
    }
    expect(repaired).toBeGreaterThan(150);
  });

  it("equal a fresh pass's on the real-world schemas' instances, local or not", () => {
    for (const name of ["order-api", "ci-workflow", "clinical-bundle"]) {
      const read = (file: string) => JSON.parse(readFileSync(`tests/fixtures/json-schema/${file}`, "utf8"));
      const schema: Schema = read(`${name}.schema.json`);
      const [compiled, fresh] = [compile(schema), compile(schema)];
      for (const { content } of read(`${name}.instances.json`) as { content: unknown }[])
        expectErrorsOfAFreshPass(compiled, fresh, content);
    }
  });

  it("equal a fresh pass's on generated local schemas and instances", () => {
    const keys = ["a", "b", "c/d", "x-e"] as const;
    const key = fc.constantFrom(...keys);
    const leaf = fc.constantFrom<unknown>(
      { type: "string", pattern: "^[a-z]+$" },
      { enum: ["a", "b", 1] },
      { type: "integer", minimum: 0 },
      { type: "string", minLength: 2, format: "date" },
      { const: 5 },
      { $ref: "#/$defs/word" },
      true,
    );
    const schemaArb: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown; object: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        { weight: 3, arbitrary: leaf },
        { weight: 2, arbitrary: tie("object") },
        { weight: 1, arbitrary: tie("object").map((items) => ({ type: "array", items, minItems: 1 })) },
      ),
      object: fc
        .record({
          properties: fc.uniqueArray(fc.tuple(key, tie("node")), { selector: ([k]) => k, maxLength: 3 }),
          required: fc.uniqueArray(key, { maxLength: 2 }),
          additional: fc.constantFrom<unknown>(undefined, false, { type: "string" }),
          patterns: fc.boolean(),
          allOf: fc.boolean(),
        })
        .map((g) => ({
          type: "object",
          properties: Object.fromEntries(g.properties),
          required: g.required,
          ...(g.additional !== undefined && { additionalProperties: g.additional }),
          ...(g.patterns && { patternProperties: { "^x-": { type: "string", minLength: 3 } } }),
          ...(g.allOf && { allOf: [{ properties: { a: { type: "string" } } }] }),
        })),
    })).object;
    const scalar = fc.constantFrom<unknown>("", "abc", "Abc", "2026-01-01", 5, -1, 1.5, null, true);
    const instanceArb: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown; object: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        { weight: 4, arbitrary: scalar },
        { weight: 2, arbitrary: tie("object") },
        { weight: 1, arbitrary: fc.array(tie("object"), { maxLength: 3 }) },
      ),
      object: fc
        .uniqueArray(fc.tuple(key, tie("value")), { selector: ([k]) => k, maxLength: 4 })
        .map((entries) => Object.fromEntries(entries)),
    })).object;
    let repaired = 0;
    fc.assert(
      fc.property(schemaArb, fc.array(instanceArb, { minLength: 1, maxLength: 5 }), (root, instances) => {
        const schema = { ...(root as Schema), $defs: { word: { type: "string", pattern: "^[a-z]+$" } } };
        expect(errorsStayLocal(schema)).toBe(true);
        if (!compileJsonSchema(schema).ok) return;
        const [compiled, fresh] = [compile(schema), compile(schema)];
        for (const content of instances)
          if (expectErrorsOfAFreshPass(compiled, fresh, content)) repaired += 1;
      }),
      { numRuns: 300 },
    );
    expect(repaired).toBeGreaterThan(50);
    // 300 schemas compiled twice each by fresh Ajvs: a budget for a shared machine, not a speed claim.
  }, 180_000);
});
