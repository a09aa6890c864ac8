import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetObjectTaggingCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cloudReview } from "../../cli/cloud/commands.js";
import { RETENTION_TAG } from "../../contracts/retention.js";
import type { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import type { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import { correctDraft } from "../../local/in-process.js";
import type { RunResult } from "../../shared/loop/run.js";
import { PackRegistry } from "../../shared/registry.js";
import type { RunRecord } from "../../shared/store/types.js";
import { jsonLines, ROOT, redraft } from "../helpers/run-cli.js";
import { BUCKET, BUS, type Deployment, startDeployment, TABLE } from "./deployment.js";

/**
 * The cloud mode end to end with no AWS account (tests/cloud/deployment.ts): the table as the
 * synthesized template defines it in dynalite, the bucket in s3rver, the services that only answer
 * through aws-sdk-client-mock, and the deployed state machine run in-process over the handlers' own
 * stores, so every record the commands read was written as the deployed handlers write it. This
 * stack has no model: drafts with errors go to review (`no_model`).
 */
let work: string;
let deployment: Deployment;
let runs: DynamoRunStore;
let blobs: S3BlobStore;
let stuck: Record<string, unknown>;
/** Runs awaiting review, by draft id. */
const queued = new Map<string, string>();
let validated: RunResult;

const cloudCli = (...args: string[]) => redraft([...args, "--stack", "redraft-test"]);

async function cloudRuns(...filter: string[]): Promise<RunRecord[]> {
  const out = await cloudCli("runs", "--json", ...filter);
  expect(out.code, out.stderr).toBe(0);
  return jsonLines(out.stdout) as unknown as RunRecord[];
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-cloud-"));
  deployment = await startDeployment();
  ({ runs, blobs } = deployment);

  // What the deployment holds before anyone looks: drafts left for review (no model configured in
  // this stack), and one validated.
  stuck = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "json-stuck.json"), "utf8"));
  for (let i = 0; i < 4; i++) {
    const draft = { ...stuck, id: `cloud-${i}` };
    const result = await correctDraft(draft, {
      registry: new PackRegistry(),
      runs,
      blobs,
      runId: `u-seed-${i}`,
    });
    expect(result.status).toBe("needs_manual_review");
    // λ outcome keeps a run awaiting review: its objects tagged `review`.
    await blobs.retain(`runs/${result.runId}/`, [], "review");
    queued.set(draft.id, result.runId);
  }
  const valid = {
    ...stuck,
    id: "cloud-valid",
    content: { title: "A paper", authors: [{ name: "Ada" }], year: 2020 },
  };
  validated = await correctDraft(valid, { registry: new PackRegistry(), runs, blobs, runId: "u-seed-valid" });
}, 240_000);

afterAll(async () => {
  await deployment?.close();
  await rm(work, { recursive: true, force: true });
});

describe("redraft --stack: reading a deployment", () => {
  it("runs lists the deployment's runs and its review queue, found through the stack's outputs", async () => {
    expect(validated.status).toBe("validated");
    const all = await cloudRuns();
    expect(all.map((r) => r.runId).sort()).toEqual([...queued.values(), validated.runId].sort());
    const queue = await cloudRuns("--status", "needs_manual_review");
    expect(queue.map((r) => r.runId).sort()).toEqual([...queued.values()].sort());
    expect(queue.every((r) => r.reason === "no_model")).toBe(true);
  });

  it("also takes the resources as flags, without a stack", async () => {
    const out = await redraft(["runs", "--json", "--table", TABLE, "--bucket", BUCKET]);
    expect(out.code, out.stderr).toBe(0);
    expect(jsonLines(out.stdout).length).toBeGreaterThanOrEqual(queued.size + 1);
    const bad = await redraft(["runs", "--table", TABLE]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/cloud mode needs --stack <name>, or --table and --bucket/);
  });

  it("show prints the offline timeline, the execution path from its history, and the console link", async () => {
    const runId = queued.get("cloud-0") as string;
    const out = await cloudCli("show", runId.slice(0, 8));
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain("needs_manual_review");
    expect(out.stdout).toMatch(
      /Execution path \(run .*\):\n.*→ Validate \(Task\)\n.*→ HasErrors\? \(Choice\)/,
    );
    expect(out.stdout).toContain(
      `https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/arn:aws:states:eu-west-1:123456789012:execution:redraft-test:${runId}`,
    );
    const json = JSON.parse((await cloudCli("show", runId, "--json")).stdout);
    expect(json).toMatchObject({ runId, status: "needs_manual_review", execution: { status: "SUCCEEDED" } });
    expect(json.consoleUrl).toMatch(/executions\/details\/arn:aws:states:/);
  });

  it("export writes the run's best draft from the bucket", async () => {
    const runId = queued.get("cloud-0") as string;
    const file = join(work, "best.json");
    const out = await cloudCli("export", runId, "--out", file);
    expect(out.code, out.stderr).toBe(0);
    const best = JSON.parse(await readFile(file, "utf8"));
    expect(best).toMatchObject({ id: "cloud-0", kind: "json" });
  });
});

describe("redraft --stack review", () => {
  it("two reviewers deciding one run at once: exactly one wins, every time", async () => {
    for (const draftId of ["cloud-1", "cloud-2"]) {
      const runId = queued.get(draftId) as string;
      const opts = { stack: "redraft-test" };
      const settled = await Promise.allSettled([
        cloudReview(opts, runId, "approve", { reviewer: "ada", override: true }),
        cloudReview(opts, runId, "reject", { reviewer: "bob" }),
      ]);
      const won = settled.filter((s) => s.status === "fulfilled");
      const lost = settled.filter((s): s is PromiseRejectedResult => s.status === "rejected");
      expect(won).toHaveLength(1);
      expect(lost[0]?.reason).toMatchObject({ name: "ReviewConflictError" });
      expect(String(lost[0]?.reason.message)).toMatch(/(ada|bob) decided (approve|reject) at/);
      const run = await runs.getRun(runId);
      expect(run?.status).toBe(run?.review?.decision === "approve" ? "validated" : "rejected");
      // One Draft Reviewed for the run: the loser put nothing on the bus.
      const reviewed = deployment.bus.filter(
        (e) => e.DetailType === "Draft Reviewed" && e.Detail?.includes(runId),
      );
      expect(reviewed).toHaveLength(1);
      expect(reviewed[0]).toMatchObject({ Source: "redraft", EventBusName: BUS });
    }
  });

  it("a decision puts the run's objects back under normal retention", async () => {
    const runId = queued.get("cloud-1") as string;
    const { TagSet } = await deployment.s3.client.send(
      new GetObjectTaggingCommand({ Bucket: BUCKET, Key: `runs/${runId}/original.json` }),
    );
    expect(TagSet).toEqual([{ Key: RETENTION_TAG, Value: "standard" }]);
    const untouched = queued.get("cloud-3") as string;
    const kept = await deployment.s3.client.send(
      new GetObjectTaggingCommand({ Bucket: BUCKET, Key: `runs/${untouched}/original.json` }),
    );
    expect(kept.TagSet).toEqual([{ Key: RETENTION_TAG, Value: "review" }]);
  });

  it("edit submits the edited draft as a Draft Submitted and links the new run to the old", async () => {
    const runId = queued.get("cloud-0") as string;
    const file = join(work, "edited.json");
    await writeFile(
      file,
      JSON.stringify({
        ...stuck,
        id: "cloud-0",
        content: { title: "Fixed", authors: [{ name: "Ada" }], year: 2021 },
      }),
    );
    const out = await cloudCli("review", runId, "edit", file, "--reviewer", "ada");
    expect(out.code, out.stderr).toBe(0);
    const newRunId = /submitted as run (\S+) \(validated\)/.exec(out.stdout)?.[1];
    expect(newRunId, out.stdout).toMatch(/^e-[0-9a-f]{64}$/);
    const [old, fresh] = await Promise.all([runs.getRun(runId), runs.getRun(newRunId as string)]);
    expect(old).toMatchObject({ status: "rejected", reason: "superseded_by_edit", review: { newRunId } });
    expect(fresh).toMatchObject({ status: "validated", parentRunId: runId });
    const again = await cloudCli("review", runId, "approve");
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/ada decided edit at/);
  });
});

describe("redraft --stack run", () => {
  const twoAndBad = async (name: string, prefix: string) => {
    const file = join(work, name);
    const good = {
      ...stuck,
      id: `${prefix}-ok`,
      content: { title: "T", authors: [{ name: "A" }], year: 1999 },
    };
    await writeFile(
      file,
      `${JSON.stringify(good)}\n${JSON.stringify({ ...stuck, id: `${prefix}-stuck` })}\n{ not json\n`,
    );
    return file;
  };
  const expectOutcomes = (lines: Record<string, unknown>[], prefix: string) => {
    // Sources are named as offline: the file as given, then its line.
    const byLine = Object.fromEntries(lines.map((l) => [String(l.source).replace(/^.*:/, "line "), l]));
    expect(lines).toHaveLength(3);
    expect(byLine["line 1"]).toMatchObject({ draftId: `${prefix}-ok`, status: "validated" });
    expect(byLine["line 2"]).toMatchObject({ draftId: `${prefix}-stuck`, status: "needs_manual_review" });
    expect(byLine["line 3"]).toMatchObject({ status: "rejected", reason: "invalid_input" });
  };

  it("uploads each draft under drafts/ and follows the run the upload's event starts, whichever spelling its key arrives in", async () => {
    const file = await twoAndBad("red flower + été.jsonl", "up");
    const out = await cloudCli("run", file, "--json");
    expect(out.code, out.stderr).toBe(0);
    const lines = jsonLines(out.stdout);
    expectOutcomes(lines, "up");
    for (const line of lines) expect(String(line.runId)).toMatch(/^u-[0-9a-f]{64}$/);
    // The objects are where a submitter may put them, named after the file and line.
    const [first] = await Promise.all([deployment.blobs.get("drafts/red flower + été-1.json")]);
    expect(JSON.parse(first)).toMatchObject({ id: "up-ok" });
  });

  it("--via event submits each draft as a Draft Submitted", async () => {
    const file = await twoAndBad("two.jsonl", "ev");
    const out = await cloudCli("run", file, "--json", "--via", "event");
    expect(out.code, out.stderr).toBe(0);
    const lines = jsonLines(out.stdout);
    expectOutcomes(lines, "ev");
    for (const line of lines) expect(String(line.runId)).toMatch(/^e-[0-9a-f]{64}$/);
    const submitted = deployment.bus.filter((e) => e.DetailType === "Draft Submitted");
    expect(submitted.map((e) => JSON.parse(e.Detail ?? "{}").draft?.id)).toEqual(
      expect.arrayContaining(["ev-ok", "ev-stuck"]),
    );
  });

  it("prints the results table as offline, and --no-wait prints only the run ids", async () => {
    const file = join(work, "one.json");
    await writeFile(file, JSON.stringify({ ...stuck, id: "cloud-no-wait" }));
    const table = await cloudCli("run", file, "--via", "event");
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/cloud-no-wait.*needs_manual_review/);
    await writeFile(file, JSON.stringify({ ...stuck, id: "cloud-no-wait", metadata: { again: 1 } }));
    const out = await cloudCli("run", file, "--no-wait");
    expect(out.code, out.stderr).toBe(0);
    const runId = /run (u-[0-9a-f]{64})$/m.exec(out.stdout)?.[1];
    expect(runId, `${out.stdout}|${out.stderr}`).toBeDefined();
    expect(out.stdout).not.toMatch(/needs_manual_review/);
  });
});

describe("redraft --stack batch", () => {
  it("uploads the manifest under batches/, follows the batch and prints its summary and items as offline", async () => {
    const file = join(work, "three.jsonl");
    const lines = ["b-one", "b-two"].map((id) => JSON.stringify({ ...stuck, id }));
    await writeFile(file, `${lines.join("\n")}\nnot json\n`);
    const out = await cloudCli("batch", file, "--json");
    expect(out.code, out.stderr).toBe(0);
    const printed = jsonLines(out.stdout);
    const summary = printed.at(-1);
    expect(summary).toMatchObject({ status: "completed", items: 3 });
    expect(summary?.counts).toMatchObject({ needs_manual_review: 2, rejected: 1 });
    expect(printed.slice(0, -1).map((l) => l.line)).toEqual([1, 2, 3]);
    const record = await deployment.batches.get(String(summary?.batchId));
    expect(record?.manifestRef.key).toBe("batches/three.jsonl");
    const text = await cloudCli("batch", file);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^Batch b-[0-9a-f]{24}: completed, 3 items \(batches\/three\.jsonl\)/);
  });

  it("--via event sends Batch Submitted for a manifest already under batches/, with its pricing", async () => {
    const out = await cloudCli("batch", "batches/three.jsonl", "--via", "event", "--json");
    expect(out.code, out.stderr).toBe(0);
    const summary = jsonLines(out.stdout).at(-1);
    expect(summary).toMatchObject({ status: "completed", items: 3 });
    const event = deployment.bus.find((e) => e.DetailType === "Batch Submitted");
    expect(JSON.parse(event?.Detail ?? "{}")).toEqual({
      manifestRef: { bucket: BUCKET, key: "batches/three.jsonl" },
    });
    const local = await cloudCli("batch", join(work, "three.jsonl"), "--via", "event");
    expect(local.code).toBe(2);
    expect(local.stderr).toMatch(/with --via event the manifest is a key already under batches\//);
  });
});
