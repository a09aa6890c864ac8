/**
 * Large schemas of the kind users bring (tests/fixtures/json-schema): an OpenAPI-style order with
 * `$ref` chains, a `oneOf` payment union, `patternProperties` and vendor keywords (2020-12); a CI workflow
 * in the SchemaStore style (draft-07: `definitions`, `dependencies`, `oneOf` steps, pattern-keyed jobs);
 * and a FHIR-like clinical bundle whose resources share a base through `allOf` and close with
 * `unevaluatedProperties` inside a `oneOf`. Each comes with instances labelled valid, repairable (the
 * default, lossless repair alone makes them valid), aggressive (only the aggressive repair does: it
 * deletes values that hold information) or broken (a correction is needed).
 */
import { readFileSync } from "node:fs";
import { Ajv, type AnySchema, type ErrorObject } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { compileJsonSchema, JSON_RULE_IDS } from "../../shared/packs/json/json.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

const addFormats = addFormatsModule.default;
const DIR = "tests/fixtures/json-schema";
const SCHEMAS = ["order-api", "ci-workflow", "clinical-bundle"] as const;

interface Instance {
  name: string;
  expect: "valid" | "repairable" | "aggressive" | "broken";
  content: Record<string, unknown>;
}

const load = (file: string) => JSON.parse(readFileSync(`${DIR}/${file}`, "utf8"));
const noRepair = new PackRegistry({ packs: { json: { settings: { repair: "off" } } } });
const aggressive = new PackRegistry({ packs: { json: { settings: { repair: "aggressive" } } } });

function plainAjv(schema: { $schema?: string }) {
  const options = { strict: false, allErrors: true, ownProperties: true, logger: false } as const;
  const ajv = schema.$schema?.includes("draft-07") ? new Ajv(options) : new Ajv2020(options);
  addFormats(ajv);
  return ajv.compile(schema as AnySchema);
}

const escapeSegment = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

/** Ajv's errors named the way redraft's violations name them (a missing or extra property at its own pointer). */
function named(errors: readonly ErrorObject[] | null | undefined): string[] {
  return (errors ?? [])
    .map((e) => {
      const p = e.params as Record<string, unknown>;
      const key = p.missingProperty ?? p.additionalProperty ?? p.unevaluatedProperty;
      return `schema:${e.keyword} ${key === undefined ? e.instancePath : `${e.instancePath}/${escapeSegment(String(key))}`}`;
    })
    .sort();
}

const schemaViolations = (violations: readonly { ruleId: string; path?: string | undefined }[]) =>
  violations
    .filter((v) => v.ruleId.startsWith("schema:"))
    .map((v) => `${v.ruleId} ${v.path ?? ""}`)
    .sort();

describe.each(SCHEMAS)("real-world schema %s", (name) => {
  const schema = load(`${name}.schema.json`);
  const instances: Instance[] = load(`${name}.instances.json`);
  const ajv = plainAjv(schema);

  it("compiles, with its unknown keywords (x-…, example, $comment) ignored", () => {
    const lookup = compileJsonSchema(schema);
    expect(lookup.ok).toBe(true);
    // A valid record describes well over a hundred fields: the score's denominator counts them.
    const valid = instances.find((i) => i.expect === "valid");
    if (lookup.ok && valid) expect(lookup.schema.units(valid.content)).toBeGreaterThan(100);
  });

  it.each(instances.map((i) => [i.name, i] as const))("%s", async (_, instance) => {
    const draft = { id: name, kind: "json", content: instance.content, context: { schema } } as Draft;
    // Before repair: Ajv's verdict and Ajv's errors.
    const plain = await validateDraft(draft, { registry: noRepair });
    const accepted = ajv(instance.content) === true;
    expect(plain.passed).toBe(accepted);
    expect(schemaViolations(plain.violations)).toEqual(named(ajv.errors));
    expect(accepted).toBe(instance.expect === "valid");

    const lookup = compileJsonSchema(schema);
    if (!lookup.ok) throw new Error(lookup.problem.message);
    const { content, repairs } = lookup.schema.repair(instance.content);
    const report = await validateDraft(draft);
    expect(report.repairs).toEqual(repairs);
    // After repair: exactly Ajv's errors on the repaired record, and nothing removed is then missing.
    const after = ajv(content) === true;
    expect(report.passed).toBe(after);
    expect(schemaViolations(report.violations)).toEqual(named(ajv.errors));
    const removed = new Set(repairs.map((r) => r.path));
    for (const e of ajv.errors ?? []) {
      const missing = (e.params as { missingProperty?: string }).missingProperty;
      if (missing !== undefined)
        expect(removed.has(`${e.instancePath}/${escapeSegment(missing)}`)).toBe(false);
    }
    switch (instance.expect) {
      case "valid":
        expect(repairs).toEqual([]);
        expect(content).toBe(instance.content);
        expect(report.violations).toEqual([]);
        break;
      case "repairable":
        expect(repairs.length).toBeGreaterThan(0);
        expect(after).toBe(true);
        break;
      case "aggressive": {
        expect(after).toBe(false);
        const lossy = await validateDraft(draft, { registry: aggressive });
        expect(lossy.passed).toBe(true);
        break;
      }
      case "broken":
        expect(after).toBe(false);
        break;
    }
  });
});

describe("what repair does on the real schemas", () => {
  it("removes the order's empty optional pattern fields and the extra property, and says why", async () => {
    const schema = load("order-api.schema.json");
    const instance = (load("order-api.instances.json") as Instance[])[2] as Instance;
    const report = await validateDraft({
      id: "o",
      kind: "json",
      content: instance.content,
      context: { schema },
    });
    expect(report.repairs.map((r) => [r.path, r.message])).toEqual([
      [
        "/customer/loyalty/internalScore",
        'removed /customer/loyalty/internalScore: the schema allows no property "internalScore" in /customer/loyalty',
      ],
      [
        "/customer/vatId",
        'removed optional field /customer/vatId: "" does not match the pattern ^[A-Z]{2}[0-9A-Z]{8,12}$',
      ],
      [
        "/shipping/trackingNumber",
        'removed optional field /shipping/trackingNumber: "" does not match the pattern ^[A-Z0-9]{8,30}$',
      ],
      [
        "/lines/2/product/gtin",
        'removed optional field /lines/2/product/gtin: " " does not match the pattern ^[0-9]{8,14}$',
      ],
      ["/couponCode", 'removed optional field /couponCode: "" does not match the pattern ^[A-Z0-9]{4,16}$'],
    ]);
    expect(report.passed).toBe(true);
  });

  it("steps aside inside the bundle's oneOf of resources, and the report says where", async () => {
    const schema = load("clinical-bundle.schema.json");
    const instance = (load("clinical-bundle.instances.json") as Instance[]).find((i) =>
      i.name.includes("inside the oneOf"),
    ) as Instance;
    const report = await validateDraft({
      id: "b",
      kind: "json",
      content: instance.content,
      context: { schema },
    });
    expect(report.repairs).toEqual([]);
    const notes = report.violations.filter((v) => v.ruleId === JSON_RULE_IDS.repairSkipped);
    expect(notes.map((n) => n.path)).toContain("/entry/0/resource/language");
    expect(notes.every((n) => n.severity === "info" && /alternative or condition/.test(n.message))).toBe(
      true,
    );
  });
});
