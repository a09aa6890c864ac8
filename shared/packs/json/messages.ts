/** Ajv's errors in the words a correction prompt and a person read: message, JSON pointer, suggestion. */
import type { ErrorObject } from "ajv";
import type { Finding } from "../../pack.js";
import { escapeSegment, unescapeSegment } from "../../pointer.js";
import { capitalize, clip, isRecord, jsonTypeOf, show } from "./util.js";
import type { SchemaViews } from "./views.js";

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

/** The failing check in words, without the location (callers put the location first). */
export function describeValueError(error: ErrorObject): string {
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

/** Whether the value at `pointer` is an optional or required property of its parent object. */
function fieldStatus(
  views: SchemaViews,
  content: unknown,
  pointer: string,
): "optional" | "required" | "unknown" {
  const segments = pointer === "" ? [] : pointer.slice(1).split("/").map(unescapeSegment);
  const last = segments.pop();
  if (last === undefined) return "unknown";
  let value = content;
  let at = views.root();
  for (const segment of segments) {
    if (Array.isArray(value)) {
      const index = Number(segment);
      at = views.itemViews(at, index);
      value = value[index];
    } else if (isRecord(value)) {
      at = views.childViews(at, segment).views;
      value = value[segment];
    } else {
      return "unknown";
    }
  }
  if (!isRecord(value) || at.length === 0) return "unknown";
  return views.shape(at).required.has(last) ? "required" : "optional";
}

/** One finding per Ajv error, reported under `schema:<keyword>`. */
export function findingOf(error: ErrorObject, content: unknown, views: SchemaViews): Finding {
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
      const status = fieldStatus(views, content, error.instancePath);
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
