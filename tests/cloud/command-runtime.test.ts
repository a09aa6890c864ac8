import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CloudCommands } from "../../cli/cloud/commands.js";
import { openCommandRuntime } from "../../cli/runtime.js";
import { correctDraft } from "../../local/in-process.js";
import { PackRegistry } from "../../shared/registry.js";
import { jsonLines, ROOT, redraft } from "../helpers/run-cli.js";
import { type Deployment, startDeployment } from "./deployment.js";

/**
 * Issue 36, the cloud side: the read commands go through the same CommandRuntime interface as
 * offline (tests/cli/command-runtime.test.ts), here CloudCommands over the emulated stack
 * (tests/cloud/deployment.ts); the commands that exist only over a data folder say so in one line.
 */
let deployment: Deployment;
let runId: string;

beforeAll(async () => {
  deployment = await startDeployment();
  const draft = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "json-stuck.json"), "utf8"));
  const result = await correctDraft(
    { ...draft, id: "runtime-1" },
    { registry: new PackRegistry(), runs: deployment.runs, blobs: deployment.blobs, runId: "u-runtime-1" },
  );
  runId = result.runId;
}, 240_000);

afterAll(async () => {
  await deployment?.close();
});

describe("the cloud runtime", () => {
  it("is the one --stack names, and reads the stack's runs and batches through the interface", async () => {
    const runtime = await openCommandRuntime({ dataDir: ".redraft", stack: "redraft-test" });
    expect(runtime).toBeInstanceOf(CloudCommands);
    expect(await runtime.listBatches(10)).toEqual([]);
    const listed = await redraft(["runs", "--json", "--stack", "redraft-test"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(jsonLines(listed.stdout).map((r) => r.runId)).toEqual([runId]);
    // show reads the run through readRun: the same result as offline, with the console link a stack adds.
    const story = await runtime.readRun(runId.slice(0, 8), { evidence: true });
    expect(story.run.runId).toBe(runId);
    expect(story.evidence?.judgeRounds).toEqual([]);
    const shown = await redraft(["show", runId, "--json", "--stack", "redraft-test"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ runId, status: "needs_manual_review" });
    const batches = await redraft(["batches", "--stack", "redraft-test"]);
    expect(batches).toMatchObject({ code: 0, stdout: "No batches.\n" });
  });

  it("refuses watch and doctor in one line each (exit 2): they work on a data folder only", async () => {
    for (const args of [["doctor"], ["watch", "."]]) {
      const out = await redraft([...args, "--stack", "redraft-test"]);
      expect(out.code).toBe(2);
      expect(out.stdout).toBe("");
      expect(out.stderr).toMatch(/^redraft: \w+ .*not (on )?a deployed stack.*\n$/);
      expect(out.stderr.split("\n")).toHaveLength(2);
    }
  });
});
