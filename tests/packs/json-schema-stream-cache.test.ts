/**
 * Drafts that arrive as text each bring their own parsed copy of the schema. Once the same schema has come
 * twice in a row, the next copy is compared member by member with a private copy of it instead of being
 * serialized (shared/packs/json/compile.ts). The comparison must never let a different schema, a hostile
 * one or one changed after the fact pass as the repeated one.
 */
import { beforeEach, describe, expect, it } from "vitest";
import {
  clearJsonSchemaCache,
  compileJsonSchema,
  jsonSchemaCacheStats,
} from "../../shared/packs/json/json.js";

const SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    code: { type: "string", pattern: "^[A-Z]{3}$" },
    tags: { type: "array", items: { enum: ["a", "b"] } },
  },
  required: ["code"],
};
const TEXT = JSON.stringify(SCHEMA);
/** A fresh parsed copy, as every draft that arrives as text carries. */
const copy = (text = TEXT) => JSON.parse(text) as Record<string, unknown>;

function verdict(schema: unknown, content: unknown): boolean | string {
  const lookup = compileJsonSchema(schema);
  return lookup.ok ? lookup.schema.isValid(content) : lookup.problem.message;
}

/** Brings SCHEMA to the point where the next copy is compared rather than serialized. */
function stream(): void {
  for (let i = 0; i < 3; i++) expect(verdict(copy(), { code: "ABC" })).toBe(true);
}

beforeEach(() => {
  clearJsonSchemaCache();
});

describe("a schema that every draft brings as its own copy", () => {
  it("is compiled once and answers as before", () => {
    const before = jsonSchemaCacheStats().compilations;
    stream();
    for (let i = 0; i < 5; i++) {
      expect(verdict(copy(), { code: "ABC", tags: ["a"] })).toBe(true);
      expect(verdict(copy(), { code: "abc", tags: ["c"] })).toBe(false);
    }
    expect(jsonSchemaCacheStats().compilations - before).toBe(1);
  });

  it("is not taken for a copy that differs anywhere, however deep", () => {
    stream();
    const deeper = copy();
    ((deeper.properties as { code: { pattern: string } }).code as { pattern: string }).pattern = "^[a-z]{3}$";
    expect(verdict(deeper, { code: "abc" })).toBe(true);
    const moreItems = copy();
    (moreItems.properties as { tags: { items: { enum: string[] } } }).tags.items.enum.push("c");
    expect(verdict(moreItems, { code: "ABC", tags: ["c"] })).toBe(true);
    const reordered = Object.fromEntries(Object.entries(copy()).reverse());
    expect(verdict(reordered, { code: "abc" })).toBe(false);
    expect(verdict(copy(), { code: "ABC", tags: ["c"] })).toBe(false);
  });

  it("refuses a hostile copy every time, however often the schema before it came", () => {
    stream();
    const remote = copy();
    (remote.properties as Record<string, unknown>).code = { $ref: "https://evil.example/schema.json" };
    const unsupported = { ...copy(), $schema: "https://evil.example/dialect" };
    for (let i = 0; i < 3; i++) {
      expect(verdict(JSON.parse(JSON.stringify(remote)), { code: "ABC" })).toMatch(
        /points outside the schema/,
      );
      expect(verdict({ ...unsupported }, { code: "ABC" })).toMatch(/unsupported \$schema/);
      expect(verdict(copy(), { code: "ABC" })).toBe(true);
    }
  });

  it("keeps its own copy: changing a schema a draft brought changes nothing for the next ones", () => {
    const brought = [copy(), copy(), copy()];
    for (const schema of brought) expect(verdict(schema, { code: "ABC" })).toBe(true);
    // The caller turns the schemas it holds into hostile ones, then sends that text.
    for (const held of brought)
      (held.properties as Record<string, unknown>).code = { $ref: "https://evil.example/schema.json" };
    expect(verdict(copy(JSON.stringify(brought[0])), { code: "ABC" })).toMatch(/points outside the schema/);
    expect(verdict(copy(), { code: "abc" })).toBe(false);
  });

  it("is not taken for a copy holding what JSON text cannot (a toJSON, a class instance, undefined)", () => {
    stream();
    const withToJson = copy();
    (withToJson.properties as Record<string, unknown>).code = {
      toJSON: () => ({ type: "string", pattern: "^[A-Z]{3}$" }),
    };
    expect(verdict(withToJson, { code: "ABC" })).toBe(true);
    class Pattern {
      type = "string";
      pattern = "^[a-z]{3}$";
    }
    const withInstance = copy();
    (withInstance.properties as Record<string, unknown>).code = new Pattern();
    expect(verdict(withInstance, { code: "abc" })).toBe(true);
    const withUndefined = { ...copy(), title: undefined };
    expect(verdict(withUndefined, { code: "abc" })).toBe(false);
  });
});
