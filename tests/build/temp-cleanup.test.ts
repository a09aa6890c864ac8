import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";

/**
 * Issue 37: the test suite removes what it creates. `npm test` left nine `cdk.out*` folders (7 MB)
 * in the temp folder on every run: each CDK app a test synthesizes without an outdir makes one.
 * Here a test file that synthesizes stacks runs under vitest as `npm test` runs it, with a temp
 * folder of its own, which must hold nothing of the run's afterwards (tools' own caches apart).
 */

const ROOT = join(import.meta.dirname, "..", "..");
/** Caches the tools keep under the temp folder for every run (tsx, Node's compile cache): not the tests'. */
const TOOL_CACHES = /^(tsx-\d+|node-compile-cache)$/;

let temp: string;
afterAll(async () => {
  if (temp) await rm(temp, { recursive: true, force: true });
});

it("a run that synthesizes stacks leaves nothing in the temp folder", async () => {
  temp = await mkdtemp(join(tmpdir(), "redraft-temp-check-"));
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temp };
  // The child is a run of its own: not this worker's CDK_OUTDIR, nor this run's temp root.
  delete env.CDK_OUTDIR;
  delete env.REDRAFT_TEST_TMP;
  await promisify(execFile)(
    process.execPath,
    ["node_modules/vitest/vitest.mjs", "run", "tests/infra/finalizer.test.ts"],
    { cwd: ROOT, env, timeout: 240_000 },
  );
  const left = (await readdir(temp)).filter((name) => !TOOL_CACHES.test(name));
  expect(left).toEqual([]);
}, 300_000);
