import type { Json, JsonObject } from "./json-corpus.js";

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** `#/$defs/Name` (or `#/definitions/Name`) against the root schema; other nodes as they are. */
function resolveRef(node: JsonObject, root: JsonObject): JsonObject {
  const ref = node.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#/")) return node;
  let target: Json | undefined = root;
  for (const part of ref.slice(2).split("/")) target = isObject(target) ? target[part] : undefined;
  return isObject(target) ? resolveRef(target, root) : node;
}

/**
 * The cleanup a zod user gets almost for free, written out over the draft's JSON Schema: unknown keys
 * of a closed object are stripped (what `z.object` does by default), and an OPTIONAL property holding
 * `""` or a value outside its enum is dropped (a `z.preprocess` or `.catch(undefined)` on optional
 * fields). Nothing required is touched, no value is rewritten. Returns a new value.
 */
export function zodUserCleanup(value: unknown, schema: JsonObject, root: JsonObject = schema): unknown {
  const node = resolveRef(schema, root);
  if (Array.isArray(value)) {
    const items = isObject(node.items) ? node.items : undefined;
    return items ? value.map((v) => zodUserCleanup(v, items, root)) : value;
  }
  if (!isObject(value)) return value;
  const properties = isObject(node.properties) ? node.properties : undefined;
  if (!properties) return value;
  const required = new Set(Array.isArray(node.required) ? node.required.map(String) : []);
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    const sub = properties[key];
    if (!isObject(sub)) {
      if (node.additionalProperties !== false) out[key] = v;
      continue;
    }
    const resolved = resolveRef(sub, root);
    const outsideEnum = Array.isArray(resolved.enum) && !resolved.enum.includes(v);
    if (!required.has(key) && (v === "" || outsideEnum)) continue;
    out[key] = zodUserCleanup(v, sub, root) as Json;
  }
  return out;
}
