import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SELF } from "../../local/lock.js";
import { batchOwnerFile, finishInterrupted } from "../../local/recovery.js";
import { LocalRuntime } from "../../local/runtime.js";
import { blobKeys } from "../../shared/store/bucket-layout.js";
import { JUDGE_USAGE_KEY_BASE } from "../../shared/store/types.js";
import { makeAttempt, makeRun } from "../stores/fixtures.js";
import { synthesizedAsl } from "../workflow/harness.js";

/** A pid that certainly ran on this machine and has ended. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}

let dataDir: string;
const open = async () => LocalRuntime.open({ dataDir, asl: await synthesizedAsl(), retryDelayMs: 0 });

/** What a process killed mid-run leaves: its owner record, and a run it never finished. */
async function killedOwnerOf(runId: string, pid: number, draftRef?: string) {
  await mkdir(join(dataDir, "owners"), { recursive: true });
  await writeFile(
    join(dataDir, "owners", `${runId}.json`),
    JSON.stringify({ ...SELF, pid, runId, at: "2025-03-01T12:00:00.000Z", ...(draftRef && { draftRef }) }),
  );
}

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "redraft-recovery-"));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe("runs whose process is gone", () => {
  it("are finished as failed / interrupted by the next runtime, tokens the sum of the recorded attempts", async () => {
    const first = await open();
    // Attempt 1 was counted; attempt 2 was written just before the kill, its tokens never added.
    await first.runs.createRun(makeRun("r-killed", { status: "correcting", attempts: 1 }));
    await first.runs.putAttempt(
      makeAttempt("r-killed", 1, {
        tokens: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
        costUsd: 0.01,
      }),
    );
    await first.runs.addUsage(
      "r-killed",
      1,
      { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, total: 15 },
      0.01,
    );
    await first.runs.putAttempt(
      makeAttempt("r-killed", 2, {
        tokens: { input: 20, output: 7, cacheRead: 0, cacheWrite: 0 },
        costUsd: 0.02,
      }),
    );
    await first.runs.createRun(makeRun("r-live", { status: "correcting" }));
    await first.runs.createRun(makeRun("r-done", { status: "validated" }));
    await first.close();
    await killedOwnerOf("r-killed", deadPid());
    await killedOwnerOf("r-live", process.pid);

    const next = await open();
    try {
      expect(next.interrupted).toEqual(["r-killed"]);
      const run = await next.runs.getRun("r-killed");
      expect(run).toMatchObject({ status: "failed", reason: "interrupted" });
      expect(run?.message).toMatch(/^interrupted: redraft process \d+ ended while the run was correcting/);
      expect(run?.tokens).toMatchObject({ input: 30, output: 12, total: 42 });
      expect(run?.costUsd).toBeCloseTo(0.03);
      // A live owner's run is left alone; a finished one too.
      expect(await next.runs.getRun("r-live")).toMatchObject({ status: "correcting" });
      expect(await next.runs.getRun("r-done")).toMatchObject({ status: "validated" });
      expect(await readdir(join(dataDir, "owners"))).toEqual(["r-live.json"]);
    } finally {
      await next.close();
    }
  });

  it("counts a judge round whose report was written just before the kill, once, like an attempt", async () => {
    const first = await open();
    await first.runs.createRun(makeRun("r-judged", { status: "correcting", attempts: 0 }));
    const report = (round: number, input: number) =>
      JSON.stringify({ round, usage: { input, output: 3, cacheRead: 0, cacheWrite: 0 }, costUsd: 0.005 });
    // Round 1 was counted; round 2's report was written, its usage never added.
    await first.blobs.put(blobKeys.judgeReport("r-judged", 1), report(1, 40));
    await first.runs.addUsage(
      "r-judged",
      JUDGE_USAGE_KEY_BASE + 1,
      { input: 40, output: 3, cacheRead: 0, cacheWrite: 0, total: 43 },
      0.005,
    );
    await first.blobs.put(blobKeys.judgeReport("r-judged", 2), report(2, 60));
    await first.close();
    await killedOwnerOf("r-judged", deadPid());

    const next = await open();
    try {
      expect(next.interrupted).toEqual(["r-judged"]);
      const run = await next.runs.getRun("r-judged");
      expect(run).toMatchObject({ status: "failed", reason: "interrupted" });
      expect(run?.tokens).toMatchObject({ input: 100, output: 6, total: 106 });
      expect(run?.costUsd).toBeCloseTo(0.01);
    } finally {
      await next.close();
    }
  });

  it("a run parked for its batch's next round is left to the batch while the batch can be resumed, interrupted once it ended", async () => {
    const first = await open();
    await first.runs.createRun(makeRun("b-1-1", { status: "correcting" }));
    await first.runs.createRun(makeRun("b-2-1", { status: "correcting" }));
    await first.close();
    const dead = deadPid();
    // Both parked by a killed `redraft batch --pricing batch`; b-1 still has its owner file (resumable),
    // b-2 ended (its process removed the file) with the item still parked.
    await mkdir(join(dataDir, "owners"), { recursive: true });
    for (const [runId, batchId] of [
      ["b-1-1", "b-1"],
      ["b-2-1", "b-2"],
    ] as const) {
      await writeFile(
        join(dataDir, "owners", `${runId}.json`),
        JSON.stringify({ ...SELF, pid: dead, runId, at: "2025-03-01T12:00:00.000Z", batchId }),
      );
    }
    await mkdir(join(dataDir, "batch-owners"), { recursive: true });
    await writeFile(batchOwnerFile(dataDir, "b-1"), JSON.stringify({ ...SELF, pid: dead }));

    const next = await open();
    try {
      expect(next.interrupted).toEqual(["b-2-1"]);
      expect(await next.runs.getRun("b-1-1")).toMatchObject({ status: "correcting" });
      expect(await next.runs.getRun("b-2-1")).toMatchObject({ status: "failed", reason: "interrupted" });
      expect(await readdir(join(dataDir, "owners"))).toEqual(["b-1-1.json"]);
    } finally {
      await next.close();
    }
  });

  it("a run left unfinished with no owner record at all is interrupted too", async () => {
    const first = await open();
    await first.runs.createRun(makeRun("r-orphan", { status: "draft" }));
    await first.close();
    const next = await open();
    try {
      expect(next.interrupted).toEqual(["r-orphan"]);
      expect(await next.runs.getRun("r-orphan")).toMatchObject({ status: "failed", reason: "interrupted" });
    } finally {
      await next.close();
    }
  });

  it("an id with neither a run nor an owner record (a released duplicate admission) is left alone", async () => {
    const runtime = await open();
    try {
      expect(await finishInterrupted(runtime.deps, "r-never", undefined)).toBe(false);
      expect(await runtime.runs.getRun("r-never")).toBeUndefined();
    } finally {
      await runtime.close();
    }
  });

  it("a process killed before Validate registered its run leaves a failed run naming the draft", async () => {
    const first = await open();
    await first.blobs.put("drafts/local/x.json", JSON.stringify({ id: "q-early", kind: "mcq", content: {} }));
    await first.close();
    await killedOwnerOf("r-early", deadPid(), "drafts/local/x.json");
    const next = await open();
    try {
      expect(await next.runs.getRun("r-early")).toMatchObject({
        status: "failed",
        reason: "interrupted",
        draftId: "q-early",
      });
    } finally {
      await next.close();
    }
  });
});
