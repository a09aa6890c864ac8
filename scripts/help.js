/**
 * Preloaded (`--import ./scripts/help.js`) by the npm scripts that run a script of this repository:
 * `npm run <script> -- --help` (or `-h`) prints the script's own header comment, which says what it
 * does and how it is called, and exits 0, before the script parses its arguments or starts work.
 * One place for every script, so that none can forget it (tests/build/script-help.test.ts holds
 * every script in package.json to it).
 */
import { readFileSync } from "node:fs";

const asked = process.argv.slice(2).some((arg) => arg === "--help" || arg === "-h");
const script = process.argv[1];
if (asked && script) {
  const text = readFileSync(script, "utf8");
  const header = /\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? "";
  const lines = header
    .split("\n")
    .map((line) => line.replace(/^\s*\* ?/, ""))
    .join("\n")
    .trim();
  const name = process.env.npm_lifecycle_event;
  process.stdout.write(`Usage: npm run ${name ?? "<script>"} [-- <options>]\n\n${lines}\n`);
  process.exit(0);
}
