import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonLines, ROOT, redraft, spawnCli, stopChild } from "../helpers/run-cli.js";

/** `redraft watch` at start-up: the folder checked first, the files already there run, none missed. */

let work: string;
let clean: Record<string, unknown> & { content: { vignette: string } };
const draft = (i: number) =>
  JSON.stringify({
    ...clean,
    id: `w${i}`,
    content: { ...clean.content, vignette: `${clean.content.vignette} ${i}.` },
  });

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-watch-"));
  clean = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** `redraft watch <inbox> --json` in its own process; its output so far, and a wait for a condition on it. */
function startWatch(inbox: string, dataDir: string, extra: string[] = []) {
  return spawnCli(["watch", inbox, "--json", "--llm", "none", "--data-dir", dataDir, ...extra]);
}

describe("redraft watch", () => {
  it("refuses a missing folder, and a file, before printing anything else", async () => {
    const missing = await redraft([
      "--data-dir",
      join(work, "d0"),
      "watch",
      join(work, "nope"),
      "--llm",
      "none",
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr.trim().split("\n")).toEqual([`redraft: no such folder: ${join(work, "nope")}`]);
    await writeFile(join(work, "a-file.json"), draft(0));
    const file = await redraft([
      "--data-dir",
      join(work, "d0"),
      "watch",
      join(work, "a-file.json"),
      "--llm",
      "none",
    ]);
    expect(file.code).toBe(2);
    expect(file.stderr.trim().split("\n")).toHaveLength(1);
    expect(file.stderr).toMatch(/not a folder/);
  });

  it("runs the files already there, and a file dropped while it starts", async () => {
    const inbox = join(work, "inbox");
    await mkdir(inbox);
    await writeFile(join(inbox, "before.json"), draft(1));
    await writeFile(join(inbox, "before.jsonl"), `${draft(2)}\n${draft(3)}\n`);
    const { child, out, waitFor } = startWatch(inbox, join(work, "d1"));
    try {
      // Dropped at once: the command is still importing and opening its data folder.
      await writeFile(join(inbox, "during.json"), draft(4));
      await waitFor(() => jsonLines(out.stdout).length >= 4);
      await new Promise((r) => setTimeout(r, 1000));
      const results = jsonLines(out.stdout);
      expect(results.map((r) => r.draftId).sort()).toEqual(["w1", "w2", "w3", "w4"]);
      expect(results.every((r) => r.status === "validated")).toBe(true);
      // A file dropped once it watches is run too; the ones run already are not run again.
      await writeFile(join(inbox, "after.json"), draft(5));
      await waitFor(() => jsonLines(out.stdout).length >= 5);
      await new Promise((r) => setTimeout(r, 1000));
      expect(
        jsonLines(out.stdout)
          .map((r) => r.draftId)
          .sort(),
      ).toEqual(["w1", "w2", "w3", "w4", "w5"]);
    } finally {
      await stopChild(child);
    }
    expect(child.exitCode).toBe(0);
  }, 180_000);

  it("--new-only leaves the files already there", async () => {
    const inbox = join(work, "inbox-new");
    await mkdir(inbox);
    await writeFile(join(inbox, "old.json"), draft(6));
    const { child, out, waitFor } = startWatch(inbox, join(work, "d2"), ["--new-only"]);
    try {
      await waitFor(() => out.stderr.includes("Watching"));
      await writeFile(join(inbox, "new.json"), draft(7));
      await waitFor(() => jsonLines(out.stdout).length >= 1);
      await new Promise((r) => setTimeout(r, 1000));
      expect(jsonLines(out.stdout).map((r) => r.draftId)).toEqual(["w7"]);
    } finally {
      await stopChild(child);
    }
  }, 180_000);
});
