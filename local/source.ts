import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { MAX_SOURCE_BYTES, type SourceReader, SourceTooLargeError } from "../shared/grounding/source.js";

/**
 * Offline, a `context.source` reference is a file path (relative to the working directory): the
 * file is measured before it is read, so an oversized one is refused without loading it.
 */
export const readLocalSource: SourceReader = async (ref) => {
  const path = resolve(ref);
  const info = await stat(path);
  if (!info.isFile()) throw Object.assign(new Error(`${ref} is not a file`), { code: "EISDIR" });
  if (info.size > MAX_SOURCE_BYTES) throw new SourceTooLargeError(info.size);
  return readFile(path, "utf8");
};
