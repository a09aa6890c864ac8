/**
 * What a key's value is, seen from a schema object, for every walk that looks for `$id`s, anchors,
 * references or patterns (the remote-reference and pattern checks, the schema index the repair walk
 * navigates): data (never entered), a map from names to schemas, or else a schema (or a list of
 * schemas). Unknown keywords count as schemas, as Ajv collects `$id`s from them too.
 */

/** Keywords whose value is data, never a schema: nothing inside them is an `$id`, an anchor or a `$ref`. */
export const DATA_KEYWORDS: ReadonlySet<string> = new Set([
  "const",
  "enum",
  "default",
  "examples",
  "example",
  // An array of names (Ajv does not enter it either).
  "required",
]);

/** Keywords whose value maps names to schemas (it is not a schema itself). */
export const MAP_KEYWORDS: ReadonlySet<string> = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
  "dependencies",
]);
