import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

/**
 * Issue 37: every script in package.json answers `npm run <script> -- --help` with its usage and
 * exit 0, without doing its work (`npm run smoke -- --help` exited 1 with a stack trace). Scripts
 * of this repository print their header comment (scripts/help.js, preloaded); the tools' own
 * scripts (vitest, biome, the command line) print the tool's usage.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const scripts = Object.keys(
  (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> })
    .scripts,
);
const run = promisify(execFile);

describe("every npm script answers --help", () => {
  it("lists the scripts this test covers", () => {
    expect(scripts).toContain("smoke");
    expect(scripts.length).toBeGreaterThan(20);
  });

  it.concurrent.each(scripts)(
    "npm run %s -- --help",
    async (script) => {
      const { stdout } = await run("npm", ["run", "-s", script, "--", "--help"], {
        cwd: ROOT,
        // No model key: a script that ignored --help must not reach a live model.
        env: { ...process.env, ANTHROPIC_API_KEY: "" },
        timeout: 120_000,
      });
      expect(stdout).toMatch(/usage/i);
    },
    180_000,
  );
});
