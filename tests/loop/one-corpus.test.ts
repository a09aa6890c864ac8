import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { RunResult } from "../../shared/loop/run.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";
import { CASSETTE, jsonLines, ROOT, redraft } from "../helpers/run-cli.js";
import { openRuntime } from "../workflow/harness.js";

/**
 * One corpus, three ways in: the library's `correctDraft`, `redraft run --json`, and the local
 * runtime the workflow tests use. All three execute contracts/state-machine.asl.json, so a draft must
 * end the same way whichever way it came in.
 */
const DRAFTS_DIR = join(ROOT, "examples", "drafts");

/** What must not depend on the way in. */
const outcome = (
  r: Pick<RunResult, "status" | "reason" | "attempts" | "violationsPerAttempt" | "tokens" | "finalDraft">,
) => ({
  status: r.status,
  reason: r.reason,
  attempts: r.attempts,
  violationsPerAttempt: r.violationsPerAttempt,
  tokens: r.tokens,
  content: r.finalDraft?.content ?? null,
});
type Outcome = ReturnType<typeof outcome>;

let files: { name: string; body: string; draft: { id: string } }[];
const work: string[] = [];

beforeAll(async () => {
  const names = (await readdir(DRAFTS_DIR)).filter((n) => n.endsWith(".json")).sort();
  files = await Promise.all(
    names.map(async (name) => {
      const body = await readFile(join(DRAFTS_DIR, name), "utf8");
      return { name, body, draft: JSON.parse(body) as { id: string } };
    }),
  );
});

afterAll(async () => {
  await Promise.all(work.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function viaLibrary(): Promise<Map<string, Outcome>> {
  const out = new Map<string, Outcome>();
  const deps = {
    registry: new PackRegistry(),
    runs: new MemoryRunStore(),
    blobs: new MemoryBlobStore(),
    model: ReplayModelClient.fromFile(CASSETTE),
  };
  for (const { draft } of files) out.set(draft.id, outcome(await correctDraft(draft, deps)));
  return out;
}

async function viaCli(): Promise<Map<string, Outcome>> {
  const dataDir = await mkdtemp(join(tmpdir(), "redraft-corpus-cli-"));
  work.push(dataDir);
  const { code, stdout, stderr } = await redraft([
    "run",
    DRAFTS_DIR,
    "--json",
    "--llm",
    `replay:${CASSETTE}`,
    "--data-dir",
    dataDir,
  ]);
  expect(code, stderr).toBe(0);
  const lines = jsonLines(stdout) as unknown as RunResult[];
  return new Map(lines.map((r) => [r.draftId, outcome(r)]));
}

async function viaRuntime(): Promise<Map<string, Outcome>> {
  const cassette = JSON.parse(await readFile(CASSETTE, "utf8")) as { responses: unknown[] };
  const wf = await openRuntime(cassette.responses);
  try {
    const out = new Map<string, Outcome>();
    for (const { name, body, draft } of files) {
      const { result } = await wf.runUpload(body, `drafts/${name}`);
      out.set(draft.id, outcome(result));
    }
    return out;
  } finally {
    await wf.close();
  }
}

describe("one corpus (examples/drafts with the example cassette), three ways in", () => {
  it("ends each draft identically through correctDraft, redraft run and the local runtime", async () => {
    const library = await viaLibrary();
    const cli = await viaCli();
    const runtime = await viaRuntime();
    expect([...library.keys()].sort()).toEqual(files.map((f) => f.draft.id).sort());
    // The corpus is worth comparing: it reaches more than one ending.
    expect(new Set([...library.values()].map((o) => `${o.status}/${o.reason}`)).size).toBeGreaterThan(2);
    for (const { draft } of files) {
      expect(cli.get(draft.id), `redraft run: ${draft.id}`).toEqual(library.get(draft.id));
      expect(runtime.get(draft.id), `local runtime: ${draft.id}`).toEqual(library.get(draft.id));
    }
  }, 120_000);
});
