import { readdir, readFile, stat } from "node:fs/promises";
import { basename, extname, join, relative } from "node:path";

/** One draft to submit, with where it came from, so a rejection can name the file and the problem. */
export interface DraftSource {
  /** `examples/drafts/q1.json`, `batch.json[3]`, `batch.jsonl:12`. */
  label: string;
  /** The text to upload under `drafts/`: one draft, as the file or line holds it. */
  body: string;
}

/** Files beside drafts that are not drafts themselves. */
const NOT_DRAFTS = [/\.pack\.json$/i, /\.cassette\.json$/i];
const DRAFT_FILE = /\.(json|jsonl|ndjson)$/i;

export class UsageError extends Error {
  override readonly name = "UsageError";
}

async function filesUnder(path: string): Promise<string[]> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new UsageError(`no such file or directory: ${path}`);
  if (info.isFile()) return [path];
  const entries = await readdir(path, { withFileTypes: true });
  const nested = await Promise.all(
    entries
      .filter((e) => !e.name.startsWith("."))
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((e) => {
        const full = join(path, e.name);
        if (e.isDirectory()) return filesUnder(full);
        return Promise.resolve(
          DRAFT_FILE.test(e.name) && !NOT_DRAFTS.some((re) => re.test(e.name)) ? [full] : [],
        );
      }),
  );
  return nested.flat();
}

/**
 * Splits one file into drafts: a JSON object is one draft, a JSON array one per element, JSONL
 * one per line. A file that is not JSON stays one source, so its run is rejected naming the file.
 */
export function splitFile(label: string, text: string): DraftSource[] {
  const ext = extname(label).toLowerCase();
  if (ext === ".jsonl" || ext === ".ndjson") {
    return text
      .split("\n")
      .map((line, i) => ({ label: `${label}:${i + 1}`, body: line.trim() }))
      .filter((s) => s.body !== "");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [{ label, body: text }];
  }
  if (Array.isArray(parsed))
    return parsed.map((item, i) => ({ label: `${label}[${i}]`, body: JSON.stringify(item) }));
  return [{ label, body: text }];
}

/** Every draft under the given paths, in a stable order. */
export async function collectDrafts(paths: readonly string[], cwd = process.cwd()): Promise<DraftSource[]> {
  const sources: DraftSource[] = [];
  for (const path of paths) {
    for (const file of await filesUnder(path)) {
      const label = relative(cwd, file) || basename(file);
      sources.push(...splitFile(label, await readFile(file, "utf8")));
    }
  }
  return sources;
}
