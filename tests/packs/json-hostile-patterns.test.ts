import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { compileJsonSchema } from "../../shared/packs/json/json.js";
import { TOO_SLOW } from "../../shared/packs/json/regex-guard.js";
import { jsonLines, redraft, spawnCli } from "../helpers/run-cli.js";

const HOSTILE: [string, string][] = [
  ["^(a{1,30}){1,30}$", `${"a".repeat(30)}!`],
  ["^(\\w|\\d)+$", `${"a".repeat(25)}!`],
  ["(a|a)*$", `${"a".repeat(25)}!`],
  ["\\d*\\d*\\d*x", "1".repeat(3000)],
];

const schemaWith = (pattern: string) => ({
  type: "object",
  required: ["v"],
  properties: { v: { type: "string", pattern } },
  patternProperties: { [pattern]: { type: "string" } },
});

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-hostile-"));
  vi.stubEnv("ANTHROPIC_API_KEY", "");
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await rm(work, { recursive: true, force: true });
});

describe("hostile patterns beside benign drafts", () => {
  it("the static check lets these patterns through: only the engine bounds them", () => {
    for (const [pattern] of HOSTILE) expect(compileJsonSchema(schemaWith(pattern)).ok).toBe(true);
  });

  it("the static check names the risk it found: exponential or polynomial", () => {
    const message = (pattern: string) => {
      const lookup = compileJsonSchema(schemaWith(pattern));
      return lookup.ok ? "" : lookup.problem.message;
    };
    expect(message("^(a+)+$")).toMatch(/can take exponential time/);
    expect(message("^(a+){2,20}$")).toMatch(/can take polynomial time/);
  });

  it("one redraft run: every draft ends with an outcome, the benign ones as they would alone", async () => {
    const drafts = [
      ...HOSTILE.map(([pattern, text], i) => ({
        id: `hostile-${i}`,
        kind: "json",
        context: { schema: schemaWith(pattern) },
        content: { v: text, [text]: "key" },
      })),
      ...[0, 1, 2, 3].map((i) => ({
        id: `benign-${i}`,
        kind: "json",
        context: { schema: schemaWith("^[a-z]+$") },
        content: { v: i % 2 === 0 ? "abc" : "ABC" },
      })),
    ];
    const file = join(work, "drafts.json");
    await writeFile(file, JSON.stringify(drafts));
    const out = await redraft(["run", file, "--json", "--llm", "none", "--data-dir", join(work, "data")]);
    const results = out.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { draftId: string; status: string });
    const status = Object.fromEntries(results.map((r) => [r.draftId, r.status]));
    expect(Object.keys(status).sort()).toEqual(drafts.map((d) => d.id).sort());
    // Without a model, a draft that breaks its pattern goes to review; one that conforms is validated.
    expect(status).toMatchObject({
      "hostile-0": "needs_manual_review",
      "hostile-1": "needs_manual_review",
      "hostile-3": "needs_manual_review",
      "benign-0": "validated",
      "benign-1": "needs_manual_review",
      "benign-2": "validated",
      "benign-3": "needs_manual_review",
    });
    // `(a|a)*$` matches the empty string at the end of any text.
    expect(status["hostile-2"]).toBe("validated");
  }, 120_000);
});

/** The same hostile shapes behind a lookahead: ECMAScript syntax RE2 cannot read, so RegExp in the worker. */
const HOSTILE_NATIVE: [string, string][] = [
  ["^(?=a)(a{1,30}){1,30}$", `${"a".repeat(30)}!`],
  ["^(?=1)(\\w|\\d)+$", `${"1".repeat(32)}!`],
  ["^(?=a)(a|a)*$", `${"a".repeat(32)}!`],
  ["(?=\\d)\\d*\\d*\\d*x", "1".repeat(3000)],
];

const benignDrafts = () =>
  [0, 1, 2, 3, 4, 5].map((i) => ({
    id: `benign-${i}`,
    kind: "json",
    // A lookahead too: the benign drafts take the worker's path as well.
    context: { schema: schemaWith(i < 3 ? "^(?=[a-z])[a-z]+$" : "^[a-z]+$") },
    content: { v: i % 2 === 0 ? "abc" : "ABC" },
  }));

/** `redraft run <file> --json --llm none` through the built bin, in a process of its own. */
async function runBin(file: string, dataDir: string): Promise<Record<string, unknown>[]> {
  const finished = await spawnCli(["run", file, "--json", "--llm", "none", "--data-dir", dataDir]).done;
  if (finished.code !== 0 && !finished.stdout) throw new Error(`redraft run failed: ${finished.stderr}`);
  return jsonLines(finished.stdout);
}

describe("patterns RE2 cannot read, and uniqueItems, beside benign drafts (the built bin)", () => {
  it("the static check lets these patterns through too", () => {
    for (const [pattern] of HOSTILE_NATIVE) expect(compileJsonSchema(schemaWith(pattern)).ok).toBe(true);
  });

  it("one run: the hostile patterns end rejected as too slow, uniqueItems and the benign drafts as they would alone", async () => {
    const hostile = HOSTILE_NATIVE.map(([pattern, text], i) => ({
      id: `native-${i}`,
      kind: "json",
      context: { schema: schemaWith(pattern) },
      content: { v: text },
    }));
    const unique = {
      id: "unique-16000",
      kind: "json",
      context: { schema: { type: "array", uniqueItems: true } },
      content: Array.from({ length: 16_000 }, (_, i) => ({ n: i, tags: [i % 7, { k: "x" }] })),
    };
    const benign = benignDrafts();
    const mixedFile = join(work, "mixed.json");
    const benignFile = join(work, "benign.json");
    await writeFile(mixedFile, JSON.stringify([...hostile, unique, ...benign]));
    await writeFile(benignFile, JSON.stringify(benign));
    const [mixed, alone] = await Promise.all([
      runBin(mixedFile, join(work, "data-mixed")),
      runBin(benignFile, join(work, "data-benign")),
    ]);
    const byId = Object.fromEntries(mixed.map((r) => [r.draftId, r]));
    expect(Object.keys(byId).sort()).toEqual([...hostile, unique, ...benign].map((d) => d.id).sort());
    for (const { id } of hostile) {
      expect(byId[id]).toMatchObject({ status: "rejected", reason: "invalid_schema" });
      expect(String(byId[id]?.message)).toContain(`${TOO_SLOW}:`);
    }
    expect(byId["unique-16000"]).toMatchObject({ status: "validated" });
    // The benign drafts end as they do in a run of their own.
    const statuses = (lines: Record<string, unknown>[]) =>
      Object.fromEntries(
        lines.filter((r) => String(r.draftId).startsWith("benign-")).map((r) => [r.draftId, r.status]),
      );
    expect(statuses(mixed)).toEqual(statuses(alone));
    expect(statuses(alone)).toEqual({
      "benign-0": "validated",
      "benign-1": "needs_manual_review",
      "benign-2": "validated",
      "benign-3": "needs_manual_review",
      "benign-4": "validated",
      "benign-5": "needs_manual_review",
    });
  }, 240_000);

  it("a hostile pattern holds only its own draft: the drafts after it in the same run end before it does", async () => {
    const [pattern, text] = HOSTILE_NATIVE[1] as [string, string];
    const hostile = {
      id: "hostile",
      kind: "json",
      context: { schema: schemaWith(pattern) },
      content: { v: text },
    };
    const file = join(work, "hostile-first.json");
    await writeFile(file, JSON.stringify([hostile, ...benignDrafts()]));
    const lines = await runBin(file, join(work, "data-hostile-first"));
    // Four drafts in flight at once: while the hostile one's pattern runs out its budget in a worker,
    // the thread goes on with the others, the benign lookahead patterns' tests included.
    expect(lines.map((r) => r.draftId)).toHaveLength(7);
    expect(lines.at(-1)).toMatchObject({ draftId: "hostile", status: "rejected", reason: "invalid_schema" });
  }, 120_000);
});
