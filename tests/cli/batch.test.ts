import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { batchesTable } from "../../cli/batch-view.js";
import { CASSETTE, jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

/** `redraft batch`, `batches` and `show <batchId>`, in this process, on a temp data folder. */

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "redraft-cli-batch-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function manifest(lines: string[], name = "m.jsonl"): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, lines.join("\n"));
  return file;
}

const example = async (name: string) =>
  JSON.stringify(JSON.parse(await readFile(join(ROOT, "examples", "drafts", name), "utf8")));

describe("redraft batch", () => {
  it("prints one run result per item with its line, then a summary that adds up", async () => {
    const lines = [
      await example("mcq-clean.json"),
      await example("mcq-seed004.json"),
      "{oops",
      await example("json-repaired.json"),
    ];
    const file = await manifest(lines);
    const out = await redraft([
      "batch",
      file,
      "--json",
      "--llm",
      `replay:${CASSETTE}`,
      "--data-dir",
      join(dir, "d"),
    ]);
    expect(out.code).toBe(0);
    const printed = jsonLines(out.stdout);
    expect(printed).toHaveLength(lines.length + 1);
    const items = printed.slice(0, -1);
    const summary = printed.at(-1) as ReturnType<typeof JSON.parse>;
    expect(items.map((i) => i.line)).toEqual([1, 2, 3, 4]);
    expect(items.every((i) => i.batchId === summary.batchId)).toBe(true);
    expect(items[1]).toMatchObject({ draftId: "mcq-seed004", status: "validated" });
    expect(items[2]).toMatchObject({ status: "rejected", reason: "invalid_input" });
    expect(Object.keys(summary).slice(0, 1)).toEqual(["batchId"]);
    expect(summary).toMatchObject({ status: "completed", items: 4 });
    for (const key of ["counts", "tokens", "costUsd", "resultsRef"]) expect(summary).toHaveProperty(key);
    const counted: Record<string, number> = {};
    for (const i of items) counted[String(i.status)] = (counted[String(i.status)] ?? 0) + 1;
    expect(summary.counts).toEqual(counted);
    expect(summary.tokens.input).toBe(items.reduce((n, i) => n + (i.tokens as { input: number }).input, 0));
  }, 120_000);

  it("runs nothing for the same manifest again: its result is reprinted with duplicate: true", async () => {
    const file = await manifest([await example("mcq-clean.json"), await example("json-repaired.json")]);
    const data = join(dir, "d");
    const first = jsonLines(
      (await redraft(["batch", file, "--json", "--llm", "none", "--data-dir", data])).stdout,
    );
    const again = await redraft(["batch", file, "--json", "--llm", "none", "--data-dir", data]);
    const second = jsonLines(again.stdout);
    expect(second).toHaveLength(first.length);
    expect(second.every((l) => l.duplicate === true)).toBe(true);
    expect(second.map((l) => l.runId ?? l.batchId)).toEqual(first.map((l) => l.runId ?? l.batchId));
    const runs = jsonLines((await redraft(["runs", "--json", "--data-dir", data])).stdout);
    expect(runs).toHaveLength(2);
    // --rerun is a new batch of the same manifest.
    const rerun = jsonLines(
      (await redraft(["batch", file, "--json", "--llm", "none", "--rerun", "--data-dir", data])).stdout,
    );
    expect(rerun.at(-1)?.batchId).not.toBe(first.at(-1)?.batchId);
  }, 120_000);

  it("lists batches and shows one with its items by status", async () => {
    const file = await manifest([await example("mcq-clean.json"), "not json"]);
    const data = join(dir, "d");
    const ran = jsonLines(
      (await redraft(["batch", file, "--json", "--llm", "none", "--data-dir", data])).stdout,
    );
    const batchId = String(ran.at(-1)?.batchId);
    const listed = await redraft(["batches", "--data-dir", data]);
    expect(listed.stdout).toContain(batchId);
    const listedJson = jsonLines((await redraft(["batches", "--json", "--data-dir", data])).stdout);
    expect(listedJson.map((b) => b.batchId)).toEqual([batchId]);
    const shown = await redraft(["show", batchId, "--data-dir", data]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/validated \(1\)/);
    expect(shown.stdout).toMatch(/rejected \(1\)/);
    // Its items by the short form tables print, which show takes back.
    const item = `${batchId.slice(0, 8)}-2`;
    expect(shown.stdout).toContain(` ${item} `);
    expect((await redraft(["show", item, "--json", "--data-dir", data])).stdout).toContain(
      `"runId":"${batchId}-2"`,
    );
    const json = JSON.parse((await redraft(["show", batchId, "--json", "--data-dir", data])).stdout);
    expect(json.itemsDetail).toHaveLength(2);
  }, 120_000);

  it("exits 1 for a batch that failed, saying why, and 2 for a manifest it cannot read", async () => {
    const empty = await manifest(["", "  "]);
    const failed = await redraft(["batch", empty, "--llm", "none", "--data-dir", join(dir, "d")]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain("ManifestRefused: the manifest holds no drafts");
    const missing = await redraft([
      "batch",
      join(dir, "nope.jsonl"),
      "--llm",
      "none",
      "--data-dir",
      join(dir, "d"),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("cannot read the manifest");
  }, 120_000);

  it("refuses --pricing batch without a model, before any item runs (exit 2)", async () => {
    const file = await manifest([await example("mcq-clean.json")]);
    const data = join(dir, "d");
    const refused = await redraft(["batch", file, "--pricing", "batch", "--llm", "none", "--data-dir", data]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--pricing batch needs a model");
    expect(refused.stdout).toBe("");
    const listed = await redraft(["batches", "--json", "--data-dir", data]);
    expect(listed.stdout.trim()).toBe("");
  }, 120_000);

  it("refuses a JSON array manifest broken as a whole, naming the line, and runs none of it", async () => {
    const file = join(dir, "broken.json");
    await writeFile(file, `[\n${await example("mcq-clean.json")},\n{"id":"b","kind":"mcq",\n{"id":"c"}\n]\n`);
    const out = await redraft(["batch", file, "--llm", "none", "--json", "--data-dir", join(dir, "d")]);
    expect(out.code).toBe(1);
    const summary = jsonLines(out.stdout).at(-1);
    expect(summary).toMatchObject({ status: "failed", items: 0, error: { error: "ManifestRefused" } });
    expect((summary as { error: { cause: string } }).error.cause).toMatch(
      /^the manifest starts with "\[" but is not a well-formed JSON array \(.* on line 4\)/,
    );
  }, 120_000);

  it("lists every status a batch's counts hold, those a failed batch left unfinished too", () => {
    const table = batchesTable(
      [
        {
          batchId: "b-1",
          status: "failed",
          manifestRef: { bucket: "redraft-local", key: "batches/m.jsonl" },
          startedAt: "2026-11-24T00:00:00.000Z",
          items: 8,
          counts: { validated: 2, correcting: 5, draft: 1 },
        },
      ],
      { color: false, width: 200 },
    );
    expect(table).toContain("validated 2 · correcting 5 · draft 1");
  });
});
