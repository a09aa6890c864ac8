import type { AslDefinition } from "../contracts/asl.js";
import { aslToMermaid } from "../local/mermaid.js";
import type { HistoryEvent } from "../local/runtime.js";

/** How one execution went through the state machine: entries per state and the transitions taken. */
export interface ExecutionPath {
  /** State name → how many times the execution entered it. */
  entered: Record<string, number>;
  /** `from → to` pairs in the order taken, `start` first. */
  transitions: [string, string][];
}

/** Reads the path out of an execution history (its StateEntered events, in order). */
export function executionPath(history: readonly HistoryEvent[], startAt: string): ExecutionPath {
  const entered: Record<string, number> = {};
  const transitions: [string, string][] = [];
  let previous = "";
  for (const event of history) {
    if (event.type !== "StateEntered" || !event.state) continue;
    entered[event.state] = (entered[event.state] ?? 0) + 1;
    transitions.push([previous || (event.state === startAt ? "start" : ""), event.state]);
    previous = event.state;
  }
  return { entered, transitions: transitions.filter(([from]) => from !== "") };
}

/** The same node ids local/mermaid.ts gives states. */
export const mermaidNodeId = (name: string) => name.replace(/[^A-Za-z0-9_]/g, "_");

/** Edge labels longer than this are cut: a Choice rule listing six error names would make the picture 3,000 px wide. */
const MAX_EDGE_LABEL = 48;

/** The edge with its condition cut to MAX_EDGE_LABEL characters (the ASL and the state's input hold it whole). */
function shortenLabel(line: string): string {
  return line.replace(/\|"([^"]*)"\|/, (whole, text: string) =>
    text.length > MAX_EDGE_LABEL ? `|"${text.slice(0, MAX_EDGE_LABEL - 1)}…"|` : whole,
  );
}

const EDGE = /^ {2}(\S+) (-->|-\.->)(?:\|.*\|)? (\S+)$/;
const NODE = /^ {2}([A-Za-z0-9_]+)([[({]+)"([^"]*)"([\])}]+)$/;

/** What the flowchart shows: the whole machine, or only what this run went through. */
export interface GraphScope {
  /**
   * `path`: only the states this run entered and the transitions it took, so a run of ten states
   * is drawn at a legible size instead of the whole machine shrunk to fit. `all`: every state.
   * @default "all"
   */
  scope?: "path" | "all";
  /**
   * In the `all` scope, whether Catch edges the run did not take are drawn (thin, grey, dashed);
   * they are a third of the machine's edges and bury the path when always shown. Catch edges the
   * run took are always drawn, as part of its path.
   * @default true
   */
  catches?: boolean;
}

/** Untaken Catch edges, drawn so the eye passes over them. */
const QUIET_EDGE = "stroke:#adb5bd,stroke-width:1px,stroke-dasharray:4 4,color:#868e96";

/**
 * The flowchart of `aslToMermaid` with this execution's path drawn on it: every state entered gets
 * the `visited` class and its entry count in its label, every transition taken a thick link.
 * Built on the generated flowchart rather than beside it, so the picture cannot drift from the ASL.
 * Without a path (a run still in flight) the scope is always the whole machine.
 */
export function highlightedMermaid(
  asl: AslDefinition,
  path: ExecutionPath | undefined,
  outcomes?: { failedStates: readonly string[]; caughtStates: readonly string[] },
  view: GraphScope = {},
): string {
  const lines = aslToMermaid(asl)
    .split("\n")
    .map((line) => (EDGE.test(line) ? shortenLabel(line) : line));
  if (!path) return lines.join("\n");
  const onlyPath = view.scope === "path";
  const catches = view.catches ?? true;
  const counts = new Map(Object.entries(path.entered).map(([name, n]) => [mermaidNodeId(name), n]));
  const taken = new Set(path.transitions.map(([from, to]) => `${mermaidNodeId(from)}>${mermaidNodeId(to)}`));
  // A state with both a Next and a Catch to the same state (MarkValidated → AnnounceValidated) has
  // two edges for one transition: the Catch edge was taken only if an error of that state was caught.
  const caughtFrom = new Set(outcomes?.caughtStates.map(mermaidNodeId));
  const catchPairs = new Set(
    lines.flatMap((line) => {
      const edge = EDGE.exec(line);
      return edge && edge[2] === "-.->" ? [`${edge[1]}>${edge[3]}`] : [];
    }),
  );
  const links: number[] = [];
  const quiet: number[] = [];
  let link = 0;
  const out = lines.flatMap((line) => {
    const edge = EDGE.exec(line);
    if (edge) {
      const [, rawFrom = "", arrow, to = ""] = edge;
      const from = rawFrom.replace(/\(.*$/, "");
      const pair = `${from}>${to}`;
      const isCatch = arrow === "-.->";
      const isTaken =
        taken.has(pair) && (isCatch ? caughtFrom.has(from) : !(caughtFrom.has(from) && catchPairs.has(pair)));
      if (!isTaken && (onlyPath || (isCatch && !catches))) return [];
      if (isTaken) links.push(link);
      else if (isCatch) quiet.push(link);
      link += 1;
      return [line];
    }
    // A node declaration: `  Id("Label")`, `  Id{"Label"}`…: the label gains the entry count.
    const node = NODE.exec(line);
    if (!node) return [line];
    const n = counts.get(node[1] ?? "");
    if (n === undefined) return onlyPath ? [] : [line];
    // On the path alone a Choice is a hexagon, as tall as a task: a diamond around "NextStep? ×2"
    // is three times taller, and a column of them pushes the path out of the window.
    const [open, close] = onlyPath && node[2] === "{" ? ["{{", "}}"] : [node[2], node[4]];
    return [`  ${node[1]}${open}"${node[3]} ×${n}"${close}`];
  });
  // The console's colours: green for states passed, red for an error nothing caught, orange for an
  // error a Catch took. A node has one of the three, so no classDef has to win over another.
  const failed = new Set(outcomes?.failedStates.map(mermaidNodeId));
  const caught = new Set(
    [...(outcomes?.caughtStates ?? [])].map(mermaidNodeId).filter((id) => !failed.has(id)),
  );
  const passed = [...counts.keys()].filter((id) => !failed.has(id) && !caught.has(id));
  out.push("  classDef visited fill:#d3f9d8,stroke:#2b8a3e,stroke-width:3px,color:#1a1a1a");
  out.push("  classDef failed fill:#ffe3e3,stroke:#c92a2a,stroke-width:3px,color:#1a1a1a");
  out.push(
    "  classDef caught fill:#ffe8cc,stroke:#d9480f,stroke-width:3px,stroke-dasharray:6 3,color:#1a1a1a",
  );
  if (passed.length > 0) out.push(`  class ${passed.join(",")} visited`);
  if (failed.size > 0) out.push(`  class ${[...failed].join(",")} failed`);
  if (caught.size > 0) out.push(`  class ${[...caught].join(",")} caught`);
  if (links.length > 0) out.push(`  linkStyle ${links.join(",")} stroke:#2b8a3e,stroke-width:3px`);
  if (quiet.length > 0) out.push(`  linkStyle ${quiet.join(",")} ${QUIET_EDGE}`);
  return out.join("\n");
}
