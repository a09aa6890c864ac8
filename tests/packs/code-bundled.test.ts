/**
 * The QuickJS sandbox as a Lambda runs it: bundled by esbuild with the deploy's options, with the
 * files a bundle reads from beside itself (the WebAssembly module and the guest harness) copied next
 * to it, as `redraftFunction` does. The other code-pack tests run the sources; this one proves the
 * harness still loads, and still decides verdicts, once the module that reads it is a bundle.
 */
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUNDLE_SIDE_FILES, esbuildOptions } from "../../infra/bundling.js";
import { DEFAULT_CODE_SETTINGS } from "../../shared/packs/code/code.js";
import type { QuickJSSandbox, SandboxLimits } from "../../shared/packs/code/sandbox.js";

const ROOT = join(import.meta.dirname, "..", "..");
// Inside the repository (ignored by git), like the bench's and test:lambda-node's bundles.
const DIR = join(ROOT, ".cache", "test-code-bundled", String(process.pid));
const HARNESS = join(DIR, "sandbox-harness.guest.js");
// The deployed defaults: a first session in a fresh module on a loaded machine can take a few hundred ms.
const limits: SandboxLimits = DEFAULT_CODE_SETTINGS;
const SOURCE = "function add(a, b) { return a + b; }";

let Sandbox: typeof QuickJSSandbox;

beforeAll(async () => {
  mkdirSync(DIR, { recursive: true });
  await build({
    ...esbuildOptions("none"),
    entryPoints: [join(ROOT, "shared/packs/code/sandbox.ts")],
    // No map: vitest would look for the sources it names.
    sourcemap: false,
    outfile: join(DIR, "index.mjs"),
    logLevel: "error",
  });
  for (const file of BUNDLE_SIDE_FILES) copyFileSync(join(ROOT, file), join(DIR, basename(file)));
  ({ QuickJSSandbox: Sandbox } = (await import(pathToFileURL(join(DIR, "index.mjs")).href)) as {
    QuickJSSandbox: typeof QuickJSSandbox;
  });
});

afterAll(() => rmSync(DIR, { recursive: true, force: true }));

describe("the code pack's sandbox, bundled", () => {
  it("passes a passing test and fails a failing one, with the harness's assert", async () => {
    const sandbox = new Sandbox();
    await sandbox.ready();
    const result = sandbox.runSuite(
      SOURCE,
      [
        { name: "passes", code: "assert.equal(add(2, 3), 5);" },
        { name: "fails", code: "assert.equal(add(2, 3), 6);" },
      ],
      limits,
    );
    expect(result.kind).toBe("ran");
    if (result.kind !== "ran") return;
    expect(result.outcomes.map((o) => [o.name, o.passed, o.failure?.reason])).toEqual([
      ["passes", true, undefined],
      ["fails", false, "error"],
    ]);
    expect(result.outcomes[1]?.failure?.error.name).toBe("AssertionError");
  });

  it("keeps a caught assertion failed: the harness records it before it throws", async () => {
    const sandbox = new Sandbox();
    await sandbox.ready();
    const result = sandbox.runSuite(
      SOURCE,
      [{ name: "swallows", code: "try { assert.equal(add(1, 1), 3); } catch (e) {}" }],
      limits,
    );
    expect(result.kind === "ran" && result.outcomes[0]?.passed).toBe(false);
  });

  it("reads the harness from beside the bundle, and says so when it is missing", async () => {
    rmSync(HARNESS);
    // A fresh module instance: the harness text is read once per module, at its first session.
    const fresh = (await import(`${pathToFileURL(join(DIR, "index.mjs")).href}?missing`)) as {
      QuickJSSandbox: typeof QuickJSSandbox;
    };
    const sandbox = new fresh.QuickJSSandbox();
    await sandbox.ready();
    expect(() => sandbox.runSuite(SOURCE, [{ name: "t", code: "assert.ok(true);" }], limits)).toThrow(
      /sandbox-harness\.guest\.js/,
    );
  });
});
