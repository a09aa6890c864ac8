/**
 * Ajv per JSON Schema dialect: which class checks a schema (from its `$schema`), with which options, and
 * the dialect's meta-schema compiled once.
 */
import { Ajv, type AnySchemaObject, type Options, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import draft06MetaSchema from "ajv/dist/refs/json-schema-draft-06.json" with { type: "json" };
import Ajv04Module from "ajv-draft-04";
import addFormatsModule from "ajv-formats";
import { linearRegExp } from "./linear-regex.js";
import { useLinearUniqueItems } from "./unique-items.js";
import type { SchemaObject } from "./util.js";

// ajv-formats and ajv-draft-04 are CommonJS: under NodeNext their default import is the module object.
const addFormats = addFormatsModule.default;
const Ajv04 = Ajv04Module.default;

/**
 * JSON-Schema dialects redraft checks with; `$schema` picks one (and so the Ajv class), 2020-12 when it
 * is absent.
 */
export type JsonSchemaDialect = "2020-12" | "2019-09" | "draft-07" | "draft-06" | "draft-04";

export type AnyAjv = Ajv | Ajv2019 | Ajv2020 | InstanceType<typeof Ajv04>;

/** Dialects older than 2019-09: no `unevaluated*`, no dynamic references, tuples as `items: [...]`. */
export const isLegacyDialect = (dialect: JsonSchemaDialect): boolean =>
  dialect === "draft-07" || dialect === "draft-06" || dialect === "draft-04";

/** The keyword a dialect names a schema resource with: draft-04 says `id`, later drafts `$id`. */
export const idKeyword = (dialect: JsonSchemaDialect): "id" | "$id" =>
  dialect === "draft-04" ? "id" : "$id";

/**
 * Ajv options for schemas that come with drafts. No `loadSchema`: a `$ref` Ajv cannot resolve from what it
 * holds fails compilation, nothing is ever fetched.
 */
export const AJV_OPTIONS: Options = {
  allErrors: true,
  verbose: true,
  logger: false,
  // Real schemas carry annotations and vendor keywords (`x-…`, `example`, unknown formats) and draft-07
  // tuples without `minItems`: all of that is ignored, never an error. The meta-schema decides validity.
  strict: false,
  // A schema requiring `constructor` is not satisfied by Object.prototype.constructor.
  ownProperties: true,
  // Patterns come with untrusted schemas: matched in linear time wherever RE2's syntax allows.
  code: { regExp: linearRegExp },
};

const META_SCHEMAS: Record<JsonSchemaDialect, string> = {
  "2020-12": "https://json-schema.org/draft/2020-12/schema",
  "2019-09": "https://json-schema.org/draft/2019-09/schema",
  "draft-07": "http://json-schema.org/draft-07/schema",
  "draft-06": "http://json-schema.org/draft-06/schema",
  "draft-04": "http://json-schema.org/draft-04/schema",
};

let draft07: AnySchemaObject | undefined;
/** The draft-07 meta-schema as Ajv ships it (taken from a draft-07 Ajv, so no JSON module is imported). */
function draft07MetaSchema(): AnySchemaObject {
  draft07 ??= new Ajv({ logger: false }).getSchema(META_SCHEMAS["draft-07"])?.schema as AnySchemaObject;
  return draft07;
}

export function newAjv(dialect: JsonSchemaDialect, options: Options): AnyAjv {
  let ajv: AnyAjv;
  switch (dialect) {
    case "draft-04":
      // ajv-draft-04: `id`, boolean exclusiveMaximum/Minimum, and the draft-04 meta-schema.
      ajv = new Ajv04(options);
      break;
    case "draft-06":
      // Ajv's draft-07 class checks draft-06 schemas (draft-07 only added keywords), given their meta-schema.
      ajv = new Ajv(options);
      ajv.addMetaSchema(draft06MetaSchema);
      break;
    case "draft-07":
      ajv = new Ajv(options);
      break;
    case "2019-09":
      ajv = new Ajv2019(options);
      break;
    default:
      ajv = new Ajv2020(options);
  }
  // A newer schema may $ref the draft-07 meta-schema (a field that holds a schema). The other way round
  // is not offered: the 2019-09 and 2020-12 meta-schemas need $recursiveRef/$dynamicRef, which an older
  // dialect's Ajv does not evaluate.
  if (!isLegacyDialect(dialect)) ajv.addMetaSchema(draft07MetaSchema());
  addFormats(ajv as Ajv);
  useLinearUniqueItems(ajv);
  return ajv;
}

/** `$schema` values redraft knows, with or without the empty fragment, http or https. */
const DIALECT_URIS = new Map<string, JsonSchemaDialect>(
  (Object.entries(META_SCHEMAS) as [JsonSchemaDialect, string][]).flatMap(([dialect, uri]) => {
    const path = uri.replace(/^https?:/, "");
    return ["http:", "https:"].flatMap((scheme) => [
      [`${scheme}${path}`, dialect] as const,
      [`${scheme}${path}#`, dialect] as const,
    ]);
  }),
);

/** Picks the dialect from `$schema`; undefined for a `$schema` redraft does not check with. */
export function dialectOf(schema: SchemaObject): JsonSchemaDialect | undefined {
  const id = schema.$schema;
  if (id === undefined) return "2020-12";
  return typeof id === "string" ? DIALECT_URIS.get(id) : undefined;
}

export interface Dialect {
  /** The dialect's meta-schema, compiled: checking a schema against it needs it, and it is large. */
  readonly meta: ValidateFunction;
  /** Meta-schema URIs the dialect's Ajv holds: the only non-local `$ref`s a schema may use. */
  readonly registered: ReadonlySet<string>;
}

// Built on first use, once per dialect, and shared by every schema of that dialect.
const dialects = new Map<JsonSchemaDialect, Dialect>();
export function dialectSupport(dialect: JsonSchemaDialect): Dialect {
  let support = dialects.get(dialect);
  if (!support) {
    const ajv = newAjv(dialect, { allErrors: true, strict: false, logger: false, ownProperties: true });
    const meta = ajv.getSchema(META_SCHEMAS[dialect]);
    if (!meta) throw new Error(`meta-schema of JSON Schema ${dialect} is not available`);
    support = { meta, registered: new Set(Object.keys(ajv.schemas)) };
    dialects.set(dialect, support);
  }
  return support;
}
