import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cloudViewer } from "../../cli/cloud/commands.js";
import { correctDraft } from "../../local/in-process.js";
import { PackRegistry } from "../../shared/registry.js";
import { CLOUD_WAIT_LOOKUPS } from "../../ui/api.js";
import { startViewer, TOKEN_HEADER, type Viewer } from "../../ui/server.js";
import { ROOT } from "../helpers/run-cli.js";
import { type Deployment, MODEL_QUEUES, STATE_MACHINE, startDeployment } from "./deployment.js";

/**
 * `redraft --stack … ui`: the viewer served over the emulated deployment (tests/cloud/deployment.ts),
 * asked over HTTP as the page asks: the runs list, a run's page with its execution history and
 * console link, and a review decided from the page.
 */
let deployment: Deployment;
let viewer: Viewer;
const runIds: string[] = [];

const api = async (path: string, init: RequestInit = {}) => {
  const res = await fetch(new URL(path, viewer.url), init);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

const executionOf = (runId: string) => `${STATE_MACHINE.replace(":stateMachine:", ":execution:")}:${runId}`;

beforeAll(async () => {
  deployment = await startDeployment();
  const stuck = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "json-stuck.json"), "utf8"));
  for (const id of ["ui-a", "ui-b"]) {
    const result = await correctDraft(
      { ...stuck, id },
      { registry: new PackRegistry(), runs: deployment.runs, blobs: deployment.blobs, runId: `e-${id}-run` },
    );
    runIds.push(result.runId);
  }
  viewer = await startViewer(await cloudViewer({ stack: "redraft-test" }, { port: 0, reviewer: "ada" }));
}, 240_000);

afterAll(async () => {
  await viewer?.close();
  await deployment?.close();
});

describe("redraft --stack ui", () => {
  it("lists the deployment's runs, each with its execution and console link", async () => {
    const { status, body } = await api("/api/runs");
    expect(status).toBe(200);
    const runs = body.runs as { runId: string; status: string; executionArn?: string; consoleUrl?: string }[];
    expect(runs.map((r) => r.runId).sort()).toEqual([...runIds].sort());
    for (const run of runs) {
      expect(run.status).toBe("needs_manual_review");
      expect(run.executionArn).toBe(executionOf(run.runId));
      expect(run.consoleUrl).toBe(
        `https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/${executionOf(run.runId)}`,
      );
    }
  });

  it("shows a run named by a short id: its record, attempts, execution history from Step Functions, and console link", async () => {
    const runId = runIds[0] as string;
    const { status, body } = await api(`/api/runs/${runId.slice(0, 6)}`);
    expect(status).toBe(200);
    expect(body.run).toMatchObject({
      runId,
      draftId: "ui-a",
      reason: "no_model",
      consoleUrl: expect.any(String),
    });
    expect(body.execution).toMatchObject({ status: "SUCCEEDED" });
    expect((body.graph as { entered: Record<string, unknown> }).entered).toHaveProperty("Validate");
    const missing = await api("/api/runs/e-nothing-here");
    expect(missing.status).toBe(404);
  });

  it("decides a review from the page: exactly once, announced on the deployment's bus", async () => {
    const runId = runIds[1] as string;
    const review = () =>
      api(`/api/runs/${runId}/review`, {
        method: "POST",
        headers: { "content-type": "application/json", [TOKEN_HEADER]: viewer.token },
        body: JSON.stringify({ decision: "approve", note: "fine", override: true }),
      });
    const first = await review();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ status: "validated" });
    await expect(deployment.runs.getRun(runId)).resolves.toMatchObject({
      status: "validated",
      reason: "approved",
      review: { reviewer: "ada", decision: "approve" },
    });
    const again = await review();
    expect(again.status).toBe(409);
    expect(String(again.body.error)).toMatch(/ada decided approve at/);
    expect(
      deployment.bus.filter((e) => e.DetailType === "Draft Reviewed" && e.Detail?.includes(runId)),
    ).toHaveLength(1);
  });
});

describe("redraft --stack ui: a deployed run waiting for a model slot", () => {
  /** A run under way, held at Judge's queued send since `since` (its history as Step Functions gives it). */
  async function heldRun(runId: string, since: Date) {
    const template = await deployment.runs.getRun(runIds[0] as string);
    if (!template) throw new Error("no run to copy");
    const { reason: _reason, ...rest } = template;
    expect(await deployment.runs.createRun({ ...rest, runId, status: "correcting" })).toBe(true);
    deployment.histories.set(runId, [
      { id: 1, type: "ExecutionStarted", timestamp: since, executionStartedEventDetails: {} },
      { id: 2, type: "TaskStateEntered", timestamp: since, stateEnteredEventDetails: { name: "Judge" } },
      {
        id: 3,
        type: "TaskScheduled",
        timestamp: since,
        taskScheduledEventDetails: {
          resourceType: "sqs",
          resource: "sendMessage.waitForTaskToken",
          region: "eu-west-1",
          parameters: JSON.stringify({ QueueUrl: MODEL_QUEUES.judge }),
        },
      },
    ]);
  }

  it("the list's row and the run's page say it waits, since when, and how deep its queue is", async () => {
    const since = new Date(Date.now() - 120_000);
    await heldRun("e-ui-held-run", since);
    deployment.queueAttributes.set(MODEL_QUEUES.judge, { visible: 17, notVisible: 3 });
    const queue = { name: "judge", depth: 20, waiting: 17, inFlight: 3 };

    const list = await api("/api/runs");
    expect(list.status).toBe(200);
    const rows = list.body.runs as { runId: string; waiting?: Record<string, unknown> }[];
    const held = rows.find((r) => r.runId === "e-ui-held-run");
    expect(held?.waiting).toMatchObject({ since: since.toISOString(), queue });
    expect(held?.waiting?.ageSeconds).toBeGreaterThanOrEqual(120);
    // No position for a stack's run: SQS gives none.
    expect(held?.waiting).not.toHaveProperty("position");
    // Ended runs are not asked about and do not wait (their canned history is a finished one).
    for (const row of rows.filter((r) => r.runId !== "e-ui-held-run")) expect(row.waiting).toBeUndefined();

    deployment.historyReads.length = 0;
    const page = await api("/api/runs/e-ui-held-run");
    expect(page.status).toBe(200);
    expect(page.body.waiting).toMatchObject({ since: since.toISOString(), queue });
    // The run's page reads its history once: the wait is told from that same read.
    expect(deployment.historyReads).toEqual(["e-ui-held-run"]);

    // The list is polled every second: a history read a moment ago is used again (its age counted
    // to now), while the queue's depth, not the scarce call, is read afresh.
    deployment.historyReads.length = 0;
    deployment.queueAttributes.set(MODEL_QUEUES.judge, { visible: 2, notVisible: 1 });
    const again = await api("/api/runs");
    const heldAgain = (again.body.runs as { runId: string; waiting?: Record<string, unknown> }[]).find(
      (r) => r.runId === "e-ui-held-run",
    );
    expect(heldAgain?.waiting).toMatchObject({
      since: since.toISOString(),
      queue: { name: "judge", depth: 3, waiting: 2, inFlight: 1 },
    });
    expect(deployment.historyReads).toEqual([]);

    // A reviewer policy from before GetQueueAttributes was granted: the wait is still said, its depth unknown.
    deployment.queueAttributes.set(MODEL_QUEUES.judge, "AccessDenied");
    const denied = await api("/api/runs/e-ui-held-run");
    expect(denied.status).toBe(200);
    expect(denied.body.waiting).toMatchObject({
      since: since.toISOString(),
      queue: { name: "judge", depth: null, unknown: expect.stringMatching(/may not read the queue/) },
    });
    deployment.queueAttributes.delete(MODEL_QUEUES.judge);
  });

  it(`asks Step Functions about the first ${CLOUD_WAIT_LOOKUPS} under-way runs of a page, not every one`, async () => {
    const since = new Date(Date.now() - 60_000);
    for (let i = 0; i < CLOUD_WAIT_LOOKUPS + 3; i++)
      await heldRun(`e-ui-many-${String(i).padStart(2, "0")}-run`, since);
    const { status, body } = await api("/api/runs?limit=100");
    expect(status).toBe(200);
    const rows = body.runs as { runId: string; status: string; waiting?: unknown }[];
    const underWay = rows.filter((r) => r.status === "correcting");
    expect(underWay.length).toBe(CLOUD_WAIT_LOOKUPS + 4);
    expect(underWay.filter((r) => r.waiting).length).toBe(CLOUD_WAIT_LOOKUPS);
  });
});
