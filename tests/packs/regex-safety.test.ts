import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backtracksExponentially } from "../../shared/packs/json/regex-safety.js";

/**
 * The untrusted-schema check on regular expressions: which nestings make ECMAScript's backtracking
 * RegExp explode, and which are forced and stay linear. The exploding ones are the textbook ReDoS
 * patterns (OWASP's list among them); the linear ones come from real schemas.
 */
const EXPONENTIAL = [
  "^(a+)+$",
  "(a*)*",
  "(\\w+\\s?)+$",
  "(a{2,3})+",
  "(a+){2,20}",
  "^(\\d+)*$",
  "((ab)+c?)+",
  "(x+x+)+y",
  "(?:a|b+)+",
  "((a+)?)+",
  "^(([a-z])+.)+[A-Z]([a-z])+$",
  "^(\\w+\\.?)*\\w+@",
  "^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$",
];

const LINEAR = [
  "^[a-z]+$",
  "([A-Z0-9]{3})?",
  "(-\\d{2}){2}",
  "(a{3})+",
  "(a+)?",
  "^(\\S+\\s){4}\\S+$",
  "^[^\\s]+(\\s[^\\s]+)*$",
  "^([a-zA-Z0-9_\\-\\.]+)@([a-zA-Z0-9_\\-\\.]+)\\.([a-zA-Z]{2,5})$",
  "^[0-9]{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?$",
  "^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$",
  "^([a-z0-9_.-]+/[a-z0-9_.-]+(/[^@]+)?@[A-Za-z0-9._/-]+|docker://.+|\\./.+)$",
  "\\p{Letter}+",
  "^(?=.*[A-Z]).{8,}$",
  "^(\\d{1,3}\\.){3}\\d{1,3}$",
  "^#([0-9a-f]{2}){3}$",
];

describe("regular expressions of an untrusted schema", () => {
  it.each(EXPONENTIAL)("finds that %s backtracks exponentially", (pattern) => {
    expect(backtracksExponentially(pattern)).toBe(true);
  });

  it.each(LINEAR)("lets %s through: every split is forced or bounded", (pattern) => {
    expect(backtracksExponentially(pattern)).toBe(false);
  });

  it("leaves what it cannot parse to Ajv, and counts a nesting too deep to analyse as exponential", () => {
    expect(backtracksExponentially("(")).toBe(false);
    expect(backtracksExponentially(`${"(?:".repeat(20_000)}a${")".repeat(20_000)}`)).toBe(true);
  });

  it("wraps any pattern: wrapping a nested repetition keeps it found, adding an outer ? changes nothing", () => {
    fc.assert(
      fc.property(fc.constantFrom(...EXPONENTIAL), fc.constantFrom("(?:", "("), (pattern, open) => {
        expect(backtracksExponentially(`${open}${pattern})`)).toBe(true);
        expect(backtracksExponentially(`${open}${pattern})?`)).toBe(true);
      }),
    );
  });

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(..."()[]{}*+?|\\^$.ab,0123-:=!<>") }), (pattern) => {
        expect(typeof backtracksExponentially(pattern)).toBe("boolean");
      }),
      { numRuns: 2_000 },
    );
  });
});
