/**
 * A declarative pack's own `regex` rule patterns, matched under the same guard as a schema's
 * (json/linear-regex.ts): a pack file is as untrusted as a draft's schema, and ECMAScript's RegExp
 * cannot be interrupted, so `^(a+)+$` on a long string would hold `redraft run` (and every draft in
 * it) for as long as it backtracks. RE2's automaton (re2js) never backtracks; a pattern RE2 cannot
 * read (lookarounds, back-references) is tested in the guard's worker, stopped past its budget
 * (SchemaTooSlowError: the draft is rejected `invalid_schema`, `too_slow`). A pattern whose splits are
 * all forced (regex-safety.ts) is matched by RegExp on a short string: the same bounded steps, and
 * ECMAScript's own meaning.
 */
import { RE2JS } from "re2js";
import { guardedTest } from "./json/regex-guard.js";
import { matchesInBoundedSteps } from "./json/regex-safety.js";

/** The longest string matched by RegExp in this thread, for a pattern whose splits are forced (as linear-regex.ts). */
const IN_PROCESS_CHARS = 256;

export interface RulePattern {
  /** Whether the pattern matches somewhere in `text`. */
  test(text: string): boolean;
  /** The first match's text, when it can be had without backtracking; undefined otherwise (or no match). */
  match(text: string): string | undefined;
  toString(): string;
}

/** RE2's flags for ECMAScript's, or undefined when one has no RE2 counterpart (`v`). */
function re2Flags(flags: string): number | undefined {
  let out = 0;
  for (const flag of flags) {
    if (flag === "i") out |= RE2JS.CASE_INSENSITIVE;
    else if (flag === "m") out |= RE2JS.MULTILINE;
    else if (flag === "s") out |= RE2JS.DOTALL;
    else if (flag !== "u" && flag !== "d") return undefined;
  }
  return out;
}

/**
 * Compiles a rule's pattern (ECMAScript syntax and flags, checked here: an invalid one throws
 * SyntaxError) into a matcher no string can hold.
 */
export function compileRulePattern(pattern: string, flags: string): RulePattern {
  const native = new RegExp(pattern, flags.replace(/[gy]/g, ""));
  const bounded = matchesInBoundedSteps(pattern);
  const shown = `/${pattern}/${flags}`;
  const re2Options = re2Flags(flags);
  let re2: RE2JS | undefined;
  if (re2Options !== undefined)
    try {
      re2 = RE2JS.compile(pattern, re2Options);
    } catch {
      re2 = undefined;
    }
  const short = (text: string) => bounded && text.length <= IN_PROCESS_CHARS;
  return {
    test: (text) =>
      short(text)
        ? native.test(text)
        : re2
          ? re2.test(text)
          : guardedTest(pattern, flags.replace(/[gyd]/g, ""), text),
    match: (text) => {
      if (short(text)) return native.exec(text)?.[0];
      if (!re2) return undefined;
      const matcher = re2.matcher(text);
      return matcher.find() ? (matcher.group() ?? undefined) : undefined;
    },
    toString: () => shown,
  };
}
