/**
 * A draft's source (`context.source`): the text it was written from, given inline or as a reference
 * to an object (`{ "ref": "sources/…" }`, a key in the bucket; a file path for the local runtime).
 * Validate reads it once and keeps a copy under the run (`runs/<runId>/source.txt`), so the judge,
 * `redraft show` and the viewer read the same text whatever happens to the object afterwards.
 */
import * as z from "zod";
import type { Draft } from "../draft.js";
import { SelfCorrectionError, UnreadableInputError } from "../errors.js";

/** Largest source accepted, in bytes of UTF-8: a long paper or a book chapter, not a library. */
export const MAX_SOURCE_BYTES = 4 * 1024 * 1024;

const SourceRefSchema = z.object({ ref: z.string().min(1).max(1024) }).strict();
const SourceSchema = z.union([z.string(), SourceRefSchema]);
export type Source = z.infer<typeof SourceSchema>;

/** A source over MAX_SOURCE_BYTES: the draft is rejected as `too_large`, as an oversized draft is. */
export class SourceTooLargeError extends SelfCorrectionError {
  override readonly name = "SourceTooLargeError";
  constructor(bytes: number, limit = MAX_SOURCE_BYTES) {
    super(`context.source is ${bytes} bytes, over the limit of ${limit} bytes`, "too_large");
  }
}

/** Reads a source reference into text; the runtime says where references point. */
export type SourceReader = (ref: string) => Promise<string>;

/** The draft's `context.source`, if it has one; a malformed one is the draft's fault (rejected). */
export function sourceOf(draft: Draft): Source | undefined {
  const value = draft.context?.source;
  if (value === undefined) return undefined;
  const parsed = SourceSchema.safeParse(value);
  if (!parsed.success) {
    // A SelfCorrectionError with code invalid_input: Validate rejects the draft, naming the field.
    throw new SelfCorrectionError(
      'context.source must be the source text or { "ref": "<key or path>" }',
      "invalid_input",
    );
  }
  return parsed.data;
}

/** The source's text, read through `read` when it is a reference, and bounded by MAX_SOURCE_BYTES. */
export async function readSource(source: Source, read: SourceReader): Promise<string> {
  let text: string;
  if (typeof source === "string") text = source;
  else {
    try {
      text = await read(source.ref);
    } catch (error) {
      // A missing object or file is the draft's fault (rejected, unreadable); a store fault is not.
      const missing = error instanceof SelfCorrectionError && error.code === "blob_not_found";
      if (error instanceof SelfCorrectionError && !missing) throw error;
      if (!missing && !(error as NodeJS.ErrnoException).code) throw error;
      throw new UnreadableInputError(
        `context.source ${source.ref} cannot be read: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
  }
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_SOURCE_BYTES) throw new SourceTooLargeError(bytes);
  return text;
}
