/**
 * JSON read without recursion. A draft is untrusted input: ten thousand nested brackets cost a
 * few kilobytes to send and overflow the stack of anything that walks the value recursively
 * (JSON.stringify, zod, canonical hashing, rule walks). These helpers look at the text or the value
 * with loops and explicit stacks only, so the depth is known before anything recursive runs.
 */

const BOM = "\uFEFF";

/** The text without a leading UTF-8 byte-order mark: the mark says how the file is encoded, it is not content. */
export const stripBom = (text: string): string => (text.startsWith(BOM) ? text.slice(1) : text);

/**
 * How deeply objects and arrays nest in a JSON text (`{}` is 1, `[[1]]` is 2), in one pass over its
 * characters. Strings and their escapes are skipped, so brackets inside strings do not count. Stops
 * as soon as the depth passes `limit`, returning that depth. The text need not be valid JSON.
 */
export function jsonTextDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character, which cannot end the string.
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return max;
}

/**
 * How deeply objects and arrays nest in a value, walked with an explicit stack. Stops as soon as the
 * depth passes `limit` (which also bounds the walk of a value that contains itself).
 */
export function valueDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    if (item.value === null || typeof item.value !== "object") continue;
    const depth = item.depth + 1;
    if (depth > max) {
      max = depth;
      if (max > limit) return max;
    }
    const children = Array.isArray(item.value) ? item.value : Object.values(item.value);
    for (const child of children) stack.push({ value: child, depth });
  }
  return max;
}

/** The most UTF-8 bytes one UTF-16 code unit can take in JSON text (`\u001f`, a lone surrogate). */
const MAX_BYTES_PER_UNIT = 6;
/** The longest number JSON.stringify writes (`-1.2345678901234567e-308`). */
const MAX_NUMBER_CHARS = 24;

/**
 * A value's depth (as {@link valueDepth}) and, in the same walk, an upper bound of the UTF-8 bytes
 * of `JSON.stringify(value)`: every code unit of a string or key counted as 6 bytes, every number
 * as 24. A caller that only needs to know the value is under a size limit can skip the
 * serialization when the bound is; `Infinity` when the value holds anything whose JSON is not its
 * own enumerable data (a `toJSON`, a class instance), which only serializing can measure. `known`, an
 * object inside `value` measured before (a schema many drafts share), is counted by its bound, not walked.
 */
export function valueDepthAndSizeBound(
  value: unknown,
  limit: number,
  known?: KnownBound,
): { depth: number; maxBytes: number } {
  const rootBytes = leafBytes(value);
  if (rootBytes >= 0) return { depth: 0, maxBytes: rootBytes };
  let max = 0;
  let bytes = 0;
  // Only objects and arrays go on the stack, with their own depth, in two parallel stacks: this walk
  // runs on every draft validated, and a push and pop (or an allocation) per scalar was most of its cost.
  const objects: object[] = [value as object];
  const depths: number[] = [1];
  while (objects.length > 0) {
    const v = objects.pop() as object;
    const depth = depths.pop() as number;
    if (depth > max) {
      max = depth;
      if (max > limit) return { depth: max, maxBytes: bytes };
    }
    const array = Array.isArray(v);
    const proto = Object.getPrototypeOf(v);
    const plain = array ? proto === Array.prototype : proto === Object.prototype || proto === null;
    if (!plain || typeof (v as { toJSON?: unknown }).toJSON === "function") bytes = Number.POSITIVE_INFINITY;
    if (array) {
      bytes += 2 + v.length;
      for (const child of v) {
        const size = leafBytes(child);
        if (size >= 0) bytes += size;
        else if (known !== undefined && child === known.value) {
          bytes += known.maxBytes;
          if (depth + known.depth > max) max = depth + known.depth;
        } else {
          objects.push(child as object);
          depths.push(depth + 1);
        }
      }
    } else {
      bytes += 2;
      const record = v as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const child = record[key];
        bytes += MAX_BYTES_PER_UNIT * key.length + 4;
        const size = leafBytes(child);
        if (size >= 0) bytes += size;
        else if (known !== undefined && child === known.value) {
          bytes += known.maxBytes;
          if (depth + known.depth > max) max = depth + known.depth;
        } else {
          objects.push(child as object);
          depths.push(depth + 1);
        }
      }
    }
  }
  return { depth: max, maxBytes: bytes };
}

/**
 * Where a value holds a number JSON cannot carry (NaN, Infinity: JSON.stringify writes them as null, and
 * JSON.parse reads a literal out of a double's range, `1e400`, as Infinity), as a JSON pointer, with the
 * number; undefined when it holds none. Walked with an explicit stack (the value's depth is bounded first).
 */
export function findNonFinite(value: unknown): { path: string; value: number } | undefined {
  const stack: { value: unknown; path: string }[] = [{ value, path: "" }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const v = item.value;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return { path: item.path, value: v };
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ value: v[i], path: `${item.path}/${i}` });
    } else
      for (const [key, child] of Object.entries(v))
        stack.push({ value: child, path: `${item.path}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}` });
  }
  return undefined;
}

/**
 * Whether a JSON text may hold a number literal out of a double's range: an exponent of three digits or
 * more, or a run of 309 digits. A cheap filter (a string may match it too): only a text it passes is walked.
 */
export const mayHoldHugeNumber = (text: string): boolean => /[eE]\+?\d{3}|\d{309}/.test(text);

/** An object measured before by valueDepthAndSizeBound, with what it found. */
export interface KnownBound {
  readonly value: object;
  readonly depth: number;
  readonly maxBytes: number;
}

/** The size bound of a scalar's JSON, or -1 for an object or array (walked on its own). */
function leafBytes(v: unknown): number {
  if (typeof v === "string") return MAX_BYTES_PER_UNIT * v.length + 2;
  // A number JSON cannot carry (NaN, ±Infinity) makes the bound infinite: the caller's exact check
  // then finds it (findNonFinite) instead of serializing it as null.
  if (typeof v === "number") return Number.isFinite(v) ? MAX_NUMBER_CHARS : Number.POSITIVE_INFINITY;
  if (v === null || typeof v !== "object") return 5;
  return -1;
}

const isJsonSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * A top-level JSON array's elements, or a top-level object's members, each as its own text; or, when
 * the caller set a bound, word that there are more than that (nothing more was collected).
 */
export type TopLevel =
  | { type: "array"; elements: string[] }
  | { type: "object"; members: Array<{ key: string; value: string }> }
  | { type: "over"; maxItems: number };

/**
 * Splits a JSON array or object text at its top level without parsing what is nested: the array's
 * elements, or the object's members (`key` is the member name's JSON text, quotes included), each
 * as the slice of the text that holds it. Each slice is still to be parsed, bounded, on its own.
 * Undefined when the top level is not well formed (not an array or object, an empty element, text
 * after the end): the caller then lets JSON.parse describe the problem. With `maxItems`, a text of
 * more than that many elements or members is `over` as soon as the scan finds one more.
 */
export function splitTopLevel(text: string, maxItems = Number.POSITIVE_INFINITY): TopLevel | undefined {
  let i = 0;
  while (i < text.length && isJsonSpace(text.charCodeAt(i))) i++;
  const open = text[i];
  if (open !== "[" && open !== "{") return undefined;
  const items: Array<{ start: number; end: number; colon: number }> = [];
  let depth = 0;
  let inString = false;
  let start = i + 1;
  let colon = -1;
  let close = -1;
  for (; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "[" || c === "{") depth++;
    else if (c === "]" || c === "}") {
      depth--;
      if (depth === 0) {
        items.push({ start, end: i, colon });
        close = i;
        break;
      }
    } else if (depth === 1 && c === ",") {
      // A bound keeps a text of millions of tiny elements from costing an object each.
      if (items.length >= maxItems) return { type: "over", maxItems };
      items.push({ start, end: i, colon });
      start = i + 1;
      colon = -1;
    } else if (depth === 1 && c === ":" && colon < 0) colon = i;
  }
  if (close < 0 || text[close] !== (open === "[" ? "]" : "}")) return undefined;
  if (text.slice(close + 1).trim() !== "") return undefined;
  const only = items[0];
  if (items.length === 1 && only && text.slice(only.start, only.end).trim() === "") {
    return open === "[" ? { type: "array", elements: [] } : { type: "object", members: [] };
  }
  if (open === "[") {
    const elements = items.map((it) => text.slice(it.start, it.end).trim());
    return elements.includes("") ? undefined : { type: "array", elements };
  }
  const members: Array<{ key: string; value: string }> = [];
  for (const it of items) {
    if (it.colon < 0) return undefined;
    const key = text.slice(it.start, it.colon).trim();
    const value = text.slice(it.colon + 1, it.end).trim();
    if (key === "" || value === "") return undefined;
    members.push({ key, value });
  }
  return { type: "object", members };
}

/**
 * The string-valued top-level fields of a JSON object text, read without parsing anything nested:
 * enough to name a draft (its `id`, its `kind`) that is too deep to parse.
 */
function topLevelStrings(text: string): Map<string, string> {
  const top = splitTopLevel(stripBom(text));
  const out = new Map<string, string>();
  if (top?.type !== "object") return out;
  for (const { key, value } of top.members) {
    if (!key.startsWith('"') || !value.startsWith('"')) continue;
    try {
      const [k, v] = [JSON.parse(key), JSON.parse(value)];
      if (typeof k === "string" && typeof v === "string" && !out.has(k)) out.set(k, v);
    } catch {
      // not a plain string member: skipped
    }
  }
  return out;
}

/**
 * A top-level string field of an input that may not be a valid draft: read from the value, or from
 * the text without parsing what is nested (the text may be too deep or too broken to parse).
 */
export function topLevelField(input: unknown, field: string): string | undefined {
  if (typeof input === "string") return topLevelStrings(input).get(field);
  if (input === null || typeof input !== "object" || Array.isArray(input)) return undefined;
  const value = Object.hasOwn(input, field) ? (input as Record<string, unknown>)[field] : undefined;
  return typeof value === "string" ? value : undefined;
}

/**
 * Whether a JSON text may hold a non-zero number literal too small for a double (`1e-400`, or `0.` and
 * 400 zeros and a 1), which JSON.parse reads as 0: a negative exponent of three digits or more, or a run
 * of 200 digits (below both, a literal is at least 1e-299). A cheap filter, as mayHoldHugeNumber.
 */
export const mayHoldTinyNumber = (text: string): boolean => /[eE]-\d{3}|\d{200}/.test(text);

/** A number literal with a non-zero digit before its exponent: it does not mean 0 (`0e5`, `-0.0` do). */
const nonZeroLiteral = (source: string): boolean => /^-?[0-9.]*[1-9]/.test(source);

/**
 * Where a JSON text holds a non-zero number literal that a double cannot hold and JSON.parse reads as 0
 * (it underflows: `1e-400`), as a JSON pointer; undefined when it holds none. The text is parsed again
 * with a reviver that sees each number's source text (Node 22) and marks an underflowed one NaN, which
 * findNonFinite then locates; only texts mayHoldTinyNumber passes, already parsed once, come here.
 */
export function findUnderflow(text: string): string | undefined {
  let any = false;
  const marked = JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
    const source = context?.source;
    if (value !== 0 || source === undefined || !nonZeroLiteral(source)) return value;
    any = true;
    return Number.NaN;
  }) as unknown;
  return any ? findNonFinite(marked)?.path : undefined;
}
