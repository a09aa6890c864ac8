/**
 * A bound on what checking one draft's content against a recursive schema costs, computed from the
 * content itself before Ajv runs.
 *
 * cost.ts bounds a schema with its references unfolded, but a reference back into the walk (recursion)
 * counts one there: the instance's depth bounds it. That leaves the work a recursive schema does per
 * level of the *data*: a definition whose `anyOf` has two branches that both apply it again to the same
 * child (`unevaluatedProperties` makes Ajv try every branch) is a few hundred bytes that cost 2^depth
 * evaluations on a chain `{ c: { c: … } }` 40 levels deep, a validation no thread returns from.
 *
 * So before Ajv checks content against such a schema, the evaluations it may do are counted: each
 * sub-schema counted once per value it is applied to (applicators to the same value, `properties` and
 * `items` to the children they name, `additionalProperties`, `unevaluated*` and `contains` to every child
 * they may see: an upper bound). A schema reached through a reference is memoized per value, so the count,
 * which may be exponential, takes time bounded by the schema's size times the content's; the walk also
 * stops once the count or its own steps pass the budget. Past it, the draft alone is rejected
 * `invalid_schema` / `too_slow`.
 *
 * Only schemas that can multiply work are walked: recursive ones, and those whose unfolded size is past
 * GUARDED_UNFOLDED (for the others the work is at most that size times the content's, linear): an
 * ordinary draft pays nothing.
 */
import type { JsonSchemaDialect } from "./ajv.js";
import type { CompiledJsonSchema } from "./compiled.js";
import { isRecord, type SchemaObject } from "./util.js";
import { SchemaViews } from "./views.js";

/**
 * Sub-schema evaluations one draft's check may take. Ajv runs ten to forty million a second (cost.ts;
 * a 3-branch `oneOf` AST schema measured 21.5 million in 0.49 s), so this is about half a second to two
 * seconds of one thread, the order of the draft's pattern budget (regex-guard.ts). Ajv's work there is
 * real, not the count's over-estimate: with `allErrors` every branch of a `oneOf` recurses. Recursive
 * schemas over ordinary drafts count in the thousands (a tree of 3,280 nodes against a 4-node schema: ~10,000).
 */
export const MAX_DRAFT_EVALUATIONS = 20_000_000;

/** Unfolded size past which a schema without recursion is also walked per draft (the SchemaStore slice's largest is 688). */
export const GUARDED_UNFOLDED = 5_000;

const SAME_VALUE_LISTS = ["allOf", "anyOf", "oneOf"] as const;
const SAME_VALUE_ONE = ["not", "if", "then", "else"] as const;
const SAME_VALUE_MAPS = ["dependentSchemas", "dependencies"] as const;
const REF_KEYWORDS = ["$ref", "$dynamicRef", "$recursiveRef"] as const;

/** The key a primitive value is memoized under: the count below a primitive does not depend on its value. */
const PRIMITIVE = Symbol("primitive");

class OverBudget extends Error {}

/** What one schema object applies, resolved once per schema and kept across drafts. */
interface Plan {
  /** The targets of its references. */
  readonly targets: SchemaObject[];
  /** Its patternProperties' patterns, or undefined when JavaScript reads one otherwise (every key may match). */
  readonly patterns: RegExp[] | undefined;
}

/** A guarded schema's views (references resolved) and the plans of its schema objects. */
interface Guard {
  readonly views: SchemaViews;
  readonly plans: WeakMap<SchemaObject, Plan>;
}

/** Schemas checked per draft, by compiled schema. */
const guarded = new WeakMap<CompiledJsonSchema, Guard>();

/** Marks a compiled schema as one whose drafts are counted before Ajv checks them (compile.ts decides). */
export function guardDraftCost(compiled: CompiledJsonSchema, dialect: JsonSchemaDialect): void {
  guarded.set(compiled, { views: new SchemaViews(compiled.schema, dialect), plans: new WeakMap() });
}

/** Whether drafts of `compiled` are counted: a schema whose work can grow faster than its data (thread.ts sends them off the thread). */
export function isDraftCostGuarded(compiled: CompiledJsonSchema): boolean {
  return guarded.has(compiled);
}

/**
 * The evaluations checking `content` against a guarded schema may take, or undefined once past `limit`;
 * 0 for a schema that is not guarded (nothing is walked).
 */
export function draftEvaluations(
  compiled: CompiledJsonSchema,
  content: unknown,
  limit = MAX_DRAFT_EVALUATIONS,
): number | undefined {
  const guard = guarded.get(compiled);
  if (!guard) return 0;
  const { views, plans } = guard;
  const memo = new Map<SchemaObject, Map<unknown, number>>();
  const open = new Map<SchemaObject, Set<unknown>>();
  let steps = 0;

  const planOf = (node: SchemaObject): Plan => {
    let plan = plans.get(node);
    if (plan) return plan;
    const targets: SchemaObject[] = [];
    for (const keyword of REF_KEYWORDS) {
      const target = views.referenced(node, keyword);
      if (target) targets.push(target);
    }
    const map = node.patternProperties;
    let patterns: RegExp[] | undefined = [];
    try {
      if (isRecord(map)) patterns = Object.keys(map).map((p) => new RegExp(p, "u"));
    } catch {
      patterns = undefined; // a pattern JavaScript reads otherwise: every key may match (an upper bound)
    }
    plan = { targets, patterns };
    plans.set(node, plan);
    return plan;
  };

  const count = (schema: unknown, value: unknown, viaRef: boolean): number => {
    if (!isRecord(schema)) return 1; // a boolean schema
    const key = typeof value === "object" && value !== null ? value : PRIMITIVE;
    let known: Map<unknown, number> | undefined;
    let pairs: Set<unknown> | undefined;
    if (viaRef) {
      // Only a schema reached through a reference can be reached twice with the same value.
      known = memo.get(schema);
      const hit = known?.get(key);
      if (hit !== undefined) return hit;
      pairs = open.get(schema);
      // The same schema on the same value inside itself: Ajv recurses without end (compiled.ts reports it).
      if (pairs?.has(key)) return 1;
      if (!pairs) {
        pairs = new Set();
        open.set(schema, pairs);
      }
      pairs.add(key);
    }
    if (++steps > limit) throw new OverBudget();
    let sum = 1;
    const add = (n: number) => {
      sum += n;
      if (sum > limit) throw new OverBudget();
    };
    for (const keyword of SAME_VALUE_LISTS) {
      const list = schema[keyword];
      if (Array.isArray(list)) for (const sub of list) add(count(sub, value, false));
    }
    for (const keyword of SAME_VALUE_ONE) if (keyword in schema) add(count(schema[keyword], value, false));
    for (const keyword of SAME_VALUE_MAPS) {
      const map = schema[keyword];
      if (isRecord(map))
        for (const sub of Object.values(map)) if (!Array.isArray(sub)) add(count(sub, value, false));
    }
    const plan = planOf(schema);
    for (const target of plan.targets) add(count(target, value, true));
    if (Array.isArray(value)) {
      const prefix = Array.isArray(schema.prefixItems)
        ? schema.prefixItems
        : Array.isArray(schema.items)
          ? schema.items
          : [];
      value.forEach((item, i) => {
        if (i < prefix.length) add(count(prefix[i], item, false));
        else {
          if (!Array.isArray(schema.items) && "items" in schema) add(count(schema.items, item, false));
          if (Array.isArray(schema.items) && "additionalItems" in schema)
            add(count(schema.additionalItems, item, false));
        }
        if ("unevaluatedItems" in schema) add(count(schema.unevaluatedItems, item, false));
        if ("contains" in schema) add(count(schema.contains, item, false));
      });
    } else if (isRecord(value)) {
      const properties = isRecord(schema.properties) ? schema.properties : {};
      const patternMap = isRecord(schema.patternProperties) ? schema.patternProperties : {};
      const patterns = plan.patterns;
      const patternSchemas = Object.values(patternMap);
      for (const [name, child] of Object.entries(value)) {
        let matched = Object.hasOwn(properties, name);
        if (matched) add(count(properties[name], child, false));
        patternSchemas.forEach((sub, i) => {
          if (patterns === undefined || patterns[i]?.test(name)) {
            matched = true;
            add(count(sub, child, false));
          }
        });
        if (!matched && "additionalProperties" in schema)
          add(count(schema.additionalProperties, child, false));
        // Keys another branch evaluated are not known here: every key not named locally (an upper bound).
        if (!matched && "unevaluatedProperties" in schema)
          add(count(schema.unevaluatedProperties, child, false));
        if ("propertyNames" in schema) add(count(schema.propertyNames, name, false));
      }
    }
    if (viaRef) {
      pairs?.delete(key);
      if (!known) {
        known = new Map();
        memo.set(schema, known);
      }
      known.set(key, sum);
    }
    return sum;
  };

  try {
    return count(compiled.schema, content, false);
  } catch (error) {
    // Over the budget, or a chain of references deeper than the stack: either way too much to check.
    if (error instanceof OverBudget || error instanceof RangeError) return undefined;
    throw error;
  }
}
