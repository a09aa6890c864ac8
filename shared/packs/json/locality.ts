/**
 * Ajv's errors after repair, without a second Ajv pass, for schemas where removing an optional property
 * can only take away the errors at and below it. Repair only removes properties (never an array element),
 * so under keywords that each judge one value by itself (`type`, `properties`, `items`, `pattern`…), the
 * repaired instance fails exactly where the original failed, minus the removed places: the same Ajv pass
 * would report the same errors in the same order, each about the repaired copy of its value.
 */
import type { ErrorObject } from "ajv";
import { valueAt } from "../../pointer.js";
import { extraPointer } from "./repair.js";

/**
 * Keywords whose verdict on a value can change when a property somewhere below it goes: they count
 * properties, compare values, pick alternatives or look at what other keywords evaluated. A schema with
 * any of them (as a keyword or as any other key: the scan does not tell them apart) is checked again.
 */
const NON_LOCAL = new Set([
  "anyOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
  "dependentSchemas",
  "dependentRequired",
  "dependencies",
  "minProperties",
  "maxProperties",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contains",
  "minContains",
  "maxContains",
  "uniqueItems",
  "$dynamicRef",
  "$recursiveRef",
  "discriminator",
  "$data",
]);

const isScalar = (value: unknown) => typeof value !== "object" || value === null;

/**
 * Whether every error Ajv reports for a repaired instance is one it reported before repair: no key of
 * the schema is in NON_LOCAL, every `$ref` stays in the document (`#…`: a meta-schema is not local),
 * and `enum` and `const` hold scalars only (an object is then never equal to one, with or without
 * the removed property).
 */
export function errorsStayLocal(schema: unknown): boolean {
  // The schema passed the guard's depth bound: an explicit stack all the same, as the guard does.
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const value = stack.pop();
    if (isScalar(value)) continue;
    if (Array.isArray(value)) {
      stack.push(...value);
      continue;
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const child = record[key];
      if (NON_LOCAL.has(key)) return false;
      if (key === "$ref" && !(typeof child === "string" && child.startsWith("#"))) return false;
      if (key === "enum" && !(Array.isArray(child) && child.every(isScalar))) return false;
      if (key === "const" && !isScalar(child)) return false;
      stack.push(child);
    }
  }
  return true;
}

const within = (pointer: string, removed: string) => pointer === removed || pointer.startsWith(`${removed}/`);

/**
 * The errors of the original pass that the repaired instance still has, for a schema `errorsStayLocal`
 * accepts: those at or below a removed place go, and so does an additional or unevaluated property error
 * naming one. Each error on the way to a removal is about the repaired copy there (its `data`).
 */
export function errorsAfterRemovals(
  errors: readonly ErrorObject[],
  removed: readonly string[],
  repaired: unknown,
): ErrorObject[] {
  const left: ErrorObject[] = [];
  for (const error of errors) {
    const at = error.instancePath;
    const extra = extraPointer(error);
    if (removed.some((r) => within(at, r) || extra === r)) continue;
    const changedBelow = removed.some((r) => r.startsWith(`${at}/`));
    left.push(changedBelow ? { ...error, data: valueAt(repaired, at) } : error);
  }
  return left;
}
