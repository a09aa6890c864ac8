/**
 * `uniqueItems` is checked in linear time (shared/packs/json/unique-items.ts) and says exactly what
 * Ajv's quadratic keyword says: the same verdict, the same pair of indices, the same message.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileJsonSchema } from "../../shared/packs/json/json.js";
import { duplicateItems } from "../../shared/packs/json/unique-items.js";

const stock = new Ajv2020({ allErrors: true, strict: false }).compile({ uniqueItems: true });
const ours = (() => {
  const lookup = compileJsonSchema({ uniqueItems: true });
  if (!lookup.ok) throw new Error(lookup.problem.message);
  return lookup.schema;
})();

const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(0, 1, -0, 1.5, "1", "", "a", true, false, null),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", "c"), tie("value"), { maxKeys: 3, noNullPrototype: true }),
  ),
})).value;

describe("uniqueItems in linear time", () => {
  it("reports the pair, the message and the verdict Ajv's own keyword reports", () => {
    fc.assert(
      fc.property(fc.array(json, { maxLength: 12 }), (items) => {
        const valid = stock(items);
        const errors = ours.errors(items);
        expect(errors.length === 0).toBe(valid);
        if (!valid) {
          const [expected] = stock.errors ?? [];
          expect(errors[0]?.params).toEqual(expected?.params);
          expect(errors[0]?.message).toBe(expected?.message);
          expect(errors[0]?.keyword).toBe("uniqueItems");
        }
      }),
      { numRuns: 500 },
    );
  });

  it("equal means equal as JSON: numbers by value, objects whatever their key order, strings apart from numbers", () => {
    expect(
      duplicateItems([
        { a: 1, b: [2] },
        { b: [2], a: 1 },
      ]),
    ).toEqual([1, 0]);
    expect(duplicateItems([1, 1.0])).toEqual([1, 0]);
    expect(duplicateItems([1, "1", [1], ["1"], null, "null", true, "true"])).toBeUndefined();
  });

  it("16,000 untyped items: one pass, the duplicate found at the end", () => {
    // Ajv's keyword compares pairs of untyped items: 16,000 of them cost it 128 million deep comparisons
    // (about ten seconds); here each item is serialized once.
    const items = Array.from({ length: 16_000 }, (_, i) => ({ n: i, tags: [i % 7, { k: "x" }] }));
    expect(duplicateItems(items)).toBeUndefined();
    expect(ours.isValid(items)).toBe(true);
    const withDuplicate = [...items, { tags: [3, { k: "x" }], n: 3 }];
    expect(duplicateItems(withDuplicate)).toEqual([16_000, 3]);
  });
});
