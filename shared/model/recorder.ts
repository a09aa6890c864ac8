import { randomUUID } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { ModelNotConfiguredError } from "../errors.js";
import { decodeText } from "../text-encoding.js";
import { type Cassette, type CassetteEntry, parseCassette, usageToCassette } from "./replay.js";
import type { ModelClient, ModelRequest, ModelResponse } from "./types.js";

/** The entry a response becomes; a response with neither output nor text is recorded as empty text. */
function entryFor(request: ModelRequest, response: ModelResponse): CassetteEntry {
  const answer = {
    draftId: request.draftId,
    purpose: request.purpose,
    usage: usageToCassette(response.usage),
    model: response.model,
  };
  if (response.output !== undefined) {
    return {
      ...answer,
      output: response.output,
      ...(response.raw !== undefined ? { raw: response.raw } : {}),
    };
  }
  return { ...answer, raw: response.raw ?? "" };
}

async function readCassette(path: string): Promise<Cassette> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, responses: [] };
    throw error;
  }
  // The cassette is rewritten with each answer: one read with U+FFFD in place of its bytes would be
  // saved so, and the person's own answers lost. Another encoding is refused; the file is left alone.
  const decoded = decodeText(bytes);
  if ("problem" in decoded) throw new ModelNotConfiguredError(`cassette ${path} ${decoded.problem}`);
  return parseCassette(JSON.parse(decoded.text), `cassette ${path}`);
}

/** Replaces the file in one step, so a crash mid-write never leaves half a cassette behind. */
async function writeAtomically(path: string, contents: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomUUID()}.tmp`;
  try {
    await writeFile(temp, contents, "utf8");
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/**
 * Wraps a real ModelClient and appends each of its answers to a cassette file that
 * ReplayModelClient can play back. The file is created when missing and its entries are kept;
 * failed calls are re-thrown and not recorded.
 */
export class RecordingModelClient implements ModelClient {
  readonly provider: string;
  readonly model: string;
  private cassette: Promise<Cassette> | undefined;
  /** Writes happen one after another, so concurrent calls cannot lose each other's entries. */
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly inner: ModelClient,
    readonly path: string,
  ) {
    this.provider = inner.provider;
    this.model = inner.model;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const response = await this.inner.complete(request);
    await this.record(entryFor(request, response));
    return response;
  }

  private record(entry: CassetteEntry): Promise<void> {
    const write = this.writes.then(async () => {
      this.cassette ??= readCassette(this.path);
      const cassette = await this.cassette;
      cassette.responses.push(entry);
      await writeAtomically(this.path, `${JSON.stringify(cassette, null, 2)}\n`);
    });
    // A failed write fails its own call; the next one still runs.
    this.writes = write.catch(() => {});
    return write;
  }
}
