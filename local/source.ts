import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { InvalidDraftError } from "../shared/errors.js";
import { MAX_SOURCE_BYTES, type SourceReader, SourceTooLargeError } from "../shared/grounding/source.js";
import { decodeText } from "../shared/text-encoding.js";

/**
 * Offline, a `context.source` reference is a file path (relative to the working directory): the
 * file is measured before it is read, so an oversized one is refused without loading it.
 */
export const readLocalSource: SourceReader = async (ref) => {
  const path = resolve(ref);
  const info = await stat(path);
  if (!info.isFile()) throw Object.assign(new Error(`${ref} is not a file`), { code: "EISDIR" });
  if (info.size > MAX_SOURCE_BYTES) throw new SourceTooLargeError(info.size);
  // As a draft file's: a Latin-1 source read as UTF-8 would be judged with U+FFFD in place of its words.
  const decoded = decodeText(await readFile(path));
  if ("problem" in decoded) throw new InvalidDraftError(`context.source ${ref} ${decoded.problem}`);
  return decoded.text;
};
