import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

/**
 * Issue 37: the read-only commands load only what they read. Each runs as a person runs it (a child
 * process of bin/redraft.js, compiled or through tsx, whichever the bin picks) with a module hook
 * that writes down every module resolved; the batch runner, the Lambda entries (and their step
 * handlers, SDK clients) and the packs must not be among them. `redraft batches` used to load them
 * all through the batch runner (5.4× the CPU of `redraft runs`).
 */

/** Appends every URL the process resolves, once, to the file named by REDRAFT_IMPORTS_OUT. */
const RECORDER = `
import { registerHooks } from "node:module";
import { appendFileSync } from "node:fs";
const out = process.env.REDRAFT_IMPORTS_OUT;
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    if (!seen.has(resolved.url)) {
      seen.add(resolved.url);
      appendFileSync(out, resolved.url + "\\n");
    }
    return resolved;
  },
});
`;

/** What a listing must never load, with why it would be there. */
const FORBIDDEN: [RegExp, string][] = [
  [/\/local\/batch\.[jt]s$/, "the batch runner"],
  [/\/local\/asl-interpreter\.[jt]s$/, "the state machine interpreter"],
  [/\/cli\/batch\.[jt]s$/, "the batch command"],
  [/\/functions\//, "a Lambda entry or its step handlers"],
  [/\/shared\/packs\//, "a pack"],
  [
    /\/node_modules\/(ajv|quickjs-emscripten|@aws-sdk|@anthropic-ai|aws-local-stepfunctions)\//,
    "a dependency of running",
  ],
];

const run = promisify(execFile);
let dir: string;
let data: string;
let runId: string;
let batchId: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "redraft-imports-"));
  data = join(dir, "data");
  const draft = await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8");
  const manifest = join(dir, "m.jsonl");
  await writeFile(manifest, JSON.stringify(JSON.parse(draft)));
  const lines = jsonLines(
    (await redraft(["batch", manifest, "--json", "--llm", "none", "--data-dir", data])).stdout,
  );
  batchId = String(lines.at(-1)?.batchId);
  runId = String(lines[0]?.runId);
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function modulesOf(args: string[]): Promise<string[]> {
  const out = join(dir, `imports-${args[0]}-${Math.random().toString(36).slice(2)}.txt`);
  await run(
    process.execPath,
    [`--import=data:text/javascript,${encodeURIComponent(RECORDER)}`, BIN, ...args, "--data-dir", data],
    { cwd: ROOT, env: { ...process.env, REDRAFT_IMPORTS_OUT: out } },
  );
  return (await readFile(out, "utf8")).split("\n").filter(Boolean);
}

describe("read-only commands load only what they read", () => {
  it.each([
    ["batches", () => ["batches"]],
    ["runs", () => ["runs"]],
    ["show <run>", () => ["show", runId]],
    ["show <batch>", () => ["show", batchId]],
    ["export <run>", () => ["export", runId]],
  ])(
    "%s",
    async (_name, args) => {
      const modules = await modulesOf(args());
      // The hook saw the command's own modules: a recorder that saw nothing would pass anything.
      expect(modules.some((url) => /\/cli\/main\.[jt]s$/.test(url))).toBe(true);
      const loaded = FORBIDDEN.flatMap(([pattern, what]) =>
        modules.filter((url) => pattern.test(url)).map((url) => `${what}: ${url}`),
      );
      expect(loaded).toEqual([]);
    },
    60_000,
  );

  it("the recorder does see the batch runner where a command needs it", async () => {
    const modules = await modulesOf(["batch", join(dir, "m.jsonl"), "--json", "--llm", "none"]);
    expect(modules.some((url) => /\/local\/batch\.[jt]s$/.test(url))).toBe(true);
    expect(modules.some((url) => /\/shared\/packs\//.test(url))).toBe(true);
  }, 60_000);
});

describe("batch records on the default (SQLite) store", () => {
  it("carry the time the batch started, not the interpreter's placeholder, and list newest first", async () => {
    const before = Date.now();
    const second = join(dir, "second.jsonl");
    const draft = await readFile(join(ROOT, "examples", "drafts", "json-repaired.json"), "utf8");
    await writeFile(second, JSON.stringify(JSON.parse(draft)));
    const lines = jsonLines(
      (await redraft(["batch", second, "--json", "--llm", "none", "--data-dir", data])).stdout,
    );
    const newest = String(lines.at(-1)?.batchId);
    const listed = jsonLines((await redraft(["batches", "--json", "--data-dir", data])).stdout);
    expect(listed.map((b) => b.batchId)).toEqual([newest, batchId]);
    for (const record of listed) {
      expect(String(record.startedAt)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(String(record.startedAt)).not.toMatch(/^1970/);
    }
    const started = Date.parse(String(listed[0]?.startedAt));
    expect(started).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(String(listed[1]?.startedAt))).toBeLessThanOrEqual(started);
  }, 120_000);
});
