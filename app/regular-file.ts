import { readFileSync, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";

/**
 * A person's file named on the command line (a `--config`, a cassette, a manifest, an edit), read
 * only when it is a regular file: reading a FIFO would hold the command until something writes to
 * it, and a device may never end. Anything else fails as a read does (a folder with EISDIR), with a
 * code and a message the callers already put in their one line.
 */
function notRegular(): NodeJS.ErrnoException {
  return Object.assign(new Error("not a regular file (a FIFO or a device is never read)"), {
    code: "ENOTREG",
  });
}

/** The bytes of `path`, a regular file; an fs error (ENOENT…) or ENOTREG otherwise. */
export async function readRegularFile(path: string): Promise<Buffer> {
  const info = await stat(path);
  if (!info.isFile() && !info.isDirectory()) throw notRegular();
  return readFile(path);
}

/** {@link readRegularFile}, for the callers that cannot wait (the model is chosen synchronously). */
export function readRegularFileSync(path: string): Buffer {
  const info = statSync(path);
  if (!info.isFile() && !info.isDirectory()) throw notRegular();
  return readFileSync(path);
}
