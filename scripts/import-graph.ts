/**
 * The repository's import graph, read from the tracked sources: every relative import specifier of
 * every tracked `.ts`/`.js`/`.mjs` file, resolved to the path it names. One reader for the layers test
 * (tests/docs/layers.test.ts) and the layout figures (scripts/house-stats.ts), so that the rule and the
 * figures count the same edges.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";

/** Tracked sources, relative to `root`; node_modules, dist and test fixtures are never tracked as code. */
export function trackedSources(root: string): string[] {
  return execFileSync("git", ["ls-files", "-z", "*.ts", "*.js", "*.mjs"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter(Boolean);
}

/** The top-level folder of a repository path; a file at the root is named by itself. */
export const topOf = (path: string) => (path.includes("/") ? (path.split("/")[0] as string) : path);

const SPECIFIERS =
  /(?:^|[\s;])(?:import|export)\s[^;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|^import\s+["']([^"']+)["']/gm;

export interface Import {
  /** The importing file, relative to the root. */
  file: string;
  specifier: string;
  /** The path a relative specifier names, relative to the root; undefined for a package. */
  target: string | undefined;
}

/** Every import statement of every tracked source (relative ones resolved, packages kept as named). */
export function imports(root: string): Import[] {
  const found: Import[] = [];
  for (const file of trackedSources(root)) {
    const source = readFileSync(join(root, file), "utf8");
    for (const m of source.matchAll(SPECIFIERS)) {
      const specifier = (m[1] ?? m[2] ?? m[3]) as string;
      const target = specifier.startsWith(".")
        ? posix.normalize(posix.join(dirname(file), specifier))
        : undefined;
      if (target?.startsWith("node_modules/")) continue;
      found.push({ file, specifier, target });
    }
  }
  return found;
}
