/**
 * `npm run typecheck` and `npm run lint`: each a few tools run one after the other, stopping at the
 * first that fails (its exit code is the script's).
 *
 *   npm run typecheck   tsc --noEmit, then tsc --noEmit -p tests-ui/tsconfig.json (the viewer's tests),
 *                       then tsc --noEmit -p ui/web/tsconfig.json (the viewer's browser modules)
 *   npm run lint        biome check ., then knip (unused files, exports, dependencies)
 *
 * A script of its own rather than `a && b` in package.json, so that `npm run typecheck -- --help`
 * answers with this usage instead of running the first tool and handing --help to the last.
 */
import { spawnSync } from "node:child_process";

const CHECKS = {
  typecheck: [
    ["tsc", "--noEmit"],
    ["tsc", "--noEmit", "-p", "tests-ui/tsconfig.json"],
    ["tsc", "--noEmit", "-p", "ui/web/tsconfig.json"],
  ],
  lint: [["biome", "check", "."], ["knip"]],
};

const [name, ...rest] = process.argv.slice(2);
const steps = CHECKS[name ?? ""];
const help = rest.includes("--help") || rest.includes("-h");
if (help || !steps) {
  const usage = Object.entries(CHECKS)
    .map(([check, commands]) => `  npm run ${check}: ${commands.map((c) => c.join(" ")).join(", then ")}`)
    .join("\n");
  process.stdout.write(`Usage: npm run typecheck | npm run lint\n\n${usage}\n`);
  process.exit(help ? 0 : 2);
}
for (const [tool, ...args] of steps) {
  // npm puts node_modules/.bin first on PATH for a script, so the tools are the project's own.
  const { status, error } = spawnSync(tool, [...args, ...rest], { stdio: "inherit" });
  if (error) throw error;
  if (status !== 0) process.exit(status ?? 1);
}
