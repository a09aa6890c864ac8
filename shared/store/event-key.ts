import { BlobNotFoundError } from "../errors.js";
import type { BlobStore } from "./types.js";

/**
 * The form-decoded key (`+` as space, `%XX` as its bytes), or undefined when decoding changes nothing
 * or the key is not valid URL encoding (a raw key holding a lone `%`).
 */
export function decodedKey(key: string): string | undefined {
  try {
    const decoded = decodeURIComponent(key.replace(/\+/g, " "));
    return decoded === key ? undefined : decoded;
  } catch {
    return undefined;
  }
}

/**
 * Reads an object named by an event. S3 event notifications URL-encode object keys (`red flower.json`
 * arrives as `red+flower.json`); whether EventBridge's `Object Created` does is not settled by the
 * documentation, and a client's `Draft Submitted` names the key raw. So the key is read as given
 * first (a raw key may itself hold `+` or `%`), then in its decoded form when the first is not there.
 * Only a missing object leads to the second read; any other error is the store's. Returns the text
 * and the key it was found under; BlobNotFoundError (naming the key as given) when neither exists.
 */
export async function getByEventKey(
  blobs: BlobStore,
  key: string,
  version?: string,
): Promise<{ text: string; key: string }> {
  try {
    return { text: await blobs.get(key, version), key };
  } catch (error) {
    const decoded = decodedKey(key);
    if (!(error instanceof BlobNotFoundError) || decoded === undefined) throw error;
    try {
      return { text: await blobs.get(decoded, version), key: decoded };
    } catch (second) {
      if (second instanceof BlobNotFoundError) throw new BlobNotFoundError(key);
      throw second;
    }
  }
}
