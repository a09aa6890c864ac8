import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectDrafts, splitFile } from "../../app/inputs.js";
import { redraft as runCli, spawnCli, stopChild } from "../helpers/run-cli.js";
import { synthesizedAsl } from "../workflow/harness.js";

const ROOT = join(import.meta.dirname, "..", "..");
const DEPTH = 10_000;
let work: string;
let clean: Record<string, unknown>;
let repaired: Record<string, unknown>;

const redraft = (args: string[]) => runCli(args);

const jsonLines = (text: string) =>
  text
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-inputs-"));
  clean = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"));
  repaired = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "json-repaired.json"), "utf8"));
  await synthesizedAsl();
}, 180_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("splitFile", () => {
  it("drops a byte-order mark from a file and from JSONL lines", () => {
    const text = JSON.stringify(clean);
    expect(splitFile("a.json", `\uFEFF${text}`)).toEqual([{ label: "a.json", body: text }]);
    expect(splitFile("a.json", `\uFEFF[${text}]`)).toEqual([{ label: "a.json[0]", body: text }]);
    expect(splitFile("a.jsonl", `\uFEFF${text}\n\uFEFF${text}\n`).map((s) => s.body)).toEqual([text, text]);
  });

  it("splits an array whose elements are null, a number or 10,000 deep, one source each, without parsing them", () => {
    const deep = `${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`;
    expect(splitFile("b.json", `[${JSON.stringify(clean)}, null, 7, ${deep}]`).map((s) => s.label)).toEqual([
      "b.json[0]",
      "b.json[1]",
      "b.json[2]",
      "b.json[3]",
    ]);
  });
});

describe("collectDrafts", () => {
  it("reports each symlink loop and each missing path once, as unreadable, and collects the rest", async () => {
    const dir = join(work, "loops");
    await mkdir(join(dir, "sub"), { recursive: true });
    await writeFile(join(dir, "good.json"), JSON.stringify(clean));
    await writeFile(join(dir, "sub", "inner.json"), JSON.stringify(repaired));
    await symlink("loop-b.json", join(dir, "loop-a.json"));
    await symlink("loop-a.json", join(dir, "loop-b.json"));
    await symlink("..", join(dir, "sub", "up"));
    await symlink(".", join(dir, "self"));
    await symlink("nowhere.json", join(dir, "dangling.json"));
    const sources = await collectDrafts([dir, join(work, "missing.json")], work);
    const rejected = sources.filter((s) => s.rejectWith);
    expect(sources.filter((s) => !s.rejectWith).map((s) => s.label)).toEqual([
      "loops/good.json",
      "loops/sub/inner.json",
    ]);
    expect(rejected.map((s) => [s.label, s.rejectWith?.reason])).toEqual([
      ["loops/dangling.json", "unreadable"],
      ["loops/loop-a.json", "unreadable"],
      ["loops/loop-b.json", "unreadable"],
      ["loops/self", "unreadable"],
      ["loops/sub/up", "unreadable"],
      ["missing.json", "unreadable"],
    ]);
    expect(rejected.map((s) => s.rejectWith?.message)).toEqual([
      "loops/dangling.json: broken symlink: its target does not exist",
      "loops/loop-a.json: symlink loop: too many levels of symbolic links",
      "loops/loop-b.json: symlink loop: too many levels of symbolic links",
      "loops/self: symlink loop: it leads back to a folder that contains it",
      "loops/sub/up: symlink loop: it leads back to a folder that contains it",
      "missing.json: no such file or directory",
    ]);
  });

  it("is a usage error only when no path given exists", async () => {
    await expect(collectDrafts([join(work, "nope"), join(work, "nope2")], work)).rejects.toThrow(
      /no such file or directory/,
    );
  });
});

describe("redraft run on a batch mixing every bad input with good drafts", () => {
  const dataDir = () => join(work, "mixed-data");
  let results: Record<string, unknown>[];
  let code: number;

  beforeAll(async () => {
    const dir = join(work, "mixed");
    await mkdir(join(dir, "folder"), { recursive: true });
    const deepArray = `${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`;
    const deepObject = `${'{"a":'.repeat(DEPTH)}1${"}".repeat(DEPTH)}`;
    // Good: three drafts, one of them behind a byte-order mark.
    await writeFile(join(dir, "good-1.json"), JSON.stringify(clean));
    await writeFile(join(dir, "good-2.json"), `\uFEFF${JSON.stringify(repaired)}`);
    // An array: a good draft, null and a number.
    await writeFile(join(dir, "array.json"), `[${JSON.stringify({ ...clean, id: "good-3" })}, null, 7]`);
    await writeFile(join(dir, "deep-array.json"), deepArray);
    await writeFile(join(dir, "deep-object.json"), deepObject);
    await writeFile(
      join(dir, "deep-content.json"),
      `{"id":"deep-content","kind":"mcq","content":${deepArray}}`,
    );
    // One id twice, different content, in one JSONL file.
    await writeFile(
      join(dir, "twins.jsonl"),
      `${JSON.stringify({ ...clean, id: "twin" })}\n\uFEFF${JSON.stringify({ ...clean, id: "twin", metadata: { copy: 2 } })}\n`,
    );
    await symlink("loop-b.json", join(dir, "loop-a.json"));
    await symlink("loop-a.json", join(dir, "loop-b.json"));
    await symlink("..", join(dir, "folder", "back"));
    const out = await redraft([
      "run",
      dir,
      join(work, "does-not-exist.json"),
      "--json",
      "--llm",
      "none",
      "--data-dir",
      dataDir(),
    ]);
    code = out.code;
    results = jsonLines(out.stdout);
  }, 300_000);

  it("exits 0 and validates every good draft", () => {
    expect(code).toBe(0);
    const good = results.filter((r) => r.status === "validated").map((r) => r.draftId);
    expect(good.sort()).toEqual(["good-3", "mcq-clean", "paper-repaired", "twin", "twin"]);
  });

  it("prints one rejected line per bad input, with its reason and a message naming the file", () => {
    const rejected = Object.fromEntries(
      results.filter((r) => r.status === "rejected").map((r) => [r.source, [r.reason, r.message]]),
    );
    const dir = join(work, "mixed");
    const rel = (name: string) => relative(process.cwd(), join(dir, name));
    expect(rejected).toEqual({
      [rel("array.json[1]")]: [
        "invalid_input",
        `${rel("array.json[1]")}: draft must be a JSON object, got null`,
      ],
      [rel("array.json[2]")]: [
        "invalid_input",
        `${rel("array.json[2]")}: draft must be a JSON object, got number`,
      ],
      // A file that is an array is a batch: its one element is the draft that is too deep.
      [rel("deep-array.json[0]")]: [
        "too_deep",
        expect.stringContaining("nested deeper than the limit of 100 levels"),
      ],
      [rel("deep-object.json")]: [
        "too_deep",
        expect.stringContaining("nested deeper than the limit of 100 levels"),
      ],
      [rel("deep-content.json")]: [
        "too_deep",
        expect.stringContaining("nested deeper than the limit of 100 levels"),
      ],
      [rel("loop-a.json")]: [
        "unreadable",
        `${rel("loop-a.json")}: symlink loop: too many levels of symbolic links`,
      ],
      [rel("loop-b.json")]: [
        "unreadable",
        `${rel("loop-b.json")}: symlink loop: too many levels of symbolic links`,
      ],
      [rel("folder/back")]: ["unreadable", expect.stringContaining("symlink loop")],
      [rel("../does-not-exist.json")]: ["unreadable", expect.stringContaining("no such file or directory")],
    });
    expect(results).toHaveLength(5 + 9);
    expect(results.find((r) => r.source === rel("deep-content.json"))?.draftId).toBe("deep-content");
  });

  it("says which line each of two same-id drafts came from", () => {
    const twins = results.filter((r) => r.draftId === "twin").map((r) => r.source);
    expect(twins.sort()).toEqual([
      expect.stringMatching(/twins\.jsonl:1$/),
      expect.stringMatching(/twins\.jsonl:2$/),
    ]);
  });

  it("keeps a run record for every rejected input: runs lists them and show opens them", async () => {
    const listed = jsonLines(
      (await redraft(["runs", "--json", "--limit", "100", "--data-dir", dataDir()])).stdout,
    );
    expect(listed.map((r) => r.runId).sort()).toEqual(results.map((r) => r.runId).sort());
    for (const r of results.filter((x) => x.status === "rejected")) {
      const shown = await redraft(["show", String(r.runId), "--data-dir", dataDir()]);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain(`Status: rejected (${String(r.reason)})`);
    }
  }, 120_000);

  it("shows the source in the table", async () => {
    const dir = join(work, "table");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "one.json"), JSON.stringify(clean));
    const out = await redraft([
      "run",
      dir,
      "--llm",
      "none",
      "--no-progress",
      "--data-dir",
      join(work, "table-data"),
    ]);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/source/);
    expect(out.stdout).toMatch(/one\.json/);
  }, 120_000);
});

describe("redraft watch on bad files", () => {
  it("rejects a too-deep file and a symlink loop, each on its own line, and runs the good file", async () => {
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
      await waitFor(() => out.stderr.includes("Watching"));
      await writeFile(join(inbox, "deep.json"), `\uFEFF${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`);
      await symlink("loop-b.json", join(inbox, "loop-a.json"));
      await symlink("loop-a.json", join(inbox, "loop-b.json"));
      await writeFile(join(inbox, "good.json"), `\uFEFF${JSON.stringify(clean)}`);
      await waitFor(() => jsonLines(out.stdout).length >= 4);
      await new Promise((r) => setTimeout(r, 1000));
      expect(jsonLines(out.stdout), "each file reported once").toHaveLength(4);
      const bySource = Object.fromEntries(jsonLines(out.stdout).map((r) => [r.source, [r.status, r.reason]]));
      expect(bySource).toEqual({
        [join(inbox, "deep.json[0]")]: ["rejected", "too_deep"],
        [join(inbox, "loop-a.json")]: ["rejected", "unreadable"],
        [join(inbox, "loop-b.json")]: ["rejected", "unreadable"],
        [join(inbox, "good.json")]: ["validated", null],
      });
    } finally {
      await stopChild(child);
    }
  }, 120_000);
});
