import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, mkdir, rename, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { BlobNotFoundError, SelfCorrectionError } from "../shared/errors.js";
import type { BlobStore } from "../shared/store/types.js";

/** A blob key that would leave the store's folder, or that no S3 key maps to one-to-one. */
export class InvalidBlobKeyError extends SelfCorrectionError {
  override readonly name = "InvalidBlobKeyError";
  constructor(key: string, why: string) {
    super(`blob key ${JSON.stringify(key)} ${why}`, "invalid_blob_key");
  }
}

const errorCode = (error: unknown): unknown => (error as { code?: unknown } | undefined)?.code;

/** Errors that mean "this file system cannot hard-link": putIfAbsent falls back to an exclusive create. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"]);

/**
 * The BlobStore on a local folder, for the embedded runtime: key `runs/r1/original.json` is the file
 * `<root>/runs/r1/original.json`. Keys must be relative, with no `.`, `..` or empty segment, so that
 * nothing is written outside the folder and each key has exactly one file.
 *
 * Writes are atomic: the body goes to a temporary file beside the target, which is then renamed
 * (put) or hard-linked (putIfAbsent, which fails when the target exists) into place, so a reader
 * never sees half a blob and a crash never leaves a truncated original that can no longer be replaced.
 *
 * A run reads and writes a dozen small blobs: each step of Node's promise file API is a round trip
 * to libuv's thread pool, which costs more than the small read itself. So reads are synchronous
 * (one `readFileSync`), folders this store made or found are not made again (a write that finds
 * one gone makes it and tries once more), and a temporary file goes with one `unlink`.
 */
export class FsBlobStore implements BlobStore {
  readonly root: string;
  /** Folders known to exist: made by this store, or found there. */
  readonly #folders = new Set<string>();

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  async put(key: string, body: string): Promise<void> {
    const file = this.pathOf(key);
    const temp = await this.#writeTemp(file, body);
    try {
      await rename(temp, file);
    } catch (error) {
      await removeTemp(temp);
      throw error;
    }
  }

  async get(key: string): Promise<string> {
    try {
      return readFileSync(this.pathOf(key), "utf8");
    } catch (error) {
      const code = errorCode(error);
      if (code === "ENOENT" || code === "EISDIR" || code === "ENOTDIR") throw new BlobNotFoundError(key);
      throw error;
    }
  }

  async putIfAbsent(key: string, body: string): Promise<boolean> {
    const file = this.pathOf(key);
    const temp = await this.#writeTemp(file, body);
    try {
      await link(temp, file);
      return true;
    } catch (error) {
      if (errorCode(error) === "EEXIST") return false;
      if (!NO_HARD_LINKS.has(String(errorCode(error)))) throw error;
      return this.#createExclusive(file, body);
    } finally {
      await removeTemp(temp);
    }
  }

  /** The file a key maps to; throws InvalidBlobKeyError for a key that would escape the folder. */
  pathOf(key: string): string {
    if (key.length === 0) throw new InvalidBlobKeyError(key, "is empty");
    if (key.includes("\0")) throw new InvalidBlobKeyError(key, "contains a NUL character");
    if (path.isAbsolute(key) || path.win32.isAbsolute(key)) throw new InvalidBlobKeyError(key, "is absolute");
    const segments = key.split(/[/\\]/);
    if (segments.some((s) => s === "" || s === "." || s === "..")) {
      throw new InvalidBlobKeyError(key, "has an empty, '.' or '..' segment");
    }
    const file = path.resolve(this.root, ...segments);
    if (!file.startsWith(this.root + path.sep))
      throw new InvalidBlobKeyError(key, "resolves outside the folder");
    return file;
  }

  async #writeTemp(file: string, body: string): Promise<string> {
    const folder = path.dirname(file);
    // Same folder as the target: rename and link do not cross file systems.
    // A random UUID comes from a pool Node refills in batches; randomBytes would ask the system each time.
    const temp = path.join(folder, `.${path.basename(file)}.${randomUUID()}.tmp`);
    if (!this.#folders.has(folder)) await this.#makeFolder(folder);
    try {
      await writeFile(temp, body, { flag: "wx" });
    } catch (error) {
      // The folder was removed since this store saw it: make it again, once.
      if (errorCode(error) !== "ENOENT") throw error;
      await this.#makeFolder(folder);
      await writeFile(temp, body, { flag: "wx" });
    }
    return temp;
  }

  async #makeFolder(folder: string): Promise<void> {
    await mkdir(folder, { recursive: true });
    this.#folders.add(folder);
  }

  async #createExclusive(file: string, body: string): Promise<boolean> {
    try {
      await writeFile(file, body, { flag: "wx" });
      return true;
    } catch (error) {
      if (errorCode(error) === "EEXIST") return false;
      throw error;
    }
  }
}

/** Removes a temporary file; one already gone is no failure. */
async function removeTemp(temp: string): Promise<void> {
  try {
    await unlink(temp);
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error;
  }
}
