import { type Draft, DraftSchema, describeZodError, type ValidationReport } from "./draft.js";
import { parseDraftText, scanDraftText } from "./draft-text.js";
import { type Inspection, inspectWithPackAsync, type ResolvedPack } from "./engine.js";
import { DraftTooDeepError, DraftTooLargeError, InvalidDraftError } from "./errors.js";
import {
  findNonFinite,
  findUnderflow,
  type KnownBound,
  mayHoldHugeNumber,
  mayHoldTinyNumber,
  stripBom,
  valueDepthAndSizeBound,
} from "./json-depth.js";
import { getDefaultRegistry, type PackRegistry } from "./registry.js";

/** Drafts above this size are rejected: a state machine run is no place for a 100 MB blob. */
export const DEFAULT_MAX_DRAFT_BYTES = 8 * 1024 * 1024;
/**
 * Drafts whose objects and arrays nest deeper than this are rejected before anything walks them:
 * the walks (hashing, schema checks, rules) recurse, and a hostile depth would overflow their stack.
 */
export const DEFAULT_MAX_DRAFT_DEPTH = 100;

/** The bounds every draft is held to before it is parsed or walked. */
export interface DraftLimits {
  maxDraftBytes?: number | undefined;
  maxDraftDepth?: number | undefined;
}

export interface ValidateOptions extends DraftLimits {
  registry?: PackRegistry;
}

/** What a JSON value is, in the words a rejection uses: `null`, `an array`, `number`… */
const describeValue = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;

/**
 * The depth and size bounds of `context.schema` objects measured before, by identity: a schema that many
 * drafts share (12 KB on the json bench) is walked once, not with every draft. A schema is treated as
 * immutable once seen, as the json pack's compiled-schema cache treats it.
 */
const measuredSchemas = new WeakMap<object, KnownBound>();

const plainRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype
    ? (value as Record<string, unknown>)
    : undefined;

/** The bound of the draft's `context.schema`, measured now if it was not before (and within `maxDepth`). */
function knownSchemaBound(input: unknown, maxDepth: number): KnownBound | undefined {
  const schema = plainRecord(plainRecord(plainRecord(input)?.context)?.schema);
  if (schema === undefined) return undefined;
  let known = measuredSchemas.get(schema);
  if (known === undefined) {
    const bound = valueDepthAndSizeBound(schema, maxDepth);
    // Past the limit the walk stopped early: the draft's own walk finds it too deep.
    if (bound.depth > maxDepth) return undefined;
    known = { value: schema, ...bound };
    measuredSchemas.set(schema, known);
  }
  return known;
}

/**
 * A draft holding a number JSON cannot carry is refused: it would be checked as Infinity (or NaN) and
 * stored and exported as null, a different draft that fails when it is run again.
 */
function refuseNonFinite(input: unknown): void {
  const found = findNonFinite(input);
  if (found === undefined) return;
  const what = Number.isNaN(found.value)
    ? "NaN, which JSON cannot carry"
    : "a number out of the range of a double (read as Infinity)";
  throw new InvalidDraftError(
    `draft holds ${what} at ${found.path || "the top"}: it would be kept as null; send it as a string or within ±1.8e308`,
  );
}

/**
 * A draft's text holding a non-zero number too small for a double (`1e-400`) is refused like one too
 * large: JSON.parse reads it as 0, so the draft would be checked, stored and exported as 0, a different
 * number. A literal zero (`0.0`, `0e5`) is 0 and stays.
 */
function refuseUnderflow(text: string): void {
  const path = findUnderflow(text);
  if (path === undefined) return;
  throw new InvalidDraftError(
    `draft holds a non-zero number too small for a double (read as 0) at ${path || "the top"}: it would be kept as 0; send it as a string or at least ±5e-324`,
  );
}

/**
 * Parses anything into a Draft, or throws an InvalidDraftError whose message names each bad field.
 * Size and depth are checked first, without recursion (DraftTooLargeError, DraftTooDeepError), so
 * that no hostile input reaches a recursive parser, validator or walk. A leading byte-order mark is
 * not content and is ignored.
 */
export function parseDraft(input: unknown, limits: DraftLimits = {}): Draft {
  const maxBytes = limits.maxDraftBytes ?? DEFAULT_MAX_DRAFT_BYTES;
  const maxDepth = limits.maxDraftDepth ?? DEFAULT_MAX_DRAFT_DEPTH;
  if (typeof input === "string") {
    const bytes = Buffer.byteLength(input);
    if (bytes > maxBytes) throw new DraftTooLargeError(bytes, maxBytes);
    const text = stripBom(input);
    const scan = scanDraftText(text, maxDepth);
    if (scan.depth > maxDepth) throw new DraftTooDeepError(scan.depth, maxDepth);
    try {
      input = parseDraftText(text, scan);
    } catch (error) {
      throw new InvalidDraftError(`draft is not valid JSON: ${(error as Error).message}`, { cause: error });
    }
    if (mayHoldHugeNumber(text)) refuseNonFinite(input);
    if (mayHoldTinyNumber(text)) refuseUnderflow(text);
  } else {
    const { depth, maxBytes: atMost } = valueDepthAndSizeBound(
      input,
      maxDepth,
      knownSchemaBound(input, maxDepth),
    );
    if (depth > maxDepth) throw new DraftTooDeepError(depth, maxDepth);
    // Serializing a draft only to weigh it costs more than checking it: only when the bound says
    // it could be over the limit is the exact size taken.
    if (atMost > maxBytes) {
      // The bound is infinite for a number JSON cannot carry, too: found here, before it is weighed.
      refuseNonFinite(input);
      const bytes = Buffer.byteLength(JSON.stringify(input) ?? "");
      if (bytes > maxBytes) throw new DraftTooLargeError(bytes, maxBytes);
    }
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new InvalidDraftError(`draft must be a JSON object, got ${describeValue(input)}`);
  }
  const parsed = DraftSchema.safeParse(input);
  if (!parsed.success) throw new InvalidDraftError(`invalid draft: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

/** The resolved pack for a draft's kind; makes sure an async pack (the code sandbox) is ready. */
export async function packFor(
  draft: Draft,
  registry: PackRegistry = getDefaultRegistry(),
): Promise<ResolvedPack> {
  const resolved = registry.get(draft.kind);
  await resolved.pack.ready?.();
  return resolved;
}

/** Parses, repairs and checks a draft: the repaired draft and its report. */
export async function inspectDraft(input: unknown, options: ValidateOptions = {}): Promise<Inspection> {
  const draft = parseDraft(input, options);
  const resolved = await packFor(draft, options.registry);
  return inspectWithPackAsync(resolved, draft);
}

/**
 * Validates one draft: deterministic repair, then every enabled rule of its kind's pack.
 * Throws InvalidDraftError / UnknownKindError / DraftTooLargeError on bad input, never a raw stack.
 */
export async function validateDraft(
  input: unknown,
  options: ValidateOptions = {},
): Promise<ValidationReport> {
  return (await inspectDraft(input, options)).report;
}
