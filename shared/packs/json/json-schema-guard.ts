import { DATA_KEYWORDS, MAP_KEYWORDS } from "./keywords.js";
import { type BacktrackingRisk, backtrackingRisk } from "./regex-safety.js";

/**
 * Checks on an untrusted JSON Schema (a json draft's `context.schema`) that must pass before anything
 * recursive touches it: serializing, the meta-schema check, Ajv's compiler. Everything here walks the
 * schema with an explicit stack, so a schema nested 10,000 levels deep costs a loop, not the call stack.
 */

/** Bounds on an untrusted schema. */
export interface SchemaLimits {
  /** Bytes of the schema's JSON text. */
  readonly maxBytes: number;
  /** Levels of JSON nesting (objects and arrays), the schema itself being level 1. */
  readonly maxDepth: number;
}

/**
 * 512 KiB is far above any extraction schema in use and bounds Ajv's compile time (about 3 s for a
 * 450 KB schema of 7,000 pattern-checked properties; a compiled schema is cached). 64 levels is about
 * 30 nested object properties: each costs `properties` plus the property's own level.
 */
export const DEFAULT_SCHEMA_LIMITS: SchemaLimits = { maxBytes: 512 * 1024, maxDepth: 64 };

/** Whether `value` nests deeper than `maxDepth` levels; stops at the first path that does. */
export function exceedsDepth(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const [node, depth] = frame;
    if (typeof node !== "object" || node === null) continue;
    if (depth > maxDepth) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

const REF_KEYWORDS = ["$ref", "$dynamicRef", "$recursiveRef"] as const;

/**
 * Where relative `$id`s and `$ref`s of a schema without a root `$id` resolve. A hierarchical stand-in, so
 * that `item.json` next to an embedded `"$id": "item.json"` resolves the way Ajv resolves it.
 */
const STAND_IN_BASE = "https://redraft.invalid/schema.json";

function resolveUri(ref: string, base: string): string | undefined {
  try {
    const url = new URL(ref, base);
    url.hash = "";
    return url.href;
  } catch {
    return undefined;
  }
}

interface Frame {
  readonly value: unknown;
  readonly role: "schema" | "map";
  readonly base: string;
}

/**
 * The first reference that would leave the schema: anything but a `#…` fragment, an `$id` the schema
 * itself defines, or one of `registered` (the meta-schemas the validator already holds). Undefined when
 * every reference stays inside. A reference that cannot be resolved as a URI at all counts as leaving.
 */
export function findRemoteRef(
  schema: unknown,
  registered: ReadonlySet<string>,
  /** What names a resource: `id` in draft-04, `$id` after. */
  idKey: "$id" | "id" = "$id",
): string | undefined {
  const ids = new Set<string>([STAND_IN_BASE]);
  const refs: { ref: string; base: string }[] = [];
  const stack: Frame[] = [{ value: schema, role: "schema", base: STAND_IN_BASE }];
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const { value, role } = frame;
    let { base } = frame;
    if (typeof value !== "object" || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) stack.push({ value: item, role: "schema", base });
      continue;
    }
    if (role === "map") {
      for (const child of Object.values(value)) stack.push({ value: child, role: "schema", base });
      continue;
    }
    const record = value as Record<string, unknown>;
    const id = record[idKey];
    if (typeof id === "string") {
      const resolved = resolveUri(id, base);
      if (resolved === undefined) return id;
      ids.add(resolved);
      base = resolved;
    }
    for (const keyword of REF_KEYWORDS) {
      const ref = record[keyword];
      if (typeof ref === "string" && !ref.startsWith("#")) refs.push({ ref, base });
    }
    for (const [key, child] of Object.entries(record)) {
      if (DATA_KEYWORDS.has(key)) continue;
      stack.push({ value: child, role: MAP_KEYWORDS.has(key) ? "map" : "schema", base });
    }
  }
  for (const { ref, base } of refs) {
    const target = resolveUri(ref, base);
    if (target === undefined || !(ids.has(target) || registered.has(target))) return ref;
  }
  return undefined;
}

/**
 * Every schema object inside `schema` (itself included), found with an explicit stack: the values of
 * data keywords (`const`, `enum`, `default`, examples) are not schemas and are not entered.
 */
function* schemaObjects(schema: unknown): Generator<Record<string, unknown>> {
  const stack: { value: unknown; role: "schema" | "map" }[] = [{ value: schema, role: "schema" }];
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const { value, role } = frame;
    if (typeof value !== "object" || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) stack.push({ value: item, role: "schema" });
      continue;
    }
    if (role === "map") {
      for (const child of Object.values(value)) stack.push({ value: child, role: "schema" });
      continue;
    }
    const record = value as Record<string, unknown>;
    yield record;
    for (const [key, child] of Object.entries(record)) {
      if (!DATA_KEYWORDS.has(key))
        stack.push({ value: child, role: MAP_KEYWORDS.has(key) ? "map" : "schema" });
    }
  }
}

/**
 * Whether some `properties` of the schema names `__proto__`. Ajv builds objects keyed by property names
 * in its generated code, where that key sets a prototype instead: it never applies the property's schema,
 * and with `unevaluatedProperties` its validator throws. Such a schema is refused rather than checked wrong.
 */
export function namesProtoProperty(schema: unknown): boolean {
  for (const record of schemaObjects(schema)) {
    const properties = record.properties;
    if (typeof properties === "object" && properties !== null && Object.hasOwn(properties, "__proto__"))
      return true;
  }
  return false;
}

/**
 * The first regular expression of the schema (a `pattern`, or a `patternProperties` name) that can take
 * exponential time to match. JavaScript's RegExp cannot be interrupted, so one such pattern and one
 * hostile string would stop the validating process (in the local runtime, every draft it is running)
 * until the Lambda timeout or forever. Star height does not see every slow pattern (overlapping
 * alternatives such as `(a|a)*` pass it); a linear-time engine (RE2) would, at the cost of ECMAScript
 * syntax it does not accept and of bundle size.
 */
export function findUnsafePattern(
  schema: unknown,
): { keyword: string; pattern: string; risk: BacktrackingRisk } | undefined {
  for (const record of schemaObjects(schema)) {
    const risk = typeof record.pattern === "string" ? backtrackingRisk(record.pattern) : undefined;
    if (risk && typeof record.pattern === "string")
      return { keyword: "pattern", pattern: record.pattern, risk };
    const named = record.patternProperties;
    if (typeof named === "object" && named !== null && !Array.isArray(named)) {
      for (const pattern of Object.keys(named)) {
        const found = backtrackingRisk(pattern);
        if (found) return { keyword: "patternProperties", pattern, risk: found };
      }
    }
  }
  return undefined;
}
