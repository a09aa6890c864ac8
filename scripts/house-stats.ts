/**
 * The repository's layout in figures (issue 36's "before and after"): the number of folders holding
 * tracked `.ts`/`.js` sources, the cross-folder import edges (distinct folder pairs at the top level
 * and at the second level, e.g. `shared/batch → shared/model`, and the import statements that cross a
 * top-level folder), the cycles among folders (strongly connected components of the folder graph, at
 * both levels) and the ten largest files by lines. Test fixtures (tests/fixtures/) are left out.
 *
 *   npm run stats:house            a readable summary
 *   npm run stats:house -- --json  the same figures as JSON
 */
import { readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { imports, topOf, trackedSources } from "./import-graph.js";

const ROOT = join(import.meta.dirname, "..");
/** The edges the layers test forbids since issue 36 (docs/DESIGN.md §3). */
const FORBIDDEN = ["infra → functions", "local → infra", "ui → infra"];
const counted = (file: string) => !file.startsWith("tests/fixtures/");

/** A file's folder at the second level: `shared/batch` for shared/batch/x.ts, `shared` for shared/x.ts. */
function folderOf(path: string): string {
  const dir = posix.dirname(path);
  if (dir === ".") return path;
  return dir.split("/").slice(0, 2).join("/");
}

/** Strongly connected components with more than one node (Tarjan), each sorted, largest first. */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (node: string) => {
    indices.set(node, index);
    low.set(node, index);
    index++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next))
        low.set(node, Math.min(low.get(node) as number, indices.get(next) as number));
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) connect(node);
  return found.sort((a, b) => b.length - a.length || a.join().localeCompare(b.join()));
}

function graphOf(pairs: Iterable<[string, string]>): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const [from, to] of pairs) {
    if (!graph.has(from)) graph.set(from, new Set());
    if (!graph.has(to)) graph.set(to, new Set());
    (graph.get(from) as Set<string>).add(to);
  }
  return graph;
}

const files = trackedSources(ROOT).filter(counted);
const folders = new Set(files.map((f) => posix.dirname(f)).filter((d) => d !== "."));
const relative = imports(ROOT).filter((i) => counted(i.file) && i.target !== undefined && counted(i.target));
const topPairs = new Map<string, [string, string]>();
/** Import statements per top-level pair (`infra → functions`: 9 before issue 36). */
const statementsPerPair = new Map<string, number>();
const subPairs = new Map<string, [string, string]>();
let crossingStatements = 0;
for (const { file, target } of relative) {
  const to = target as string;
  if (topOf(file) !== topOf(to)) {
    crossingStatements++;
    const pair = `${topOf(file)} → ${topOf(to)}`;
    topPairs.set(pair, [topOf(file), topOf(to)]);
    statementsPerPair.set(pair, (statementsPerPair.get(pair) ?? 0) + 1);
  }
  if (folderOf(file) !== folderOf(to))
    subPairs.set(`${folderOf(file)} → ${folderOf(to)}`, [folderOf(file), folderOf(to)]);
}
const largest = files
  .map((file) => ({ file, lines: readFileSync(join(ROOT, file), "utf8").split("\n").length }))
  .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file))
  .slice(0, 10);

const stats = {
  files: files.length,
  folders: folders.size,
  edges: {
    topLevelPairs: topPairs.size,
    secondLevelPairs: subPairs.size,
    statementsCrossingTopLevel: crossingStatements,
    statementsPerTopLevelPair: Object.fromEntries(
      [...statementsPerPair].sort(([a], [b]) => a.localeCompare(b)),
    ),
  },
  cycles: {
    topLevel: cycles(graphOf(topPairs.values())),
    secondLevel: cycles(graphOf(subPairs.values())),
  },
  largest,
};

if (process.argv.includes("--json")) process.stdout.write(`${JSON.stringify(stats, null, 2)}\n`);
else {
  const out = [
    `tracked sources: ${stats.files} files in ${stats.folders} folders`,
    `cross-folder import edges: ${stats.edges.topLevelPairs} top-level folder pairs, ${stats.edges.secondLevelPairs} second-level folder pairs, ${stats.edges.statementsCrossingTopLevel} import statements crossing a top-level folder`,
    `import statements on the edges issue 36 forbids: ${FORBIDDEN.map((p) => `${p} ${statementsPerPair.get(p) ?? 0}`).join(", ")}`,
    `cycles among top-level folders: ${stats.cycles.topLevel.length}`,
    ...stats.cycles.topLevel.map((c) => `  ${c.join(" ↔ ")}`),
    `cycles among second-level folders: ${stats.cycles.secondLevel.length}`,
    ...stats.cycles.secondLevel.map((c) => `  ${c.join(" ↔ ")}`),
    "largest files (lines):",
    ...stats.largest.map((l) => `  ${String(l.lines).padStart(6)}  ${l.file}`),
  ];
  process.stdout.write(`${out.join("\n")}\n`);
}
