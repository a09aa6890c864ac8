import { afterEach, describe, expect, it, vi } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { inspectWithPack, resolvePack } from "../../shared/engine.js";
import { compileJsonSchema, jsonPack } from "../../shared/packs/json/json.js";
import { DEFAULT_SCHEMA_LIMITS } from "../../shared/packs/json/json-schema-guard.js";
import { inspectDraft, validateDraft } from "../../shared/validate.js";
import { makeDeps } from "../loop/harness.js";

const DRAFT_07 = "http://json-schema.org/draft-07/schema#";

function draftOf(schema: unknown, content: unknown = {}): Draft {
  return { id: "untrusted-1", kind: "json", content, context: { schema } };
}

/** A schema nested `levels` schemas deep through `not`: one JSON level per schema level. */
function nested(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let node = root;
  for (let i = 1; i < levels; i++) {
    const child: Record<string, unknown> = {};
    node.not = child;
    node = child;
  }
  return root;
}

/** Over DEFAULT_SCHEMA_LIMITS.maxBytes (512 KiB), with a harmless shape: one long enum. */
const oversized = { enum: Array.from({ length: 50_000 }, (_, i) => `value-${i}`) };

/** Hostile or broken schemas, each with what the rejection must say. */
const UNUSABLE: [string, unknown, RegExp][] = [
  ["a string", "{}", /must be an object or a boolean, got string/],
  ["a number", 42, /must be an object or a boolean, got integer/],
  ["an array", [{ type: "string" }], /must be an object or a boolean, got array/],
  ['{"type": 12}', { type: 12 }, /schema\/type must be/],
  [
    "an unknown $schema",
    { $schema: "https://evil.example/schema", type: "object" },
    /unsupported \$schema "https:\/\/evil\.example\/schema"/,
  ],
  [
    "a look-alike draft-07 $schema",
    { $schema: "https://evil.example/draft-07/schema#" },
    /unsupported \$schema "https:\/\/evil\.example\/draft-07\/schema#"/,
  ],
  [
    "draft-03",
    { $schema: "http://json-schema.org/draft-03/schema#" },
    /unsupported \$schema "http:\/\/json-schema\.org\/draft-03\/schema#"/,
  ],
  [
    "a remote $ref",
    { type: "object", properties: { a: { $ref: "https://evil.example/x.json" } } },
    /\$ref "https:\/\/evil\.example\/x\.json" points outside the schema/,
  ],
  [
    "a remote $ref in a $defs entry named like a data keyword",
    { $defs: { default: { $ref: "https://evil.example/x.json" } } },
    /\$ref "https:\/\/evil\.example\/x\.json" points outside/,
  ],
  ["a file path $ref", { $ref: "/etc/passwd" }, /\$ref "\/etc\/passwd" points outside/],
  ["a file: URI $ref", { $ref: "file:///etc/passwd" }, /\$ref "file:\/\/\/etc\/passwd" points outside/],
  ["a relative file $ref", { $ref: "../secrets.json#/a" }, /\$ref "\.\.\/secrets\.json#\/a" points outside/],
  [
    "a remote $dynamicRef",
    { $dynamicRef: "https://evil.example/x.json#meta" },
    /\$ref "https:\/\/evil\.example\/x\.json#meta" points outside/,
  ],
  [
    "a 2019-09 meta-schema $ref from a draft-07 schema",
    { $schema: DRAFT_07, $ref: "https://json-schema.org/draft/2019-09/schema" },
    /points outside/,
  ],
  [
    `a schema nested ${DEFAULT_SCHEMA_LIMITS.maxDepth + 16} levels`,
    nested(DEFAULT_SCHEMA_LIMITS.maxDepth + 16),
    /nested more than 64 levels deep/,
  ],
  ["an oversized schema", oversized, /is \d+ bytes, over the limit of 524288 bytes/],
  ["a schema Ajv cannot compile", { type: "string", pattern: "(" }, /Invalid regular expression/],
  [
    "a pattern that backtracks exponentially",
    { type: "object", properties: { name: { type: "string", pattern: "^(a+)+$" } } },
    /the pattern "\^\(a\+\)\+\$" can take exponential time to match/,
  ],
  [
    "a patternProperties name that backtracks exponentially, deep in $defs",
    { $defs: { tags: { type: "object", patternProperties: { "^(\\w+\\s?)*$": { type: "string" } } } } },
    /the patternProperties "\^\(\\\\w\+\\\\s\?\)\*\$" can take exponential time/,
  ],
];

const invalidSchema = (message: RegExp) =>
  expect.objectContaining({
    name: "InvalidSchemaError",
    code: "invalid_schema",
    message: expect.stringMatching(message),
  });

afterEach(() => {
  vi.restoreAllMocks();
});

describe("json pack: context.schema is untrusted input", () => {
  it.each(UNUSABLE)("rejects %s through validateDraft and inspectDraft", async (_, schema, message) => {
    await expect(validateDraft(draftOf(schema))).rejects.toEqual(invalidSchema(message));
    await expect(inspectDraft(JSON.stringify(draftOf(schema)))).rejects.toEqual(invalidSchema(message));
  });

  it("refuses an exponential pattern before any content meets it, and lets the other drafts run", async () => {
    // 40 characters that almost match: ECMAScript's RegExp would take hours on ^(a+)+$ (2^40 splits).
    const hostile = draftOf(
      { type: "object", required: ["name"], properties: { name: { type: "string", pattern: "^(a+)+$" } } },
      { name: `${"a".repeat(40)}!` },
    );
    await expect(validateDraft(hostile)).rejects.toEqual(invalidSchema(/exponential time/));
    // The same pattern as data (an enum value, a default) is no regular expression and is fine.
    const asData = draftOf(
      { type: "object", properties: { p: { type: "string", enum: ["^(a+)+$"], default: "^(a+)+$" } } },
      { p: "^(a+)+$" },
    );
    expect((await validateDraft(asData)).passed).toBe(true);
    // A pattern whose splits are forced runs as before, on a long near-miss too.
    const forced = draftOf(
      {
        type: "object",
        required: ["words"],
        properties: { words: { type: "string", pattern: "^[^\\s]+(\\s[^\\s]+)*$" } },
      },
      { words: `${"word ".repeat(5_000)} ` },
    );
    const report = await validateDraft(forced);
    expect(report.violations.map((v) => v.path)).toContain("/words");
  });

  it("never fetches a remote $ref", async () => {
    const fetch = vi.spyOn(globalThis, "fetch");
    await expect(validateDraft(draftOf({ $ref: "https://evil.example/x.json" }))).rejects.toThrow(
      /points outside/,
    );
    expect(fetch).not.toHaveBeenCalled();
  });

  it("hands the model no tool definition for an unusable schema", () => {
    for (const [, schema, message] of UNUSABLE) {
      expect(() => jsonPack.contentJsonSchema?.(draftOf(schema))).toThrow(invalidSchema(message));
    }
  });

  it("measures a 10,000-level schema without recursion", async () => {
    const deep = nested(10_000);
    // Through the pack itself: the schema check, whatever bounds the draft as a whole.
    expect(() => inspectWithPack(resolvePack(jsonPack), draftOf(deep))).toThrow(
      invalidSchema(/nested more than 64 levels deep/),
    );
    // Through validateDraft the draft's own depth bound may refuse it first: either way a named
    // rejection, never a RangeError from an overflowing stack.
    const text = `{"id":"deep","kind":"json","content":{},"context":{"schema":${'{"not":'.repeat(9_999)}{}${"}".repeat(9_999)}}}`;
    const error = await validateDraft(text).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: expect.stringMatching(/^(invalid_schema|too_deep)$/) });
  });

  it("accepts a schema at the depth limit", () => {
    expect(compileJsonSchema(nested(DEFAULT_SCHEMA_LIMITS.maxDepth)).ok).toBe(true);
    expect(compileJsonSchema(nested(DEFAULT_SCHEMA_LIMITS.maxDepth + 1)).ok).toBe(false);
  });

  it("allows annotations and vendor keywords (x-…, example, $comment) and still checks the content", async () => {
    const schema = {
      $comment: "exported from the extraction service",
      "x-source": { system: "crm", exportedAt: "2026-01-01" },
      type: "object",
      required: ["name"],
      properties: {
        name: { type: "string", "x-order": 1, example: "Ada", examples: [{ $ref: "not a ref" }] },
        email: { type: "string", format: "x-internal-email", default: { $ref: "data" } },
      },
    };
    const passing = await validateDraft(draftOf(schema, { name: "Ada", email: "a@b" }));
    expect(passing.passed).toBe(true);
    // The unknown format is allowed, with a warning that it is not checked.
    expect(passing.violations).toEqual([
      expect.objectContaining({
        ruleId: "json_schema_warning",
        severity: "info",
        message:
          'the schema\'s format "x-internal-email" (at #/properties/email) is not one the validator knows: it is not checked',
      }),
    ]);
    const report = await validateDraft(draftOf(schema, { name: 7 }));
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:type", "/name"],
      ["json_schema_warning", undefined],
    ]);
  });

  it("accepts true and false as schemas", async () => {
    expect((await validateDraft(draftOf(true, { any: 1 }))).passed).toBe(true);
    expect((await validateDraft(draftOf(false, { any: 1 }))).passed).toBe(false);
    expect(jsonPack.contentJsonSchema?.(draftOf(true))).toEqual({});
  });

  it("compiles draft-07 tuple items under draft-07 rules", async () => {
    const schema = {
      $schema: DRAFT_07,
      type: "object",
      properties: { pair: { type: "array", items: [{ type: "string" }, { type: "number" }] } },
    };
    expect((await validateDraft(draftOf(schema, { pair: ["a", 1] }))).passed).toBe(true);
    const report = await validateDraft(draftOf(schema, { pair: [1, "a"] }));
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:type", "/pair/0"],
      ["schema:type", "/pair/1"],
    ]);
  });

  it("resolves a draft-07 schema's $ref to the draft-07 meta-schema locally", async () => {
    const fetch = vi.spyOn(globalThis, "fetch");
    const schema = {
      $schema: DRAFT_07,
      type: "object",
      required: ["shape"],
      properties: { shape: { $ref: "http://json-schema.org/draft-07/schema#" } },
    };
    expect((await validateDraft(draftOf(schema, { shape: { type: "string" } }))).passed).toBe(true);
    expect((await validateDraft(draftOf(schema, { shape: { type: 12 } }))).passed).toBe(false);
    expect(fetch).not.toHaveBeenCalled();
  });

  it("resolves a $ref to an $id or anchor the schema defines itself", async () => {
    const schema = {
      $id: "https://example.com/person.json",
      type: "object",
      required: ["address", "name"],
      properties: { address: { $ref: "address.json" }, name: { $ref: "#name" } },
      $defs: {
        address: { $id: "address.json", type: "object", required: ["city"] },
        name: { $anchor: "name", type: "string" },
      },
    };
    expect((await validateDraft(draftOf(schema, { address: { city: "Oslo" }, name: "A" }))).passed).toBe(
      true,
    );
    const report = await validateDraft(draftOf(schema, { address: {}, name: 1 }));
    expect(report.violations.map((v) => v.ruleId).sort()).toEqual(["schema:required", "schema:type"]);
  });

  it("does not let Object.prototype satisfy a required property", async () => {
    const schema = {
      type: "object",
      required: ["constructor", "toString"],
      properties: { constructor: { type: "string" }, toString: { type: "string" } },
    };
    const report = await validateDraft(draftOf(schema, {}));
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:required", "/constructor"],
      ["schema:required", "/toString"],
    ]);
    expect((await validateDraft(draftOf(schema, { constructor: "c", toString: "t" }))).passed).toBe(true);
  });

  it("never caches an unusable schema as usable, nor lets it spoil the cache", async () => {
    const bad = { type: "object", properties: { a: { $ref: "https://evil.example/x.json" } } };
    const good = { type: "object", properties: { a: { type: "string" } } };
    for (let i = 0; i < 3; i++) {
      expect(compileJsonSchema(bad).ok).toBe(false);
      expect(compileJsonSchema(JSON.parse(JSON.stringify(bad))).ok).toBe(false);
      expect(compileJsonSchema(good).ok).toBe(true);
    }
    expect(compileJsonSchema(oversized).ok).toBe(false);
    expect(compileJsonSchema(oversized).ok).toBe(false);
    await expect(validateDraft(draftOf(bad))).rejects.toThrow(/points outside/);
    expect((await validateDraft(draftOf(good, { a: "x" }))).passed).toBe(true);
  });
});

describe("correctDraft: a json draft with an unusable schema", () => {
  it.each(UNUSABLE)(
    "ends rejected / invalid_schema for %s, without calling the model",
    async (_, schema, message) => {
      const { deps, model, runs } = makeDeps([]);
      const result = await correctDraft(draftOf(schema, { a: 1 }), deps);
      expect(result).toMatchObject({ status: "rejected", reason: "invalid_schema", finalDraft: null });
      expect(result.message).toMatch(message);
      expect(model?.requests).toHaveLength(0);
      expect((await runs.getRun(result.runId))?.transitions.map((t) => t.status)).toEqual([
        "draft",
        "rejected",
      ]);
    },
  );

  it("ends rejected for a 10,000-level schema, not failed with a stack overflow", async () => {
    const { deps, model } = makeDeps([]);
    const text = `{"id":"deep","kind":"json","content":{},"context":{"schema":${'{"not":'.repeat(9_999)}{}${"}".repeat(9_999)}}}`;
    const result = await correctDraft(text, deps);
    expect(result.status).toBe("rejected");
    expect(result.reason).toMatch(/^(invalid_schema|too_deep)$/);
    expect(result.message).toMatch(/levels( deep)?/);
    expect(model?.requests).toHaveLength(0);
  });
});
