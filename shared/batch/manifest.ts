import { splitTopLevel } from "../json-depth.js";

/**
 * A batch manifest: many drafts in one file, JSONL (one draft per line) or a JSON array. Split
 * here, never parsed item by item: each item's body goes to Validate as it is, so a broken line
 * is rejected there with the same reason a broken single upload gets, and the other items run.
 */

/**
 * The limits a manifest is held to (docs/cli.md's "Limits"). The service's own: a Distributed Map
 * item of at most 256 KiB (items carry references, not drafts), and execution names of 80
 * characters (a child is `<batchId>-<line>`).
 */
export interface BatchLimits {
  /** Bytes of one manifest: read whole by λ batch (PrepareItems). */
  maxManifestBytes: number;
  /** Items of one manifest. */
  maxItems: number;
}

export const BATCH_LIMITS: Readonly<BatchLimits> = { maxManifestBytes: 256 * 1024 * 1024, maxItems: 100_000 };

export interface ManifestItem {
  /** 1-based: the line of a JSONL manifest, the element's position in a JSON array. */
  line: number;
  /** The item's text, untouched: one draft, or whatever the line held. */
  body: string;
}

const stripBom = (text: string) => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);

/**
 * The items of a manifest, in order, held to `limits` as it is read: its bytes first, then no more
 * items than the limit are ever collected (a manifest of millions of blank lines or tiny elements
 * is refused, not split into millions of strings). A text whose first character is `[` is a JSON
 * array, split at its top level without parsing the elements; anything else is JSONL, where blank
 * lines are not items (but still count, so that a line number is the editor's). A JSONL file whose
 * first line happens to be an array (a draft that is no draft) is still JSONL. An array that is
 * broken as a whole (an element that never closes, an empty element, a missing `]`) is refused,
 * saying where: read line by line instead, its `[`, `]` and every `},` line would each become a
 * rejected item.
 */
export function splitManifest(text: string, limits: BatchLimits = BATCH_LIMITS): ManifestItem[] {
  const bytes = Buffer.byteLength(text);
  checkBytes(bytes, limits);
  const body = stripBom(text);
  const tooMany = () =>
    new ManifestRefusedError(
      `the manifest holds more than ${limits.maxItems} items; a batch takes at most ${limits.maxItems} (split it into several batches)`,
    );
  let items: ManifestItem[] | undefined;
  if (body.trimStart().startsWith("[")) {
    const top = splitTopLevel(body, limits.maxItems);
    if (top?.type === "over") throw tooMany();
    if (top?.type === "array") items = top.elements.map((item, i) => ({ line: i + 1, body: item }));
    else if (!firstLineIsValue(body)) throw new ManifestRefusedError(brokenArray(body));
  }
  if (!items) {
    items = [];
    for (let start = 0, line = 1; start <= body.length; line++) {
      const newline = body.indexOf("\n", start);
      const end = newline < 0 ? body.length : newline;
      const item = stripBom(body.slice(start, end).trim());
      if (item !== "") {
        if (items.length >= limits.maxItems) throw tooMany();
        items.push({ line, body: item });
      }
      start = end + 1;
    }
  }
  checkManifest(bytes, items.length, limits);
  return items;
}

/** Whether the text's first non-blank line is a whole JSON array or object by itself (JSONL). */
function firstLineIsValue(body: string): boolean {
  const start = body.length - body.trimStart().length;
  const end = body.indexOf("\n", start);
  return splitTopLevel(body.slice(start, end < 0 ? body.length : end)) !== undefined;
}

/** Why a text that starts like a JSON array is not one, with the line where JSON.parse stopped. */
function brokenArray(body: string): string {
  let why = "it does not close";
  try {
    JSON.parse(body);
  } catch (error) {
    // V8 quotes the text itself after the reason (`Unexpected token ',', "[{…" is not valid JSON`):
    // a manifest's drafts stay out of the batch record and its logs.
    const message = (error instanceof Error ? error.message : String(error)).replace(
      /, ".*" is not valid JSON$/s,
      "",
    );
    const at = /at position (\d+)/.exec(message);
    const line = at ? body.slice(0, Number(at[1])).split("\n").length : undefined;
    why =
      line === undefined ? message : `${message.replace(/ in JSON at position \d+.*$/, "")} on line ${line}`;
  }
  return `the manifest starts with "[" but is not a well-formed JSON array (${why}); fix it, or send JSONL (one draft per line) to have each line judged on its own`;
}

/** Refused before any item runs: the manifest as a whole is beyond the limits. */
export class ManifestRefusedError extends Error {
  override readonly name = "ManifestRefused";
}

/** Checks a manifest against {@link BATCH_LIMITS}; the error says which limit and by how much. */
export function checkManifest(bytes: number, items: number, limits: BatchLimits = BATCH_LIMITS): void {
  checkBytes(bytes, limits);
  if (items > limits.maxItems)
    throw new ManifestRefusedError(
      `the manifest holds ${items} items; a batch takes at most ${limits.maxItems} (split it into several batches)`,
    );
  if (items === 0) throw new ManifestRefusedError("the manifest holds no drafts");
}

/** The manifest's size against its limit, before anything splits it. */
function checkBytes(bytes: number, limits: BatchLimits): void {
  if (bytes > limits.maxManifestBytes)
    throw new ManifestRefusedError(
      `the manifest is ${bytes} bytes; a batch takes at most ${limits.maxManifestBytes} (split it into several batches)`,
    );
}
