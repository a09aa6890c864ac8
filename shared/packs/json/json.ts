/**
 * The json kind (seed 001, structured extraction): content checked against the JSON Schema in
 * `context.schema`. The pack is here; the parts live under `json/` by responsibility: Ajv per dialect
 * (`ajv.ts`), the checked and cached compilation (`compile.ts`), the compiled schema (`compiled.ts`), the
 * schema navigation the walks share (`views.ts`), the repair walk (`repair.ts`), the score's units
 * (`units.ts`) and the messages (`messages.ts`).
 */
import * as z from "zod";
import type { Draft } from "../../draft.js";
import { proportionalScore } from "../../engine.js";
import { InvalidSchemaError } from "../../errors.js";
import type { Pack, Rule } from "../../pack.js";
import { compileJsonSchema, RegisteredSchemas } from "./compile.js";
import type { CompiledJsonSchema } from "./compiled.js";
import { JSON_RULE_IDS, OMIT_OPTIONAL_RULE } from "./ids.js";
import { REPAIR_MODES } from "./repair.js";
import { repairedInPlace, ruleFindings, threadOutcome } from "./thread.js";

export { dialectOf } from "./ajv.js";
export { clearJsonSchemaCache, compileJsonSchema, jsonSchemaCacheStats } from "./compile.js";
export { CompiledJsonSchema } from "./compiled.js";
export { JSON_RULE_IDS, OMIT_OPTIONAL_RULE } from "./ids.js";

/**
 * A kind's `repair` setting: what the deterministic repair may delete before the check (README, "The
 * json pack"). `lossless` deletes only keys the schema forbids and optional values holding nothing;
 * `aggressive` also optional values that break their sub-schema; `off` nothing.
 */
export const RepairModeSchema = z.enum(REPAIR_MODES);

// ---- the json pack -------------------------------------------------------------------------------

/** Registered schema sets by the settings' `schemas` array they were built from (built once per configuration). */
const registeredSets = new WeakMap<readonly unknown[], RegisteredSchemas>();

function registeredFor(schemas: readonly unknown[] | undefined): RegisteredSchemas | undefined {
  if (!schemas || schemas.length === 0) return undefined;
  let set = registeredSets.get(schemas);
  if (!set) {
    set = new RegisteredSchemas(schemas);
    registeredSets.set(schemas, set);
  }
  return set;
}

const JsonSettingsSchema = z.object({
  /** What the deterministic repair before the check may delete (`off` to measure what repair buys). */
  repair: RepairModeSchema,
  /**
   * Schemas registered by `$id` (`id` in draft-04): a draft's schema may `$ref` them, and they are
   * resolved from here, never fetched. Checked when the pack is configured.
   */
  schemas: z
    .array(z.record(z.string(), z.unknown()))
    .optional()
    .superRefine((schemas, ctx) => {
      try {
        registeredFor(schemas);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
      }
    }),
  /**
   * CPU milliseconds one draft's check may take on its thread (thread.ts) before the draft is rejected
   * `invalid_schema` / `too_slow`; DEFAULT_JSON_CPU_BUDGET_MS when absent.
   */
  cpuBudgetMs: z.number().int().min(10).max(600_000).optional(),
  /**
   * Which drafts are checked on a thread under that budget: `auto` (the default) those whose schema is
   * recursive or whose schema and content are large together, `always` every one (thread.ts).
   */
  thread: z.enum(["auto", "always"]).optional(),
});
type JsonSettings = z.infer<typeof JsonSettingsSchema>;

/**
 * The schema a json draft is checked against, `draft.context.schema`, compiled; undefined when the draft
 * has none (a violation the check reports). Throws InvalidSchemaError when the draft has one that cannot
 * be used: the run is rejected, and the schema never reaches the model.
 */
function draftSchema(draft: Draft, settings: JsonSettings): CompiledJsonSchema | undefined {
  const lookup = compileJsonSchema(draft.context?.schema, registeredFor(settings.schemas));
  if (lookup.ok) return lookup.schema;
  if (lookup.problem.ruleId === JSON_RULE_IDS.missing) return undefined;
  throw new InvalidSchemaError(`context.schema: ${lookup.problem.message}`);
}

const jsonSchemaRule: Rule<unknown, JsonSettings> = {
  id: JSON_RULE_IDS.schema,
  description:
    "The content conforms to the JSON Schema in context.schema (2020-12, or 2019-09, draft-07, draft-06 or draft-04 when $schema says so).",
  severity: "error",
  source: "schema",
  check({ draft, content, settings }) {
    // Inside a deferral the outcome comes from a thread (thread.ts): the content is the draft's as it
    // came (the report's beforeRepair) or as the thread repaired it.
    const outcome = threadOutcome(draft, settings, () => draftSchema(draft, settings));
    if (outcome) {
      if (content === outcome.content) return outcome.findings;
      if (content === draft.content && outcome.before) return outcome.before;
    }
    const schema = draftSchema(draft, settings);
    if (!schema) {
      return [
        {
          ruleId: JSON_RULE_IDS.missing,
          message: "no JSON Schema to check against (context.schema is missing)",
          suggestion:
            "Send the draft with a JSON Schema object in context.schema; the model cannot fix this by editing the content.",
        },
      ];
    }
    return ruleFindings(schema, content, settings.repair);
  },
};

/** Correction-prompt rules for structured extraction. */
const JSON_INSTRUCTIONS =
  "The content is a JSON value extracted from a source and must conform to the JSON Schema given as the " +
  "output shape. Fix every listed violation at the path it names, keep every value that is already valid, " +
  "and do not invent facts the source does not state. Keep required fields and give them valid values; " +
  `${OMIT_OPTIONAL_RULE}, nor a placeholder such as "N/A" or null. Add no property the schema does not define.`;

/**
 * Structured extraction (seed 001): content checked against the JSON Schema in `context.schema`. Every
 * hook throws InvalidSchemaError for a schema that cannot be used, `contentJsonSchema` included, so the
 * model is only ever handed a schema that passed the checks of `compileJsonSchema`.
 */
export const jsonPack: Pack<unknown, JsonSettings> = {
  kind: "json",
  description: "A JSON record extracted by a model, checked against the JSON Schema in context.schema.",
  settings: { repair: "lossless" },
  settingsSchema: JsonSettingsSchema,
  rules: [jsonSchemaRule],
  repair({ draft, content, settings }) {
    const outcome = threadOutcome(draft, settings, () => draftSchema(draft, settings));
    if (outcome && content === draft.content) return { content: outcome.content, repairs: outcome.repairs };
    const schema = draftSchema(draft, settings);
    if (!schema) return { content, repairs: [] };
    const repaired = schema.repair(content, { mode: settings.repair });
    if (repaired.repairs.length > 0) repairedInPlace(draft, repaired.content);
    return repaired;
  },
  scoreUnits({ draft, content, settings }) {
    const units = threadOutcome(draft, settings, () => draftSchema(draft, settings));
    if (units?.units !== undefined && content === units.content) return units.units;
    return draftSchema(draft, settings)?.units(content) ?? 1;
  },
  score(ctx, violations) {
    // With nothing to penalise, the proportional score is 1 whatever its denominator: the units (a walk
    // of the whole record) are counted only when a violation needs them.
    if (!violations.some((v) => v.severity === "error" || v.severity === "warning")) return 1;
    return proportionalScore(violations, jsonPack.scoreUnits?.(ctx) ?? 1);
  },
  instructions: JSON_INSTRUCTIONS,
  // The general part of JSON_INSTRUCTIONS is the system prompt's; what is left is per rule.
  checks: {
    "schema:additionalProperties": "Add no property the schema does not define.",
    "schema:unevaluatedProperties": "Add no property the schema does not define.",
    "schema:required": "Give required fields valid values from the source; do not invent facts.",
  },
  contentJsonSchema(draft, settings = jsonPack.settings) {
    return draftSchema(draft, settings)?.schema;
  },
};
