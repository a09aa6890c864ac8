/**
 * Issue 34, "inputs keep their meaning": a number JSON cannot carry (out of a double's range, NaN) is
 * refused with a reason, never validated as Infinity and exported as null.
 */
import { describe, expect, it } from "vitest";
import { InvalidDraftError } from "../../shared/errors.js";
import {
  findNonFinite,
  findUnderflow,
  mayHoldHugeNumber,
  mayHoldTinyNumber,
} from "../../shared/json-depth.js";
import { parseDraft, validateDraft } from "../../shared/validate.js";

const schema = { type: "object", properties: { n: { type: "number" } } };
const textWith = (literal: string) =>
  `{"id":"d1","kind":"json","content":{"n":${literal},"note":"1e400 in a string is text"},"context":{"schema":${JSON.stringify(schema)}}}`;

describe("numbers JSON cannot carry", () => {
  it("refuses a literal out of a double's range in a draft's text, naming where", async () => {
    for (const literal of ["1e400", "-1E+999", `1${"0".repeat(400)}`]) {
      const error = await validateDraft(textWith(literal)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidDraftError);
      expect((error as Error).message).toBe(
        "draft holds a number out of the range of a double (read as Infinity) at /content/n: it would be kept as null; send it as a string or within ±1.8e308",
      );
    }
  });

  it("refuses a non-zero literal too small for a double (read as 0) in a draft's text, naming where", async () => {
    for (const literal of ["1e-400", "-1e-400", `0.${"0".repeat(400)}1`, "2.5E-0400"]) {
      const error = await validateDraft(textWith(literal)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidDraftError);
      expect((error as Error).message).toBe(
        "draft holds a non-zero number too small for a double (read as 0) at /content/n: it would be kept as 0; send it as a string or at least ±5e-324",
      );
    }
    // Inside an array, beside literal zeros, and in a string (text, not a number).
    const nested = `{"id":"d1","kind":"json","content":{"list":[0.0,"1e-400",0e-999,1e-999]}}`;
    expect(() => parseDraft(nested)).toThrow("read as 0) at /content/list/3");
    expect(findUnderflow('[0, 0.0, -0e-500, "1e-400"]')).toBeUndefined();
  });

  it("refuses NaN and Infinity in a draft given as an object", () => {
    expect(() => parseDraft({ id: "d", kind: "json", content: { list: [1, Number.NaN] } })).toThrow(
      "draft holds NaN, which JSON cannot carry at /content/list/1",
    );
    expect(() => parseDraft({ id: "d", kind: "json", content: { "a/b": Number.NEGATIVE_INFINITY } })).toThrow(
      "at /content/a~1b",
    );
  });

  it("keeps the numbers a double holds, however large or small", async () => {
    for (const literal of [
      "1e308",
      "-1.7976931348623157e308",
      "5e-324",
      "0e5",
      "0.0",
      "-0e-999",
      `0.${"0".repeat(400)}`,
      "123",
    ]) {
      const report = await validateDraft(textWith(literal));
      expect(report.passed).toBe(true);
    }
    expect(parseDraft({ id: "d", kind: "json", content: { n: Number.MAX_VALUE } }).content).toEqual({
      n: Number.MAX_VALUE,
    });
  });

  it("walks the value only when the text may hold such a number", () => {
    expect(mayHoldHugeNumber('{"n":1e30}')).toBe(false);
    expect(mayHoldHugeNumber('{"n":1e300}')).toBe(true);
    expect(mayHoldTinyNumber('{"n":1e-30,"m":0.000001}')).toBe(false);
    expect(mayHoldTinyNumber('{"n":1e-300}')).toBe(true);
    expect(findNonFinite({ a: [1, { b: 2 }] })).toBeUndefined();
    expect(findNonFinite([0, Number.POSITIVE_INFINITY])).toEqual({
      path: "/1",
      value: Number.POSITIVE_INFINITY,
    });
  });
});
