/**
 * Schema navigation: which sub-schemas apply to an instance location, as the repair walk, the score's
 * unit count and the messages see it. Computed once per schema location and kept with the compiled schema.
 */
import { fragmentSegment, hasOwn, isRecord, type SchemaObject, safeDecode, unescapeSegment } from "./util.js";

/** Guards the schema/instance walks against pathological nesting and `$ref` cycles. */
export const MAX_DEPTH = 256;
/** Keys outside `properties` (free-form maps) are looked up uncached beyond this many per object schema. */
const MAX_CACHED_KEYS = 1000;

/** One place in the schema that applies to the instance location being walked. */
export interface View {
  readonly node: SchemaObject;
  /** URI-fragment pointer of `node` inside the root schema: what Ajv's `getSchema("root#…")` takes. */
  readonly ptr: string;
}

export interface ChildViews {
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

export interface ObjectShape {
  /** Keys never removed: required, or looked at by a dependency, condition or alternative. */
  readonly kept: ReadonlySet<string>;
  readonly required: ReadonlySet<string>;
  readonly minProperties: number;
}

/** What the walks need about one set of views, computed on first use and kept with the compiled schema. */
interface Plan {
  described?: readonly string[];
  children?: Map<string, ChildViews>;
  items?: Map<number, readonly View[]>;
  tupleLength?: number;
  shape?: ObjectShape;
}

export const NO_VIEWS: readonly View[] = [];

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
export function shapeAllowed(views: readonly View[], value: unknown): boolean {
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

/**
 * The sub-schemas of one root schema that apply at each instance location. View arrays are built once
 * per schema location and reused, so they can key the plans.
 */
export class SchemaViews {
  readonly #schema: SchemaObject;
  readonly #refs = new Map<string, View | null>();
  readonly #patterns = new Map<string, RegExp | null>();
  readonly #plans = new WeakMap<readonly View[], Plan>();
  #root: readonly View[] | undefined;

  constructor(schema: SchemaObject) {
    this.#schema = schema;
  }

  root(): readonly View[] {
    this.#root ??= this.#expand(this.#schema, "", [], new Set());
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
  described(views: readonly View[]): readonly string[] {
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
      let node: unknown = this.#schema;
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

  childViews(views: readonly View[], key: string): ChildViews {
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

  itemViews(views: readonly View[], index: number): readonly View[] {
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

  shape(views: readonly View[]): ObjectShape {
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
}
