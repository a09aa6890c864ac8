/**
 * What the default (lossless) repair may delete, one row per kind of removal: a value that holds nothing
 * where its field is optional, and a key the schema forbids. Everything else that is wrong stays, as a
 * violation for the model (or for review without one). Each row gives the document before and after.
 */
import { describe, expect, it } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { inspectWithPack, resolvePack } from "../../shared/engine.js";
import { jsonPack } from "../../shared/packs/json/json.js";

const lossless = resolvePack(jsonPack);
const aggressive = resolvePack(jsonPack, { settings: { repair: "aggressive" } });

const schema = {
  type: "object",
  required: ["name"],
  additionalProperties: false,
  properties: {
    name: { type: "string", minLength: 2 },
    timeout: { type: "number" },
    profile: { enum: ["server", "cli"] },
    strict: { type: "boolean" },
    code: { type: "string", pattern: "^[A-Z]{3}$" },
    note: { type: ["string", "null"], maxLength: 5 },
    tags: { type: "array", items: { type: "number" } },
    owner: {
      type: "object",
      additionalProperties: false,
      properties: { email: { type: "string", format: "email" }, team: { type: "string" } },
    },
    coverage: { type: "object", properties: { status: { type: "boolean" } } },
    paths: {
      oneOf: [
        {
          type: "object",
          additionalProperties: {
            type: "object",
            additionalProperties: false,
            properties: { get: { type: "string" } },
          },
        },
        { type: "null" },
      ],
    },
  },
};

function run(content: Record<string, unknown>, pack = lossless) {
  const draft: Draft = { id: "row", kind: "json", content, context: { schema } };
  const { draft: after, report } = inspectWithPack(pack, draft);
  return {
    after: after.content,
    removed: report.repairs.map((r) => r.path),
    errors: report.violations.filter((v) => v.severity === "error").map((v) => v.path),
  };
}

interface Row {
  kind: string;
  before: Record<string, unknown>;
  after: Record<string, unknown>;
  /** The places still reported as errors after repair. */
  errors: string[];
}

const ALLOWED: Row[] = [
  {
    kind: "empty string in an optional field",
    before: { name: "ab", code: "" },
    after: { name: "ab" },
    errors: [],
  },
  {
    kind: "whitespace-only string in an optional field",
    before: { name: "ab", profile: "  \t" },
    after: { name: "ab" },
    errors: [],
  },
  {
    kind: "null where the optional field is not nullable",
    before: { name: "ab", timeout: null },
    after: { name: "ab" },
    errors: [],
  },
  {
    kind: "a key additionalProperties: false forbids (its value whatever it is)",
    before: { name: "ab", extra: { deep: [1, 2] } },
    after: { name: "ab" },
    errors: [],
  },
  {
    kind: "a forbidden key inside a nested object",
    before: { name: "ab", owner: { team: "x", fax: "123" } },
    after: { name: "ab", owner: { team: "x" } },
    errors: [],
  },
];

const REFUSED: Row[] = [
  {
    kind: 'a non-empty value of the wrong type ("100h" for a number)',
    before: { name: "ab", timeout: "100h" },
    after: { name: "ab", timeout: "100h" },
    errors: ["/timeout"],
  },
  {
    kind: "a value outside the enum",
    before: { name: "ab", profile: "browser" },
    after: { name: "ab", profile: "browser" },
    errors: ["/profile"],
  },
  {
    kind: 'a "false" string for a boolean',
    before: { name: "ab", strict: "false" },
    after: { name: "ab", strict: "false" },
    errors: ["/strict"],
  },
  {
    kind: "a non-empty string breaking a pattern",
    before: { name: "ab", code: "usd" },
    after: { name: "ab", code: "usd" },
    errors: ["/code"],
  },
  {
    kind: "an array item of the wrong type",
    before: { name: "ab", tags: [1, "two", 3] },
    after: { name: "ab", tags: [1, "two", 3] },
    errors: ["/tags/1"],
  },
  {
    kind: "an empty string in an array",
    before: { name: "ab", tags: [1, ""] },
    after: { name: "ab", tags: [1, ""] },
    errors: ["/tags/1"],
  },
  {
    kind: "an object because of an error inside it",
    before: { name: "ab", owner: { email: "not-an-email", team: "x" } },
    after: { name: "ab", owner: { email: "not-an-email", team: "x" } },
    errors: ["/owner/email"],
  },
  {
    kind: "an object of the wrong type at a field (must be boolean, got object)",
    before: { name: "ab", coverage: { status: { line: 80 } } },
    after: { name: "ab", coverage: { status: { line: 80 } } },
    errors: ["/coverage/status"],
  },
  {
    kind: "an empty required field",
    before: { name: "" },
    after: { name: "" },
    errors: ["/name"],
  },
  {
    kind: "a too-long value where null is also allowed",
    before: { name: "ab", note: "far too long" },
    after: { name: "ab", note: "far too long" },
    errors: ["/note"],
  },
];

describe("lossless repair (the default): what it removes", () => {
  it.each(ALLOWED)("removes $kind", ({ before, after, errors }) => {
    const result = run(before);
    expect(result.after).toEqual(after);
    expect(result.removed.length).toBeGreaterThan(0);
    expect(result.errors).toEqual(errors);
  });

  it.each(REFUSED)("keeps $kind, and reports it", ({ before, after, errors }) => {
    const result = run(before);
    expect(result.removed).toEqual([]);
    expect(result.after).toEqual(after);
    expect(result.errors).toEqual(errors);
  });

  it("keeps a null where the field allows null (nothing to repair)", () => {
    expect(run({ name: "ab", note: null })).toEqual({
      after: { name: "ab", note: null },
      removed: [],
      errors: [],
    });
  });

  it("records each removal with the value it took away", () => {
    const draft: Draft = {
      id: "r",
      kind: "json",
      content: { name: "ab", code: " ", x: 1 },
      context: { schema },
    };
    const { report } = inspectWithPack(lossless, draft);
    expect(report.repairs.map(({ path, before, action }) => ({ path, before, action }))).toEqual([
      { path: "/code", before: " ", action: "remove" },
      { path: "/x", before: 1, action: "remove" },
    ]);
  });
});

describe("the container case: oneOf [object, null]", () => {
  const paths = {
    "/pets": { get: "list" },
    "/users": { get: "list", bogus: true },
  };

  it("keeps the whole map, valid entries included, when one entry has an unknown key (lossless)", () => {
    const result = run({ name: "ab", paths });
    expect(result.after).toEqual({ name: "ab", paths });
    expect(result.removed).toEqual([]);
    expect(result.errors.length).toBeGreaterThan(0);
  });

  it("keeps it under aggressive repair too: the null branch's error does not rule the object out", () => {
    const result = run({ name: "ab", paths }, aggressive);
    expect(result.after).toEqual({ name: "ab", paths });
    expect(result.removed).toEqual([]);
  });

  it("aggressive still removes what its setting says it may: a wrong non-empty optional value", () => {
    const result = run({ name: "ab", timeout: "100h", coverage: { status: { line: 80 } } }, aggressive);
    expect(result.after).toEqual({ name: "ab", coverage: {} });
    expect(result.removed).toEqual(["/timeout", "/coverage/status"]);
  });
});

describe("the repair setting", () => {
  it("is validated: an unknown mode or the old boolean is refused when the kind's settings are read", () => {
    expect(() => resolvePack(jsonPack, { settings: { repair: "sometimes" } })).toThrow(/repair/);
    expect(() => resolvePack(jsonPack, { settings: { repair: true } })).toThrow(/repair/);
  });

  it("off removes nothing", () => {
    const off = resolvePack(jsonPack, { settings: { repair: "off" } });
    expect(run({ name: "ab", code: "", extra: 1 }, off).removed).toEqual([]);
  });
});
