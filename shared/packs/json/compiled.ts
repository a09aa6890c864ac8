/** One JSON Schema compiled by Ajv, with the json kind's findings, repair and score units on top. */
import type { ErrorObject, ValidateFunction } from "ajv";
import type { Finding, RepairResult } from "../../pack.js";
import { AJV_OPTIONS, type AnyAjv, type JsonSchemaDialect, newAjv } from "./ajv.js";
import { findingOf } from "./messages.js";
import { dirtyPointers, type RepairWalk, ROOT_PLACE, repairValue } from "./repair.js";
import { unitsBelow } from "./units.js";
import type { SchemaObject, Segment } from "./util.js";
import { SchemaViews } from "./views.js";

export interface RepairOptions {
  /** Locations that must never be removed even if the schema calls them optional (a declarative `required` rule). */
  keep?: (path: readonly Segment[]) => boolean;
}

const ROOT_KEY = "root";

/**
 * A JSON Schema compiled once (Ajv, `allErrors`, formats), with what the json kind needs on top:
 * violations with JSON pointers and suggestions, deterministic repair of optional fields, and the
 * number of fields the schema describes (the denominator of the proportional score).
 *
 * Every instance gets its own Ajv: schemas from different drafts may share an `$id`, and dropping
 * an evicted schema must free everything compiled for it.
 */
export class CompiledJsonSchema {
  readonly schema: SchemaObject;
  readonly dialect: JsonSchemaDialect;
  readonly #ajv: AnyAjv;
  readonly #validate: ValidateFunction;
  readonly #subValidators = new Map<string, ValidateFunction | null>();
  readonly #views: SchemaViews;

  /** Throws (with Ajv's message) when the schema does not compile; use `compileJsonSchema` for the cached, non-throwing path. */
  constructor(schema: SchemaObject, dialect: JsonSchemaDialect) {
    this.schema = schema;
    this.dialect = dialect;
    this.#ajv = newAjv(dialect, { ...AJV_OPTIONS, validateSchema: false });
    this.#ajv.addSchema(schema, ROOT_KEY);
    const validate = this.#ajv.getSchema(ROOT_KEY);
    if (!validate) throw new Error("schema did not compile");
    this.#validate = validate;
    this.#views = new SchemaViews(schema);
  }

  /** Ajv's errors for `content`; empty when it conforms. */
  errors(content: unknown): ErrorObject[] {
    return this.#validate(content) ? [] : [...(this.#validate.errors ?? [])];
  }

  isValid(content: unknown): boolean {
    return this.#validate(content) === true;
  }

  /** One finding per schema error, reported under `schema:<keyword>`. */
  findings(content: unknown): Finding[] {
    if (this.#validate(content)) return [];
    return (this.#validate.errors ?? []).map((error) => findingOf(error, content, this.#views));
  }

  /**
   * Deterministic repair: removes optional fields whose value breaks their sub-schema (an empty string
   * in a pattern field, a value outside an enum or range…) and properties the schema forbids. Required
   * fields stay (and get reported). Pure: unchanged content is returned as the same object, and only
   * the objects and arrays on the path to a removal are copied.
   */
  repair(content: unknown, options: RepairOptions = {}): RepairResult<unknown> {
    if (typeof content !== "object" || content === null || this.#validate(content))
      return { content, repairs: [] };
    const errors = this.#validate.errors ?? [];
    const before = errors.length;
    const walk: RepairWalk = {
      repairs: [],
      dirty: dirtyPointers(errors),
      validatorAt: (ptr) => this.#subValidator(ptr),
    };
    if (options.keep) walk.keep = options.keep;
    const repairs = walk.repairs;
    const repaired = repairValue(this.#views, content, this.#views.root(), ROOT_PLACE, walk, 0);
    if (repairs.length === 0) return { content, repairs: [] };
    // Safety net for the interactions the walk cannot see (uniqueItems over repaired elements,
    // a removal another branch depended on): a repair that scores worse than doing nothing is dropped.
    const after = this.#validate(repaired) ? 0 : (this.#validate.errors?.length ?? 0);
    // Each removal lowers the units by at most one, so losing at least one error per removal can
    // never lower the score; only otherwise are the units worth counting.
    if (after > before - repairs.length && after / this.units(repaired) > before / this.units(content)) {
      return { content, repairs: [] };
    }
    return { content: repaired, repairs };
  }

  /**
   * Fields the schema describes, counted against the instance: every property schema (recursively, present
   * or not), array items once per element present (at least once), and the instance's own values where the
   * schema leaves the shape open. A forbidden extra property counts one, so removing it never lowers the score.
   */
  units(content: unknown): number {
    return Math.max(1, unitsBelow(this.#views, content, this.#views.root(), true, 0));
  }

  /** Validator of the sub-schema at `ptr`, compiled by the root's Ajv so its `$ref`s resolve; cached. */
  #subValidator(ptr: string): ValidateFunction | undefined {
    if (ptr === "") return this.#validate;
    let validate = this.#subValidators.get(ptr);
    if (validate === undefined) {
      try {
        validate = this.#ajv.getSchema(`${ROOT_KEY}#${ptr}`) ?? null;
      } catch {
        validate = null;
      }
      this.#subValidators.set(ptr, validate);
    }
    return validate ?? undefined;
  }
}
