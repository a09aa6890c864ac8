import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";

/** The file every bench writes its section of; nothing in it is typed by hand between the markers. */
export const BENCHMARKS_MD = "docs/BENCHMARKS.md";

const startMarker = (bench: string) => `<!-- bench:${bench}:start -->`;
const endMarker = (bench: string) => `<!-- bench:${bench}:end -->`;

/**
 * The machine line every section carries: CPU model, logical cores, Node version, and the load average
 * when the bench started (on a shared machine, other jobs' load moves every timing).
 */
function machineLine(load: readonly number[] = loadavg()): string {
  const list = cpus();
  const model = list[0]?.model.trim() ?? "unknown CPU";
  return (
    `${model}, ${list.length} logical cores, Node ${process.version} (${process.platform}/${process.arch}); ` +
    `load average ${load.map((x) => x.toFixed(1)).join(" ")} at the start`
  );
}

/**
 * `git rev-parse --short HEAD` in backticks, or "unknown" outside a checkout; says so when the working tree has
 * changes the commit does not hold (what ran is then the commit plus those changes).
 */
export function commitId(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" })
      .split("\n")
      .filter((line) => line.trim() !== "" && !line.endsWith(BENCHMARKS_MD)).length;
    return dirty > 0 ? `\`${head}\` plus ${dirty} files changed in the working tree` : `\`${head}\``;
  } catch {
    return "unknown";
  }
}

/**
 * What a bench keeps for its section from its start: the date, the load average and the commit, and
 * `say`, which prints a line of its result and keeps it for --write-docs.
 */
export function sectionRecorder(): {
  date: Date;
  load: number[];
  commit: string;
  output: string[];
  say: (text: string) => void;
} {
  const output: string[] = [];
  return {
    date: new Date(),
    load: loadavg(),
    commit: commitId(),
    output,
    say: (text) => {
      console.log(text);
      output.push(text);
    },
  };
}

export interface SectionInput {
  bench: string;
  /** The command that produced `output`, as a reader would type it. */
  command: string;
  /** The bench's stdout, verbatim. */
  output: string;
  date?: Date;
  /** The 1, 5 and 15 minute load averages when the bench started. */
  load?: readonly number[];
  /** The commit when the bench started ({@link commitId}). */
  commit?: string;
}

/** One bench's section: its provenance (command, date, commit, machine) and its output verbatim. */
function renderSection({
  bench,
  command,
  output,
  date = new Date(),
  load,
  commit = commitId(),
}: SectionInput): string {
  return [
    startMarker(bench),
    "",
    `- command: \`${command}\``,
    `- date: ${date.toISOString().slice(0, 16).replace("T", " ")} UTC`,
    `- commit: ${commit}`,
    `- machine: ${machineLine(load)}`,
    "",
    "```text",
    output.trimEnd(),
    "```",
    "",
    endMarker(bench),
  ].join("\n");
}

/**
 * Replaces the text between a bench's markers. A missing marker pair is an error, not an append:
 * the document's layout (and its prose without figures) is written by hand, the figures never.
 */
function replaceSection(doc: string, bench: string, section: string): string {
  const start = doc.indexOf(startMarker(bench));
  const end = doc.indexOf(endMarker(bench));
  if (start < 0 || end < start)
    throw new Error(`${BENCHMARKS_MD} has no ${startMarker(bench)} … ${endMarker(bench)} pair`);
  return doc.slice(0, start) + section + doc.slice(end + endMarker(bench).length);
}

export function writeSections(sections: readonly SectionInput[], file = BENCHMARKS_MD): void {
  let doc = readFileSync(file, "utf8");
  for (const s of sections) doc = replaceSection(doc, s.bench, renderSection(s));
  writeFileSync(file, doc);
}
