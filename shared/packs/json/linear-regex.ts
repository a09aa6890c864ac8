/**
 * Regular expressions of untrusted schemas (`pattern`, `patternProperties`) matched in linear time: RE2's
 * automaton (re2js) never backtracks, so no pattern and no string can hold the process, whatever the
 * static check (regex-safety.ts) misses: `^(a{1,30}){1,30}$`, `^(\w|\d)+$`, `(a|a)*$`, `\d*\d*\d*x`.
 * A pattern RE2 cannot read (lookarounds, back-references) is ECMAScript's, as Ajv would compile it:
 * matched in this thread only on a short string and when the static analysis finds every split forced
 * (regex-safety.ts), otherwise in a worker stopped past a budget (regex-guard.ts). A pattern RE2 reads
 * whose splits are forced is matched by RegExp too on a short string: the same bounded steps, ten times
 * faster than re2js there, and ECMAScript's own meaning (`\s` with Unicode spaces).
 */
import type { RegExpEngine, RegExpLike } from "ajv/dist/types/index.js";
import { RE2JS } from "re2js";
import { guardedTest } from "./regex-guard.js";
import { matchesInBoundedSteps } from "./regex-safety.js";

/**
 * The longest string a backtracking RegExp matches in this thread, for a pattern whose splits are forced
 * (matchesInBoundedSteps: at most 2^8·n steps per pattern element); longer strings go to RE2, or to the
 * worker for a pattern RE2 cannot read.
 */
const IN_PROCESS_CHARS = 256;

/** Compiles `pattern` for RE2 when its syntax allows, else with RegExp (flags as Ajv passes them). */
function compile(pattern: string, flags: string): RegExpLike {
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch {
    // ECMAScript's own: a pattern it cannot read either fails the schema's compilation here.
    const native = new RegExp(pattern, flags);
    // A pattern whose every split is forced runs on a short string in bounded steps: matched here.
    const inProcess = matchesInBoundedSteps(pattern);
    const guarded: RegExpLike & { toString(): string } = {
      test: (text: string) =>
        inProcess && text.length <= IN_PROCESS_CHARS ? native.test(text) : guardedTest(pattern, flags, text),
      toString: () => `/${pattern}/${flags}`,
    };
    return guarded;
  }
  const native = matchesInBoundedSteps(pattern) ? ecmaScriptOrUndefined(pattern, flags) : undefined;
  const matcher: RegExpLike & { toString(): string } = {
    // ECMAScript `pattern` is unanchored: a match anywhere in the string counts, as RE2's `test` looks
    // for (without a Matcher or capture groups: its DFA, about twice as fast as `matcher(text).find()`).
    test: (text: string) =>
      native !== undefined && text.length <= IN_PROCESS_CHARS ? native.test(text) : re.test(text),
    // Ajv keys its compiled patterns by this text: two patterns must never share one.
    toString: () => `/${pattern}/${flags}`,
  };
  return matcher;
}

function ecmaScriptOrUndefined(pattern: string, flags: string): RegExp | undefined {
  try {
    return new RegExp(pattern, flags);
  } catch {
    return undefined;
  }
}

/** Ajv's `code.regExp`: what compiles every `pattern` and `patternProperties` of a schema. */
export const linearRegExp: RegExpEngine = Object.assign(compile, { code: "linearRegExp" });
