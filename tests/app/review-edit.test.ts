import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageError } from "../../app/inputs.js";
import { EditedRunFailedError, type ReviewRuntime, reviewRun } from "../../app/review.js";
import type { RunResult } from "../../shared/loop/run.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";
import type { RunRecord } from "../../shared/store/types.js";
import { redraft as runCli } from "../helpers/run-cli.js";
import { synthesizedAsl } from "../workflow/harness.js";

const ROOT = join(import.meta.dirname, "..", "..");
let work: string;
let dataDir: string;
/** The draft json-stuck.json holds, and the run that left it waiting for review. */
let stuck: Record<string, unknown>;
let stuckRun: RunRecord;

/** The command line in this process, over the test's data folder, with no model. */
const redraft = (...args: string[]) => runCli([...args, "--llm", "none", "--data-dir", dataDir]);

async function runs(...filter: string[]): Promise<RunRecord[]> {
  const out = await redraft("runs", "--json", ...filter);
  expect(out.code, out.stderr).toBe(0);
  return out.stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunRecord);
}

const reviewQueue = async () => (await runs("--status", "needs_manual_review")).map((r) => r.runId);
const runById = async (runId: string) => (await runs()).find((r) => r.runId === runId);

async function edit(name: string, body: unknown): Promise<string> {
  const path = join(work, name);
  await writeFile(path, typeof body === "string" ? body : JSON.stringify(body));
  return path;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-review-"));
  dataDir = join(work, "data");
  await synthesizedAsl();
  const draftFile = join(ROOT, "examples", "drafts", "json-stuck.json");
  stuck = JSON.parse(await readFile(draftFile, "utf8"));
  const out = await redraft("run", draftFile, "--json");
  expect(out.code, out.stderr).toBe(0);
  const result = JSON.parse(out.stdout) as RunResult;
  expect(result.status).toBe("needs_manual_review");
  stuckRun = (await runById(result.runId)) as RunRecord;
}, 180_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("review edit with a file that is not a valid draft", () => {
  it.each([
    ["not JSON", "edit-not-json.json", () => "{ title: oops", /edit-not-json\.json: draft is not valid JSON/],
    [
      "not a Draft",
      "edit-no-content.json",
      () => ({ id: stuck.id, kind: stuck.kind }),
      /edit-no-content\.json: invalid draft: content/,
    ],
    [
      "of a kind no pack handles",
      "edit-poem.json",
      () => ({ ...stuck, kind: "poem" }),
      /edit-poem\.json: unknown kind "poem"/,
    ],
    [
      "of another draft",
      "edit-other.json",
      () => ({ ...stuck, id: "someone-else" }),
      /edit-other\.json holds draft "someone-else", but run .+ is of draft "paper-stuck"/,
    ],
    [
      "holding two drafts",
      "edit-two.json",
      () => [stuck, stuck],
      /edit-two\.json must hold exactly one draft, not 2/,
    ],
    [
      // Passes the checks before submission; the Validate step then rejects it (text full of U+FFFD
      // is a binary upload), and the rejection must still name the user's file, not the upload key.
      "that Validate itself rejects",
      "edit-binary.json",
      () => ({ ...stuck, content: { title: "\uFFFD".repeat(12), year: 2021, authors: [{ name: "D. Ng" }] } }),
      /edit-binary\.json is a binary file/,
    ],
  ])("%s: exit 2, one line naming the file, and the run left as it was", async (_, name, body, problem) => {
    const file = await edit(name, body());

    const out = await redraft("review", stuckRun.runId, "edit", file);

    expect(out.code, out.stderr).toBe(2);
    expect(out.stderr.split("\n").filter(Boolean)).toHaveLength(1);
    expect(out.stderr).toMatch(problem);
    expect(out.stderr).not.toMatch(/drafts\//);
    expect(await runById(stuckRun.runId)).toEqual(stuckRun);
    expect(await reviewQueue()).toContain(stuckRun.runId);
  });

  // Issue 34: an edit is read as a draft file is (shared/text-encoding.ts), never with U+FFFD in its bytes.
  it.each([
    [
      "Latin-1",
      (text: string) => Buffer.from(text, "latin1"),
      /edit-latin1\.json is not UTF-8 text \(byte 0xE9 at offset \d+: Latin-1 or Windows-1252\?\); save it as UTF-8$/,
    ],
    [
      "UTF-16 without a byte-order mark",
      (text: string) => Buffer.from(text, "utf16le"),
      /edit-utf16\.json is not UTF-8 text \(a NUL byte at offset 1: UTF-16 without a byte-order mark\?\)/,
    ],
    [
      "invalid UTF-8",
      (text: string) => Buffer.from(text.replace("é", "\u0000"), "utf8").map((b) => (b === 0 ? 0xc3 : b)),
      /edit-invalid\.json is not UTF-8 text \(byte 0xC3 at offset \d+/,
    ],
  ])(
    "in %s: exit 2, one line naming the file and its bytes, the run left as it was",
    async (name, encode, problem) => {
      const file = join(
        work,
        `edit-${name === "Latin-1" ? "latin1" : name.startsWith("UTF-16") ? "utf16" : "invalid"}.json`,
      );
      await writeFile(file, encode(JSON.stringify({ ...stuck, content: { title: "Café", year: 2021 } })));

      const out = await redraft("review", stuckRun.runId, "edit", file);

      expect(out.code, out.stderr).toBe(2);
      expect(out.stderr.split("\n").filter(Boolean)).toHaveLength(1);
      expect(out.stderr.trim()).toMatch(problem);
      expect(await runById(stuckRun.runId)).toEqual(stuckRun);
    },
  );

  it("in UTF-16 with a byte-order mark: read as the mark says (parsed and checked, the draft id it names comes through)", async () => {
    const file = join(work, "edit-utf16-mark.json");
    const text = JSON.stringify({
      ...stuck,
      id: "someone-else",
      content: { ...(stuck.content as object), title: "Zoë au café" },
    });
    await writeFile(file, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]));

    const out = await redraft("review", stuckRun.runId, "edit", file);

    // Read, parsed and checked: it is refused only because it is another draft, named exactly.
    expect(out.code, out.stderr).toBe(2);
    expect(out.stderr).toMatch(
      /edit-utf16-mark\.json holds draft "someone-else", but run .+ is of draft "paper-stuck"/,
    );
    expect(await runById(stuckRun.runId)).toEqual(stuckRun);
  });

  it("a FIFO: exit 2, one line, never opened (it would hold the command), and the run left as it was", async () => {
    const fifo = join(work, "edit-fifo.json");
    execFileSync("mkfifo", [fifo]);

    const out = await redraft("review", stuckRun.runId, "edit", fifo);

    expect(out.code).toBe(2);
    expect(out.stderr).toBe(`redraft: ${fifo}: not a regular file (a FIFO or a device is never read)\n`);
    expect(await runById(stuckRun.runId)).toEqual(stuckRun);
  });

  it("a missing file: exit 2, and the run left as it was", async () => {
    const out = await redraft("review", stuckRun.runId, "edit", join(work, "nowhere.json"));

    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/^redraft: .*nowhere\.json: no such file\n$/);
    expect(await runById(stuckRun.runId)).toEqual(stuckRun);
  });
});

describe("review edit with a valid draft", () => {
  it("starts a run linked to the old one and takes the old one off the queue", async () => {
    const file = await edit("edit-fixed.json", {
      ...stuck,
      content: { title: "A real title", year: 2021, authors: [{ name: "D. Ng" }] },
    });

    const out = await redraft("review", stuckRun.runId, "edit", file);

    expect(out.code, out.stderr).toBe(0);
    const all = await runs();
    const child = all.find((r) => r.parentRunId === stuckRun.runId);
    expect(child).toMatchObject({ draftId: "paper-stuck", status: "validated" });
    expect(all.find((r) => r.runId === stuckRun.runId)).toMatchObject({
      status: "rejected",
      reason: "superseded_by_edit",
      review: { decision: "edit", newRunId: child?.runId },
    });
    expect(await reviewQueue()).not.toContain(stuckRun.runId);
    expect(out.stdout).toContain(`run ${stuckRun.runId} is superseded`);
  });
});

describe("reviewRun when the edited draft's run does not end well", () => {
  /** The run under review, in a store of its own, and a submit that answers with `outcome`. */
  async function reviewWith(outcome: Partial<RunResult>) {
    const runs = new MemoryRunStore();
    const run: RunRecord = { ...stuckRun, runId: "under-review", status: "needs_manual_review" };
    await runs.createRun(run);
    const runtime: ReviewRuntime = {
      runs,
      blobs: new MemoryBlobStore(),
      deps: { registry: new PackRegistry() },
      publish: async () => {},
    };
    const file = await edit("edit-valid.json", {
      ...stuck,
      content: { title: "Another title", year: 2020, authors: [{ name: "A. B." }] },
    });
    const review = reviewRun(runtime, run.runId, "edit", {
      file,
      reviewer: "tester",
      submit: async () => ({ runId: "new-run", ...outcome }) as RunResult,
    });
    return { review, before: run, stored: () => runs.getRun(run.runId) };
  }

  it("rejected: a usage error with the run's message, and the run under review unchanged", async () => {
    const { review, before, stored } = await reviewWith({
      status: "rejected",
      reason: "invalid_schema",
      message: "edit-valid.json: context.schema: not a usable JSON Schema",
    });

    await expect(review).rejects.toThrow(UsageError);
    await expect(review).rejects.toThrow("edit-valid.json: context.schema: not a usable JSON Schema");
    expect(await stored()).toEqual(before);
  });

  it("failed: a named system failure, and the run under review stays in the queue", async () => {
    const { review, before, stored } = await reviewWith({ status: "failed", reason: "system_error" });

    await expect(review).rejects.toThrow(EditedRunFailedError);
    await expect(review).rejects.toThrow(/run new-run failed .*still under review/);
    expect(await stored()).toEqual(before);
  });
});
