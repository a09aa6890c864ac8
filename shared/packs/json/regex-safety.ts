/**
 * Which regular expressions of an untrusted JSON Schema a backtracking engine (ECMAScript's RegExp, which
 * Ajv compiles `pattern` and `patternProperties` with) could take exponential time on. RegExp cannot be
 * interrupted: one such pattern and one hostile string stop the validating process, in the local runtime
 * every draft it is running, until the Lambda timeout or for ever.
 *
 * The analysis is redraft's own, over the parse tree of `ret`: a repetition that can run more than once
 * holding, somewhere in its body, a repetition that can match in more than one way (one of the two
 * unbounded), where what the inner one matches can also be matched by what comes right after it, so that
 * the characters can be split between them in many ways. `(a+)+`, `(\w+\s?)*`, `(a|b+)+`, `(a{2,3})+`
 * and `(a+){2,20}` are found; `(\S+\s){4}`, `[^\s]+(\s[^\s]+)*` and `([A-Z0-9]{3})?` are not, because
 * each split there is forced. It does not see ambiguity between alternatives of one repetition
 * (`(a|a)*`, `(a|ab)*`) or polynomial sequences (`\d*\d*\d*$`); a linear-time engine (RE2) would, at the
 * cost of ECMAScript syntax it does not accept and of bundle size.
 */
import retModule, { type Root, type SetTokens, type Token, types } from "ret";

// ret is CommonJS: Node's ESM loader hands over its module.exports, which holds `tokenizer`; a bundler
// hands over its `default` export, the tokenizer itself.
const tokenize: (pattern: string) => Root =
  typeof retModule === "function" ? (retModule as (pattern: string) => Root) : retModule.tokenizer;

const MAX_CODE_POINT = 0x10ffff;

/** A set of code points as sorted, disjoint, inclusive ranges. */
type CharSet = readonly (readonly [number, number])[];

const NONE: CharSet = [];
const ANY: CharSet = [[0, MAX_CODE_POINT]];

function union(a: CharSet, b: CharSet): CharSet {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  const sorted = [...a, ...b].sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [from, to] of sorted) {
    const last = out[out.length - 1];
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else out.push([from, to]);
  }
  return out;
}

function complement(set: CharSet): CharSet {
  const out: [number, number][] = [];
  let next = 0;
  for (const [from, to] of set) {
    if (from > next) out.push([next, from - 1]);
    next = to + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

function overlaps(a: CharSet, b: CharSet): boolean {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const [aFrom, aTo] = a[i] as readonly [number, number];
    const [bFrom, bTo] = b[j] as readonly [number, number];
    if (aTo < bFrom) i++;
    else if (bTo < aFrom) j++;
    else return true;
  }
  return false;
}

function setOf(tokens: SetTokens, not: boolean): CharSet {
  let set: CharSet = NONE;
  for (const token of tokens) {
    if (token.type === types.CHAR) set = union(set, [[token.value, token.value]]);
    else if (token.type === types.RANGE) set = union(set, [[token.from, token.to]]);
    else set = union(set, setOf(token.set, token.not));
  }
  return not ? complement(set) : set;
}

/** What a token (or a sequence) can start with, and whether it can match nothing at all. */
interface Start {
  readonly first: CharSet;
  readonly nullable: boolean;
}

class Analysis {
  readonly #starts = new Map<Token | Root, Start>();
  /** The worst risk found so far. */
  risk: BacktrackingRisk | undefined;

  start(token: Token | Root): Start {
    const known = this.#starts.get(token);
    if (known) return known;
    const found = this.#compute(token);
    this.#starts.set(token, found);
    return found;
  }

  sequence(tokens: readonly Token[]): Start {
    let first: CharSet = NONE;
    for (const token of tokens) {
      const start = this.start(token);
      first = union(first, start.first);
      if (!start.nullable) return { first, nullable: false };
    }
    return { first, nullable: true };
  }

  #compute(token: Token | Root): Start {
    switch (token.type) {
      case types.CHAR:
        return { first: [[token.value, token.value]], nullable: false };
      case types.SET:
        return { first: setOf(token.set, token.not), nullable: false };
      case types.POSITION:
        return { first: NONE, nullable: true };
      case types.REFERENCE:
        // A back-reference matches whatever its group did: anything, or nothing.
        return { first: ANY, nullable: true };
      case types.REPETITION: {
        const inner = this.start(token.value);
        return { first: inner.first, nullable: token.min === 0 || inner.nullable };
      }
      default: {
        // ROOT or GROUP; a lookaround consumes nothing.
        if (token.type === types.GROUP && (token.followedBy || token.notFollowedBy || token.lookBehind))
          return { first: NONE, nullable: true };
        let first: CharSet = NONE;
        let nullable = false;
        for (const option of token.options ?? [token.stack ?? []]) {
          const start = this.sequence(option);
          first = union(first, start.first);
          nullable ||= start.nullable;
        }
        return { first, nullable };
      }
    }
  }

  /**
   * Whether `token`, followed by what can start `after`, holds a nested repetition that backtracks
   * exponentially. `outer` is the innermost enclosing repetition that can run more than once.
   */
  explodes(token: Token | Root, after: CharSet, outer: { readonly unbounded: boolean } | undefined): boolean {
    if (token.type === types.REPETITION) {
      const unbounded = token.max === Number.POSITIVE_INFINITY;
      const varies = token.max > 1 && token.min !== token.max;
      const body = this.start(token.value);
      if (outer && varies && (outer.unbounded || unbounded) && overlaps(body.first, after)) {
        // An unbounded outer repetition splits a run in exponentially many ways; a bounded one
        // (`(a+){2,20}`) in polynomially many, of the degree of its bound.
        if (outer.unbounded) this.risk = "exponential";
        else this.risk ??= "polynomial";
        if (this.risk === "exponential") return true;
      }
      if (token.max <= 1) return this.explodes(token.value, after, outer);
      // Inside a repetition that runs again, what follows its body is its body once more, or what follows it.
      return this.explodes(token.value, union(after, body.first), {
        unbounded: unbounded || outer?.unbounded === true,
      });
    }
    if (token.type !== types.ROOT && token.type !== types.GROUP) return false;
    for (const option of token.options ?? [token.stack ?? []]) {
      // Right to left: what can follow each token is the rest of its sequence, then what follows the group.
      let follows = after;
      for (let i = option.length - 1; i >= 0; i--) {
        const child = option[i] as Token;
        if (this.explodes(child, follows, outer)) return true;
        // After `$` comes the end of the text: nothing the inner repetition could trade characters with.
        if (child.type === types.POSITION && child.value === "$") follows = NONE;
        else {
          const start = this.start(child);
          follows = start.nullable ? union(start.first, follows) : start.first;
        }
      }
    }
    return false;
  }
}

/**
 * Whether a backtracking engine could take super-linear time on `pattern` (exponential or polynomial,
 * see `backtrackingRisk`). A pattern `ret` cannot read is left to Ajv, which refuses what RegExp
 * refuses; a pattern nested too deep to analyse counts as exponential.
 */
export function backtracksExponentially(pattern: string): boolean {
  return backtrackingRisk(pattern) !== undefined;
}

/** What a backtracking engine risks on `pattern`: exponential or polynomial time, or nothing found. */
export type BacktrackingRisk = "exponential" | "polynomial";

/**
 * The risk the analysis finds in `pattern` (see the module's comment): `exponential` under an unbounded
 * outer repetition (`(a+)+`), `polynomial` under a bounded one (`(a+){2,20}`), undefined when none.
 */
export function backtrackingRisk(pattern: string): BacktrackingRisk | undefined {
  let root: Root;
  try {
    root = tokenize(pattern);
  } catch {
    return undefined;
  }
  try {
    // Nothing follows the whole pattern that could make it backtrack (a match may end anywhere).
    const analysis = new Analysis();
    analysis.explodes(root, NONE, undefined);
    return analysis.risk;
  } catch (error) {
    if (error instanceof RangeError) return "exponential";
    throw error;
  }
}

/**
 * Whether a backtracking engine matches `pattern` on a short string in time bounded by the pattern's
 * size: anchored at the start (`^`, so one starting position); every repetition that can run more than
 * once holds no repetition, alternative or back-reference of its own, and what its body starts with
 * cannot also start what follows it (so the split of a run is forced); lookarounds hold no such
 * repetition; and at most MAX_UNFORCED_OPTIONALS optional parts (`?`) can start like what follows them
 * (each doubles the ways tried). On a string of n characters that is at most 2^k·n steps per pattern
 * element: the host matches such patterns itself when the string is short (regex-guard.ts), sends the
 * rest to a worker it can stop. Conservative: a pattern it cannot read, or nested too deep, is not.
 */
export function matchesInBoundedSteps(pattern: string): boolean {
  let root: Root;
  try {
    root = tokenize(pattern);
  } catch {
    return false;
  }
  const first = root.stack?.[0];
  if (!root.stack || first?.type !== types.POSITION || first.value !== "^") return false;
  try {
    const analysis = new Analysis();
    const unforced = { optionals: 0 };
    return (
      forcedSplits(analysis, root, NONE, false, unforced) && unforced.optionals <= MAX_UNFORCED_OPTIONALS
    );
  } catch (error) {
    if (error instanceof RangeError) return false;
    throw error;
  }
}

/** Optional parts whose start overlaps what follows them, at most, for matchesInBoundedSteps. */
const MAX_UNFORCED_OPTIONALS = 8;

function holdsRepetition(token: Token | Root): boolean {
  if (token.type === types.REPETITION) return token.max > 1 || holdsRepetition(token.value);
  if (token.type !== types.ROOT && token.type !== types.GROUP) return false;
  return (token.options ?? [token.stack ?? []]).some((option) => option.some(holdsRepetition));
}

function forcedSplits(
  analysis: Analysis,
  token: Token | Root,
  after: CharSet,
  repeated: boolean,
  unforced: { optionals: number },
): boolean {
  switch (token.type) {
    case types.REFERENCE:
      return false;
    case types.REPETITION: {
      const body = analysis.start(token.value);
      if (token.max > 1) {
        if (repeated) return false;
        if (token.min !== token.max && overlaps(body.first, after)) return false;
        return forcedSplits(analysis, token.value, union(after, body.first), true, unforced);
      }
      if (overlaps(body.first, after)) unforced.optionals += 1;
      return forcedSplits(analysis, token.value, after, repeated, unforced);
    }
    case types.ROOT:
    case types.GROUP: {
      if (token.type === types.GROUP && (token.followedBy || token.notFollowedBy || token.lookBehind))
        return !holdsRepetition(token);
      const options = token.options ?? [token.stack ?? []];
      if (repeated && options.length > 1) return false;
      if (options.length > 1) unforced.optionals += options.length - 1;
      for (const option of options) {
        let follows = after;
        for (let i = option.length - 1; i >= 0; i--) {
          const child = option[i] as Token;
          if (!forcedSplits(analysis, child, follows, repeated, unforced)) return false;
          if (child.type === types.POSITION && child.value === "$") follows = NONE;
          else {
            const start = analysis.start(child);
            follows = start.nullable ? union(start.first, follows) : start.first;
          }
        }
      }
      return true;
    }
    default:
      return true;
  }
}
