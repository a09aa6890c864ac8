import { lstat, open, readdir, readFile, realpath, stat } from "node:fs/promises";
import { basename, extname, join, relative, sep } from "node:path";
import { splitTopLevel, stripBom } from "../shared/json-depth.js";
import type { InputRejection } from "../shared/loop/steps/input.js";

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
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      yield unreadableSource(label, whyUnreadable(error));
      return;
    }
    yield* splitFile(label, text);
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
    for await (const text of handle.readLines({ encoding: "utf8", autoClose: false })) {
      line += 1;
      const body = stripBom(text.trim());
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
