import { lstat, open, readdir, readFile, realpath, stat } from "node:fs/promises";
import { basename, extname, join, relative, sep } from "node:path";
import { splitTopLevel, stripBom } from "../shared/json-depth.js";
import type { InputRejection } from "../shared/loop/steps/input.js";
import { decodeText } from "./text-encoding.js";

/** One draft to submit, with where it came from, so a rejection can name the file and the problem. */
export interface DraftSource {
  /** `examples/drafts/q1.json`, `batch.json[3]`, `batch.jsonl:12`. */
  label: string;
  /** The text to upload under `drafts/`: one draft, as the file or line holds it. */
  body: string;
  /** Set when the path could not be read: its run is rejected with this, and nothing is uploaded. */
  rejectWith?: InputRejection;
}

/** Files beside drafts that are not drafts themselves. */
const NOT_DRAFTS = [/\.pack\.json$/i, /\.cassette\.json$/i];
const DRAFT_FILE = /\.(json|jsonl|ndjson)$/i;

const isDraftFile = (name: string) => DRAFT_FILE.test(name) && !NOT_DRAFTS.some((re) => re.test(name));

export class UsageError extends Error {
  override readonly name = "UsageError";
}

const errorCode = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

/** What went wrong reading a path, in words; the path itself is named by the caller. */
function whyUnreadable(error: unknown): string {
  switch (errorCode(error)) {
    case "ENOENT":
      return "no such file or directory";
    case "ELOOP":
      return "symlink loop: too many levels of symbolic links";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    default:
      return `cannot be read: ${(error as Error).message}`;
  }
}

/** A source for a path that cannot be read: its run is rejected as `unreadable`, naming the path. */
function unreadableSource(label: string, why: string): DraftSource {
  return {
    label,
    body: "",
    rejectWith: { reason: "unreadable", message: `${label}: ${why}`, draftId: basename(label) || label },
  };
}

/** A source whose bytes are not text redraft reads (text-encoding.ts): rejected as invalid input, naming the place. */
function undecodableSource(label: string, problem: string): DraftSource {
  return {
    label,
    body: "",
    rejectWith: {
      reason: "invalid_input",
      message: `${label} ${problem}`,
      draftId: basename(label) || label,
    },
  };
}

/**
 * A JSONL file's lines as bytes (without their line feed), read a chunk at a time: each line is decoded
 * on its own, so a byte that is not UTF-8 refuses its line, never turns into U+FFFD.
 */
async function* byteLines(handle: Awaited<ReturnType<typeof open>>): AsyncGenerator<Buffer> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of handle.createReadStream({ autoClose: false, start: 0 })) {
    pending = pending.length === 0 ? (chunk as Buffer) : Buffer.concat([pending, chunk as Buffer]);
    let start = 0;
    for (let end = pending.indexOf(0x0a); end >= 0; end = pending.indexOf(0x0a, start)) {
      yield pending.subarray(start, end);
      start = end + 1;
    }
    pending = pending.subarray(start);
  }
  if (pending.length > 0) yield pending;
}

/**
 * Splits one file into drafts: a JSON object is one draft, a JSON array one per element, JSONL
 * one per line. A file that is not JSON stays one source, so its run is rejected naming the file.
 * The array is split at its top level without parsing its elements, so that each element, however
 * deep or broken, is bounded and judged on its own in Validate. A byte-order mark is not content.
 */
export function splitFile(label: string, text: string): DraftSource[] {
  const body = stripBom(text);
  const ext = extname(label).toLowerCase();
  if (ext === ".jsonl" || ext === ".ndjson") {
    return body
      .split("\n")
      .map((line, i) => ({ label: `${label}:${i + 1}`, body: stripBom(line.trim()) }))
      .filter((s) => s.body !== "");
  }
  const top = splitTopLevel(body);
  if (top?.type === "array") return top.elements.map((item, i) => ({ label: `${label}[${i}]`, body: item }));
  return [{ label, body }];
}

const isLines = (label: string) => /\.(jsonl|ndjson)$/i.test(label);

/**
 * The drafts in one file, one at a time; a file that cannot be read is one source, rejected as
 * unreadable. A JSONL file is read line by line, so a file of a million lines costs a line of memory;
 * a JSON file (one draft, or an array of drafts) is read whole, as it must be to be split.
 */
export async function* draftsInFile(file: string, label: string): AsyncGenerator<DraftSource> {
  if (!isLines(label)) {
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (error) {
      yield unreadableSource(label, whyUnreadable(error));
      return;
    }
    const decoded = decodeText(bytes);
    if ("problem" in decoded) yield undecodableSource(label, decoded.problem);
    else yield* splitFile(label, decoded.text);
    return;
  }
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, "r");
  } catch (error) {
    yield unreadableSource(label, whyUnreadable(error));
    return;
  }
  let line = 0;
  try {
    const mark = Buffer.alloc(2);
    await handle.read(mark, 0, 2, 0);
    if ((mark[0] === 0xff && mark[1] === 0xfe) || (mark[0] === 0xfe && mark[1] === 0xff)) {
      // UTF-16, as its byte-order mark says: decoded whole (a line feed is two bytes there), then split.
      const decoded = decodeText(await handle.readFile());
      if ("problem" in decoded) {
        yield undecodableSource(label, decoded.problem);
        return;
      }
      for (const text of decoded.text.split("\n")) {
        line += 1;
        const body = stripBom(text.trim());
        if (body !== "") yield { label: `${label}:${line}`, body };
      }
      return;
    }
    for await (const bytes of byteLines(handle)) {
      line += 1;
      const decoded = decodeText(bytes);
      if ("problem" in decoded) {
        yield undecodableSource(`${label}:${line}`, decoded.problem);
        continue;
      }
      const body = decoded.text.trim();
      if (body !== "") yield { label: `${label}:${line}`, body };
    }
  } catch (error) {
    // A read that fails part-way (a folder named like a file, an I/O error): the rest is one rejection.
    yield unreadableSource(line === 0 ? label : `${label}:${line + 1}`, whyUnreadable(error));
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** A file to read, or a path that could not be followed. */
type Found = { file: string } | { unreadable: string; why: string };

/** Whether `dir` is `inner` or one of the folders that contain it (real paths). */
const contains = (dir: string, inner: string) =>
  inner === dir || inner.startsWith(dir.endsWith(sep) ? dir : dir + sep);

/**
 * The draft files under a path, following symlinks to files and folders. A link to a folder that
 * contains it, or to a folder already open on the way down, is a symlink loop, reported once at
 * the link that closes it; a folder already walked by another route is not walked twice.
 */
async function* walk(
  path: string,
  visited: Set<string>,
  ancestors: readonly string[],
): AsyncGenerator<Found> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    const dangling = errorCode(error) === "ENOENT" && (await lstat(path).catch(() => undefined));
    yield {
      unreadable: path,
      why: dangling ? "broken symlink: its target does not exist" : whyUnreadable(error),
    };
    return;
  }
  if (!info.isDirectory()) {
    yield { file: path };
    return;
  }
  let real: string;
  let entries: string[];
  try {
    real = await realpath(path);
    const parent = ancestors.at(-1);
    if (ancestors.includes(real) || (parent !== undefined && contains(real, parent))) {
      yield { unreadable: path, why: "symlink loop: it leads back to a folder that contains it" };
      return;
    }
    if (visited.has(real)) return;
    visited.add(real);
    entries = await readdir(path);
  } catch (error) {
    yield { unreadable: path, why: whyUnreadable(error) };
    return;
  }
  for (const name of entries.filter((n) => !n.startsWith(".")).sort((a, b) => a.localeCompare(b))) {
    const full = join(path, name);
    const kind = await lstat(full).catch(() => undefined);
    if (!kind) continue; // removed while we looked
    if (kind.isDirectory()) yield* walk(full, visited, [...ancestors, real]);
    else if (kind.isSymbolicLink()) {
      // A link is followed when it names a draft file or leads to a folder; a loop or a dangling
      // link named like a draft is reported, any other link is not a draft and is left alone.
      const target = await stat(full).catch(() => undefined);
      if (isDraftFile(name) || target?.isDirectory()) yield* walk(full, visited, [...ancestors, real]);
    } else if (kind.isFile() && isDraftFile(name)) yield { file: full };
  }
}

/**
 * Every draft under the given paths, in a stable order, read as they are asked for: a folder is
 * listed when the walk reaches it, a file read when its drafts are due, so a hundred thousand
 * drafts are never in memory at once. A path that cannot be read (missing, a symlink loop, no
 * permission) becomes one source rejected as `unreadable`, so the other drafts still run; only when
 * no path given exists at all is it a usage error, thrown before the first draft is given.
 */
export async function* draftSources(
  paths: readonly string[],
  cwd = process.cwd(),
): AsyncGenerator<DraftSource> {
  const existing = await Promise.all(
    paths.map((p) =>
      lstat(p).then(
        () => true,
        () => false,
      ),
    ),
  );
  if (paths.length > 0 && !existing.includes(true))
    throw new UsageError(`no such file or directory: ${paths.join(", ")}`);
  const visited = new Set<string>();
  for (const path of paths)
    for await (const item of walk(path, visited, [])) {
      if ("file" in item) yield* draftsInFile(item.file, relative(cwd, item.file) || basename(item.file));
      else yield unreadableSource(relative(cwd, item.unreadable) || item.unreadable, item.why);
    }
}

/** {@link draftSources}, all at once: for callers (and tests) that want the whole list. */
export async function collectDrafts(paths: readonly string[], cwd = process.cwd()): Promise<DraftSource[]> {
  const sources: DraftSource[] = [];
  for await (const source of draftSources(paths, cwd)) sources.push(source);
  return sources;
}
