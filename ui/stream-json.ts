import type { ServerResponse } from "node:http";

/** Bytes gathered before a write: large enough to cost few syscalls, small enough to bound memory. */
const CHUNK_CHARS = 64 * 1024;

/** Array items written by one JSON.stringify call when an array is long: its own speed, in bounded pieces. */
const SLICE = 256;
/** Below this depth containers are walked; at it, a value is one JSON.stringify (drafts are deep, pages are not). */
const MAX_WALK_DEPTH = 8;

/**
 * The JSON text of `value` (plain data, as JSON.parse makes it), a piece at a time, each piece
 * JSON.stringify's own text: the objects of the first levels are walked key by key, a long array
 * is written SLICE items per call, so the whole is what JSON.stringify would write (an undefined
 * property is left out, an undefined array item is null) at close to its speed.
 */
function* jsonPieces(value: unknown, depth = 0): Generator<string> {
  if (
    value === null ||
    typeof value !== "object" ||
    typeof (value as { toJSON?: unknown }).toJSON === "function" ||
    depth >= MAX_WALK_DEPTH
  ) {
    yield JSON.stringify(value) ?? "null";
    return;
  }
  if (Array.isArray(value)) {
    yield "[";
    if (value.length > SLICE) {
      for (let i = 0; i < value.length; i += SLICE)
        yield `${i > 0 ? "," : ""}${JSON.stringify(value.slice(i, i + SLICE)).slice(1, -1)}`;
    } else {
      for (let i = 0; i < value.length; i++) {
        if (i > 0) yield ",";
        const item = value[i];
        if (item === undefined || typeof item === "function" || typeof item === "symbol") yield "null";
        else yield* jsonPieces(item, depth + 1);
      }
    }
    yield "]";
    return;
  }
  yield "{";
  let first = true;
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
    yield `${first ? "" : ","}${JSON.stringify(key)}:`;
    first = false;
    yield* jsonPieces(item, depth + 1);
  }
  yield "}";
}

/** Settles when the socket has taken what it was given, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/**
 * Writes `value` as the JSON body of `res` in pieces of about CHUNK_CHARS, waiting for the socket
 * to drain when it is behind and letting the event loop serve other requests between pieces: a
 * run page of megabytes is never one string in memory, nor one long turn that holds a small
 * request behind it.
 */
export async function writeJsonStream(res: ServerResponse, value: unknown): Promise<void> {
  let buffer = "";
  for (const piece of jsonPieces(value)) {
    buffer += piece;
    if (buffer.length < CHUNK_CHARS) continue;
    const flushed = res.write(buffer);
    buffer = "";
    if (!flushed) await drained(res);
    else await new Promise<void>((resolve) => setImmediate(resolve));
    if (res.destroyed) return;
  }
  res.end(buffer);
}
