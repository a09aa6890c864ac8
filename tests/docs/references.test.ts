import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, posix, relative, sep } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Every file of the repository must stand on its own: no reference may point outside the checkout
 * (a team handbook beside it, someone's home folder), the design document is the one in docs/, and
 * every relative Markdown link leads to a file that exists.
 */
const ROOT = join(import.meta.dirname, "..", "..");
const SCANNED = /\.(ts|js|md|json)$/;
const SKIPPED = new Set(["package-lock.json"]);
/** The one design document; built in two parts so this file does not name a bare one itself. */
const DESIGN_NAME = ["DESIGN", "md"].join(".");
const DESIGN_PATH = `docs/${DESIGN_NAME}`;

interface Offence {
  file: string;
  line: number;
  problem: string;
  text: string;
}

function trackedFiles(): string[] {
  return execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter((f) => f && SCANNED.test(f) && !SKIPPED.has(posix.basename(f)));
}

/** The repository-relative path `target` names from `file`, or undefined when it leaves the repository. */
function resolveFrom(file: string, target: string): string | undefined {
  const resolved = target.startsWith("/") ? join(ROOT, target) : join(ROOT, dirname(file), target);
  const rel = relative(ROOT, resolved);
  if (rel === ".." || rel.startsWith(`..${sep}`)) return undefined;
  return rel.split(sep).join("/");
}

/** Line numbers (1-based) inside fenced code blocks of a Markdown file. */
function fencedLines(lines: readonly string[]): Set<number> {
  const inside = new Set<number>();
  let fence: string | undefined;
  lines.forEach((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      inside.add(i + 1);
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
    } else if (marker) {
      fence = marker;
      inside.add(i + 1);
    }
  });
  return inside;
}

/** An absolute path into the machine this was written on: the shared workspace or a home folder. */
const MACHINE_PATH = /(?<![\w.~/-])(\/work\/|\/home\/[\w.-]+|\/Users\/[\w.-]+|\/root\/|~\/[\w.-]+\/)/g;
/** A relative path that climbs: `../x`, `../../x`. */
const CLIMBING_PATH = /(?<![\w./-])((?:\.\.\/)+[\w@.\-/]*)/g;
/** Any mention of the design document's file name, with whatever path comes before it. */
const DESIGN_MENTION = new RegExp(`([\\w./-]*)\\b${DESIGN_NAME.replace(".", "\\.")}`, "g");
/** Inline Markdown links and images `[text](target)`, and reference definitions `[id]: target`. */
const MD_INLINE_LINK = /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
const MD_REFERENCE_LINK = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/;
/** Targets that are not files of the repository: web addresses, mail, in-page anchors. */
const NOT_A_FILE = /^(?:[a-z][a-z0-9+.-]*:|#)/i;

function offencesIn(file: string): Offence[] {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
  const markdown = file.endsWith(".md");
  const fenced = markdown ? fencedLines(lines) : new Set<number>();
  const found: Offence[] = [];
  lines.forEach((text, i) => {
    const line = i + 1;
    const add = (problem: string) => found.push({ file, line, problem, text: text.trim() });

    for (const [, path] of text.matchAll(MACHINE_PATH)) add(`names a path outside the repository (${path})`);

    // A code sample in Markdown is read where it would live (docs/packs.md's haiku pack), not here.
    if (!fenced.has(line)) {
      for (const [, path = ""] of text.matchAll(CLIMBING_PATH)) {
        if (resolveFrom(file, path) === undefined) add(`"${path}" leads outside the repository`);
      }
    }

    for (const [, prefix = ""] of text.matchAll(DESIGN_MENTION)) {
      const target = `${prefix}${DESIGN_NAME}`;
      const ok = prefix.endsWith("docs/") ? true : resolveFrom(file, target) === DESIGN_PATH;
      if (!ok) add(`"${target}" is not ${DESIGN_PATH}`);
    }

    if (markdown && !fenced.has(line)) {
      const targets = [...text.matchAll(MD_INLINE_LINK)].map((m) => m[1] ?? "");
      const reference = MD_REFERENCE_LINK.exec(text)?.[1];
      if (reference) targets.push(reference);
      for (const target of targets) {
        if (!target || NOT_A_FILE.test(target)) continue;
        const path = decodeURIComponent(target.replace(/[#?].*$/, ""));
        if (!path) continue;
        const resolved = resolveFrom(file, path);
        if (resolved === undefined) add(`link "${target}" leads outside the repository`);
        else if (!existsSync(join(ROOT, resolved)))
          add(`link "${target}" leads to ${resolved}, which does not exist`);
      }
    }
  });
  return found;
}

describe("references in the repository's files", () => {
  it("include the design document, in docs/", () => {
    expect(trackedFiles(), `${DESIGN_PATH} is not in the repository`).toContain(DESIGN_PATH);
  });

  it("point only inside the repository, at the design doc in docs/, and at files that exist", () => {
    const files = trackedFiles();
    expect(files.length).toBeGreaterThan(0);
    const offences = files.flatMap(offencesIn);
    const report = offences.map((o) => `${o.file}:${o.line}: ${o.problem}\n    ${o.text}`).join("\n");
    if (offences.length > 0) console.error(`${offences.length} bad reference(s):\n${report}`);
    expect(report, `${offences.length} bad reference(s), as file:line`).toBe("");
  });
});
