import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DraftTooDeepError, DraftTooLargeError } from "../../shared/errors.js";
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

  it("counts an object measured before by its bound, wherever it sits, as walking it would", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 4 }), (inner, other) => {
        const shared = { inner };
        const measured = valueDepthAndSizeBound(shared, 1000);
        const known = { value: shared, ...measured };
        for (const v of [
          { context: { schema: shared } },
          [other, [shared]],
          { a: other, b: { c: shared } },
        ]) {
          expect(valueDepthAndSizeBound(v, 1000, known)).toEqual(valueDepthAndSizeBound(v, 1000));
        }
      }),
      { numRuns: 200 },
    );
  });

  it("a schema shared by drafts is measured once, and a too-deep one is refused every time", () => {
    let deep: unknown = {};
    for (let i = 0; i < 120; i++) deep = { not: deep };
    const draft = (schema: unknown) => ({ id: "d", kind: "json", content: {}, context: { schema } });
    for (let i = 0; i < 2; i++) expect(() => parseDraft(draft(deep))).toThrow(DraftTooDeepError);
    const shallow = { type: "object", properties: { a: { type: "string" } } };
    for (let i = 0; i < 2; i++) expect(parseDraft(draft(shallow)).context).toEqual({ schema: shallow });
    // Its depth counts toward the draft's wherever the limit is set.
    expect(() => parseDraft(draft(shallow), { maxDraftDepth: 3 })).toThrow(DraftTooDeepError);
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
