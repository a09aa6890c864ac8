/** One JSON Schema compiled by Ajv, with the json kind's findings, repair and score units on top. */
import type { ErrorObject, ValidateFunction } from "ajv";
import type { Repair } from "../../draft.js";
import { InvalidSchemaError } from "../../errors.js";
import type { Finding, RepairResult } from "../../pack.js";
import { AJV_OPTIONS, type AnyAjv, type JsonSchemaDialect, newAjv } from "./ajv.js";
import { draftEvaluations, MAX_DRAFT_EVALUATIONS } from "./data-cost.js";
import { JSON_RULE_IDS } from "./ids.js";
import { errorsAfterRemovals, errorsStayLocal } from "./locality.js";
import { findingOf } from "./messages.js";
import { isPlainData, prototypeLeavesAlone, schemaStrings } from "./plain.js";
import { TOO_SLOW } from "./regex-guard.js";
import {
  errorTree,
  extraPointer,
  type RepairMode,
  type RepairWalk,
  ROOT_PLACE,
  repairValue,
} from "./repair.js";
import { unitsBelow } from "./units.js";
import type { SchemaObject, Segment } from "./util.js";
import { SchemaViews, undecidedOnPath } from "./views.js";

export interface RepairOptions {
  /** What the repair may delete (see REPAIR_MODES); lossless unless the kind asks otherwise. */
  mode?: RepairMode;
  /** Locations that must never be removed even if the schema calls them optional (a declarative `required` rule). */
  keep?: (path: readonly Segment[]) => boolean;
}

const ROOT_KEY = "root";
/** Warnings reported per draft, at most: a schema with a hundred unknown formats says so five times. */
const MAX_WARNINGS = 5;
/** The start of the message for a schema Ajv compiles but cannot evaluate. */
const UNEVALUABLE = "the JSON Schema cannot be evaluated (Ajv's validator for it recurses without end)";
/**
 * Checks of one schema after which it gets a second validator for plain data (see plain.ts): compiling
 * it costs about as much as 1,500 checks save, so only a schema that serves many drafts gets one, and
 * its compilation at most doubles what the schema has cost so far.
 */
const PLAIN_VALIDATOR_AFTER = 1000;

/**
 * A JSON Schema compiled once (Ajv, `allErrors`, formats), with what the json kind needs on top:
 * violations with JSON pointers and suggestions, deterministic repair of optional fields, and the
 * number of fields the schema describes (the denominator of the proportional score).
 *
 * Every instance gets its own Ajv: schemas from different drafts may share an `$id`, and dropping
 * an evicted schema must free everything compiled for it.
 *
 * Content is treated as immutable, as the engine treats drafts: Ajv's verdict on a content object is
 * reused until the next microtask, so an object changed in place must not be checked again within the
 * same synchronous turn.
 */
export class CompiledJsonSchema {
  readonly schema: SchemaObject;
  readonly dialect: JsonSchemaDialect;
  readonly #ajv: AnyAjv;
  /** Schemas the pack registers by `$id`, added to every Ajv this schema compiles with. */
  readonly #registered: readonly SchemaObject[];
  readonly #validate: ValidateFunction;
  /**
   * The same schema compiled without `ownProperties`, for plain data when Object.prototype cannot tell
   * the two apart (plain.ts): undefined until the schema has served PLAIN_VALIDATOR_AFTER checks, null
   * when the schema names a member of Object.prototype (or the compilation failed).
   */
  #plainValidate: ValidateFunction | null | undefined;
  #plainNames: ReadonlySet<string> | undefined;
  #checks = 0;
  /** Whether a repaired instance's errors follow from the original's (locality.ts); found on first repair. */
  #local: boolean | undefined;
  readonly #subValidators = new Map<string, ValidateFunction | null>();
  readonly #views: SchemaViews;
  /**
   * The last two instances checked and Ajv's errors for each (null when it conforms): a draft as it came
   * and as repaired. Repair, the check, the repair notes, the engine's score and the report's
   * before-repair findings all look at these two within one synchronous validation, so one Ajv pass per
   * instance serves them all; the memo is dropped at the next microtask, so an object mutated between
   * two validations is always checked afresh.
   */
  #last: { content: unknown; errors: ErrorObject[] | null } | undefined;
  #before: { content: unknown; errors: ErrorObject[] | null } | undefined;

  /** Throws (with Ajv's message) when the schema does not compile; use `compileJsonSchema` for the cached, non-throwing path. */
  constructor(schema: SchemaObject, dialect: JsonSchemaDialect, registered: readonly SchemaObject[] = []) {
    this.schema = schema;
    this.dialect = dialect;
    this.#registered = registered;
    const warnings: string[] = [];
    let compiling = true;
    // Ajv warns, instead of failing, about what it ignores (an unknown format): kept from the compilation
    // of the root, so that the report can say what is not checked.
    const logger = {
      log() {},
      warn(...args: unknown[]) {
        if (compiling) warnings.push(args.map(String).join(" "));
      },
      error() {},
    };
    this.#ajv = newAjv(dialect, { ...AJV_OPTIONS, validateSchema: false, logger });
    for (const known of registered) this.#ajv.addSchema(known);
    this.#ajv.addSchema(schema, ROOT_KEY);
    const validate = this.#ajv.getSchema(ROOT_KEY);
    compiling = false;
    if (!validate) throw new Error("schema did not compile");
    this.#validate = validate;
    this.#views = new SchemaViews(schema, dialect);
    // Ajv may say the same thing once per code path it generates.
    this.warnings = [...new Set(warnings)];
  }

  /** What Ajv said it ignores in the schema (unknown formats), in its words. */
  readonly warnings: readonly string[];

  /** One info finding per thing the schema asks for that is not checked (an unknown format). */
  warningFindings(): Finding[] {
    return this.warnings.slice(0, MAX_WARNINGS).map((warning) => {
      const unknown = /^unknown format "(.*)" ignored in schema at path "(.*)"$/.exec(warning);
      return {
        ruleId: JSON_RULE_IDS.schemaWarning,
        severity: "info",
        message: unknown
          ? `the schema's format "${unknown[1]}" (at ${unknown[2]}) is not one the validator knows: it is not checked`
          : `the validator ignores part of the schema: ${warning}`,
      };
    });
  }

  /** Ajv's errors for `content`, or null when it conforms: one Ajv pass per content object and turn. */
  #check(content: unknown): ErrorObject[] | null {
    const last = this.#last;
    if (last !== undefined && last.content === content) return last.errors;
    const before = this.#before;
    if (before !== undefined && before.content === content) return before.errors;
    let errors: ErrorObject[] | null;
    // Ajv's code cannot be stopped once it runs: content on which a recursive schema would multiply its
    // work per level (data-cost.ts) is refused before Ajv sees it.
    if (draftEvaluations(this, content) === undefined) throw new InvalidSchemaError(tooSlowForContent());
    try {
      const validate = this.#validatorFor(content);
      errors = validate(content) ? null : (validate.errors ?? []);
    } catch (error) {
      // A pattern stopped past its budget (regex-guard.ts) says so itself.
      if (error instanceof InvalidSchemaError) throw error;
      // Ajv's generated code fails on some valid schemas: for unevaluatedProperties with $dynamicRef it
      // calls itself without end (drafts are depth-bounded, so the overflow is the schema's). A named
      // error, never a raw one.
      throw new InvalidSchemaError(
        `${UNEVALUABLE}: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
    this.#remember(content, errors);
    return errors;
  }

  #remember(content: unknown, errors: ErrorObject[] | null): void {
    if (this.#last === undefined)
      queueMicrotask(() => {
        this.#last = undefined;
        this.#before = undefined;
      });
    this.#before = this.#last;
    this.#last = { content, errors };
  }

  /**
   * Ajv's errors for the repaired instance: where the schema keeps errors local, those of the original
   * pass minus the removed places (no second pass); otherwise a pass over the repaired instance.
   */
  #checkRepaired(repaired: unknown, errors: readonly ErrorObject[], repairs: readonly Repair[]) {
    this.#local ??= errorsStayLocal(this.schema);
    if (!this.#local) return this.#check(repaired);
    const left = errorsAfterRemovals(
      errors,
      repairs.map((r) => r.path),
      repaired,
    );
    const result = left.length > 0 ? left : null;
    this.#remember(repaired, result);
    return result;
  }

  /** The plain-data validator when it gives the same answer as the root's for `content`, else the root's. */
  #validatorFor(content: unknown): ValidateFunction {
    if (this.#plainValidate === undefined && ++this.#checks >= PLAIN_VALIDATOR_AFTER) this.#compilePlain();
    const names = this.#plainNames;
    if (this.#plainValidate && names && prototypeLeavesAlone(names) && isPlainData(content))
      return this.#plainValidate;
    return this.#validate;
  }

  #compilePlain(): void {
    this.#plainValidate = null;
    const names = schemaStrings(this.schema);
    if (!prototypeLeavesAlone(names)) return;
    try {
      const ajv = newAjv(this.dialect, { ...AJV_OPTIONS, ownProperties: false, validateSchema: false });
      for (const known of this.#registered) ajv.addSchema(known);
      ajv.addSchema(this.schema, ROOT_KEY);
      this.#plainValidate = ajv.getSchema(ROOT_KEY) ?? null;
      this.#plainNames = names;
    } catch {
      // Compiled once already; should this one fail, the root's validator serves every check.
    }
  }

  /** Ajv's errors for `content`; empty when it conforms. */
  errors(content: unknown): ErrorObject[] {
    return [...(this.#check(content) ?? [])];
  }

  isValid(content: unknown): boolean {
    return this.#check(content) === null;
  }

  /** One finding per schema error, reported under `schema:<keyword>`. */
  findings(content: unknown): Finding[] {
    return (this.#check(content) ?? []).map((error) => findingOf(error, content, this.#views));
  }

  /**
   * Info findings for the places where the repair walk stepped aside although Ajv reports an error there
   * or below: a reference it does not follow, an unevaluatedProperties that depends on alternatives, a
   * key an alternative or condition also constrains. One per place.
   */
  repairNotes(content: unknown): Finding[] {
    const notes = new Map<string, Finding>();
    for (const error of this.#check(content) ?? []) {
      const found = undecidedOnPath(this.#views, content, extraPointer(error) ?? error.instancePath);
      if (!found || notes.has(found.pointer)) continue;
      notes.set(found.pointer, {
        ruleId: JSON_RULE_IDS.repairSkipped,
        severity: "info",
        path: found.pointer,
        message: `deterministic repair left ${found.pointer} alone: ${found.reason}`,
      });
    }
    return [...notes.values()];
  }

  /**
   * Deterministic repair: removes properties the schema forbids and optional fields whose value breaks
   * their sub-schema: lossless (the default) only those holding nothing (`""`, whitespace, a null the
   * field does not allow); aggressive also any other value (outside an enum or range…). Required fields
   * stay (and get reported). Pure: unchanged content is returned as the same object, and only the
   * objects and arrays on the path to a removal are copied.
   */
  repair(content: unknown, options: RepairOptions = {}): RepairResult<unknown> {
    const mode = options.mode ?? "lossless";
    if (mode === "off" || typeof content !== "object" || content === null) return { content, repairs: [] };
    const errors = this.#check(content);
    if (errors === null) return { content, repairs: [] };
    const before = errors.length;
    const walk: RepairWalk = {
      repairs: [],
      mode,
      validatorAt: (ptr) => this.#subValidator(ptr),
    };
    if (options.keep) walk.keep = options.keep;
    const repairs = walk.repairs;
    const repaired = repairValue(
      this.#views,
      content,
      this.#views.root(),
      ROOT_PLACE,
      errorTree(errors),
      walk,
      0,
    );
    if (repairs.length === 0) return { content, repairs: [] };
    // Safety net for the interactions the walk cannot see (uniqueItems over repaired elements,
    // a removal another branch depended on): a repair that scores worse than doing nothing is dropped.
    const after = this.#checkRepaired(repaired, errors, repairs)?.length ?? 0;
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

function tooSlowForContent(): string {
  return `${TOO_SLOW}: checking this content against the schema would apply more than ${MAX_DRAFT_EVALUATIONS.toLocaleString("en-US")} sub-schemas (a recursive definition applied again by several branches at each level of the data multiplies the work per level); let one branch apply the recursion, or bound the data's depth`;
}
