/**
 * Schema navigation: which sub-schemas apply to an instance location, as the repair walk, the score's
 * unit count and the messages see it. Computed once per schema location and kept with the compiled schema.
 */

import type { RegExpLike } from "ajv/dist/types/index.js";
import { unescapeSegment } from "../../pointer.js";
import { idKeyword, isLegacyDialect, type JsonSchemaDialect } from "./ajv.js";
import { DATA_KEYWORDS, MAP_KEYWORDS } from "./keywords.js";
import { linearRegExp } from "./linear-regex.js";
import { fragmentSegment, hasOwn, isRecord, type SchemaObject, safeDecode } from "./util.js";

/** Where relative `$id`s and `$ref`s resolve in a schema without a root `$id` (the guard uses the same). */
const STAND_IN_BASE = "https://redraft.invalid/schema.json";

function resolveUri(ref: string, base: string): URL | undefined {
  try {
    return new URL(ref, base);
  } catch {
    return undefined;
  }
}

/** A URI without its fragment. */
function withoutFragment(url: URL): string {
  const copy = new URL(url.href);
  copy.hash = "";
  return copy.href;
}

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
  /**
   * Why the walk cannot decide about this key safely, or undefined when it can: a reference it does not
   * follow, or an alternative or condition that also constrains the key. Repair steps aside there.
   */
  readonly undecided: string | undefined;
}

export interface ObjectShape {
  /** Keys never removed: required, or looked at by a dependency, condition or alternative. */
  readonly kept: ReadonlySet<string>;
  readonly required: ReadonlySet<string>;
  readonly minProperties: number;
}

/** What the walks need about one set of views, computed on first use and kept with the compiled schema. */
interface Plan {
  /** Set when the views were built: why they may be incomplete (a reference the walk did not follow). */
  opaque?: string | undefined;
  described?: readonly string[];
  /** What the unit count needs here, gathered once. */
  units?: UnitPlan;
  children?: Map<string, ChildViews>;
  items?: Map<number, readonly View[]>;
  tupleLength?: number;
  shape?: ObjectShape;
}

const NO_VIEWS: readonly View[] = [];

/** What the score's unit count needs about one set of views: one lookup per instance location. */
export interface UnitPlan {
  /** The described keys with their child views, in order. */
  readonly described: readonly (readonly [string, ChildViews])[];
  readonly named: ReadonlySet<string>;
  /** Whether an object / an array value has a shape these views allow (a mistyped one counts as absent). */
  readonly allowsObject: boolean;
  readonly allowsArray: boolean;
  /** Units of an absent value here (a constant of the schema), once counted. */
  absent?: number;
  /**
   * Per described key: whether a scalar there counts no units below it (its schema describes no
   * properties), so that the count need not look its plan up. Filled on first use.
   */
  scalarLeaves?: readonly boolean[];
}

function pushRoot(roots: View[], node: unknown, ptr: string): void {
  if (isRecord(node)) roots.push({ node, ptr });
}

/** Keywords that apply a sub-schema only under a condition, or as one alternative among others. */
const CONDITIONAL_KEYWORDS = ["anyOf", "oneOf", "not", "if", "then", "else"] as const;

function hasDynamicApplicator({ node }: View): boolean {
  return (
    node.anyOf !== undefined ||
    node.oneOf !== undefined ||
    node.if !== undefined ||
    node.dependentSchemas !== undefined ||
    node.dependencies !== undefined
  );
}

/** The branches of a view's conditional applicators: alternatives, conditions, and schema dependencies. */
function conditionalBranches(node: SchemaObject): unknown[] {
  const branches: unknown[] = [];
  for (const keyword of CONDITIONAL_KEYWORDS) {
    const value = node[keyword];
    if (Array.isArray(value)) branches.push(...value);
    else if (value !== undefined) branches.push(value);
  }
  for (const deps of [node.dependentSchemas, node.dependencies]) {
    // `dependencies` holds lists (dependentRequired) and schemas (dependentSchemas) side by side.
    if (isRecord(deps))
      for (const value of Object.values(deps)) if (!Array.isArray(value)) branches.push(value);
  }
  return branches;
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

/** What a reference resolves to: a view, or why the walk does not follow it. */
type Target = { view: View } | { opaque: string };

/**
 * The identifiers a schema defines, found once: each resource (`$id`) and anchor by its absolute URI,
 * `$dynamicAnchor`s and `$recursiveAnchor`s by name, and each schema node's base URI.
 */
interface Index {
  readonly resources: Map<string, View>;
  readonly anchors: Map<string, View>;
  readonly dynamicAnchors: Map<string, View[]>;
  readonly recursiveAnchors: View[];
  readonly baseOf: WeakMap<object, string>;
}

function indexSchema(schema: SchemaObject, idKey: "$id" | "id"): Index {
  const index: Index = {
    resources: new Map(),
    anchors: new Map(),
    dynamicAnchors: new Map(),
    recursiveAnchors: [],
    baseOf: new WeakMap(),
  };
  index.resources.set(STAND_IN_BASE, { node: schema, ptr: "" });
  // The schema passed the guard's depth bound: an explicit stack all the same, as the guard does.
  const stack: { value: unknown; ptr: string; base: string; map: boolean }[] = [
    { value: schema, ptr: "", base: STAND_IN_BASE, map: false },
  ];
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const { value, ptr, map } = frame;
    let { base } = frame;
    if (typeof value !== "object" || value === null) continue;
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        stack.push({ value: item, ptr: `${ptr}/${i}`, base, map: false });
      });
      continue;
    }
    const node = value as SchemaObject;
    if (map) {
      for (const [key, child] of Object.entries(node))
        stack.push({ value: child, ptr: `${ptr}/${fragmentSegment(key)}`, base, map: false });
      continue;
    }
    const view: View = { node, ptr };
    const id = node[idKey];
    if (typeof id === "string") {
      const url = resolveUri(id, base);
      if (url) {
        // draft-07 and earlier name a plain-name anchor with `$id: "#foo"` (draft-04: `id`).
        if (id.startsWith("#")) index.anchors.set(url.href, view);
        else {
          base = withoutFragment(url);
          index.resources.set(base, view);
        }
      }
    }
    index.baseOf.set(node, base);
    if (typeof node.$anchor === "string") index.anchors.set(`${base}#${node.$anchor}`, view);
    if (typeof node.$dynamicAnchor === "string") {
      index.anchors.set(`${base}#${node.$dynamicAnchor}`, view);
      const list = index.dynamicAnchors.get(node.$dynamicAnchor) ?? [];
      list.push(view);
      index.dynamicAnchors.set(node.$dynamicAnchor, list);
    }
    if (node.$recursiveAnchor === true) index.recursiveAnchors.push(view);
    for (const [key, child] of Object.entries(node)) {
      if (DATA_KEYWORDS.has(key)) continue;
      stack.push({ value: child, ptr: `${ptr}/${fragmentSegment(key)}`, base, map: MAP_KEYWORDS.has(key) });
    }
  }
  return index;
}

/**
 * The sub-schemas of one root schema that apply at each instance location, following the specification
 * where it can be followed statically (`$ref` by pointer, anchor or `$id`; `$dynamicRef` and
 * `$recursiveRef` when only one anchor can be their target; `allOf`), and saying where it cannot.
 * View arrays are built once per schema location and reused, so they can key the plans.
 */
export class SchemaViews {
  readonly #schema: SchemaObject;
  readonly #index: Index;
  readonly #refs = new Map<string, Target>();
  readonly #patterns = new Map<string, RegExpLike | null>();
  readonly #plans = new WeakMap<readonly View[], Plan>();
  #root: readonly View[] | undefined;

  /**
   * Keywords of the schema's dialect the walk reads: another dialect's keyword is an annotation to Ajv
   * (draft-07 has neither unevaluatedProperties nor a dynamic reference).
   */
  readonly #dialect: JsonSchemaDialect;
  readonly #modern: boolean;
  readonly #refKeywords: readonly ("$ref" | "$dynamicRef" | "$recursiveRef")[];

  constructor(schema: SchemaObject, dialect: JsonSchemaDialect) {
    this.#schema = schema;
    this.#index = indexSchema(schema, idKeyword(dialect));
    this.#dialect = dialect;
    this.#modern = dialect === "2020-12";
    this.#refKeywords =
      dialect === "2020-12"
        ? ["$ref", "$dynamicRef"]
        : dialect === "2019-09"
          ? ["$ref", "$recursiveRef"]
          : ["$ref"];
  }

  root(): readonly View[] {
    if (!this.#root) {
      const opaque: string[] = [];
      this.#root = this.#expand(this.#schema, "", [], new Set(), opaque);
      this.#plan(this.#root).opaque = opaque[0];
    }
    return this.#root;
  }

  /** Why these views may be incomplete (the walk met a reference it does not follow), or undefined. */
  opaque(views: readonly View[]): string | undefined {
    return this.#plans.get(views)?.opaque;
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

  /** What the unit count needs at these views, computed on first use. */
  unitPlan(views: readonly View[]): UnitPlan {
    const plan = this.#plan(views);
    if (!plan.units) {
      const described = this.described(views).map((key) => [key, this.childViews(views, key)] as const);
      plan.units = {
        described,
        named: new Set(described.filter(([, cv]) => cv.named).map(([key]) => key)),
        allowsObject: shapeAllowed(views, {}),
        allowsArray: shapeAllowed(views, []),
      };
    }
    return plan.units;
  }

  /**
   * The node plus what it pulls in unconditionally: its reference targets and `allOf` members. A node seen
   * before is not expanded again (reference cycles); `opaque` collects why a reference was not followed.
   */
  #expand(node: unknown, ptr: string, out: View[], seen: Set<object>, opaque: string[]): View[] {
    if (!isRecord(node) || seen.has(node)) return out;
    if (seen.size > MAX_DEPTH) {
      opaque.push(`the schema applies more than ${MAX_DEPTH} sub-schemas here`);
      return out;
    }
    seen.add(node);
    out.push({ node, ptr });
    for (const keyword of this.#refKeywords) {
      const ref = node[keyword];
      if (typeof ref !== "string") continue;
      const target = this.#resolve(node, keyword, ref);
      if ("view" in target) this.#expand(target.view.node, target.view.ptr, out, seen, opaque);
      else opaque.push(target.opaque);
    }
    if (Array.isArray(node.allOf)) {
      node.allOf.forEach((member, i) => {
        this.#expand(member, `${ptr}/allOf/${i}`, out, seen, opaque);
      });
    }
    return out;
  }

  /** Expands a list of roots into one views array, recording whether it is complete. */
  #expandAll(roots: readonly View[]): readonly View[] {
    if (roots.length === 0) return NO_VIEWS;
    const expanded: View[] = [];
    const seen = new Set<object>();
    const opaque: string[] = [];
    for (const root of roots) this.#expand(root.node, root.ptr, expanded, seen, opaque);
    this.#plan(expanded).opaque = opaque[0];
    return expanded;
  }

  /**
   * The schema object a reference of `node` names when it can be found statically (cost.ts follows
   * every reference the way the walks do); undefined otherwise.
   */
  referenced(
    node: SchemaObject,
    keyword: "$ref" | "$dynamicRef" | "$recursiveRef",
  ): SchemaObject | undefined {
    const ref = node[keyword];
    if (typeof ref !== "string" || !this.#refKeywords.includes(keyword)) return undefined;
    const target = this.#resolve(node, keyword, ref);
    return "view" in target ? target.view.node : undefined;
  }

  #resolve(node: SchemaObject, keyword: "$ref" | "$dynamicRef" | "$recursiveRef", ref: string): Target {
    const base = this.#index.baseOf.get(node) ?? STAND_IN_BASE;
    const key = `${keyword} ${base} ${ref}`;
    let target = this.#refs.get(key);
    if (!target) {
      target = this.#resolveUncached(base, keyword, ref);
      this.#refs.set(key, target);
    }
    return target;
  }

  #resolveUncached(base: string, keyword: "$ref" | "$dynamicRef" | "$recursiveRef", ref: string): Target {
    const unfollowed = {
      opaque: `the schema uses ${keyword} ${JSON.stringify(ref)}, which the walk does not follow`,
    };
    const url = resolveUri(ref, base);
    if (!url) return unfollowed;
    const fragment = safeDecode(url.hash.slice(1));
    const resource = withoutFragment(url);
    let view: View | undefined;
    if (fragment === "" || fragment.startsWith("/")) {
      const doc = this.#index.resources.get(resource);
      if (doc) view = this.#pointer(doc, fragment);
    } else {
      view = this.#index.anchors.get(`${resource}#${fragment}`);
    }
    if (!view) return unfollowed;
    if (
      keyword === "$dynamicRef" &&
      typeof view.node.$dynamicAnchor === "string" &&
      fragment === view.node.$dynamicAnchor
    ) {
      // Dynamic scope picks the outermost resource with this $dynamicAnchor: statically known only when
      // the schema has one.
      const candidates = this.#index.dynamicAnchors.get(fragment) ?? [];
      return candidates.length === 1 && candidates[0] ? { view: candidates[0] } : unfollowed;
    }
    if (keyword === "$recursiveRef" && view.node.$recursiveAnchor === true) {
      const candidates = this.#index.recursiveAnchors;
      return candidates.length === 1 && candidates[0] ? { view: candidates[0] } : unfollowed;
    }
    return { view };
  }

  /** The node a JSON pointer names inside a resource; the view's pointer is from the root document. */
  #pointer(doc: View, pointer: string): View | undefined {
    let node: unknown = doc.node;
    let ptr = doc.ptr;
    for (const raw of pointer === "" ? [] : pointer.slice(1).split("/")) {
      const part = unescapeSegment(raw);
      node = Array.isArray(node)
        ? node[Number(part)]
        : isRecord(node) && hasOwn(node, part)
          ? node[part]
          : undefined;
      ptr += `/${fragmentSegment(part)}`;
    }
    return isRecord(node) ? { node, ptr } : undefined;
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
      if (node.unevaluatedProperties === false && !isLegacyDialect(this.#dialect)) unevaluatedFalse = true;
    }
    const opaque = this.opaque(views);
    const conditional = views.some(hasDynamicApplicator);
    // unevaluatedProperties also counts what anyOf/oneOf/if/dependentSchemas evaluated; the walk does
    // not follow those, so it only rules a key out when no such keyword is around.
    const forbidden =
      forbiddenByAdditional || (unevaluatedFalse && !described && !evaluated && !conditional && !opaque);
    const childViews = this.#expandAll(roots);
    let undecided = opaque ?? this.opaque(childViews);
    if (!undecided && !forbiddenByAdditional && unevaluatedFalse && !described && !evaluated && conditional)
      undecided = "unevaluatedProperties depends on what anyOf/oneOf/if/dependentSchemas evaluated";
    if (!undecided && this.#branchTouches(views, key))
      undecided = `an alternative or condition (anyOf/oneOf/not/if/dependentSchemas) also constrains "${key}"`;
    return { roots, views: childViews, named, described, forbidden, undecided };
  }

  /** Whether a conditional branch of the views has its own sub-schema for `key`. */
  #branchTouches(views: readonly View[], key: string): boolean {
    for (const { node } of views) {
      for (const branch of conditionalBranches(node)) {
        const opaque: string[] = [];
        for (const { node: b } of this.#expand(branch, "", [], new Set(), opaque)) {
          if (isRecord(b.properties) && hasOwn(b.properties, key)) return true;
          if (isRecord(b.patternProperties)) {
            for (const pattern of Object.keys(b.patternProperties))
              if (this.#pattern(pattern)?.test(key)) return true;
          }
          if (b.additionalProperties !== undefined || b.unevaluatedProperties !== undefined) return true;
        }
        if (opaque.length > 0) return true;
      }
    }
    return false;
  }

  #itemRoots(views: readonly View[], index: number): View[] {
    const roots: View[] = [];
    for (const { node, ptr } of views) {
      if (!this.#modern && Array.isArray(node.items)) {
        // draft-07 and 2019-09 tuple form
        if (index < node.items.length) pushRoot(roots, node.items[index], `${ptr}/items/${index}`);
        else pushRoot(roots, node.additionalItems, `${ptr}/additionalItems`);
      } else if (this.#modern && Array.isArray(node.prefixItems) && index < node.prefixItems.length) {
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
        const tuple = this.#modern ? node.prefixItems : node.items;
        if (Array.isArray(tuple)) length = Math.max(length, tuple.length);
      }
      plan.tupleLength = length;
    }
    // Past the tuple part every index has the same schema: one cache entry serves them all.
    const slot = index < plan.tupleLength ? index : -1;
    plan.items ??= new Map();
    let items = plan.items.get(slot);
    if (!items) {
      items = this.#expandAll(this.#itemRoots(views, index));
      // Elements under a view the walk could not see whole are not decided either.
      if (plan.opaque && items !== NO_VIEWS) this.#plan(items).opaque ??= plan.opaque;
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
      for (const { node } of this.#expand(branch, "", [], new Set(), [])) {
        addStrings(kept, node.required);
        if (isRecord(node.properties)) for (const key of Object.keys(node.properties)) kept.add(key);
        for (const deps of [node.dependentRequired, node.dependencies]) {
          if (isRecord(deps)) for (const list of Object.values(deps)) addStrings(kept, list);
        }
      }
    };
    for (const { node } of views) {
      addStrings(required, node.required);
      for (const deps of [node.dependentRequired, node.dependencies]) {
        if (isRecord(deps)) for (const list of Object.values(deps)) addStrings(kept, list);
      }
      for (const branch of conditionalBranches(node)) addLookedAt(branch);
      if (typeof node.minProperties === "number") minProperties = Math.max(minProperties, node.minProperties);
    }
    for (const key of required) kept.add(key);
    return { kept, required, minProperties };
  }

  #pattern(source: string): RegExpLike | undefined {
    let re = this.#patterns.get(source);
    if (re === undefined) {
      try {
        // The same engine as Ajv's: an instance key cannot make the walk backtrack either.
        re = linearRegExp(source, "u");
      } catch {
        re = null;
      }
      this.#patterns.set(source, re);
    }
    return re ?? undefined;
  }
}

/**
 * The first place on the way to `pointer` where the walk cannot decide (see ChildViews.undecided): its
 * pointer and the reason, or undefined when every step is decided. Array elements are never removed, so
 * only object properties are asked.
 */
export function undecidedOnPath(
  schema: SchemaViews,
  content: unknown,
  pointer: string,
): { pointer: string; reason: string } | undefined {
  if (pointer === "") return undefined;
  let value = content;
  let views = schema.root();
  let at = "";
  for (const raw of pointer.slice(1).split("/")) {
    at += `/${raw}`;
    if (views.length === 0) return undefined;
    const segment = unescapeSegment(raw);
    if (Array.isArray(value)) {
      const index = Number(segment);
      views = schema.itemViews(views, index);
      value = value[index];
    } else if (isRecord(value)) {
      const cv = schema.childViews(views, segment);
      if (cv.undecided !== undefined) return { pointer: at, reason: cv.undecided };
      views = cv.views;
      value = hasOwn(value, segment) ? value[segment] : undefined;
    } else {
      return undefined;
    }
  }
  return undefined;
}
