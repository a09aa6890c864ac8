import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CASSETTE, jsonLines, ROOT, redraft, spawnCli } from "../helpers/run-cli.js";

/**
 * `redraft resubmit` locally: failed runs (real ones: a cassette with no answers fails every model
 * call, `model_error`) run again by filter, each failed run once however often the command is
 * called, also by two processes at once, the new run linked to the one it replaces.
 */

let work: string;
let empty: string;
const DRAFTS = ["mcq-breaker", "json-corrected", "mcq-judged"].map((d) =>
  join(ROOT, "examples", "drafts", `${d}.json`),
);

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-resubmit-"));
  empty = join(work, "empty.cassette.json");
  await writeFile(empty, JSON.stringify({ version: 1, responses: [] }));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

type Run = { runId: string; status: string; reason?: string; parentRunId?: string; draftId: string };

async function runsOf(dataDir: string): Promise<Run[]> {
  const out = await redraft(["--data-dir", dataDir, "runs", "--json", "--limit", "1000"]);
  expect(out.code, out.stderr).toBe(0);
  return jsonLines(out.stdout) as unknown as Run[];
}

/** A folder whose three drafts failed (model_error), and one draft validated without a model. */
async function failedFolder(name: string): Promise<{ dataDir: string; failed: Run[] }> {
  const dataDir = join(work, name);
  const out = await redraft(["--data-dir", dataDir, "run", ...DRAFTS, "--llm", `replay:${empty}`, "--json"]);
  expect(out.stderr).not.toMatch(/system failure/);
  const clean = await redraft([
    "--data-dir",
    dataDir,
    "run",
    join(ROOT, "examples", "drafts", "mcq-clean.json"),
    "--llm",
    "none",
  ]);
  expect(clean.code, clean.stderr).toBe(0);
  const failed = (await runsOf(dataDir)).filter((r) => r.status === "failed");
  expect(failed.map((r) => r.reason)).toEqual(["model_error", "model_error", "model_error"]);
  return { dataDir, failed };
}

const resubmit = (dataDir: string, ...args: string[]) =>
  redraft(["--data-dir", dataDir, "resubmit", "--llm", `replay:${CASSETTE}`, "--json", ...args]);

describe("redraft resubmit, locally", () => {
  it("runs each failed draft again once, however often it is called, linked to the run it replaces", async () => {
    const { dataDir, failed } = await failedFolder("twice");
    // Filters that select none of them start nothing.
    for (const filter of [
      ["--reason", "system_error"],
      ["--since", "2999-01-01T00:00:00Z"],
      ["--batch", "b-none"],
    ]) {
      const none = await resubmit(dataDir, ...filter);
      expect(none.code, none.stderr).toBe(0);
      expect(none.stdout, filter.join(" ")).toBe("");
    }
    expect(await runsOf(dataDir)).toHaveLength(4);

    const first = await resubmit(dataDir, "--reason", "model_error", "--since", "2000-01-01T00:00:00Z");
    expect(first.code, first.stderr).toBe(0);
    const done = jsonLines(first.stdout);
    expect(done.map((d) => d.outcome)).toEqual(["resubmitted", "resubmitted", "resubmitted"]);
    expect(done.map((d) => d.runId).sort()).toEqual(failed.map((r) => r.runId).sort());

    const second = await resubmit(dataDir);
    expect(second.code, second.stderr).toBe(0);
    const again = jsonLines(second.stdout);
    expect(again.map((d) => d.outcome)).toEqual(["already", "already", "already"]);
    expect(Object.fromEntries(again.map((d) => [d.runId, d.resubmittedAs]))).toEqual(
      Object.fromEntries(done.map((d) => [d.runId, d.resubmittedAs])),
    );

    const runs = await runsOf(dataDir);
    expect(runs).toHaveLength(7);
    for (const old of failed) {
      const replacing = runs.filter((r) => r.parentRunId === old.runId);
      expect(replacing, `runs replacing ${old.runId}`).toHaveLength(1);
      expect(replacing[0]?.draftId).toBe(old.draftId);
      expect(replacing[0]?.status).not.toBe("failed");
    }
    const shown = await redraft(["--data-dir", dataDir, "show", String(done[0]?.resubmittedAs)]);
    expect(shown.stdout).toContain(String(done[0]?.runId));
  }, 240_000);

  it("two resubmits at once start each failed draft once between them", async () => {
    const { dataDir, failed } = await failedFolder("concurrent");
    const args = ["--data-dir", dataDir, "resubmit", "--llm", `replay:${CASSETTE}`, "--json"];
    const [a, b] = await Promise.all([spawnCli(args).done, spawnCli(args).done]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const outcomes = [...jsonLines(a.stdout), ...jsonLines(b.stdout)];
    expect(outcomes.filter((o) => o.outcome === "resubmitted")).toHaveLength(failed.length);
    const runs = await runsOf(dataDir);
    for (const old of failed) expect(runs.filter((r) => r.parentRunId === old.runId)).toHaveLength(1);
  }, 240_000);

  it("--batch takes only that batch's failed items", async () => {
    const dataDir = join(work, "batch");
    const manifest = join(work, "batch.jsonl");
    const { readFile } = await import("node:fs/promises");
    const lines = await Promise.all(
      DRAFTS.map(async (file) => JSON.stringify(JSON.parse(await readFile(file, "utf8")))),
    );
    await writeFile(manifest, `${lines.join("\n")}\n`);
    const batch = await redraft([
      "--data-dir",
      dataDir,
      "batch",
      manifest,
      "--llm",
      `replay:${empty}`,
      "--json",
    ]);
    const batchId = String(jsonLines(batch.stdout).find((line) => typeof line.batchId === "string")?.batchId);
    expect(batchId).toMatch(/^b-/);
    // A failed run outside the batch, which --batch leaves alone.
    await redraft(["--data-dir", dataDir, "run", DRAFTS[0] as string, "--llm", `replay:${empty}`]);
    const failed = (await runsOf(dataDir)).filter((r) => r.status === "failed");
    const children = failed.filter((r) => r.runId.startsWith(`${batchId}-`));
    expect(children).toHaveLength(3);
    expect(failed.length).toBe(4);
    const out = await resubmit(dataDir, "--batch", batchId);
    expect(out.code, out.stderr).toBe(0);
    expect(
      jsonLines(out.stdout)
        .map((d) => d.runId)
        .sort(),
    ).toEqual(children.map((r) => r.runId).sort());
  }, 240_000);

  it("--since that is no time is a usage error in one line", async () => {
    const out = await redraft(["--data-dir", join(work, "usage"), "resubmit", "--since", "yesterday"]);
    expect(out.code).toBe(2);
    expect(out.stderr.trim().split("\n")).toHaveLength(1);
    expect(out.stderr).toMatch(/--since yesterday is not an ISO time/);
  });
});
