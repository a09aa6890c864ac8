import * as z from "zod";
import type { Draft } from "../draft.js";
import { SelfCorrectionError } from "../errors.js";
import type { RunStatus } from "../store/types.js";
import type { RunResult } from "./run.js";

/**
 * `correctDraft(draft, { schema })`: a zod schema (zod v4, classic or mini) for a json draft's content.
 * It is enforced, not only declared: the loop checks the content against `z.toJSONSchema(schema)`,
 * carried as the draft's `context.schema` like any json draft's, and the validated content is then
 * parsed by the schema itself (see `typedResult`), so the type the result claims is checked at run time.
 */
export type ContentSchema = z.core.$ZodType;

/**
 * What `correctDraft` returns when given a zod `schema`: `finalDraft.content` is the schema's output
 * type on a `validated` run, and stays `unknown` (the best draft, not known to conform) on every other.
 * Narrow on `status` to read it.
 */
export type TypedRunResult<T> =
  | (Omit<RunResult, "status" | "finalDraft"> & {
      status: "validated";
      finalDraft: Omit<Draft, "content"> & { content: T };
    })
  | (Omit<RunResult, "status"> & { status: Exclude<RunStatus, "validated"> });

/**
 * A validated run whose content the zod schema still refuses: the schema holds checks JSON Schema
 * cannot say (`.refine`, `.superRefine`, …), which the loop therefore never checked nor asked the
 * model to fix. The run stays recorded as validated; `result` is it, untyped.
 */
export class ContentSchemaMismatchError extends SelfCorrectionError {
  override readonly name = "ContentSchemaMismatchError";
  constructor(
    readonly result: RunResult,
    issues: string,
  ) {
    super(
      `run ${result.runId} was validated against z.toJSONSchema(schema), but the schema refuses its content: ${issues}. ` +
        "Checks JSON Schema cannot express (refine, superRefine) are not part of the loop: express them as " +
        "JSON Schema keywords, or in a pack rule, to have the model correct them.",
      "schema_mismatch",
    );
  }
}

/**
 * The draft to run when `schema` is given: a json draft whose `context.schema` is the zod schema as
 * JSON Schema (2020-12, output side, so defaults are required and no key outside the shape passes).
 * Returns a problem (for the caller's usage error) instead when the two cannot be combined.
 */
export function draftWithSchema(
  draft: unknown,
  schema: ContentSchema,
): { ok: true; draft: unknown } | { ok: false; problem: string } {
  let jsonSchema: Record<string, unknown>;
  try {
    // `unrepresentable: "throw"` (the default): a transform, a date, a custom type cannot be checked
    // as JSON, so the schema is refused here rather than typed content left unchecked.
    jsonSchema = z.toJSONSchema(schema) as Record<string, unknown>;
  } catch (error) {
    return {
      ok: false,
      problem: `options.schema cannot be checked as JSON: ${(error as Error).message} (z.toJSONSchema refuses it; use a schema of JSON values)`,
    };
  }
  // A value that is not even an object is left to the state machine, which rejects it as invalid_input.
  if (typeof draft !== "object" || draft === null || Array.isArray(draft)) return { ok: true, draft };
  const given = draft as Record<string, unknown>;
  if (given.kind !== undefined && given.kind !== "json")
    return {
      ok: false,
      problem: `options.schema types a json draft's content, but this draft's kind is ${JSON.stringify(given.kind)} (leave kind out, or set it to "json")`,
    };
  const context = given.context;
  if (typeof context === "object" && context !== null && "schema" in context)
    return {
      ok: false,
      problem:
        "the draft carries context.schema and options.schema was given too: give the schema once (options.schema, to type the result)",
    };
  const ownContext = typeof context === "object" && context !== null ? context : {};
  return { ok: true, draft: { ...given, kind: "json", context: { ...ownContext, schema: jsonSchema } } };
}

/**
 * The run's result, typed: on a validated run the content is parsed by the zod schema as well (for
 * its checks JSON Schema dropped); a refusal throws ContentSchemaMismatchError rather than hand back
 * content whose type would be a lie. The content returned is the stored one, unchanged.
 */
export function typedResult<S extends ContentSchema>(
  result: RunResult,
  schema: S,
): TypedRunResult<z.output<S>> {
  if (result.status !== "validated") return result as TypedRunResult<z.output<S>>;
  const parsed = z.safeParse(schema, result.finalDraft?.content);
  if (!parsed.success) throw new ContentSchemaMismatchError(result, z.prettifyError(parsed.error));
  return result as TypedRunResult<z.output<S>>;
}
