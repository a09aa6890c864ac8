import { type Draft, DraftSchema, describeZodError, type ValidationReport } from "./draft.js";
import { type Inspection, inspectWithPack, type ResolvedPack } from "./engine.js";
import { DraftTooLargeError, InvalidDraftError } from "./errors.js";
import { getDefaultRegistry, type PackRegistry } from "./registry.js";

/** Drafts above this size are rejected: a state machine run is no place for a 100 MB blob. */
export const DEFAULT_MAX_DRAFT_BYTES = 8 * 1024 * 1024;

export interface ValidateOptions {
  registry?: PackRegistry;
  maxDraftBytes?: number;
}

/** Parses anything into a Draft, or throws an InvalidDraftError whose message names each bad field. */
export function parseDraft(input: unknown, maxDraftBytes = DEFAULT_MAX_DRAFT_BYTES): Draft {
  if (typeof input === "string") {
    const bytes = Buffer.byteLength(input);
    if (bytes > maxDraftBytes) throw new DraftTooLargeError(bytes, maxDraftBytes);
    try {
      input = JSON.parse(input);
    } catch (error) {
      throw new InvalidDraftError(`draft is not valid JSON: ${(error as Error).message}`, { cause: error });
    }
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new InvalidDraftError(
      `draft must be a JSON object, got ${Array.isArray(input) ? "an array" : typeof input}`,
    );
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
  const draft = parseDraft(input, options.maxDraftBytes);
  const resolved = await packFor(draft, options.registry);
  return inspectWithPack(resolved, draft);
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
