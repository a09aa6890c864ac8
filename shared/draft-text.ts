/**
 * A draft read from JSON text with the schema it carries parsed once per distinct schema, not once
 * per draft. Drafts from S3 and events each bring their `context.schema` as text (12 KB of a 19 KB
 * draft on the json bench): one scan finds its span while measuring the depth, and a schema text seen
 * before is answered with the same frozen object, so only the rest of the draft is parsed and the json
 * pack's compiled-schema cache finds the schema by identity.
 */

import { jsonTextDepth } from "./json-depth.js";

/** What one scan of a draft's text found: its nesting depth and where its `context.schema` object is. */
export interface DraftTextScan {
  /** As jsonTextDepth: stops counting once past the limit. */
  readonly depth: number;
  /** `[start, end)` of the `context.schema` object's text, when the text names exactly one, plainly. */
  readonly schema?: readonly [number, number];
  /** The parsed schema, when its text is the one the last draft carried (found without scanning it). */
  readonly known?: unknown;
}

/** A schema text parsed before: its value (frozen) and how deep its objects and arrays nest. */
interface Interned {
  readonly text: string;
  readonly value: unknown;
  readonly depth: number;
}

/**
 * The schema text the last draft carried: a stream of drafts sharing one schema compares it in place
 * (a native comparison) instead of scanning, slicing and hashing 12 KB per draft.
 */
let last: Interned | undefined;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/** The index of the quote closing the string opened at `open`, or -1 when it never closes. */
function stringEnd(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return -1;
    // A quote after an odd run of backslashes is escaped; the runs between quotes are disjoint, so the
    // look-back is linear over the whole text.
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}

/** The deepest depth skipContainer reached, set by each call (a second result without an allocation). */
let skippedMax = 0;

/**
 * The index of the bracket closing the container opened at `open` (at depth `depth` once open), or -1
 * when the text ends first; skippedMax is the deepest depth inside, and the walk stops past `limit`
 * (answering -1 with skippedMax > limit). Keys do not matter inside, so this is the scan's tight loop:
 * strings are jumped over natively and only brackets are counted.
 */
function skipContainer(text: string, open: number, depth: number, limit: number): number {
  const base = depth - 1;
  let max = depth;
  for (let i = open + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(text, i);
      if (i < 0) break;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) {
        max = depth;
        if (max > limit) break;
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--depth === base) {
        skippedMax = max;
        return i;
      }
    }
  }
  skippedMax = max;
  return -1;
}

/**
 * Depth (objects and arrays, `{}` is 1) of a JSON text, in one pass that jumps over strings natively,
 * and the span of the top-level `context` member's `schema` object. The span is only given when
 * `context` and its `schema` each appear once, as keys written without escapes, so that JSON.parse
 * would take exactly that member; anything else (a duplicate, a boolean schema, a broken text) leaves
 * it out and the caller parses the whole text. Stops at a depth past `limit`. The text need not be
 * valid JSON. Keys are followed only where they can name `context` or its `schema`: every other
 * container (the content, most of all) goes through skipContainer's tight loop.
 */
export function scanDraftText(text: string, limit: number): DraftTextScan {
  let depth = 0;
  let max = 0;
  // Whether each open container is an object, and whether the next string in it is a key.
  const isObject: boolean[] = [];
  let expectKey = false;
  let key = "";
  let contextKeys = 0;
  let schemaKeys = 0;
  let plainKeys = true;
  let inContext = false;
  let schemaStart = -1;
  let schemaEnd = -1;
  let known: Interned | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end < 0) break;
      if (expectKey) {
        expectKey = false;
        if (depth === 1 || (depth === 2 && inContext)) {
          key = text.slice(i + 1, end);
          if (key.includes("\\")) plainKeys = false;
          if (depth === 1 && key === "context") contextKeys++;
          else if (depth === 2 && key === "schema") schemaKeys++;
        }
      }
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const object = c === OPEN_BRACE;
      if (object && depth === 1 && key === "context") inContext = true;
      else if (depth >= 1) {
        const isSchema = object && depth === 2 && inContext && key === "schema" && schemaStart < 0;
        if (isSchema) {
          schemaStart = i;
          // A slice compared whole is a native comparison; startsWith goes character by character.
          if (last !== undefined && text.slice(i, i + last.text.length) === last.text) {
            // The same characters as a text that parsed: a whole object, its depth known.
            known = last;
            schemaEnd = i + last.text.length;
            i = schemaEnd - 1;
            if (depth + last.depth > max) {
              max = depth + last.depth;
              if (max > limit) return { depth: max };
            }
            expectKey = false;
            continue;
          }
        }
        // No key inside can name the context or its schema: counted, not followed.
        const close = skipContainer(text, i, depth + 1, limit);
        if (skippedMax > max) {
          max = skippedMax;
          if (max > limit) return { depth: max };
        }
        if (close < 0) break;
        if (isSchema) schemaEnd = close + 1;
        i = close;
        expectKey = false;
        continue;
      }
      depth++;
      isObject.push(object);
      expectKey = object;
      key = "";
      if (depth > max) {
        max = depth;
        if (max > limit) return { depth: max };
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth === 0) continue;
      depth--;
      isObject.pop();
      if (depth === 1) inContext = false;
      expectKey = false;
    } else if (c === COMMA) {
      expectKey = isObject[isObject.length - 1] === true;
      key = "";
    }
  }
  const plain = plainKeys && contextKeys === 1 && schemaKeys === 1 && schemaStart >= 0 && schemaEnd > 0;
  if (!plain) return { depth: max };
  return known
    ? { depth: max, schema: [schemaStart, schemaEnd], known: known.value }
    : { depth: max, schema: [schemaStart, schemaEnd] };
}

/** Schema texts kept, at most, and their characters in all: a stream of one-off schemas stays bounded. */
const MAX_SCHEMAS = 256;
const MAX_CHARS = 32 * 1024 * 1024;

/** Parsed schemas by their text, least recently used first (a Map's order is its insertion order). */
const byText = new Map<string, Interned>();
let chars = 0;

/** Empties the cache of parsed schema texts (tests). */
export function clearSchemaTextCache(): void {
  byText.clear();
  chars = 0;
  last = undefined;
}

/** Freezes a parsed JSON value and everything in it, without recursion (its depth passed the draft's bound). */
function deepFreeze(value: unknown): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || Object.isFrozen(node)) continue;
    Object.freeze(node);
    for (const child of Object.values(node)) stack.push(child);
  }
}

/**
 * The parsed, deeply frozen value of a schema's JSON text: the same object for the same text while it
 * stays cached (keyed by the text itself, so by its content). Frozen because every draft carrying that
 * text shares it. Throws what JSON.parse throws.
 */
function internedSchema(text: string): unknown {
  const known = byText.get(text);
  if (known !== undefined) {
    byText.delete(text);
    byText.set(text, known);
    last = known;
    return known.value;
  }
  const value: unknown = JSON.parse(text);
  deepFreeze(value);
  if (text.length <= MAX_CHARS / 4) {
    const interned = { text, value, depth: jsonTextDepth(text, Number.POSITIVE_INFINITY) };
    byText.set(text, interned);
    last = interned;
    chars += text.length;
    for (const [oldest] of byText) {
      if (byText.size <= MAX_SCHEMAS && chars <= MAX_CHARS) break;
      byText.delete(oldest);
      chars -= oldest.length;
    }
  }
  return value;
}

/**
 * JSON.parse of a draft's text, scanned first by scanDraftText: with a `context.schema` span, the rest
 * of the draft is parsed with a placeholder there and the schema comes from internedSchema. Throws
 * JSON.parse's own error for an invalid text (that of the whole text, so its positions are the text's).
 */
export function parseDraftText(text: string, scan: DraftTextScan): unknown {
  if (!scan.schema) return JSON.parse(text);
  const [start, end] = scan.schema;
  let draft: unknown;
  let schema: unknown;
  try {
    schema = "known" in scan ? scan.known : internedSchema(text.slice(start, end));
    draft = JSON.parse(`${text.slice(0, start)}0${text.slice(end)}`);
  } catch {
    return JSON.parse(text);
  }
  const context = (draft as { context?: Record<string, unknown> }).context;
  // The scan's rules make this the member JSON.parse kept; checked all the same.
  if (context?.schema !== 0) return JSON.parse(text);
  context.schema = schema;
  return draft;
}
