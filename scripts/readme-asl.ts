/** `npm run readme:asl`: writes the Mermaid flowchart of the synthesized state machine into README.md. */
import { readFile, writeFile } from "node:fs/promises";
import { loadAsl } from "../local/asl-cache.js";
import { aslToMermaid } from "../local/mermaid.js";

const START = "<!-- asl:mermaid:start -->";
const END = "<!-- asl:mermaid:end -->";
const readme = await readFile("README.md", "utf8");
const from = readme.indexOf(START);
const to = readme.indexOf(END);
if (from < 0 || to < from) throw new Error("README.md has no asl:mermaid markers");
const block = `${START}\n\`\`\`mermaid\n${aslToMermaid(await loadAsl())}\n\`\`\`\n`;
await writeFile("README.md", readme.slice(0, from) + block + readme.slice(to));
console.log("README.md: architecture flowchart updated from the synthesized ASL");
