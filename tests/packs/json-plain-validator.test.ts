/**
 * A schema that has served many checks gets a second validator, compiled without Ajv's `ownProperties`,
 * used for plain data only (shared/packs/json/plain.ts). It must never answer differently from the
 * schema's own validator: not on the JSON-Schema-Test-Suite or the real-world schemas, not for a schema
 * naming a member of Object.prototype, not after Object.prototype is changed, not for data whose members
 * are inherited from a class, and not for cyclic data.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CompiledJsonSchema, compileJsonSchema, dialectOf } from "../../shared/packs/json/json.js";

/** Checks after which the plain-data validator is compiled (compiled.ts), with some room. */
const WARM_UP = 1100;

type Schema = Record<string, unknown>;

/** A compiled schema that has served enough checks to use its plain-data validator. */
function warm(schema: Schema): CompiledJsonSchema {
  const compiled = new CompiledJsonSchema(schema, dialectOf(schema) ?? "2020-12");
  // A new object each time: the verdict on one object is reused within a turn.
  for (let i = 0; i < WARM_UP; i++) compiled.isValid({});
  return compiled;
}

/** A compiled schema that has served no check yet: it uses only the validator with `ownProperties`. */
const cold = (schema: Schema) => new CompiledJsonSchema(schema, dialectOf(schema) ?? "2020-12");

/** Both validators' errors and repair for `content`, which must be the same. */
function expectSameAnswers(hot: CompiledJsonSchema, fresh: CompiledJsonSchema, content: unknown): void {
  expect(hot.errors(content)).toEqual(fresh.errors(content));
  expect(hot.repair(content)).toEqual(fresh.repair(content));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the plain-data validator of a schema that serves many checks", () => {
  it("is used once the schema has served its checks (it asks Object.prototype first)", () => {
    const schema = { type: "object", properties: { a: { type: "string" } } };
    const names = vi.spyOn(Object, "getOwnPropertyNames");
    cold(schema).isValid({ a: "x" });
    expect(names).not.toHaveBeenCalled();
    const hot = warm(schema);
    names.mockClear();
    expect(hot.isValid({ a: "x" })).toBe(true);
    expect(names).toHaveBeenCalledWith(Object.prototype);
  });

  it("answers as the schema's own validator on every case of the JSON-Schema-Test-Suite, in every dialect", () => {
    const root = "tests/fixtures/json-schema-test-suite/tests";
    // Each supported dialect, with the suite folder its cases come from (the suite kept here has no
    // 2019-09 folder: the 2020-12 cases declared 2019-09 compare the two validators just as well).
    const dialects: [string, string, string | undefined][] = [
      ["draft-04", "draft4", "http://json-schema.org/draft-04/schema#"],
      ["draft-06", "draft6", "http://json-schema.org/draft-06/schema#"],
      ["draft-07", "draft7", "http://json-schema.org/draft-07/schema#"],
      ["2019-09", "draft2020-12", "https://json-schema.org/draft/2019-09/schema"],
      ["2020-12", "draft2020-12", undefined],
    ];
    const compared: Record<string, number> = {};
    for (const [dialect, folder, declared] of dialects) {
      compared[dialect] = 0;
      for (const file of readdirSync(join(root, folder)).filter((f) => f.endsWith(".json"))) {
        const groups: { schema: unknown; tests: { data: unknown }[] }[] = JSON.parse(
          readFileSync(join(root, folder, file), "utf8"),
        );
        for (const group of groups) {
          if (typeof group.schema !== "object" || group.schema === null) continue;
          const schema: Schema = declared ? { ...group.schema, $schema: declared } : { ...group.schema };
          if (!compileJsonSchema(schema).ok) continue;
          expect(dialectOf(schema)).toBe(dialect);
          const hot = warm(schema);
          const fresh = cold(schema);
          for (const { data } of group.tests) {
            expectSameAnswers(hot, fresh, data);
            compared[dialect] += 1;
          }
        }
      }
    }
    for (const dialect of Object.keys(compared)) expect(compared[dialect], dialect).toBeGreaterThan(300);
    // Five dialects' worth of the suite, each case checked four times (two validators, errors and repair).
  }, 300_000);

  it("answers as the schema's own validator on the real-world schemas' instances", () => {
    for (const name of ["order-api", "ci-workflow", "clinical-bundle"]) {
      const read = (file: string) => JSON.parse(readFileSync(`tests/fixtures/json-schema/${file}`, "utf8"));
      const schema: Schema = read(`${name}.schema.json`);
      const hot = warm(schema);
      const fresh = cold(schema);
      for (const { content } of read(`${name}.instances.json`) as { content: unknown }[])
        expectSameAnswers(hot, fresh, content);
    }
  });

  it("is not used for a schema that names a member of Object.prototype", () => {
    const schema = {
      type: "object",
      required: ["constructor"],
      properties: { toString: { type: "string" } },
    };
    const hot = warm(schema);
    expect(hot.isValid({})).toBe(false);
    expect(hot.errors({ toString: 1 }).map((e) => e.keyword)).toEqual(["required", "type"]);
    expect(hot.isValid({ constructor: 1, toString: "x" })).toBe(true);
  });

  it("is not used while Object.prototype has a member the schema names, or any enumerable one", () => {
    const schema = {
      type: "object",
      required: ["x"],
      properties: { x: { type: "string" } },
      additionalProperties: false,
    };
    const hot = warm(schema);
    const prototype = Object.prototype as Record<string, unknown>;
    try {
      prototype.x = "inherited";
      expect(hot.isValid({})).toBe(false);
      delete prototype.x;
      prototype.y = 1;
      expect(hot.isValid({ x: "own" })).toBe(true);
      delete prototype.y;
      Object.defineProperty(prototype, "x", { value: "hidden", configurable: true, enumerable: false });
      expect(hot.isValid({})).toBe(false);
    } finally {
      delete prototype.x;
      delete prototype.y;
    }
    expect(hot.isValid({ x: "own" })).toBe(true);
  });

  it("is not used for data with a member inherited from a class, however deep", () => {
    class Inherits {
      get x(): string {
        return "inherited";
      }
    }
    const schema = {
      type: "object",
      properties: { inner: { type: "object", required: ["x"] }, list: { items: { required: ["x"] } } },
    };
    const hot = warm(schema);
    expect(hot.isValid({ inner: new Inherits() })).toBe(false);
    expect(hot.isValid({ list: [{ x: 1 }, new Inherits()] })).toBe(false);
    expect(hot.isValid({ inner: { x: 1 }, list: [Object.assign(Object.create(null), { x: 1 })] })).toBe(true);
  });

  it("answers for cyclic data, which Ajv walks only as deep as the schema goes", () => {
    const schema = { type: "object", properties: { name: { type: "string" } } };
    const hot = warm(schema);
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    cyclic.again = cyclic;
    expect(hot.isValid(cyclic)).toBe(true);
  });
});
