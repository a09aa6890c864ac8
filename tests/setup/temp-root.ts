import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * vitest.config.ts `globalSetup`: one folder under the temp folder for what the test workers make
 * and nothing else removes (each worker's CDK apps synthesize into a folder inside it:
 * tests/setup/shared-worker.ts), removed when the run ends. `npm test` used to leave nine
 * `cdk.out*` folders (7 MB) behind on every run. The workers are stopped, not exited, at the end of
 * a run, so only this process can clean up after them.
 */
export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), "redraft-test-"));
  process.env.REDRAFT_TEST_TMP = root;
  return () => rmSync(root, { recursive: true, force: true });
}
