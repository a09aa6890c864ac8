import { normalizeModelId } from "./pricing.js";

/**
 * How an answer was asked for: constrained to the schema by the provider (`json_schema`, the Messages
 * API's `output_config.format`; `strict_tool`, a tool with `strict: true` and a forced tool choice), or
 * plain tool use (`tool`), whose answer may still arrive as text. Recorded per attempt.
 */
export type OutputMode = "json_schema" | "strict_tool" | "tool";

/**
 * Models without structured outputs (the constrained decoding `output_config.format` and strict tools
 * need): the Claude 3 family and the first Claude 4 releases. Every later model has it, on the
 * Anthropic API and through Bedrock's InvokeModel, which takes the same body.
 */
const UNCONSTRAINED = [
  "claude-3",
  "claude-2",
  "claude-instant",
  "claude-opus-4-0",
  "claude-opus-4-2025",
  "claude-sonnet-4-0",
  "claude-sonnet-4-2025",
];

export function supportsStructuredOutputs(model: string): boolean {
  const id = normalizeModelId(model);
  return !UNCONSTRAINED.some((prefix) => id.startsWith(prefix));
}

/** Keywords the structured-output subset does not enforce: stripped (Ajv checks them on the answer), named in the description. */
const STRIPPED = new Set([
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
]);
/** Keywords the subset cannot express at all: a schema holding one is not constrained. */
const UNSUPPORTED = new Set([
  "patternProperties",
  "propertyNames",
  "dependentSchemas",
  "dependentRequired",
  "dependencies",
  "if",
  "then",
  "else",
  "not",
  "oneOf",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contains",
  "prefixItems",
  "$ref",
  "$dynamicRef",
]);
/** String formats the subset supports; any other is stripped. */
const FORMATS = new Set([
  "date-time",
  "time",
  "date",
  "duration",
  "email",
  "hostname",
  "uri",
  "ipv4",
  "ipv6",
  "uuid",
]);
/** Regular-expression features the subset rejects: backreferences and lookaround. */
const COMPLEX_PATTERN = /\\[1-9]|\(\?[=!<]/;

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The schema as the provider's structured-output subset takes it, or `undefined` when it does not fit
 * (an open object, a keyword the subset lacks, a node with no type): then the answer is asked for with
 * plain tool use. Bounds, lengths and unsupported formats or patterns are removed and said in the
 * description, as the SDK's own transform does; Ajv still checks them on the answer.
 */
export function toStrictSchema(schema: unknown): Node | undefined {
  const walk = (node: unknown): Node | undefined => {
    if (!isNode(node)) return undefined;
    const out: Node = {};
    const dropped: string[] = [];
    for (const [key, value] of Object.entries(node)) {
      if (UNSUPPORTED.has(key)) return undefined;
      if (STRIPPED.has(key) || (key === "minItems" && typeof value === "number" && value > 1)) {
        dropped.push(`${key}: ${JSON.stringify(value)}`);
      } else if (key === "format" && !FORMATS.has(String(value))) dropped.push(`format: ${String(value)}`);
      else if (key === "pattern" && COMPLEX_PATTERN.test(String(value)))
        dropped.push(`pattern: ${String(value)}`);
      else if (key === "properties" || key === "$defs" || key === "definitions") {
        if (!isNode(value)) return undefined;
        const props: Node = {};
        for (const [name, sub] of Object.entries(value)) {
          const walked = walk(sub);
          if (!walked) return undefined;
          props[name] = walked;
        }
        out[key] = props;
      } else if (key === "items") {
        const walked = walk(value);
        if (!walked) return undefined;
        out.items = walked;
      } else if (key === "anyOf" || key === "allOf") {
        if (!Array.isArray(value)) return undefined;
        const branches = value.map(walk);
        if (branches.some((b) => b === undefined)) return undefined;
        out[key] = branches;
      } else if (key === "additionalProperties") {
        if (value !== false) return undefined;
        out.additionalProperties = false;
      } else out[key] = value;
    }
    const typed = "type" in out || "enum" in out || "const" in out || "anyOf" in out || "allOf" in out;
    if (!typed) return undefined;
    const types = Array.isArray(out.type) ? out.type : [out.type];
    // The subset takes closed objects only: an object that allows other keys cannot be constrained.
    if (types.includes("object") && out.additionalProperties !== false) return undefined;
    if (dropped.length > 0) {
      const note = `{${dropped.join(", ")}}`;
      out.description = typeof out.description === "string" ? `${out.description} ${note}` : note;
    }
    return out;
  };
  return walk(schema);
}
