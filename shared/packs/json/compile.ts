/**
 * Untrusted schemas checked and compiled once, then cached by identity and by content. A missing or
 * unusable schema is a problem to report, never a throw.
 */
import { canonicalJson } from "../../hash.js";
import { dialectOf, dialectSupport, idKeyword, type JsonSchemaDialect } from "./ajv.js";
import { CompiledJsonSchema } from "./compiled.js";
import { MAX_UNFOLDED_EVALUATIONS, unfoldedCost } from "./cost.js";
import { GUARDED_UNFOLDED, guardDraftCost } from "./data-cost.js";
import { JSON_RULE_IDS } from "./ids.js";
import {
  DEFAULT_SCHEMA_LIMITS,
  exceedsDepth,
  findRemoteRef,
  findUnsafePattern,
  namesProtoProperty,
} from "./json-schema-guard.js";
import { TOO_SLOW } from "./regex-guard.js";
import { isRecord, jsonTypeOf, type SchemaObject } from "./util.js";

/**
 * A problem with the schema itself, returned rather than thrown: the json pack reports a missing schema as
 * a violation and throws InvalidSchemaError for an invalid one; a pack definition fails to load.
 */
interface SchemaProblem {
  readonly ruleId: typeof JSON_RULE_IDS.missing | typeof JSON_RULE_IDS.invalid;
  readonly message: string;
}

export type SchemaLookup = { ok: true; schema: CompiledJsonSchema } | { ok: false; problem: SchemaProblem };

/** Schemas compiled from drafts' contexts are kept by content; the bound keeps a stream of one-off schemas from growing the heap. */
const MAX_CACHED_SCHEMAS = 500;

let compilations = 0;

function remember(cache: Map<string, SchemaLookup>, key: string, lookup: SchemaLookup): void {
  cache.delete(key); // re-insert: a Map's order is the recency order
  cache.set(key, lookup);
  if (cache.size > MAX_CACHED_SCHEMAS) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
}

/**
 * Compiled schemas of one set of registered schemas (none, or a pack's): by identity first (the same
 * context object across repair, check and score), then by the schema's JSON text (the same schema
 * re-parsed from every draft), then by its key-order-independent text; least recently used evicted
 * first. Only a miss pays for the sorted serialization.
 */
class SchemaCache {
  readonly byIdentity = new WeakMap<object, SchemaLookup>();
  readonly byText = new Map<string, SchemaLookup>();
  readonly byStableText = new Map<string, SchemaLookup>();
  /**
   * The schema a stream of drafts carries when each draft brings its own parsed copy: the next copy is
   * compared member by member with a private copy of it (parsed from its cached text, so no caller can
   * change it) before anything serializes the new one. Taken once the same schema came through the text
   * cache twice in a row, so that schemas taking turns never pay for the copy.
   */
  repeated: { copy: unknown; lookup: SchemaLookup } | undefined;
  lastByText: SchemaLookup | undefined;

  constructor(readonly registered: RegisteredSchemas | undefined) {}

  clear(): void {
    this.byText.clear();
    this.byStableText.clear();
    this.repeated = undefined;
    this.lastByText = undefined;
  }

  cameByText(text: string, lookup: SchemaLookup): void {
    // The text is a cache key: it passed the depth and size bounds, so parsing it is bounded too.
    if (lookup === this.lastByText && this.repeated?.lookup !== lookup)
      this.repeated = { copy: JSON.parse(text), lookup };
    this.lastByText = lookup;
  }
}

const unregistered = new SchemaCache(undefined);

/** How many schemas were compiled so far and how many distinct schemas the cache holds (tests, metrics). */
export function jsonSchemaCacheStats(): { compilations: number; cached: number } {
  return { compilations, cached: unregistered.byStableText.size };
}

/** Empties the content-keyed caches (tests). Schema objects already seen stay cached by identity until collected. */
export function clearJsonSchemaCache(): void {
  unregistered.clear();
}

/**
 * Schemas a pack registers by `$id` (`id` in draft-04): a draft's schema may `$ref` them, resolved from
 * this set, never fetched. Each must name itself with an absolute URI and pass every check a draft's
 * schema passes (references to the ones listed before it allowed); a schema references those of its
 * own dialect. Built once per pack configuration.
 */
export class RegisteredSchemas {
  readonly #byDialect = new Map<JsonSchemaDialect, SchemaObject[]>();
  readonly cache: SchemaCache = new SchemaCache(this);

  /** Throws, naming the schema, for a registered schema that cannot be used. */
  constructor(schemas: readonly unknown[]) {
    schemas.forEach((schema, i) => {
      const where = `registered schema ${i + 1}`;
      if (!isRecord(schema)) throw new Error(`${where} must be an object`);
      const dialect = dialectOf(schema);
      if (!dialect) throw new Error(`${where} has an unsupported $schema ${JSON.stringify(schema.$schema)}`);
      const id = schema[idKeyword(dialect)];
      if (typeof id !== "string" || !/^[a-z][a-z0-9+.-]*:/i.test(id))
        throw new Error(`${where} must name itself with an absolute URI in ${idKeyword(dialect)}`);
      const before = this.forDialect(dialect);
      const checked = compileJsonSchema(
        schema,
        before.length > 0 ? new RegisteredSchemas(before) : undefined,
      );
      if (!checked.ok) throw new Error(`${where} (${id}): ${checked.problem.message}`);
      this.#byDialect.set(dialect, [...before, schema]);
    });
  }

  /** The registered schemas a schema of `dialect` may reference. */
  forDialect(dialect: JsonSchemaDialect): readonly SchemaObject[] {
    return this.#byDialect.get(dialect) ?? [];
  }

  /** The URIs they register, normalized as the remote-reference check resolves `$ref`s (no fragment). */
  idsFor(dialect: JsonSchemaDialect): string[] {
    return this.forDialect(dialect).map((s) => {
      const url = new URL(String(s[idKeyword(dialect)]));
      url.hash = "";
      return url.href;
    });
  }
}

/**
 * Whether `value` serializes to the same JSON text as `copy`, a parsed JSON value: the same keys in the
 * same order, the same scalars, plain objects and arrays only (anything else answers no). The walk
 * follows `copy`, so a deep or cyclic `value` costs no more than `copy`'s size.
 */
function sameJsonText(value: unknown, copy: unknown): boolean {
  const stack: unknown[] = [value, copy];
  while (stack.length > 0) {
    const expected = stack.pop();
    const actual = stack.pop();
    if (typeof expected !== "object" || expected === null) {
      if (actual !== expected) return false;
      continue;
    }
    if (typeof actual !== "object" || actual === null) return false;
    // A toJSON (own or inherited) would serialize the value as something else.
    if (typeof (actual as { toJSON?: unknown }).toJSON === "function") return false;
    const proto = Object.getPrototypeOf(actual);
    if (Array.isArray(expected)) {
      if (!Array.isArray(actual) || proto !== Array.prototype || actual.length !== expected.length)
        return false;
      for (let i = 0; i < expected.length; i++) stack.push(actual[i], expected[i]);
      continue;
    }
    if (Array.isArray(actual) || (proto !== Object.prototype && proto !== null)) return false;
    const object = actual as Record<string, unknown>;
    const keys = Object.keys(object);
    const expectedKeys = Object.keys(expected);
    if (keys.length !== expectedKeys.length) return false;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      if (key !== expectedKeys[i]) return false;
      stack.push(object[key], (expected as Record<string, unknown>)[key]);
    }
  }
  return true;
}

/** `true` and `false` as schemas, in the object form the walks and the model's tool definition take. */
const TRUE_SCHEMA: SchemaObject = Object.freeze({});
const FALSE_SCHEMA: SchemaObject = Object.freeze({ not: Object.freeze({}) });

function invalidSchema(message: string): SchemaLookup {
  return {
    ok: false,
    problem: { ruleId: JSON_RULE_IDS.invalid, message: `the JSON Schema is invalid: ${message}` },
  };
}

/**
 * A JSON Schema checked and compiled once, then cached: a missing or unusable schema is a problem to
 * report, never a throw. The schema is untrusted (it comes with the draft), so before anything recursive
 * touches it, it must be within `DEFAULT_SCHEMA_LIMITS` (nesting measured iteratively, then bytes of its
 * JSON text); then its `$schema` must name a supported dialect, its `$ref`s stay inside it (or point at a
 * meta-schema of that dialect), it must be valid against the dialect's meta-schema, and Ajv must compile
 * it. `true` and `false` are schemas too. The schema is treated as immutable once compiled.
 */
export function compileJsonSchema(schema: unknown, registered?: RegisteredSchemas): SchemaLookup {
  if (schema === undefined || schema === null) {
    return {
      ok: false,
      problem: {
        ruleId: JSON_RULE_IDS.missing,
        message: "no JSON Schema to check against (context.schema is missing)",
      },
    };
  }
  const root = schema === true ? TRUE_SCHEMA : schema === false ? FALSE_SCHEMA : schema;
  if (!isRecord(root)) {
    return {
      ok: false,
      problem: {
        ruleId: JSON_RULE_IDS.invalid,
        message: `the JSON Schema must be an object or a boolean, got ${jsonTypeOf(root)}`,
      },
    };
  }
  const cache = registered?.cache ?? unregistered;
  const known = cache.byIdentity.get(root);
  if (known) return known;
  const lookup = lookupByContent(root, cache);
  cache.byIdentity.set(root, lookup);
  return lookup;
}

function lookupByContent(schema: SchemaObject, cache: SchemaCache): SchemaLookup {
  const { byText, byStableText, repeated } = cache;
  if (repeated && sameJsonText(schema, repeated.copy)) return repeated.lookup;
  const { maxDepth, maxBytes } = DEFAULT_SCHEMA_LIMITS;
  const tooDeep = () => invalidSchema(`it is nested more than ${maxDepth} levels deep`);
  let text: string;
  try {
    text = JSON.stringify(schema);
  } catch {
    // Only a nesting deep enough to exhaust the stack makes JSON.stringify throw on parsed JSON.
    return tooDeep();
  }
  // A text seen before passed every check below (or is cached with its problem): the same schema
  // re-parsed from every draft costs one serialization and one lookup.
  const known = byText.get(text);
  if (known) {
    remember(byText, text, known);
    cache.cameByText(text, known);
    return known;
  }
  // The meta-schema check and Ajv recurse over the schema: its depth is bounded before they see it.
  if (exceedsDepth(schema, maxDepth)) return tooDeep();
  const bytes = Buffer.byteLength(text);
  // Not kept by text: an oversized text would make an oversized cache key.
  if (bytes > maxBytes) return invalidSchema(`it is ${bytes} bytes, over the limit of ${maxBytes} bytes`);
  let lookup = byText.get(text);
  if (!lookup) {
    // Key-order-independent text: equal schemas parsed from different documents share one compilation.
    const stable = canonicalJson(schema);
    lookup = byStableText.get(stable) ?? compileUncached(schema, cache.registered);
    remember(byStableText, stable, lookup);
  }
  remember(byText, text, lookup);
  cache.cameByText(text, lookup);
  return lookup;
}

function compileUncached(schema: SchemaObject, registered: RegisteredSchemas | undefined): SchemaLookup {
  compilations += 1;
  const dialect = dialectOf(schema);
  if (!dialect) {
    return invalidSchema(
      `unsupported $schema ${JSON.stringify(schema.$schema)} (use JSON Schema 2020-12, 2019-09, draft-07, draft-06 or draft-04)`,
    );
  }
  const { meta, registered: metaSchemas } = dialectSupport(dialect);
  const known = registered ? new Set([...metaSchemas, ...registered.idsFor(dialect)]) : metaSchemas;
  const remote = findRemoteRef(schema, known, idKeyword(dialect));
  if (remote !== undefined) {
    return invalidSchema(
      `$ref ${JSON.stringify(remote)} points outside the schema; only references inside it ("#/$defs/…" or an $id it defines) or to a schema the json pack registers are allowed`,
    );
  }
  if (namesProtoProperty(schema)) {
    return invalidSchema(
      'a "properties" keyword names "__proto__", which Ajv cannot check (it ignores that property\'s schema); require it with "required" or leave it out of "properties"',
    );
  }
  const unsafe = findUnsafePattern(schema);
  if (unsafe) {
    return invalidSchema(
      unsafe.risk === "exponential"
        ? `the ${unsafe.keyword} ${JSON.stringify(unsafe.pattern)} can take exponential time to match (a repeated group holding a repetition that can match the same characters as what follows it, like (a+)+ or (\\w+\\s?)*); write it so that each character has one way to match, e.g. (a+)+ as a+`
        : `the ${unsafe.keyword} ${JSON.stringify(unsafe.pattern)} can take polynomial time to match (a group repeated a bounded number of times holding a repetition that can match the same characters as what follows it, like (a+){2,20}); write it so that each character has one way to match, e.g. (a+){2,20} as a{2,}`,
    );
  }
  if (!meta(schema)) {
    // The meta-schema reports each bad place several ways (enum, type, anyOf): the first says it best.
    const firstPerPlace = new Map<string, string>();
    for (const e of meta.errors ?? []) {
      if (!firstPerPlace.has(e.instancePath))
        firstPerPlace.set(e.instancePath, `schema${e.instancePath} ${e.message}`);
    }
    return invalidSchema([...firstPerPlace.values()].slice(0, 5).join("; "));
  }
  // Ajv's code for the schema cannot be stopped once it runs: a schema whose references unfold past the
  // bound (cost.ts) would hold the process on one draft, so it is refused before it is compiled.
  const cost = unfoldedCost(schema, dialect);
  if (cost === undefined) {
    return invalidSchema(
      `${TOO_SLOW}: with its references unfolded it applies more than ${MAX_UNFOLDED_EVALUATIONS.toLocaleString("en-US")} sub-schemas to one value (a definition referenced twice at each level of a chain of definitions doubles the work per level); reference each definition once per level, or merge the branches`,
    );
  }
  try {
    const compiled = new CompiledJsonSchema(schema, dialect, registered?.forDialect(dialect));
    // Recursion (or a large unfolded size) lets the work grow with the data: each draft is counted first.
    if (cost.recursive || cost.evaluations > GUARDED_UNFOLDED) guardDraftCost(compiled, dialect);
    // An empty object is what most loops of this kind are met with first: found here, the schema is
    // reported invalid up front instead of failing the first draft that reaches the loop.
    compiled.isValid({});
    return { ok: true, schema: compiled };
  } catch (error) {
    return invalidSchema(error instanceof Error ? error.message : String(error));
  }
}
