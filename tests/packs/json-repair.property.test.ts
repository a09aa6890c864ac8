import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { inspectWithPack, resolvePack } from "../../shared/engine.js";
import { compileJsonSchema, jsonPack } from "../../shared/packs/json/json.js";
import { carriesNothing } from "../../shared/packs/json/repair.js";
import { toPointer } from "../../shared/pointer.js";

/**
 * Random extraction schemas from a small grammar: objects with required and optional fields whose
 * leaves carry a pattern, an enum or a minimum, nested objects, arrays of objects and closed objects
 * (additionalProperties: false); and random instances of them, valid and broken values mixed.
 */
type Schema =
  | { kind: "leaf"; json: Record<string, unknown>; samples: readonly unknown[] }
  | {
      kind: "object";
      json: Record<string, unknown>;
      fields: Record<string, Schema>;
      required: string[];
      closed: boolean;
    }
  | { kind: "array"; json: Record<string, unknown>; items: Schema };

/** The first sample of each leaf is valid. */
const leaves: Schema[] = [
  { kind: "leaf", json: { type: "string", pattern: "^[a-z]+$" }, samples: ["abc", "", "ABC", 5] },
  { kind: "leaf", json: { enum: ["a", "b", "c"] }, samples: ["a", "z", "", null] },
  { kind: "leaf", json: { type: "integer", minimum: 0 }, samples: [3, 0, -1, "", 2.5] },
  { kind: "leaf", json: { type: "string", format: "email" }, samples: ["a@b.org", "", "nope"] },
];
const KEYS = ["a", "b", "c", "d", "e"];

function schemaArb(depth: number): fc.Arbitrary<Schema> {
  const leaf = fc.constantFrom(...leaves);
  if (depth === 0) return leaf;
  const child = fc.oneof(
    { weight: 4, arbitrary: leaf },
    { weight: 1, arbitrary: schemaArb(depth - 1) },
    { weight: 1, arbitrary: objectArb(depth - 1).map((items): Schema => arrayOf(items)) },
  );
  return objectArb(depth, child);
}

function arrayOf(items: Schema): Schema {
  return { kind: "array", json: { type: "array", items: items.json }, items };
}

function objectArb(depth: number, child?: fc.Arbitrary<Schema>): fc.Arbitrary<Schema> {
  const fieldArb = child ?? (depth === 0 ? fc.constantFrom(...leaves) : schemaArb(depth));
  return fc
    .record({
      fields: fc.uniqueArray(fc.tuple(fc.constantFrom(...KEYS), fieldArb, fc.boolean()), {
        selector: ([key]) => key,
        minLength: 1,
        maxLength: 5,
      }),
      closed: fc.boolean(),
    })
    .map(({ fields, closed }): Schema => {
      const required = fields.filter(([, , req]) => req).map(([key]) => key);
      const properties = Object.fromEntries(fields.map(([key, s]) => [key, s.json]));
      const json: Record<string, unknown> = { type: "object", properties, required };
      if (closed) json.additionalProperties = false;
      return {
        kind: "object",
        json,
        fields: Object.fromEntries(fields.map(([key, s]) => [key, s])),
        required,
        closed,
      };
    });
}

/** An instance of the schema; with `valid`, one that conforms to it. */
function instanceArb(schema: Schema, valid = false): fc.Arbitrary<unknown> {
  switch (schema.kind) {
    case "leaf":
      return valid ? fc.constant(schema.samples[0]) : fc.constantFrom(...schema.samples);
    case "array":
      return fc.array(instanceArb(schema.items, valid), { maxLength: 3 });
    case "object": {
      const entries = Object.entries(schema.fields).map(([key, field]) => {
        const value =
          field.kind === "leaf" || valid
            ? instanceArb(field, valid)
            : // Now and then a model writes "" where an object or array belongs.
              fc.oneof(
                { weight: 5, arbitrary: instanceArb(field) },
                { weight: 1, arbitrary: fc.constant("") },
              );
        const present = valid && schema.required.includes(key);
        return (present ? value : fc.option(value, { nil: undefined, freq: 4 })).map(
          (v) => [key, v] as const,
        );
      });
      const extra =
        valid && schema.closed
          ? fc.constant(undefined)
          : fc.option(fc.constantFrom("x", "y"), { nil: undefined });
      return fc.tuple(fc.tuple(...entries), extra).map(([pairs, extra]) => {
        const out: Record<string, unknown> = {};
        for (const [key, value] of pairs) if (value !== undefined) out[key] = value;
        if (extra) out[`extra_${extra}`] = extra === "x" ? "stray" : { nested: [1, 2] };
        return out;
      });
    }
  }
}

const caseArb = schemaArb(3).chain((schema) => fc.tuple(fc.constant(schema), instanceArb(schema)));
const validCaseArb = schemaArb(3).chain((schema) => fc.tuple(fc.constant(schema), instanceArb(schema, true)));

/** Pointers of the required fields the instance holds. */
function requiredPointers(
  schema: Schema,
  value: unknown,
  path: (string | number)[] = [],
  out = new Set<string>(),
) {
  if (schema.kind === "object" && typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) {
      const field = schema.fields[key];
      if (!field) continue;
      if (schema.required.includes(key)) out.add(toPointer([...path, key]));
      requiredPointers(field, child, [...path, key], out);
    }
  } else if (schema.kind === "array" && Array.isArray(value)) {
    value.forEach((item, i) => {
      requiredPointers(schema.items, item, [...path, i], out);
    });
  }
  return out;
}

function has(content: unknown, pointer: string): boolean {
  let value: unknown = content;
  for (const segment of pointer.slice(1).split("/")) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, segment)) return false;
    value = (value as Record<string, unknown>)[segment];
  }
  return true;
}

const withRepair = resolvePack(jsonPack, { settings: { repair: "aggressive" } });
const lossless = resolvePack(jsonPack);
const withoutRepair = resolvePack(jsonPack, { settings: { repair: "off" } });
const VALUE_RULES = new Set([
  "schema:pattern",
  "schema:enum",
  "schema:minimum",
  "schema:type",
  "schema:format",
]);

describe("json repair properties", () => {
  it("aggressive: never removes a required field, never lowers the score, is idempotent and pure", () => {
    let runsWithRepairs = 0;
    fc.assert(
      fc.property(caseArb, ([schema, content]) => {
        const draft = { id: "p", kind: "json", content, context: { schema: schema.json } };
        const snapshot = structuredClone(content);
        const repaired = inspectWithPack(withRepair, draft);
        const unrepaired = inspectWithPack(withoutRepair, draft);
        if (repaired.report.repairs.length > 0) runsWithRepairs += 1;

        expect(content).toEqual(snapshot);
        for (const pointer of requiredPointers(schema, content))
          expect(has(repaired.draft.content, pointer)).toBe(true);
        const required = requiredPointers(schema, content);
        for (const repair of repaired.report.repairs) expect(required.has(repair.path)).toBe(false);

        expect(repaired.report.score).toBeGreaterThanOrEqual(unrepaired.report.score);
        expect(repaired.report.counts.error).toBeLessThanOrEqual(unrepaired.report.counts.error);

        // What repair leaves is only what it must not touch: value errors on required fields.
        const left = requiredPointers(schema, repaired.draft.content);
        for (const v of repaired.report.violations) {
          expect(v.ruleId).not.toBe("schema:additionalProperties");
          if (VALUE_RULES.has(v.ruleId)) expect(left.has(v.path ?? "")).toBe(true);
        }

        const lookup = compileJsonSchema(schema.json);
        if (!lookup.ok) throw new Error(lookup.problem.message);
        const aggressive = { mode: "aggressive" } as const;
        const again = lookup.schema.repair(repaired.draft.content, aggressive);
        expect(again.repairs).toEqual([]);
        expect(again.content).toBe(repaired.draft.content);
        expect(lookup.schema.repair(content, aggressive).content).toEqual(repaired.draft.content);

        // Lossless (the default) deletes only what holds nothing, or a key the schema forbids.
        const kept = inspectWithPack(lossless, draft);
        for (const repair of kept.report.repairs) {
          const forbidden = /allows no property/.test(repair.message);
          expect(forbidden || carriesNothing(repair.before)).toBe(true);
        }
        expect(kept.report.counts.error).toBeLessThanOrEqual(unrepaired.report.counts.error);
        expect(kept.report.score).toBeGreaterThanOrEqual(unrepaired.report.score);
      }),
      { numRuns: 300 },
    );
    // The generator must actually exercise repair, or the properties above say little.
    expect(runsWithRepairs).toBeGreaterThan(100);
    // Three inspections per case on a shared machine: room, not a speed claim.
  }, 180_000);

  it("leaves valid content untouched, as the same object", () => {
    fc.assert(
      fc.property(validCaseArb, ([schema, content]) => {
        const lookup = compileJsonSchema(schema.json);
        if (!lookup.ok) throw new Error(lookup.problem.message);
        expect(lookup.schema.isValid(content)).toBe(true);
        const result = lookup.schema.repair(content);
        expect(result.repairs).toEqual([]);
        expect(result.content).toBe(content);
      }),
      { numRuns: 100 },
    );
  });
});
