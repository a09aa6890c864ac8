import { join } from "node:path";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { afterEach, describe, expect, it } from "vitest";
import { runSmoke } from "../../scripts/smoke.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import { CASSETTE, ROOT } from "../helpers/run-cli.js";
import { BUCKET, type Deployment, startDeployment } from "./deployment.js";

/**
 * `npm run smoke -- --stack …` against the emulated stack (tests/cloud/deployment.ts): a stack that
 * answers from the example cassette agrees with the offline runs on every line, and a stack that
 * does not (no model) is caught. Either way nothing the smoke test created is left behind.
 */
let deployment: Deployment | undefined;

afterEach(async () => {
  await deployment?.close();
  deployment = undefined;
});

async function smoke(llm: string) {
  const lines: string[] = [];
  const code = await runSmoke({ stack: "redraft-test", llm, out: (line) => lines.push(line) });
  return { code, text: lines.join("\n") };
}

async function leftOver(d: Deployment) {
  const { Contents } = await d.s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET }));
  const runs = await d.runs.listRuns();
  return { objects: (Contents ?? []).map((o) => o.Key), runs: runs.map((r) => r.runId) };
}

describe("npm run smoke", () => {
  it("submits by upload and by event, a 3-line batch and a review, and finds every outcome as offline", async () => {
    deployment = await startDeployment({ model: ReplayModelClient.fromFile(CASSETTE) });
    const { code, text } = await smoke(`replay:${join(ROOT, "examples", "example.cassette.json")}`);
    expect(code, text).toBe(0);
    // Both triggers, the key with spaces, `+` and letters outside ASCII, the batch and the review.
    expect(text).toMatch(/validated as given\s*│\s*upload/);
    expect(text).toMatch(/validated after a repair\s*│\s*event/);
    expect(text).toMatch(/batch line 3/);
    expect(text).toMatch(/review approve.*validated \(approved\)/);
    expect(text).toMatch(/corrected by the model.*validated · [1-9]\d* tok/);
    expect(text).toMatch(/smoke: (\d+)\/\1 as offline$/);
    expect(deployment.started.some((id) => id.startsWith("u-"))).toBe(true);
    expect(deployment.started.some((id) => id.startsWith("e-"))).toBe(true);
    expect(deployment.started.some((id) => id.startsWith("b-"))).toBe(true);
    // The review was announced; then everything it created is gone.
    expect(deployment.bus.some((e) => e.DetailType === "Draft Reviewed")).toBe(true);
    await expect(leftOver(deployment)).resolves.toEqual({ objects: [], runs: [] });
  }, 240_000);

  it("exits 1 when the stack's outcomes differ from offline, and still removes what it created", async () => {
    // This stack has no model: the drafts the cassette corrects go to review instead.
    deployment = await startDeployment();
    const { code, text } = await smoke(`replay:${CASSETTE}`);
    expect(code, text).toBe(1);
    expect(text).toMatch(/corrected by the model.*needs_manual_review \(no_model\).*DIFFERENT/);
    expect(text).toMatch(/smoke: \d+\/\d+ as offline — DIFFERENCES$/);
    await expect(leftOver(deployment)).resolves.toEqual({ objects: [], runs: [] });
  }, 240_000);
});
