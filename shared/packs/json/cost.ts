/**
 * A static bound on what checking one instance against a schema can cost, found before Ajv compiles it.
 *
 * Ajv compiles a `$ref` as a call, so a schema can name one definition twice (`allOf: [{ $ref: "#/$defs/l9" },
 * { $ref: "#/$defs/l9" }]`) at every level of a chain of definitions: 32 levels are a few hundred bytes of
 * schema and 2^32 evaluations of one instance, a validation no thread returns from (with
 * `unevaluatedProperties` Ajv cannot even stop at the first failing branch). Generated code cannot be
 * interrupted, so such a schema is refused before it is compiled (`too_slow`), alone, without holding
 * any other draft.
 *
 * The bound is the size of the schema with every reference unfolded: each applicator's sub-schemas are
 * counted once per place that applies them, a reference counts its target again, and a reference back
 * to a schema being unfolded (recursion, which the instance's own depth bounds) counts one. It is
 * computed once per schema, in time linear in the schema (targets are memoized), with an explicit stack.
 */
import type { JsonSchemaDialect } from "./ajv.js";
import { isRecord, type SchemaObject } from "./util.js";
import { SchemaViews } from "./views.js";

/**
 * Sub-schema evaluations an unfolded schema may hold. The SchemaStore slice's largest is in the low
 * thousands (tests/packs/json-schemastore.test.ts prints it); Ajv runs about ten million of these
 * evaluations a second, so a schema at the bound costs tens of milliseconds per draft at most.
 */
export const MAX_UNFOLDED_EVALUATIONS = 200_000;

/** Keywords whose value is one sub-schema or a list of sub-schemas. */
const SCHEMA_KEYWORDS = [
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
  "items",
  "prefixItems",
  "additionalItems",
  "contains",
  "unevaluatedItems",
  "additionalProperties",
  "unevaluatedProperties",
  "propertyNames",
] as const;
/** Keywords whose value maps names to sub-schemas. */
const MAP_KEYWORDS = ["properties", "patternProperties", "dependentSchemas", "dependencies"] as const;
const REF_KEYWORDS = ["$ref", "$dynamicRef", "$recursiveRef"] as const;

/** The sub-schemas one schema object applies (references resolved), and how many boolean ones. */
function applied(node: SchemaObject, views: SchemaViews): { children: SchemaObject[]; leaves: number } {
  const children: SchemaObject[] = [];
  let leaves = 0;
  const add = (value: unknown) => {
    if (isRecord(value)) children.push(value);
    else if (typeof value === "boolean") leaves += 1;
  };
  for (const keyword of SCHEMA_KEYWORDS) {
    const value = node[keyword];
    if (Array.isArray(value)) for (const item of value) add(item);
    else add(value);
  }
  for (const keyword of MAP_KEYWORDS) {
    const map = node[keyword];
    // `dependencies` may hold arrays of names (data), which add() passes over.
    if (isRecord(map)) for (const value of Object.values(map)) add(value);
  }
  for (const keyword of REF_KEYWORDS) {
    const target = views.referenced(node, keyword);
    if (target) children.push(target);
  }
  return { children, leaves };
}

/**
 * The schema's unfolded size (see above), or undefined once it is over `limit` (the walk stops there:
 * a hostile schema costs no more than the bound to measure).
 */
export function unfoldedEvaluations(
  schema: SchemaObject,
  dialect: JsonSchemaDialect,
  limit = MAX_UNFOLDED_EVALUATIONS,
): number | undefined {
  return unfoldedCost(schema, dialect, limit)?.evaluations;
}

/**
 * The unfolded size, and whether the walk met a reference back into itself (recursion, whose work the
 * data's depth decides: data-cost.ts counts it per draft); undefined once over `limit`.
 */
export function unfoldedCost(
  schema: SchemaObject,
  dialect: JsonSchemaDialect,
  limit = MAX_UNFOLDED_EVALUATIONS,
): { evaluations: number; recursive: boolean } | undefined {
  let recursive = false;
  const views = new SchemaViews(schema, dialect);
  const done = new Map<SchemaObject, number>();
  const open = new Set<SchemaObject>();
  interface Frame {
    readonly node: SchemaObject;
    readonly children: SchemaObject[];
    next: number;
    sum: number;
  }
  const enter = (node: SchemaObject): Frame => {
    open.add(node);
    const { children, leaves } = applied(node, views);
    return { node, children, next: 0, sum: 1 + leaves };
  };
  const stack: Frame[] = [enter(schema)];
  while (true) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.sum > limit) return undefined;
    const child = frame.children[frame.next++];
    if (child !== undefined) {
      const known = done.get(child);
      if (known !== undefined) frame.sum += known;
      else if (open.has(child)) {
        frame.sum += 1;
        recursive = true;
      } else stack.push(enter(child));
      continue;
    }
    stack.pop();
    open.delete(frame.node);
    done.set(frame.node, frame.sum);
    const parent = stack[stack.length - 1];
    if (!parent) return { evaluations: frame.sum, recursive };
    parent.sum += frame.sum;
  }
}
