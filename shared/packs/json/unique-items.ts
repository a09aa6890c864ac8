/**
 * `uniqueItems` in linear time. Ajv compares every pair of items whose type the schema leaves open (or
 * that are objects or arrays): 16,000 untyped items cost it 128 million deep comparisons, ten seconds
 * of one draft holding every other. Here each item is reduced to its canonical JSON text (keys sorted,
 * strings quoted so that they stay apart from the numbers and literals they could spell),
 * which two items share exactly when JSON Schema calls them equal, and one pass over a Map finds the
 * duplicate Ajv would have reported: the last item equal to an earlier one, and the last such earlier one.
 */
import type { SchemaValidateFunction } from "ajv";
import type { AnyAjv } from "./ajv.js";

/**
 * The item's JSON text with every object's keys sorted: equal for two values exactly when JSON Schema
 * calls them equal (numbers by value, objects whatever their key order). Recursive: a draft's depth is
 * bounded before anything validates it.
 */
function canonical(value: unknown): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = "{";
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k] as string;
    out += `${k > 0 ? "," : ""}${JSON.stringify(key)}:${canonical(record[key])}`;
  }
  return `${out}}`;
}

/**
 * `[i, j]` of the duplicate Ajv reports (the largest index i whose item equals an earlier one, and the
 * largest such j below it), or undefined when every item is distinct.
 */
export function duplicateItems(items: readonly unknown[]): [number, number] | undefined {
  const lastAt = new Map<string, number>();
  let found: [number, number] | undefined;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const key = canonical(item);
    const before = lastAt.get(key);
    if (before !== undefined) found = [i, before];
    lastAt.set(key, i);
  }
  return found;
}

const validateUniqueItems: SchemaValidateFunction = (schema: unknown, data: unknown) => {
  if (schema !== true || !Array.isArray(data)) return true;
  const duplicate = duplicateItems(data);
  if (!duplicate) return true;
  const [i, j] = duplicate;
  // Ajv's own message and params, so findings read the same as for the keyword it ships.
  validateUniqueItems.errors = [
    {
      keyword: "uniqueItems",
      message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
      params: { i, j },
    },
  ];
  return false;
};

/** Replaces Ajv's `uniqueItems` with the linear one, in every dialect (the keyword means the same in all). */
export function useLinearUniqueItems(ajv: AnyAjv): void {
  ajv.removeKeyword("uniqueItems");
  ajv.addKeyword({
    keyword: "uniqueItems",
    type: "array",
    schemaType: "boolean",
    errors: true,
    validate: validateUniqueItems,
  });
}
