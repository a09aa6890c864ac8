import { Ajv, type ErrorObject, type Options, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { z } from "zod";
import type { Draft, Repair } from "../draft.js";
import { InvalidSchemaError } from "../errors.js";
import { canonicalJson } from "../hash.js";
import type { Finding, Pack, RepairResult, Rule } from "../pack.js";
import { DEFAULT_SCHEMA_LIMITS, exceedsDepth, findRemoteRef } from "./json-schema-guard.js";

// ajv-formats is CommonJS: under NodeNext its default import is the module object.
const addFormats = addFormatsModule.default;

/**
 * JSON-Schema dialects redraft checks with; `$schema` picks one (and so the Ajv class), 2020-12 when it
 * is absent.
 */
export type JsonSchemaDialect = "2020-12" | "2019-09" | "draft-07";

type AnyAjv = Ajv | Ajv2019 | Ajv2020;
type SchemaObject = Record<string, unknown>;
type Segment = string | number;

/** Rule ids the json kind reports under. */
export const JSON_RULE_IDS = {
  schema: "json_schema",
  missing: "json_schema_missing",
  invalid: "json_schema_invalid",
  repair: "json_repair",
} as const;

/** The correction-prompt rule seed 001 added after models kept filling optional pattern fields with "". */
export const OMIT_OPTIONAL_RULE =
  "omit an optional field you have no valid value for; never emit an empty string";

/**
 * Ajv options for schemas that come with drafts. No `loadSchema`: a `$ref` Ajv cannot resolve from what it
 * holds fails compilation, nothing is ever fetched.
 */
const AJV_OPTIONS: Options = {
  allErrors: true,
  verbose: true,
  logger: false,
  // Real schemas carry annotations and vendor keywords (`x-…`, `example`, unknown formats) and draft-07
  // tuples without `minItems`: all of that is ignored, never an error. The meta-schema decides validity.
  strict: false,
  // A schema requiring `constructor` is not satisfied by Object.prototype.constructor.
  ownProperties: true,
};
/** Schemas compiled from drafts' contexts are kept by content; the bound keeps a stream of one-off schemas from growing the heap. */
const MAX_CACHED_SCHEMAS = 500;
/** Guards the schema/instance walks against pathological nesting and `$ref` cycles. */
const MAX_DEPTH = 256;
/** Keywords whose failure on a container value (object/array) makes the whole optional value removable. */
const CONTAINER_REMOVABLE = new Set(["type", "enum", "const"]);
/** Keywords that judge a value itself: for these the suggestion says whether the field may be omitted. */
const VALUE_KEYWORDS = new Set([
  "pattern",
  "format",
  "enum",
  "const",
  "type",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "multipleOf",
]);

const META_SCHEMAS: Record<JsonSchemaDialect, string> = {
  "2020-12": "https://json-schema.org/draft/2020-12/schema",
  "2019-09": "https://json-schema.org/draft/2019-09/schema",
  "draft-07": "http://json-schema.org/draft-07/schema",
};

function isRecord(value: unknown): value is SchemaObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasOwn(object: object, key: string): boolean {
  return Object.hasOwn(object, key);
}

function escapeSegment(segment: string): string {
  return segment.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** A JSON-pointer segment as Ajv expects it inside a URI fragment (`root#/properties/a%20b`). */
function fragmentSegment(segment: string | number): string {
  return encodeURIComponent(escapeSegment(String(segment)));
}

function newAjv(dialect: JsonSchemaDialect, options: Options): AnyAjv {
  const ajv =
    dialect === "draft-07"
      ? new Ajv(options)
      : dialect === "2019-09"
        ? new Ajv2019(options)
        : new Ajv2020(options);
  addFormats(ajv);
  return ajv;
}

/** `$schema` values redraft knows, with or without the empty fragment, http or https. */
const DIALECT_URIS = new Map<string, JsonSchemaDialect>(
  (Object.entries(META_SCHEMAS) as [JsonSchemaDialect, string][]).flatMap(([dialect, uri]) => {
    const path = uri.replace(/^https?:/, "");
    return ["http:", "https:"].flatMap((scheme) => [
      [`${scheme}${path}`, dialect] as const,
      [`${scheme}${path}#`, dialect] as const,
    ]);
  }),
);

/** Picks the dialect from `$schema`; undefined for a `$schema` redraft does not check with. */
export function dialectOf(schema: SchemaObject): JsonSchemaDialect | undefined {
  const id = schema.$schema;
  if (id === undefined) return "2020-12";
  return typeof id === "string" ? DIALECT_URIS.get(id) : undefined;
}

interface Dialect {
  /** The dialect's meta-schema, compiled: checking a schema against it needs it, and it is large. */
  readonly meta: ValidateFunction;
  /** Meta-schema URIs the dialect's Ajv holds: the only non-local `$ref`s a schema may use. */
  readonly registered: ReadonlySet<string>;
}

// Built on first use, once per dialect, and shared by every schema of that dialect.
const dialects = new Map<JsonSchemaDialect, Dialect>();
function dialectSupport(dialect: JsonSchemaDialect): Dialect {
  let support = dialects.get(dialect);
  if (!support) {
    const ajv = newAjv(dialect, { allErrors: true, strict: false, logger: false, ownProperties: true });
    const meta = ajv.getSchema(META_SCHEMAS[dialect]);
    if (!meta) throw new Error(`meta-schema of JSON Schema ${dialect} is not available`);
    support = { meta, registered: new Set(Object.keys(ajv.schemas)) };
    dialects.set(dialect, support);
  }
  return support;
}

/**
 * A problem with the schema itself, returned rather than thrown: the json pack reports a missing schema as
 * a violation and throws InvalidSchemaError for an invalid one; a pack definition fails to load.
 */
export interface SchemaProblem {
  readonly ruleId: typeof JSON_RULE_IDS.missing | typeof JSON_RULE_IDS.invalid;
  readonly message: string;
}

export type SchemaLookup = { ok: true; schema: CompiledJsonSchema } | { ok: false; problem: SchemaProblem };

/** One place in the schema that applies to the instance location being walked. */
interface View {
  readonly node: SchemaObject;
  /** URI-fragment pointer of `node` inside the root schema: what Ajv's `getSchema("root#…")` takes. */
  readonly ptr: string;
}

interface ChildViews {
  /** The sub-schemas that apply directly to the child (several under `allOf`). */
  readonly roots: readonly View[];
  /** `roots` with their `$ref` targets and `allOf` members expanded. */
  readonly views: readonly View[];
  /** Named by `properties` of some view. */
  readonly named: boolean;
  /** Matched by `properties` or `patternProperties` of some view. */
  readonly described: boolean;
  /** `additionalProperties: false` (or a plain `unevaluatedProperties: false`) rules the key out. */
  readonly forbidden: boolean;
}

interface ObjectShape {
  /** Keys never removed: required, or looked at by a dependency, condition or alternative. */
  readonly kept: ReadonlySet<string>;
  readonly required: ReadonlySet<string>;
  readonly minProperties: number;
}

export interface RepairOptions {
  /** Locations that must never be removed even if the schema calls them optional (a declarative `required` rule). */
  keep?: (path: readonly Segment[]) => boolean;
}

/** What the walks need about one set of views, computed on first use and kept with the compiled schema. */
interface Plan {
  described?: readonly string[];
  children?: Map<string, ChildViews>;
  items?: Map<number, readonly View[]>;
  tupleLength?: number;
  shape?: ObjectShape;
}

const NO_VIEWS: readonly View[] = [];
/** Keys outside `properties` (free-form maps) are looked up uncached beyond this many per object schema. */
const MAX_CACHED_KEYS = 1000;
const ROOT_KEY = "root";

/**
 * A JSON Schema compiled once (Ajv, `allErrors`, formats), with what the json kind needs on top:
 * violations with JSON pointers and suggestions, deterministic repair of optional fields, and the
 * number of fields the schema describes (the denominator of the proportional score).
 *
 * Every instance gets its own Ajv: schemas from different drafts may share an `$id`, and dropping
 * an evicted schema must free everything compiled for it.
 */
export class CompiledJsonSchema {
  readonly schema: SchemaObject;
  readonly dialect: JsonSchemaDialect;
  readonly #ajv: AnyAjv;
  readonly #validate: ValidateFunction;
  readonly #subValidators = new Map<string, ValidateFunction | null>();
  readonly #refs = new Map<string, View | null>();
  readonly #patterns = new Map<string, RegExp | null>();
  // Views arrays are built once per schema location and reused, so they can key the plans.
  readonly #plans = new WeakMap<readonly View[], Plan>();
  #root: readonly View[] | undefined;

  /** Throws (with Ajv's message) when the schema does not compile; use `compileJsonSchema` for the cached, non-throwing path. */
  constructor(schema: SchemaObject, dialect: JsonSchemaDialect) {
    this.schema = schema;
    this.dialect = dialect;
    this.#ajv = newAjv(dialect, { ...AJV_OPTIONS, validateSchema: false });
    this.#ajv.addSchema(schema, ROOT_KEY);
    const validate = this.#ajv.getSchema(ROOT_KEY);
    if (!validate) throw new Error("schema did not compile");
    this.#validate = validate;
  }

  /** Ajv's errors for `content`; empty when it conforms. */
  errors(content: unknown): ErrorObject[] {
    return this.#validate(content) ? [] : [...(this.#validate.errors ?? [])];
  }

  isValid(content: unknown): boolean {
    return this.#validate(content) === true;
  }

  /** One finding per schema error, reported under `schema:<keyword>`. */
  findings(content: unknown): Finding[] {
    if (this.#validate(content)) return [];
    return (this.#validate.errors ?? []).map((error) => this.#finding(error, content));
  }

  /**
   * Deterministic repair: removes optional fields whose value breaks their sub-schema (an empty string
   * in a pattern field, a value outside an enum or range…) and properties the schema forbids. Required
   * fields stay (and get reported). Pure: unchanged content is returned as the same object, and only
   * the objects and arrays on the path to a removal are copied.
   */
  repair(content: unknown, options: RepairOptions = {}): RepairResult<unknown> {
    if (typeof content !== "object" || content === null || this.#validate(content))
      return { content, repairs: [] };
    const errors = this.#validate.errors ?? [];
    const before = errors.length;
    const walk: RepairWalk = { repairs: [], dirty: dirtyPointers(errors) };
    if (options.keep) walk.keep = options.keep;
    const repairs = walk.repairs;
    const repaired = this.#repairValue(content, this.#rootViews(), ROOT_PLACE, walk, 0);
    if (repairs.length === 0) return { content, repairs: [] };
    // Safety net for the interactions the walk cannot see (uniqueItems over repaired elements,
    // a removal another branch depended on): a repair that scores worse than doing nothing is dropped.
    const after = this.#validate(repaired) ? 0 : (this.#validate.errors?.length ?? 0);
    // Each removal lowers the units by at most one, so losing at least one error per removal can
    // never lower the score; only otherwise are the units worth counting.
    if (after > before - repairs.length && after / this.units(repaired) > before / this.units(content)) {
      return { content, repairs: [] };
    }
    return { content: repaired, repairs };
  }

  /**
   * Fields the schema describes, counted against the instance: every property schema (recursively, present
   * or not), array items once per element present (at least once), and the instance's own values where the
   * schema leaves the shape open. A forbidden extra property counts one, so removing it never lowers the score.
   */
  units(content: unknown): number {
    return Math.max(1, this.#below(content, this.#rootViews(), true, 0));
  }

  // ---- violations -------------------------------------------------------------------------

  #finding(error: ErrorObject, content: unknown): Finding {
    const where = error.instancePath ? ` in ${error.instancePath}` : "";
    const params = error.params as Record<string, unknown>;
    const finding = (message: string, path: string, suggestion: string): Finding => ({
      ruleId: `schema:${error.keyword}`,
      message,
      path,
      suggestion,
    });
    switch (error.keyword) {
      case "required":
      case "dependentRequired": {
        const missing = String(params.missingProperty);
        const path = `${error.instancePath}/${escapeSegment(missing)}`;
        if (error.keyword === "dependentRequired") {
          const trigger = String(params.property);
          return finding(
            `"${missing}" is required${where} when "${trigger}" is present`,
            path,
            `Add "${missing}"${where}, or remove "${trigger}".`,
          );
        }
        return finding(
          `required property "${missing}" is missing${where}`,
          path,
          `Add "${missing}"${where}; the schema requires it, so it cannot be omitted.`,
        );
      }
      case "additionalProperties":
      case "unevaluatedProperties": {
        const extra = String(params.additionalProperty ?? params.unevaluatedProperty);
        const allowed = isRecord(error.parentSchema?.properties)
          ? Object.keys(error.parentSchema.properties)
          : [];
        const list = allowed.length > 0 ? `; allowed here: ${clip(allowed.join(", "), 200)}` : "";
        return finding(
          `property "${extra}" is not allowed by the schema${where}`,
          `${error.instancePath}/${escapeSegment(extra)}`,
          `Remove "${extra}"${list}.`,
        );
      }
      default: {
        const label = error.instancePath || "the content";
        const message = `${label} ${describeValueError(error)}`;
        if (!VALUE_KEYWORDS.has(error.keyword)) {
          return finding(
            message,
            error.instancePath,
            `Change ${label} so that it ${error.message ?? "conforms"}.`,
          );
        }
        const hint = valueHint(error);
        const status = this.#fieldStatus(content, error.instancePath);
        const suggestion =
          status === "optional"
            ? `Omit the field if you have no valid value; never emit an empty string. Otherwise ${hint}.`
            : status === "required"
              ? `${capitalize(hint)}; the field is required, so it cannot be omitted.`
              : `${capitalize(hint)}.`;
        return finding(message, error.instancePath, suggestion);
      }
    }
  }

  /** Whether the value at `pointer` is an optional or required property of its parent object. */
  #fieldStatus(content: unknown, pointer: string): "optional" | "required" | "unknown" {
    const segments = pointer === "" ? [] : pointer.slice(1).split("/").map(unescapeSegment);
    const last = segments.pop();
    if (last === undefined) return "unknown";
    let value = content;
    let views = this.#rootViews();
    for (const segment of segments) {
      if (Array.isArray(value)) {
        const index = Number(segment);
        views = this.#itemViews(views, index);
        value = value[index];
      } else if (isRecord(value)) {
        views = this.#childViews(views, segment).views;
        value = value[segment];
      } else {
        return "unknown";
      }
    }
    if (!isRecord(value) || views.length === 0) return "unknown";
    return this.#shape(views).required.has(last) ? "required" : "optional";
  }

  // ---- schema navigation ----------------------------------------------------------------------

  #rootViews(): readonly View[] {
    this.#root ??= this.#expand(this.schema, "", [], new Set());
    return this.#root;
  }

  #plan(views: readonly View[]): Plan {
    let plan = this.#plans.get(views);
    if (!plan) {
      plan = {};
      this.#plans.set(views, plan);
    }
    return plan;
  }

  /** Keys named by `properties` of any view. */
  #described(views: readonly View[]): readonly string[] {
    const plan = this.#plan(views);
    if (!plan.described) {
      const keys = new Set<string>();
      for (const { node } of views)
        if (isRecord(node.properties)) for (const key of Object.keys(node.properties)) keys.add(key);
      plan.described = [...keys];
    }
    return plan.described;
  }

  /** The node plus what it pulls in unconditionally: its local `$ref` target and `allOf` members. */
  #expand(node: unknown, ptr: string, out: View[], seen: Set<object>): View[] {
    if (!isRecord(node) || seen.has(node) || seen.size > MAX_DEPTH) return out;
    seen.add(node);
    out.push({ node, ptr });
    if (typeof node.$ref === "string") {
      const target = this.#resolveRef(node.$ref);
      if (target) this.#expand(target.node, target.ptr, out, seen);
    }
    if (Array.isArray(node.allOf)) {
      node.allOf.forEach((member, i) => {
        this.#expand(member, `${ptr}/allOf/${i}`, out, seen);
      });
    }
    return out;
  }

  /** Local references only (`#`, `#/$defs/x`, `#/definitions/x`); anything else is left to Ajv alone. */
  #resolveRef(ref: string): View | undefined {
    const cached = this.#refs.get(ref);
    if (cached !== undefined) return cached ?? undefined;
    let resolved: View | null = null;
    if (ref === "#" || ref.startsWith("#/")) {
      let node: unknown = this.schema;
      const parts: string[] = [];
      for (const raw of ref === "#" ? [] : ref.slice(2).split("/")) {
        const part = unescapeSegment(safeDecode(raw));
        node = Array.isArray(node)
          ? node[Number(part)]
          : isRecord(node) && hasOwn(node, part)
            ? node[part]
            : undefined;
        parts.push(fragmentSegment(part));
      }
      if (isRecord(node)) resolved = { node, ptr: parts.map((p) => `/${p}`).join("") };
    }
    this.#refs.set(ref, resolved);
    return resolved ?? undefined;
  }

  #childViews(views: readonly View[], key: string): ChildViews {
    const plan = this.#plan(views);
    plan.children ??= new Map();
    let child = plan.children.get(key);
    if (!child) {
      child = this.#computeChildViews(views, key);
      if (plan.children.size < MAX_CACHED_KEYS) plan.children.set(key, child);
    }
    return child;
  }

  #computeChildViews(views: readonly View[], key: string): ChildViews {
    const roots: View[] = [];
    let named = false;
    let described = false;
    let evaluated = false;
    let forbiddenByAdditional = false;
    let unevaluatedFalse = false;
    for (const { node, ptr } of views) {
      let matched = false;
      if (isRecord(node.properties) && hasOwn(node.properties, key)) {
        matched = true;
        named = true;
        pushRoot(roots, node.properties[key], `${ptr}/properties/${fragmentSegment(key)}`);
      }
      if (isRecord(node.patternProperties)) {
        for (const [pattern, sub] of Object.entries(node.patternProperties)) {
          if (this.#pattern(pattern)?.test(key)) {
            matched = true;
            pushRoot(roots, sub, `${ptr}/patternProperties/${fragmentSegment(pattern)}`);
          }
        }
      }
      described ||= matched;
      if (!matched) {
        const additional = node.additionalProperties;
        if (additional === false) forbiddenByAdditional = true;
        else if (additional !== undefined) evaluated = true;
        if (isRecord(additional)) pushRoot(roots, additional, `${ptr}/additionalProperties`);
      }
      if (node.unevaluatedProperties === false) unevaluatedFalse = true;
    }
    // unevaluatedProperties also counts what anyOf/oneOf/if/dependentSchemas evaluated; the walk does
    // not follow those, so it only rules a key out when no such keyword is around.
    const forbidden =
      forbiddenByAdditional ||
      (unevaluatedFalse && !described && !evaluated && !views.some(hasDynamicApplicator));
    const expanded: View[] = [];
    const seen = new Set<object>();
    for (const root of roots) this.#expand(root.node, root.ptr, expanded, seen);
    return { roots, views: expanded, named, described, forbidden };
  }

  #itemRoots(views: readonly View[], index: number): View[] {
    const roots: View[] = [];
    for (const { node, ptr } of views) {
      if (Array.isArray(node.items)) {
        // draft-07 tuple form
        if (index < node.items.length) pushRoot(roots, node.items[index], `${ptr}/items/${index}`);
        else pushRoot(roots, node.additionalItems, `${ptr}/additionalItems`);
      } else if (Array.isArray(node.prefixItems) && index < node.prefixItems.length) {
        pushRoot(roots, node.prefixItems[index], `${ptr}/prefixItems/${index}`);
      } else {
        pushRoot(roots, node.items, `${ptr}/items`);
      }
    }
    return roots;
  }

  #itemViews(views: readonly View[], index: number): readonly View[] {
    const plan = this.#plan(views);
    if (plan.tupleLength === undefined) {
      let length = 0;
      for (const { node } of views) {
        const tuple = Array.isArray(node.items) ? node.items : node.prefixItems;
        if (Array.isArray(tuple)) length = Math.max(length, tuple.length);
      }
      plan.tupleLength = length;
    }
    // Past the tuple part every index has the same schema: one cache entry serves them all.
    const slot = index < plan.tupleLength ? index : -1;
    plan.items ??= new Map();
    let items = plan.items.get(slot);
    if (!items) {
      const roots = this.#itemRoots(views, index);
      const expanded: View[] = [];
      const seen = new Set<object>();
      for (const root of roots) this.#expand(root.node, root.ptr, expanded, seen);
      items = expanded.length > 0 ? expanded : NO_VIEWS;
      plan.items.set(slot, items);
    }
    return items;
  }

  #shape(views: readonly View[]): ObjectShape {
    const plan = this.#plan(views);
    plan.shape ??= this.#computeShape(views);
    return plan.shape;
  }

  #computeShape(views: readonly View[]): ObjectShape {
    const required = new Set<string>();
    const kept = new Set<string>();
    let minProperties = 0;
    const addStrings = (target: Set<string>, list: unknown) => {
      if (Array.isArray(list)) for (const item of list) if (typeof item === "string") target.add(item);
    };
    // A key a condition or alternative looks at may flip that branch when removed: keep it.
    const addLookedAt = (branch: unknown) => {
      for (const { node } of this.#expand(branch, "", [], new Set())) {
        addStrings(kept, node.required);
        if (isRecord(node.properties)) for (const key of Object.keys(node.properties)) kept.add(key);
      }
    };
    for (const { node } of views) {
      addStrings(required, node.required);
      for (const deps of [node.dependentRequired, node.dependencies]) {
        if (isRecord(deps)) for (const list of Object.values(deps)) addStrings(kept, list);
      }
      for (const keyword of ["anyOf", "oneOf"] as const) {
        const branches = node[keyword];
        if (Array.isArray(branches)) for (const branch of branches) addLookedAt(branch);
      }
      for (const keyword of ["not", "if", "then", "else"] as const) addLookedAt(node[keyword]);
      if (typeof node.minProperties === "number") minProperties = Math.max(minProperties, node.minProperties);
    }
    for (const key of required) kept.add(key);
    return { kept, required, minProperties };
  }

  #pattern(source: string): RegExp | undefined {
    let re = this.#patterns.get(source);
    if (re === undefined) {
      try {
        re = new RegExp(source, "u");
      } catch {
        re = null;
      }
      this.#patterns.set(source, re);
    }
    return re ?? undefined;
  }

  /** Validator of the sub-schema at `ptr`, compiled by the root's Ajv so its `$ref`s resolve; cached. */
  #subValidator(ptr: string): ValidateFunction | undefined {
    if (ptr === "") return this.#validate;
    let validate = this.#subValidators.get(ptr);
    if (validate === undefined) {
      try {
        validate = this.#ajv.getSchema(`${ROOT_KEY}#${ptr}`) ?? null;
      } catch {
        validate = null;
      }
      this.#subValidators.set(ptr, validate);
    }
    return validate ?? undefined;
  }

  // ---- repair -------------------------------------------------------------------------------------

  #repairValue(value: unknown, views: readonly View[], at: Place, walk: RepairWalk, depth: number): unknown {
    if (views.length === 0 || depth > MAX_DEPTH || !walk.dirty.has(at.pointer)) return value;
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      value.forEach((item, index) => {
        if (typeof item !== "object" || item === null) return; // array elements are never removed
        const fixed = this.#repairValue(
          item,
          this.#itemViews(views, index),
          child(at, index),
          walk,
          depth + 1,
        );
        if (fixed !== item) {
          out ??= value.slice();
          out[index] = fixed;
        }
      });
      return out ?? value;
    }
    if (!isRecord(value)) return value;
    let out: SchemaObject | undefined;
    const shape = this.#shape(views);
    const keys = Object.keys(value);
    let remaining = keys.length;
    const remove = (key: string, place: Place, before: unknown, message: string) => {
      out ??= { ...value };
      delete out[key];
      remaining -= 1;
      walk.repairs.push({
        ruleId: JSON_RULE_IDS.repair,
        action: "remove",
        path: place.pointer,
        before,
        message,
      });
    };
    for (const key of keys) {
      const cv = this.#childViews(views, key);
      const place = child(at, key);
      // Without an error at or below it, a value conforms: nothing there to repair.
      if (!cv.forbidden && !walk.dirty.has(place.pointer)) continue;
      const before = value[key];
      const removable = !shape.kept.has(key) && remaining > shape.minProperties && !walk.keep?.(place.path);
      if (cv.forbidden) {
        if (removable) {
          const parent = at.pointer ? ` in ${at.pointer}` : "";
          remove(
            key,
            place,
            before,
            `removed ${place.pointer}: the schema allows no property "${key}"${parent}`,
          );
        }
        continue;
      }
      const fixed =
        typeof before === "object" && before !== null
          ? this.#repairValue(before, cv.views, place, walk, depth + 1)
          : before;
      const broken = removable ? this.#removalReason(fixed, cv.roots) : undefined;
      if (broken !== undefined) {
        remove(key, place, before, `removed optional field ${place.pointer}: ${broken}`);
      } else if (fixed !== before) {
        out ??= { ...value };
        setOwn(out, key, fixed);
      }
    }
    return out ?? value;
  }

  /** Why an optional value should go, or undefined to keep it: a scalar that fails its sub-schema, or a container of the wrong type/enum/const. */
  #removalReason(value: unknown, roots: readonly View[]): string | undefined {
    const scalar = typeof value !== "object" || value === null;
    for (const root of roots) {
      const validate = this.#subValidator(root.ptr);
      if (!validate || validate(value)) continue;
      const errors = validate.errors ?? [];
      const decisive = scalar
        ? errors[0]
        : errors.find((e) => e.instancePath === "" && CONTAINER_REMOVABLE.has(e.keyword));
      if (decisive)
        return `${clip(JSON.stringify(value) ?? String(value), 60)} ${describeValueError(decisive)}`;
    }
    return undefined;
  }

  // ---- score units ------------------------------------------------------------------------------

  /**
   * Units below `value` (not counting the value itself). With `describeAbsent`, an absent or mistyped
   * value still counts the fields its schema describes, so removing such a value leaves the total as it was.
   */
  #below(
    value: unknown,
    views: readonly View[],
    describeAbsent: boolean,
    depth: number,
    trail: readonly object[] = [],
  ): number {
    if (depth > MAX_DEPTH) return 0;
    if (views.length === 0) return openUnits(value, depth);
    const present = value !== undefined && shapeAllowed(views, value) ? value : undefined;
    let absentTrail: readonly object[] = [];
    if (present === undefined) {
      if (!describeAbsent) return 0;
      // Nothing in the instance bounds the walk here: stop where a $ref recurses into a node already counted.
      if (views.some((v) => trail.includes(v.node))) return 0;
      absentTrail = [...trail, ...views.map((v) => v.node)];
    }
    const object = isRecord(present) ? present : undefined;
    const describedKeys = this.#described(views);
    let units = 0;
    for (const key of describedKeys) {
      const child = object && hasOwn(object, key) ? object[key] : undefined;
      units += 1 + this.#below(child, this.#childViews(views, key).views, true, depth + 1, absentTrail);
    }
    if (object) {
      for (const key of Object.keys(object)) {
        const cv = this.#childViews(views, key);
        if (cv.named) continue;
        if (cv.forbidden) units += 1;
        else if (cv.views.length > 0) units += 1 + this.#below(object[key], cv.views, false, depth + 1);
        else units += 1 + openUnits(object[key], depth + 1);
      }
    }
    if (Array.isArray(present) && present.length > 0) {
      present.forEach((item, index) => {
        const itemViews = this.#itemViews(views, index);
        const inner =
          itemViews.length > 0 ? this.#below(item, itemViews, false, depth + 1) : openUnits(item, depth + 1);
        units += Math.max(1, inner);
      });
    } else if (present === undefined || Array.isArray(present)) {
      // An absent or empty array still counts its items' fields once.
      units += this.#below(undefined, this.#itemViews(views, 0), true, depth + 1, absentTrail);
    }
    return units;
  }
}

/** An instance location during the repair walk: its pointer (as Ajv writes `instancePath`) and its segments. */
interface Place {
  readonly pointer: string;
  readonly path: readonly Segment[];
}

const ROOT_PLACE: Place = { pointer: "", path: [] };

function child(at: Place, segment: Segment): Place {
  return { pointer: `${at.pointer}/${escapeSegment(String(segment))}`, path: [...at.path, segment] };
}

interface RepairWalk {
  readonly repairs: Repair[];
  /** Every instance pointer that holds an error or has one below it. */
  readonly dirty: ReadonlySet<string>;
  keep?: (path: readonly Segment[]) => boolean;
}

function dirtyPointers(errors: readonly ErrorObject[]): Set<string> {
  const dirty = new Set<string>([""]);
  for (const { instancePath } of errors) {
    let pointer = instancePath;
    while (pointer !== "" && !dirty.has(pointer)) {
      dirty.add(pointer);
      pointer = pointer.slice(0, pointer.lastIndexOf("/"));
    }
  }
  return dirty;
}

function pushRoot(roots: View[], node: unknown, ptr: string): void {
  if (isRecord(node)) roots.push({ node, ptr });
}

function hasDynamicApplicator({ node }: View): boolean {
  return (
    node.anyOf !== undefined ||
    node.oneOf !== undefined ||
    node.if !== undefined ||
    node.dependentSchemas !== undefined ||
    node.dependencies !== undefined
  );
}

/** Whether a container value has a shape its schema allows (a mistyped value counts as absent). */
function shapeAllowed(views: readonly View[], value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  const jsonType = Array.isArray(value) ? "array" : "object";
  for (const { node } of views) {
    if (node.enum !== undefined || node.const !== undefined) return false;
    const type = node.type;
    if (typeof type === "string" && type !== jsonType) return false;
    if (Array.isArray(type) && !type.includes(jsonType)) return false;
  }
  return true;
}

/** Units below a value the schema leaves open: each nested property or element counts. */
function openUnits(value: unknown, depth: number): number {
  if (depth > MAX_DEPTH || typeof value !== "object" || value === null) return 0;
  let units = 0;
  for (const child of Array.isArray(value) ? value : Object.values(value))
    units += 1 + openUnits(child, depth + 1);
  return units;
}

function setOwn(target: SchemaObject, key: string, value: unknown): void {
  // defineProperty, so that a "__proto__" key from JSON stays an ordinary property.
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

function unescapeSegment(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function show(value: unknown): string {
  return clip(JSON.stringify(value) ?? String(value), 60);
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number" && Number.isInteger(value)) return "integer";
  return typeof value;
}

/** The failing check in words, without the location (callers put the location first). */
function describeValueError(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "pattern":
      return `does not match the pattern ${String(params.pattern)}`;
    case "format":
      return `is not a valid ${String(params.format)}`;
    case "enum":
      return `is not one of ${clip((Array.isArray(params.allowedValues) ? params.allowedValues : []).map(show).join(", "), 200)}`;
    case "const":
      return `must be ${show(params.allowedValue)}`;
    case "type":
      return `must be ${String(params.type)} (got ${jsonTypeOf(error.data)})`;
    default:
      return error.message ?? `fails "${error.keyword}"`;
  }
}

function valueHint(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "pattern":
      return `give a value that matches ${String(params.pattern)}`;
    case "format":
      return `give a valid ${String(params.format)}`;
    case "enum":
      return `use one of ${clip((Array.isArray(params.allowedValues) ? params.allowedValues : []).map(show).join(", "), 200)}`;
    case "const":
      return `use exactly ${show(params.allowedValue)}`;
    case "type":
      return `give a value of type ${String(params.type)}`;
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return `give a number ${String(params.comparison)} ${String(params.limit)}`;
    case "minLength":
      return `give at least ${String(params.limit)} characters`;
    case "maxLength":
      return `give at most ${String(params.limit)} characters`;
    case "multipleOf":
      return `give a multiple of ${String(params.multipleOf)}`;
    default:
      return `give a value that ${error.message ?? "conforms to the schema"}`;
  }
}

// ---- the compiled-schema cache ---------------------------------------------------------------------

// By identity first (the same context object across repair, check and score), then by the schema's
// JSON text (the same schema re-parsed from every draft), then by its key-order-independent text;
// least recently used evicted first. Only a miss pays for the sorted serialization.
const byIdentity = new WeakMap<object, SchemaLookup>();
const byText = new Map<string, SchemaLookup>();
const byStableText = new Map<string, SchemaLookup>();
let compilations = 0;

function remember(cache: Map<string, SchemaLookup>, key: string, lookup: SchemaLookup): void {
  cache.delete(key); // re-insert: a Map's order is the recency order
  cache.set(key, lookup);
  if (cache.size > MAX_CACHED_SCHEMAS) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
}

/** How many schemas were compiled so far and how many distinct schemas the cache holds (tests, metrics). */
export function jsonSchemaCacheStats(): { compilations: number; cached: number } {
  return { compilations, cached: byStableText.size };
}

/** Empties the content-keyed caches (tests). Schema objects already seen stay cached by identity until collected. */
export function clearJsonSchemaCache(): void {
  byText.clear();
  byStableText.clear();
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
export function compileJsonSchema(schema: unknown): SchemaLookup {
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
  const known = byIdentity.get(root);
  if (known) return known;
  const lookup = lookupByContent(root);
  byIdentity.set(root, lookup);
  return lookup;
}

function lookupByContent(schema: SchemaObject): SchemaLookup {
  const { maxDepth, maxBytes } = DEFAULT_SCHEMA_LIMITS;
  // Serializing, the meta-schema check and Ajv all recurse over the schema: depth is bounded first.
  if (exceedsDepth(schema, maxDepth)) return invalidSchema(`it is nested more than ${maxDepth} levels deep`);
  const text = JSON.stringify(schema);
  const bytes = Buffer.byteLength(text);
  // Not kept by text: an oversized text would make an oversized cache key.
  if (bytes > maxBytes) return invalidSchema(`it is ${bytes} bytes, over the limit of ${maxBytes} bytes`);
  let lookup = byText.get(text);
  if (!lookup) {
    // Key-order-independent text: equal schemas parsed from different documents share one compilation.
    const stable = canonicalJson(schema);
    lookup = byStableText.get(stable) ?? compileUncached(schema);
    remember(byStableText, stable, lookup);
  }
  remember(byText, text, lookup);
  return lookup;
}

function compileUncached(schema: SchemaObject): SchemaLookup {
  compilations += 1;
  const dialect = dialectOf(schema);
  if (!dialect) {
    return invalidSchema(
      `unsupported $schema ${JSON.stringify(schema.$schema)} (use JSON Schema 2020-12, 2019-09 or draft-07)`,
    );
  }
  const { meta, registered } = dialectSupport(dialect);
  const remote = findRemoteRef(schema, registered);
  if (remote !== undefined) {
    return invalidSchema(
      `$ref ${JSON.stringify(remote)} points outside the schema; only references inside it ("#/$defs/…" or an $id it defines) are allowed`,
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
  try {
    return { ok: true, schema: new CompiledJsonSchema(schema, dialect) };
  } catch (error) {
    return invalidSchema(error instanceof Error ? error.message : String(error));
  }
}

// ---- the json pack -------------------------------------------------------------------------------

export const JsonSettingsSchema = z.object({
  /** Run the deterministic repair before checking (off only to measure what repair buys). */
  repair: z.boolean(),
});
export type JsonSettings = z.infer<typeof JsonSettingsSchema>;

/**
 * The schema a json draft is checked against, `draft.context.schema`, compiled; undefined when the draft
 * has none (a violation the check reports). Throws InvalidSchemaError when the draft has one that cannot
 * be used: the run is rejected, and the schema never reaches the model.
 */
export function draftSchema(draft: Draft): CompiledJsonSchema | undefined {
  const lookup = compileJsonSchema(draft.context?.schema);
  if (lookup.ok) return lookup.schema;
  if (lookup.problem.ruleId === JSON_RULE_IDS.missing) return undefined;
  throw new InvalidSchemaError(`context.schema: ${lookup.problem.message}`);
}

const jsonSchemaRule: Rule<unknown, JsonSettings> = {
  id: JSON_RULE_IDS.schema,
  description:
    "The content conforms to the JSON Schema in context.schema (2020-12, or draft-07 or 2019-09 when $schema says so).",
  severity: "error",
  source: "schema",
  check({ draft, content }) {
    const schema = draftSchema(draft);
    if (!schema) {
      return [
        {
          ruleId: JSON_RULE_IDS.missing,
          message: "no JSON Schema to check against (context.schema is missing)",
          suggestion:
            "Send the draft with a JSON Schema object in context.schema; the model cannot fix this by editing the content.",
        },
      ];
    }
    return schema.findings(content);
  },
};

/** Correction-prompt rules for structured extraction. */
export const JSON_INSTRUCTIONS =
  "The content is a JSON value extracted from a source and must conform to the JSON Schema given as the " +
  "output shape. Fix every listed violation at the path it names, keep every value that is already valid, " +
  "and do not invent facts the source does not state. Keep required fields and give them valid values; " +
  `${OMIT_OPTIONAL_RULE}, nor a placeholder such as "N/A" or null. Add no property the schema does not define.`;

/**
 * Structured extraction (seed 001): content checked against the JSON Schema in `context.schema`. Every
 * hook throws InvalidSchemaError for a schema that cannot be used, `contentJsonSchema` included, so the
 * model is only ever handed a schema that passed the checks of `compileJsonSchema`.
 */
export const jsonPack: Pack<unknown, JsonSettings> = {
  kind: "json",
  description: "A JSON record extracted by a model, checked against the JSON Schema in context.schema.",
  settings: { repair: true },
  settingsSchema: JsonSettingsSchema,
  rules: [jsonSchemaRule],
  repair({ draft, content, settings }) {
    const schema = draftSchema(draft);
    return settings.repair && schema ? schema.repair(content) : { content, repairs: [] };
  },
  scoreUnits({ draft, content }) {
    return draftSchema(draft)?.units(content) ?? 1;
  },
  instructions: JSON_INSTRUCTIONS,
  contentJsonSchema(draft) {
    return draftSchema(draft)?.schema;
  },
};
