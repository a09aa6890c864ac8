#!/usr/bin/env node
// Runs the command line compiled to dist/ by `npm run build`, which `npm ci` runs (`prepare`), so a
// command starts without compiling TypeScript. Without dist/ (installed with --omit=dev or
// --ignore-scripts), or when a source it was built from has changed since (dist/build.json lists
// them), the TypeScript sources run through tsx instead: slower to start, never stale. The installed
// package carries dist/ and no sources: it always runs dist/.
import "./check-node.js";
import { existsSync, readFileSync, statSync } from "node:fs";

// A reader that stops early (`redraft runs --json | head`) closes the pipe; that is no failure to report.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

const ROOT = new URL("../", import.meta.url);

// Without --debug no stack is ever printed (main() says an error in one line), so errors are made
// without one: the state machine's JSONPath library returns each scalar it reads by throwing an
// error, several per state, and capturing their stacks cost more than the rest of its evaluation.
if (!process.argv.includes("--debug")) Error.stackTraceLimit = 0;

/** dist/cli/main.js when the build is complete and no source has changed since it started. */
function builtMain() {
  const built = new URL("dist/cli/main.js", ROOT).href;
  if (!existsSync(new URL("cli/main.ts", ROOT))) return built;
  try {
    const { startedAt, sources } = JSON.parse(readFileSync(new URL("dist/build.json", ROOT), "utf8"));
    for (const source of sources) if (statSync(new URL(source, ROOT)).mtimeMs >= startedAt) return undefined;
    return built;
  } catch {
    // No build, half a build, or a source gone since: the sources are the truth.
    return undefined;
  }
}

let entry = builtMain();
if (entry) {
  // --debug prints stacks: point them at the TypeScript lines.
  if (process.argv.includes("--debug")) process.setSourceMapsEnabled(true);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  entry = new URL("cli/main.ts", ROOT).href;
}
const { main } = await import(entry);
process.exitCode = await main(process.argv);
