import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SubmissionEvent } from "../../contracts/events.js";
import { correctDraft } from "../../local/in-process.js";
import type { ModelClient } from "../../shared/model/types.js";
import { PackRegistry } from "../../shared/registry.js";
import { jsonLines, ROOT, redraft } from "../helpers/run-cli.js";
import { type Deployment, startDeployment } from "./deployment.js";

/**
 * `redraft --stack S resubmit` against the emulated deployment (tests/cloud/deployment.ts: the
 * table in dynalite, the bucket in s3rver, the per-draft state machine run over the handlers' own
 * stores for each `Draft Submitted`): the stack's failed runs run again, each once however often
 * the command is called, each new run linked to the one it replaces.
 */

let deployment: Deployment;
const failedIds: string[] = [];

/** A model whose every call fails as no model error does: the run ends failed, system_error. */
const broken: ModelClient = {
  provider: "test",
  model: "broken",
  complete: async () => {
    throw new TypeError("the model client broke");
  },
};

beforeAll(async () => {
  deployment = await startDeployment();
  for (const [i, name] of ["mcq-breaker", "json-stuck"].entries()) {
    const draft = JSON.parse(await readFile(join(ROOT, "examples", "drafts", `${name}.json`), "utf8"));
    const result = await correctDraft(draft, {
      registry: new PackRegistry(),
      runs: deployment.runs,
      blobs: deployment.blobs,
      model: broken,
      runId: `e-failed-${i}`,
    });
    expect(result.status).toBe("failed");
    failedIds.push(result.runId);
  }
  // One that did not fail: never resubmitted.
  const clean = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"));
  const ok = await correctDraft(clean, {
    registry: new PackRegistry(),
    runs: deployment.runs,
    blobs: deployment.blobs,
    runId: "e-clean",
  });
  expect(ok.status).toBe("validated");
}, 240_000);

afterAll(async () => {
  await deployment?.close();
});

const cloudResubmit = (...args: string[]) =>
  redraft(["resubmit", "--json", ...args, "--stack", "redraft-test"]);
const submissions = () =>
  deployment.bus
    .filter((entry) => entry.DetailType === SubmissionEvent.detailType)
    .map((entry) => JSON.parse(entry.Detail ?? "{}") as { parentRunId?: string; draft?: { id?: string } });

describe("redraft --stack resubmit", () => {
  it("puts each failed run's draft on the bus once, however often it is called; the new run links to it", async () => {
    const reasons = await Promise.all(failedIds.map((id) => deployment.runs.getRun(id)));
    expect(reasons.map((r) => r?.reason)).toEqual(["system_error", "system_error"]);

    const none = await cloudResubmit("--reason", "model_error");
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe("");
    expect(submissions()).toHaveLength(0);

    const first = await cloudResubmit("--reason", "system_error");
    expect(first.code, first.stderr).toBe(0);
    const done = jsonLines(first.stdout);
    expect(done.map((d) => d.outcome)).toEqual(["resubmitted", "resubmitted"]);
    expect(done.map((d) => d.runId).sort()).toEqual([...failedIds].sort());
    for (const d of done) expect(String(d.resubmittedAs)).toMatch(/^e-[0-9a-f]{64}$/);

    const second = await cloudResubmit("--reason", "system_error");
    expect(second.code, second.stderr).toBe(0);
    const again = jsonLines(second.stdout);
    expect(again.map((d) => d.outcome)).toEqual(["already", "already"]);
    expect(again.map((d) => d.resubmittedAs).sort()).toEqual(done.map((d) => d.resubmittedAs).sort());

    // Each failed run's draft went on the bus once, with the run it replaces.
    const sent = submissions();
    expect(sent.map((s) => s.parentRunId).sort()).toEqual([...failedIds].sort());
    for (const d of done) {
      const run = await deployment.runs.getRun(String(d.resubmittedAs));
      expect(run?.parentRunId).toBe(d.runId);
      expect(run?.status).not.toBe("failed");
    }
    const third = await cloudResubmit();
    expect(jsonLines(third.stdout).map((d) => d.outcome)).toEqual(["already", "already"]);
    expect(submissions()).toHaveLength(2);
  }, 240_000);
});
