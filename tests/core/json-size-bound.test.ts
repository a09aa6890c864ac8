import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DraftTooLargeError } from "../../shared/errors.js";
import { valueDepth, valueDepthAndSizeBound } from "../../shared/json-depth.js";
import { parseDraft } from "../../shared/validate.js";

/**
 * parseDraft weighs an object draft by an upper bound of its JSON size and serializes it only when
 * the bound could pass the limit: the bound must never be below the real size, or an oversized
 * draft would get through.
 */
describe("valueDepthAndSizeBound", () => {
  const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? "");

  it("never says less than JSON.stringify's UTF-8 bytes, and gives valueDepth's depth", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.string({ unit: "binary" }), (value, text) => {
        for (const v of [value, { text, value }, [text, value, -1.2345678901234567e-308]]) {
          const { depth, maxBytes } = valueDepthAndSizeBound(v, 1000);
          expect(maxBytes).toBeGreaterThanOrEqual(bytes(v));
          expect(depth).toBe(valueDepth(v, 1000));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("gives up (Infinity) on values whose JSON is not their own data", () => {
    expect(valueDepthAndSizeBound({ at: new Date(0) }, 10).maxBytes).toBe(Number.POSITIVE_INFINITY);
    expect(valueDepthAndSizeBound({ toJSON: () => "x".repeat(100) }, 10).maxBytes).toBe(
      Number.POSITIVE_INFINITY,
    );
    class Custom {
      a = 1;
    }
    expect(valueDepthAndSizeBound([new Custom()], 10).maxBytes).toBe(Number.POSITIVE_INFINITY);
  });

  it("still refuses an oversized object draft, with its exact size", () => {
    const draft = { id: "big", kind: "json", content: { text: "\u0001".repeat(2000) } };
    const exact = bytes(draft);
    expect(() => parseDraft(draft, { maxDraftBytes: exact - 1 })).toThrow(DraftTooLargeError);
    expect(() => parseDraft(draft, { maxDraftBytes: exact - 1 })).toThrow(String(exact));
    expect(parseDraft(draft, { maxDraftBytes: exact }).id).toBe("big");
    // A toJSON that makes the draft large is measured by serializing it.
    const sneaky = { id: "s", kind: "json", content: { toJSON: () => "y".repeat(5000) } };
    expect(() => parseDraft(sneaky, { maxDraftBytes: 1000 })).toThrow(DraftTooLargeError);
  });
});
