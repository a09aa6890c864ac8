import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SubmissionEvent } from "../../contracts/events.js";
import type { ModelClient } from "../../shared/model/types.js";
import { newRunRecord } from "../../shared/store/types.js";
import { jsonLines, redraft } from "../helpers/run-cli.js";
import { type Deployment, startDeployment } from "./deployment.js";

/**
 * `redraft --stack S resubmit` of a failed run whose draft is larger than a `Draft Submitted` event
 * carries (200 KB): the draft came as an upload, so the new run is started by an event naming that
 * upload (`draftRef` under drafts/), never skipped, and still each failed run once.
 */

let deployment: Deployment;
const UPLOAD_KEY = "drafts/big-resubmit.json";
const FAILED = "u-big-failed";

/** A model whose every call fails as no model error does: a run that needs it ends failed, system_error. */
const broken: ModelClient = {
  provider: "test",
  model: "broken",
  complete: async () => {
    throw new TypeError("the model client broke");
  },
};

beforeAll(async () => {
  deployment = await startDeployment({ model: broken });
  // 260 KB of content the schema refuses, so a run needs the (broken) model and fails.
  const draft = {
    id: "big-resubmit",
    kind: "json",
    content: { notes: "x".repeat(260_000) },
    context: { schema: { type: "object", properties: { notes: { type: "number" } } } },
  };
  // The emulation runs the upload's draft inline (its record has no uploadRef): the failed run of an
  // upload as the deployed Validate records it is written here, naming the object.
  await deployment.blobs.put(UPLOAD_KEY, JSON.stringify(draft), "application/json");
  const at = new Date().toISOString();
  await deployment.runs.createRun({
    ...newRunRecord(FAILED, "big-resubmit", "json", at),
    uploadRef: UPLOAD_KEY,
  });
  await deployment.runs.setStatus(FAILED, "failed", at, {
    reason: "system_error",
    message: "the model client broke",
  });
}, 240_000);

afterAll(async () => {
  await deployment?.close();
});

const resubmit = () => redraft(["resubmit", "--json", "--reason", "system_error", "--stack", "redraft-test"]);

describe("redraft --stack resubmit of a draft too large for an event", () => {
  it("names the upload instead of carrying the draft, once however often it is called", async () => {
    const first = await resubmit();
    expect(first.code, first.stderr).toBe(0);
    // The upload's own emulated run (no uploadRef, see above) is skipped, said so; FAILED is resubmitted.
    const done = jsonLines(first.stdout).find((entry) => entry.runId === FAILED);
    expect(done?.outcome).toBe("resubmitted");
    expect(done?.runId).toBe(FAILED);

    const sent = deployment.bus
      .filter((entry) => entry.DetailType === SubmissionEvent.detailType)
      .map((entry) => JSON.parse(entry.Detail ?? "{}") as Record<string, unknown>);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.draft).toBeUndefined();
    expect((sent[0]?.draftRef as { key?: string } | undefined)?.key).toBe(UPLOAD_KEY);
    expect(sent[0]?.parentRunId).toBe(FAILED);
    // Each event entry stays far below EventBridge's 256 KB.
    expect(Buffer.byteLength(JSON.stringify(sent[0]))).toBeLessThan(1024);

    const rerun = await deployment.runs.getRun(String(done?.resubmittedAs));
    // The new run read the upload (same draft, same model): it got as far as the model again.
    expect(rerun?.parentRunId).toBe(FAILED);
    expect(rerun?.draftId).toBe("big-resubmit");
    expect(rerun?.reason).toBe("system_error");

    const second = await resubmit();
    expect(jsonLines(second.stdout).find((entry) => entry.runId === FAILED)?.outcome).toBe("already");
    expect(deployment.bus.filter((entry) => entry.DetailType === SubmissionEvent.detailType)).toHaveLength(1);
  }, 240_000);
});
