/**
 * Packs may register schemas by `$id` (`settings.schemas` of the json kind): a draft's schema that
 * `$ref`s one is resolved from the pack's configuration, never fetched; without it, the same schema is
 * refused as pointing outside itself.
 */
import { describe, expect, it } from "vitest";
import { InvalidPackError } from "../../shared/errors.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

const ADDRESS = {
  $id: "https://schemas.example.com/address.json",
  type: "object",
  required: ["city"],
  properties: { city: { type: "string", minLength: 1 }, zip: { $ref: "#/$defs/zip" } },
  $defs: { zip: { type: "string", pattern: "^[0-9]{5}$" } },
  additionalProperties: false,
};
const LEGACY = {
  $schema: "http://json-schema.org/draft-04/schema#",
  id: "https://schemas.example.com/legacy-id.json",
  type: "string",
  pattern: "^ID-[0-9]+$",
};

const registry = () => new PackRegistry({ packs: { json: { settings: { schemas: [ADDRESS, LEGACY] } } } });

const draft = (
  content: unknown,
  schema: unknown = {
    type: "object",
    required: ["shipping"],
    properties: {
      shipping: { $ref: "https://schemas.example.com/address.json" },
      zip: { $ref: "https://schemas.example.com/address.json#/$defs/zip" },
    },
  },
) => ({ id: "d", kind: "json", context: { schema }, content });

describe("schemas a pack registers by $id", () => {
  it("resolve a draft schema's $ref to them, fragments included, with their own checks", async () => {
    const ok = await validateDraft(draft({ shipping: { city: "Lyon", zip: "69001" }, zip: "75001" }), {
      registry: registry(),
    });
    expect(ok.counts.error).toBe(0);
    const bad = await validateDraft(draft({ shipping: { zip: "6900" }, zip: "x" }), { registry: registry() });
    expect(bad.violations.filter((v) => v.severity === "error").map((v) => [v.ruleId, v.path])).toEqual(
      expect.arrayContaining([
        ["schema:required", "/shipping/city"],
        ["schema:pattern", "/shipping/zip"],
        ["schema:pattern", "/zip"],
      ]),
    );
  });

  it("a draft-04 schema references a draft-04 registration by its id", async () => {
    const schema = {
      $schema: "http://json-schema.org/draft-04/schema#",
      type: "object",
      properties: { ref: { $ref: "https://schemas.example.com/legacy-id.json" } },
    };
    const good = await validateDraft(draft({ ref: "ID-42" }, schema), { registry: registry() });
    const bad = await validateDraft(draft({ ref: "42" }, schema), { registry: registry() });
    expect(good.counts.error).toBe(0);
    expect(bad.violations.map((v) => v.ruleId)).toContain("schema:pattern");
  });

  it("without the registration the same schema is refused, nothing is fetched", async () => {
    await expect(
      validateDraft(draft({ shipping: { city: "Lyon" } }), { registry: new PackRegistry() }),
    ).rejects.toMatchObject({
      name: "InvalidSchemaError",
      message: expect.stringMatching(/points outside the schema/),
    });
  });

  it("a registration that cannot be used fails the pack's configuration, naming it", () => {
    const configured = (schemas: unknown[]) => () =>
      new PackRegistry({ packs: { json: { settings: { schemas } } } }).get("json");
    expect(configured([{ type: "string" }])).toThrow(InvalidPackError);
    expect(configured([{ type: "string" }])).toThrow(
      /registered schema 1 must name itself with an absolute URI/,
    );
    expect(configured([{ $id: "https://x.example/a.json", type: "nope" }])).toThrow(
      /registered schema 1 \(https:\/\/x\.example\/a\.json\)/,
    );
    expect(
      configured([{ $id: "https://x.example/a.json", $ref: "https://elsewhere.example/b.json" }]),
    ).toThrow(/points outside the schema/);
  });
});
