/**
 * No schema can hold other drafts: patterns a backtracking engine needs seconds to minutes for (and the
 * static check does not see) run beside benign drafts in one `redraft run`, and every draft finishes
 * with an outcome. Patterns are matched by a linear-time engine (shared/packs/json/linear-regex.ts), so
 * the bound below is generous room for a shared machine, not a speed claim: before that engine, the
 * `\d*\d*\d*x` draft alone ran for minutes.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { compileJsonSchema } from "../../shared/packs/json.js";
import { redraft } from "../cli/run-cli.js";

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
