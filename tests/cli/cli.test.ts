import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { redraft as inProcess, spawnCli, stopChild } from "../helpers/run-cli.js";

const ROOT = join(import.meta.dirname, "..", "..");
const CASSETTE = join(ROOT, "examples", "example.cassette.json");
let work: string;

/**
 * Runs the real command line in a child process, as a person would: for what only a process shows
 * (stdout holding result lines and nothing else, the runs a process leaves behind for the next).
 */
const spawned = (args: string[]) => spawnCli(args).done;

/**
 * The same command line called in this process (`main(argv)`, output captured): each call opens
 * the data dir afresh and closes it, as a new process would, without a process's start-up cost.
 */
const redraft = (args: string[]) => inProcess(args);

const lines = (out: string) =>
  out
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-cli-"));
  // As in the spawned commands: no model key from the environment chooses a live model.
  vi.stubEnv("ANTHROPIC_API_KEY", "");
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await rm(work, { recursive: true, force: true });
});

describe("redraft run on the examples", () => {
  let results: Record<string, unknown>[];
  const dataDir = () => join(work, "examples-data");

  beforeAll(async () => {
    // The one run through the real executable: what the later commands read is what a process left.
    const out = await spawned([
      "run",
      "examples/drafts/",
      "--json",
      "--llm",
      `replay:${CASSETTE}`,
      "--data-dir",
      dataDir(),
    ]);
    expect(out.code).toBe(0);
    results = lines(out.stdout);
  }, 180_000);

  it("prints exactly one JSON run result per draft per line, and nothing else on stdout", () => {
    expect(results).toHaveLength(8);
    for (const r of results) {
      expect(Object.keys(r)).toEqual(
        expect.arrayContaining([
          "draftId",
          "runId",
          "status",
          "reason",
          "attempts",
          "initialViolations",
          "finalViolations",
          "violationsPerAttempt",
          "circuitBreakerRules",
          "tokens",
          "costUsd",
          "finalDraft",
        ]),
      );
    }
  });

  it("shows every outcome: validated at once, corrected, repaired, circuit breaker, stuck, two loops", () => {
    const byId = Object.fromEntries(results.map((r) => [r.draftId, r]));
    expect(byId["mcq-clean"]).toMatchObject({ status: "validated", attempts: 0 });
    expect(byId["mcq-seed004"]).toMatchObject({
      status: "validated",
      attempts: 2,
      violationsPerAttempt: [3, 1, 0],
    });
    expect(byId["paper-repaired"]).toMatchObject({ status: "validated", attempts: 0 });
    expect(byId["paper-corrected"]).toMatchObject({ status: "validated", attempts: 1 });
    expect(byId["mcq-breaker"]).toMatchObject({
      status: "needs_manual_review",
      reason: "circuit_breaker",
      circuitBreakerRules: ["mcq_no_all_none_of_above"],
    });
    expect(byId["paper-stuck"]).toMatchObject({ status: "needs_manual_review", reason: "stuck" });
    expect(byId["code-add"]).toMatchObject({ status: "validated", attempts: 2 });
    expect(byId["mcq-judged"]).toMatchObject({ status: "validated", attempts: 1, logicAttempts: 1 });
  });

  it("keeps runs across a restart: a later command lists them and shows a timeline with the execution path", async () => {
    const listed = await redraft(["runs", "--json", "--data-dir", dataDir()]);
    expect(listed.code).toBe(0);
    expect(
      lines(listed.stdout)
        .map((r) => r.runId)
        .sort(),
    ).toEqual(results.map((r) => r.runId).sort());
    const queue = await redraft([
      "runs",
      "--status",
      "needs_manual_review",
      "--json",
      "--data-dir",
      dataDir(),
    ]);
    expect(
      lines(queue.stdout)
        .map((r) => r.draftId)
        .sort(),
    ).toEqual(["mcq-breaker", "paper-stuck"]);
    const seed = results.find((r) => r.draftId === "mcq-seed004");
    const shown = await redraft(["show", String(seed?.runId), "--data-dir", dataDir()]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("Errors per attempt: 3 → 1 → 0");
    expect(shown.stdout).toContain("Attempt 2 (execution)");
    expect(shown.stdout).toContain("analysis: Option lengths varied too much");
    expect(shown.stdout).toMatch(/replace \/content\/stem/);
    expect(shown.stdout).toMatch(/→ CorrectExecution \(Task\)/);
    expect(shown.stdout).toMatch(/→ DraftValidated \(Succeed\)/);
  });

  it("records a reviewer's decisions: approve, and edit as a new linked run", async () => {
    const breaker = results.find((r) => r.draftId === "mcq-breaker");
    const stuck = results.find((r) => r.draftId === "paper-stuck");
    // An approval over the error violations left must say so; one said so may be taken back.
    const unsaid = await redraft(["review", String(breaker?.runId), "approve", "--data-dir", dataDir()]);
    expect(unsaid.code).toBe(2);
    expect(unsaid.stderr).toMatch(/still has error violations \(.+\).*--override/);
    const first = await redraft([
      "review",
      String(breaker?.runId),
      "approve",
      "--override",
      "--data-dir",
      dataDir(),
    ]);
    expect(first.code, first.stderr).toBe(0);
    const undone = await redraft(["review", String(breaker?.runId), "undo", "--data-dir", dataDir()]);
    expect(undone.code, undone.stderr).toBe(0);
    expect(undone.stdout).toContain("approval is taken back");
    const approved = await redraft([
      "review",
      String(breaker?.runId),
      "approve",
      "--override",
      "--note",
      "fine for a quiz",
      "--data-dir",
      dataDir(),
    ]);
    expect(approved.code).toBe(0);
    const edited = join(work, "edited.json");
    const fixed = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "json-stuck.json"), "utf8"));
    fixed.content = { title: "A real title", year: 2021, authors: [{ name: "D. Ng" }] };
    await writeFile(edited, JSON.stringify(fixed));
    const edit = await redraft([
      "review",
      String(stuck?.runId),
      "edit",
      edited,
      "--llm",
      "none",
      "--data-dir",
      dataDir(),
    ]);
    expect(edit.code).toBe(0);
    const all = lines((await redraft(["runs", "--json", "--data-dir", dataDir()])).stdout);
    expect(all.find((r) => r.runId === breaker?.runId)).toMatchObject({
      status: "validated",
      reason: "approved",
    });
    const child = all.find((r) => r.parentRunId === stuck?.runId);
    expect(child).toMatchObject({ status: "validated", draftId: "paper-stuck" });
    expect(all.find((r) => r.runId === stuck?.runId)).toMatchObject({
      status: "rejected",
      reason: "superseded_by_edit",
    });
  });
});

describe("limits on the command line", () => {
  it("--max-attempts overrides the correction limit for this run", async () => {
    const out = await redraft([
      "run",
      "examples/drafts/mcq-seed004.json",
      "--json",
      "--max-attempts",
      "1",
      "--llm",
      `replay:${CASSETTE}`,
      "--data-dir",
      join(work, "limit-data"),
    ]);
    expect(out.code).toBe(0);
    const [result] = lines(out.stdout);
    expect(result).toMatchObject({
      draftId: "mcq-seed004",
      status: "needs_manual_review",
      attempts: 1,
      violationsPerAttempt: [3, 1],
    });
  });
});

describe("bad input and usage", () => {
  it("rejects bad files with a line naming the file and the problem, and runs the others", async () => {
    const dir = join(work, "bad");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "a-broken.json"), "{ this is not json");
    await writeFile(join(dir, "b-not-a-draft.json"), JSON.stringify({ id: "nd", kind: "mcq" }));
    await writeFile(
      join(dir, "c-good.json"),
      await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"),
    );
    await writeFile(
      join(dir, "d-batch.jsonl"),
      `${JSON.stringify({ id: "j1", kind: "nope", content: {} })}\n{oops\n`,
    );
    const out = await redraft(["run", dir, "--json", "--llm", "none", "--data-dir", join(work, "bad-data")]);
    expect(out.code).toBe(0);
    const results = lines(out.stdout);
    expect(results).toHaveLength(5);
    const rejected = results.filter((r) => r.status === "rejected");
    expect(rejected).toHaveLength(4);
    expect(rejected.map((r) => r.message).join("\n")).toMatch(/a-broken\.json: draft is not valid JSON/);
    expect(rejected.map((r) => r.message).join("\n")).toMatch(/b-not-a-draft\.json: invalid draft: content/);
    expect(rejected.map((r) => r.message).join("\n")).toMatch(/d-batch\.jsonl:2: draft is not valid JSON/);
    expect(rejected.find((r) => String(r.message).includes("d-batch.jsonl:1"))).toMatchObject({
      reason: "unknown_kind",
    });
    expect(results.find((r) => r.draftId === "mcq-clean")).toMatchObject({ status: "validated" });
  });

  it("exits non-zero on a usage error", async () => {
    expect((await redraft(["run", join(work, "does-not-exist")])).code).toBe(2);
    expect((await redraft(["run", "examples/", "--max-attempts", "many"])).code).not.toBe(0);
    expect((await redraft(["frobnicate"])).code).not.toBe(0);
    expect((await redraft(["run", "examples/", "--llm", "gpt"])).code).toBe(2);
  });

  it("has --help with an example on every command", async () => {
    for (const cmd of [[], ["run"], ["runs"], ["show"], ["review"], ["asl"], ["watch"]]) {
      const out = await redraft([...cmd, "--help"]);
      expect(out.code).toBe(0);
      expect(out.stdout).toMatch(/Example/);
    }
  });
});

describe("redraft asl", () => {
  it("prints the synthesized definition and a Mermaid flowchart identical to docs/operations.md's and the design doc's", async () => {
    const asl = await redraft(["asl", "--data-dir", join(work, "asl-data")]);
    expect(JSON.parse(asl.stdout).StartAt).toBe("Validate");
    const mermaid = await redraft(["asl", "--mermaid", "--data-dir", join(work, "asl-data")]);
    // The documents `npm run readme:asl` (scripts/readme-asl.ts) writes the flowchart into.
    for (const file of ["docs/operations.md", "docs/DESIGN.md"]) {
      const text = await readFile(join(ROOT, file), "utf8");
      const block = /<!-- asl:mermaid:start -->\n```mermaid\n([\s\S]*?)\n```\n<!-- asl:mermaid:end -->/.exec(
        text,
      )?.[1];
      expect(block, `${file} has no generated Mermaid block: run \`npm run readme:asl\``).toBeDefined();
      expect(block?.trim(), `${file}'s flowchart is stale: run \`npm run readme:asl\``).toBe(
        mermaid.stdout.trim(),
      );
    }
  });
});

describe("concurrency", () => {
  it("runs 500 drafts with replayed answers, each accounted for exactly once in dynalite", async () => {
    const seed = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-seed004.json"), "utf8"));
    const cassette = JSON.parse(await readFile(CASSETTE, "utf8"));
    const seedAnswers = cassette.responses.filter((r: { draftId: string }) => r.draftId === "mcq-seed004");
    const drafts: string[] = [];
    const responses: unknown[] = [];
    for (let i = 0; i < 500; i++) {
      const id = `bulk-${i}`;
      drafts.push(JSON.stringify({ ...seed, id }));
      for (const a of seedAnswers) responses.push({ ...a, draftId: id });
    }
    const dir = join(work, "bulk");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "bulk.jsonl"), drafts.join("\n"));
    const cassetteFile = join(work, "bulk.cassette.json");
    await writeFile(cassetteFile, JSON.stringify({ version: 1, responses }));
    const dataDir = join(work, "bulk-data");
    const out = await redraft([
      "run",
      dir,
      "--json",
      "--concurrency",
      "8",
      "--llm",
      `replay:${cassetteFile}`,
      "--data-dir",
      dataDir,
    ]);
    expect(out.code).toBe(0);
    const results = lines(out.stdout);
    expect(results).toHaveLength(500);
    expect(new Set(results.map((r) => r.draftId)).size).toBe(500);
    expect(results.every((r) => r.status === "validated" && r.attempts === 2)).toBe(true);
    const runs = lines((await redraft(["runs", "--json", "--limit", "1000", "--data-dir", dataDir])).stdout);
    expect(runs).toHaveLength(500);
    expect(new Set(runs.map((r) => r.draftId)).size).toBe(500);
    expect(runs.every((r) => (r.tokens as { total: number }).total === 3600 + 1800)).toBe(true);
  }, 600_000);
});

describe("redraft watch", () => {
  it("runs a file dropped into the folder like an upload", async () => {
    const inbox = join(work, "inbox");
    await mkdir(inbox, { recursive: true });
    const { child, out, waitFor } = spawnCli([
      "watch",
      inbox,
      "--json",
      "--llm",
      "none",
      "--data-dir",
      join(work, "watch-data"),
    ]);
    try {
      await waitFor(() => out.stderr.includes("Watching"), 60_000);
      await writeFile(
        join(inbox, "q.json"),
        await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"),
      );
      await waitFor(() => out.stdout.includes("\n"), 60_000);
      expect(lines(out.stdout)[0]).toMatchObject({ draftId: "mcq-clean", status: "validated" });
    } finally {
      await stopChild(child);
    }
  }, 120_000);
});
