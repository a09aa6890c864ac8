/**
 * `npm run readme:asl`: writes the Mermaid flowchart of the committed state machine
 * (contracts/state-machine.asl.json, which `npm run asl` generates from infra/) between the
 * `asl:mermaid` markers of every document that shows it (docs/operations.md and docs/DESIGN.md). The
 * flowchart test in tests/cli/cli.test.ts fails when either copy no longer matches the ASL.
 */
import { readFile, writeFile } from "node:fs/promises";
import { aslToMermaid } from "../local/mermaid.js";
import { loadAsl } from "../local/state-machine.js";

/** The documents holding the generated flowchart, relative to the repository root. */
const ASL_DIAGRAM_FILES = ["docs/operations.md", "docs/DESIGN.md"] as const;

const START = "<!-- asl:mermaid:start -->";
const END = "<!-- asl:mermaid:end -->";
const block = `${START}\n\`\`\`mermaid\n${aslToMermaid(await loadAsl())}\n\`\`\`\n`;

for (const file of ASL_DIAGRAM_FILES) {
  const text = await readFile(file, "utf8");
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  if (from < 0 || to < from) throw new Error(`${file} has no asl:mermaid markers`);
  const updated = text.slice(0, from) + block + text.slice(to);
  if (updated === text) {
    console.log(`${file}: architecture flowchart already matches contracts/state-machine.asl.json`);
    continue;
  }
  await writeFile(file, updated);
  console.log(`${file}: architecture flowchart updated from contracts/state-machine.asl.json`);
}
