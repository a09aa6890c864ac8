import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveRun } from "../../app/run-id.js";
import { MemoryRunStore } from "../../shared/store/memory.js";
import { CASSETTE, jsonLines, redraft } from "../helpers/run-cli.js";
import { makeRun } from "../stores/fixtures.js";

let work: string;
let dataDir: string;
/** The run id of each example draft, by draft id. */
const runOf: Record<string, string> = {};

const show = (runId: string) => redraft(["--data-dir", dataDir, "show", runId]);

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-show-"));
  dataDir = join(work, "data");
  const out = await redraft([
    "--data-dir",
    dataDir,
    "--llm",
    `replay:${CASSETTE}`,
    "run",
    "examples/drafts",
    "--json",
  ]);
  expect(out.code).toBe(0);
  for (const r of jsonLines(out.stdout)) runOf[String(r.draftId)] = String(r.runId);
}, 180_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("redraft show", () => {
  it("shows the repairs made before the first validation, each as path, action, before → after", async () => {
    const { code, stdout } = await show(String(runOf["paper-repaired"]));
    expect(code).toBe(0);
    const attempt0 = stdout.slice(
      stdout.indexOf("Attempt 0 (initial validation):"),
      stdout.indexOf("Final violations:"),
    );
    expect(attempt0).toContain("repaired:");
    expect(attempt0).toContain('remove /pmid: "" → (removed)');
    expect(attempt0).toContain('remove /notes: "extracted by the model" → (removed)');
  });

  it("shows the judge's findings with confidence and whether they block, and its tokens apart", async () => {
    const { stdout } = await show(String(runOf["mcq-judged"]));
    expect(stdout).toMatch(/Judge round 1 .*1 blocking finding/);
    expect(stdout).toMatch(/error\s+intent_mismatch \/vignette \(confidence 0\.9, blocking\)/);
    expect(stdout).toMatch(/persona_student .*\(confidence 0\.6, not blocking\)/);
    expect(stdout).toMatch(/^ {2}correct: 1700 tokens .*\$/m);
    expect(stdout).toMatch(/^ {2}judge: 5700 tokens /m);
    // The judge round comes before the logic correction it caused.
    expect(stdout.indexOf("Judge round 1")).toBeLessThan(stdout.indexOf("Attempt 1 (logic)"));
  });

  it("shows a diff as old → new, cutting long values with an ellipsis", async () => {
    const { stdout } = await show(String(runOf["mcq-judged"]));
    const line = stdout.split("\n").find((l) => l.includes("replace /content/vignette:"));
    expect(line).toMatch(/replace \/content\/vignette: …[^→]+ → ….+…$/);
    const seed = await show(String(runOf["mcq-seed004"]));
    expect(seed.stdout).toContain('replace /content/options/1/text: "PCI" → "PCI alone"');
  });

  it("counts new errors apart from the remaining ones", async () => {
    const { stdout } = await show(String(runOf["mcq-seed004"]));
    expect(stdout).toContain("resolved 3, remaining 0, new 1");
    const breaker = await show(String(runOf["mcq-breaker"]));
    expect(breaker.stdout).toMatch(/resolved \d+, remaining \d+, new [1-9]/);
  });

  it("heads the execution path with the run's status and reason, not the execution's", async () => {
    const { stdout } = await show(String(runOf["paper-stuck"]));
    expect(stdout).toContain("Status: needs_manual_review (stuck)");
    expect(stdout).toContain("Execution path (run needs_manual_review (stuck)):");
    expect(stdout).not.toContain("SUCCEEDED");
  });

  it("prices the example answers by the model the cassette names, never $0.00 for spent tokens", async () => {
    const { stdout } = await show(String(runOf["mcq-seed004"]));
    expect(stdout).toMatch(/^Tokens: 5400; cost \$0\.0\d/m);
    expect(stdout).toContain("model claude-sonnet-5-5");
    const table = await redraft(["--data-dir", dataDir, "runs"]);
    expect(table.stdout).not.toMatch(/unpriced/);
  });

  it("accepts a unique prefix of a run id, and names a prefix that matches nothing in one line", async () => {
    const id = String(runOf["mcq-seed004"]);
    const { code, stdout } = await show(id.slice(0, 8));
    expect(code).toBe(0);
    expect(stdout).toContain(`Run ${id}`);
    const none = await show("zzzz");
    expect(none.code).toBe(2);
    expect(none.stderr.trim().split("\n")).toEqual([`redraft: no run zzzz in ${dataDir}`]);
  });
});

describe("run ids by prefix", () => {
  it("is a usage error listing the candidates when a prefix is ambiguous", async () => {
    const runs = new MemoryRunStore();
    for (const id of ["abc123", "abd456", "bcd789"]) await runs.createRun(makeRun(id));
    await expect(resolveRun(runs, "ab", "here")).rejects.toMatchObject({
      name: "UsageError",
      message: expect.stringMatching(/ambiguous: 2 runs start with it: .*abc123.*abd456/),
    });
    expect((await resolveRun(runs, "abc", "here")).runId).toBe("abc123");
    expect((await resolveRun(runs, "bcd789", "here")).runId).toBe("bcd789");
    await expect(resolveRun(runs, "x", "here")).rejects.toThrow("no run x in here");
  });

  it("exits 2 with one line on an ambiguous prefix", async () => {
    // 17 runs or more over 16 hex digits: two of them share a first character.
    const crowded = join(work, "crowded");
    const clean = JSON.parse(await readFile("examples/drafts/mcq-clean.json", "utf8")) as object;
    const batch = Array.from({ length: 17 }, (_, i) => JSON.stringify({ ...clean, id: `clean-${i}` }));
    await writeFile(join(work, "crowd.jsonl"), `${batch.join("\n")}\n`);
    const ran = await redraft([
      "--data-dir",
      crowded,
      "--llm",
      "none",
      "run",
      join(work, "crowd.jsonl"),
      "--json",
    ]);
    expect(ran.code).toBe(0);
    const ids = jsonLines((await redraft(["--data-dir", crowded, "runs", "--json"])).stdout).map((r) =>
      String(r.runId),
    );
    expect(ids.length).toBeGreaterThan(16);
    const shared = ids.map((id) => id.charAt(0)).find((c, i, all) => all.indexOf(c) !== i) ?? "";
    const { code, stderr } = await redraft(["--data-dir", crowded, "show", shared]);
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(new RegExp(`run id ${shared} is ambiguous: \\d+ runs start with it: ${shared}`));
  }, 120_000);
});

describe("redraft export", () => {
  it("writes the best draft as pretty JSON with a trailing newline, which review … edit accepts", async () => {
    const runId = String(runOf["paper-stuck"]);
    const file = join(work, "fixed.json");
    const out = await redraft(["--data-dir", dataDir, "export", runId.slice(0, 10), "--out", file]);
    expect(out.code).toBe(0);
    const text = await readFile(file, "utf8");
    expect(text.endsWith("}\n")).toBe(true);
    expect(text).toContain('\n  "id": "paper-stuck",');
    const shown = jsonLines((await redraft(["--data-dir", dataDir, "show", runId, "--json"])).stdout)[0];
    expect(JSON.parse(text)).toEqual(shown?.finalDraft);

    const stdout = await redraft(["--data-dir", dataDir, "export", runId]);
    expect(stdout.stdout).toBe(text);

    const edited = await redraft(["--data-dir", dataDir, "--llm", "none", "review", runId, "edit", file]);
    expect(edited.code).toBe(0);
    const children = jsonLines((await redraft(["--data-dir", dataDir, "runs", "--json"])).stdout).filter(
      (r) => r.parentRunId === runId,
    );
    expect(children).toHaveLength(1);
  });
});

describe("output", () => {
  const noEscapes = (text: string) => expect(text).not.toContain("\x1b[");
  const fits = (text: string) => {
    for (const line of text.split("\n")) expect([...line].length, line).toBeLessThanOrEqual(100);
  };

  it("has no colour and fits 100 columns when stdout is not a terminal", async () => {
    const runs = await redraft(["--data-dir", dataDir, "runs"]);
    noEscapes(runs.stdout);
    fits(runs.stdout);
    const run = await redraft([
      "--data-dir",
      `${work}/again`,
      "--llm",
      `replay:${CASSETTE}`,
      "run",
      "examples/drafts",
    ]);
    noEscapes(run.stdout);
    fits(run.stdout);
    const packs = await redraft(["packs"]);
    noEscapes(packs.stdout);
    fits(packs.stdout);
  }, 60_000);

  it("has no colour with NO_COLOR even on a terminal, and bold headers and coloured statuses otherwise", async () => {
    const saved = { NO_COLOR: process.env.NO_COLOR, FORCE_COLOR: process.env.FORCE_COLOR };
    try {
      delete process.env.FORCE_COLOR;
      process.env.NO_COLOR = "1";
      const plain = await redraft(["--data-dir", dataDir, "runs"], { tty: true });
      noEscapes(plain.stdout);
      fits(plain.stdout);
      delete process.env.NO_COLOR;
      const coloured = await redraft(["--data-dir", dataDir, "runs"], { tty: true });
      expect(coloured.stdout).toContain("\x1b[1m");
      // Red marks a refused or failed status, never a heading.
      for (const head of ["run", "draft", "status", "reason"])
        expect(coloured.stdout).not.toContain(`\x1b[31m${head}`);
      expect(coloured.stdout).toContain("\x1b[32mvalidated\x1b[39m");
      expect(coloured.stdout).toContain("\x1b[33mneeds_manual_review\x1b[39m");
      process.env.FORCE_COLOR = "1";
      expect((await redraft(["--data-dir", dataDir, "runs"])).stdout).toContain("\x1b[1m");
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });
});
