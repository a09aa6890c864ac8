/**
 * Issue 34: a recursive schema whose static (unfolded) size is small but whose work multiplies per level
 * of the *data* (a definition with two `anyOf` branches that both apply it again to the same child, with
 * `unevaluatedProperties`, so Ajv tries every branch: 2^depth) is refused for the content that would take
 * the thread for ever (`invalid_schema`, `too_slow`), alone: the same schema on shallow content, and the
 * drafts beside it in the same run, end as they would alone.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unfoldedEvaluations } from "../../shared/packs/json/cost.js";
import { draftEvaluations, MAX_DRAFT_EVALUATIONS } from "../../shared/packs/json/data-cost.js";
import { compileJsonSchema } from "../../shared/packs/json/json.js";
import { TOO_SLOW } from "../../shared/packs/json/regex-guard.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";
import { jsonLines, spawnCli } from "../helpers/run-cli.js";

/** `n` is an object whose `c` is an `n` again, reached by both of two `anyOf` branches. */
function forking(branches = 2): Record<string, unknown> {
  const branch = (i: number) => ({
    type: "object",
    properties: { c: { $ref: "#/$defs/n" }, [`k${i}`]: { type: "integer" } },
  });
  return {
    $defs: {
      n: { anyOf: Array.from({ length: branches }, (_, i) => branch(i)), unevaluatedProperties: false },
    },
    $ref: "#/$defs/n",
  };
}

/** `{ c: { c: … { leaf } } }`, `depth` levels. */
function chain(depth: number, leaf: Record<string, unknown> = {}): Record<string, unknown> {
  let value: Record<string, unknown> = leaf;
  for (let i = 0; i < depth; i++) value = { c: value };
  return value;
}

const tree = {
  type: "object",
  required: ["name"],
  properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } },
  additionalProperties: false,
};

function bigTree(fanout: number, depth: number): Record<string, unknown> {
  if (depth === 0) return { name: "leaf" };
  return {
    name: `d${depth}`,
    children: Array.from({ length: fanout }, () => bigTree(fanout, depth - 1)),
  };
}

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-data-budget-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("the per-draft count of a recursive schema's work", () => {
  it("passes the static bound, yet counts 2^depth on a deep chain, in time linear in the chain", () => {
    const schema = forking();
    expect(unfoldedEvaluations(schema, "2020-12")).toBeLessThan(20);
    const lookup = compileJsonSchema(schema);
    expect(lookup.ok).toBe(true);
    if (!lookup.ok) return;
    const shallow = draftEvaluations(lookup.schema, chain(4)) as number;
    const deeper = draftEvaluations(lookup.schema, chain(5)) as number;
    // Each level applies `n` twice to the next: the count at least doubles per level.
    expect(deeper).toBeGreaterThan(2 * shallow);
    // 2^60 is far past the budget: measured by the memo, never by enumerating it.
    expect(draftEvaluations(lookup.schema, chain(60))).toBeUndefined();
    expect(draftEvaluations(lookup.schema, chain(40), Number.MAX_SAFE_INTEGER)).toBeGreaterThan(2 ** 40);
  });

  it("counts an ordinary recursive schema linearly in the content", () => {
    const lookup = compileJsonSchema(tree);
    expect(lookup.ok).toBe(true);
    if (!lookup.ok) return;
    const small = draftEvaluations(lookup.schema, bigTree(3, 4)) as number; // 121 nodes
    const large = draftEvaluations(lookup.schema, bigTree(3, 7)) as number; // 3,280 nodes
    expect(large / small).toBeLessThan((3280 / 121) * 1.1);
    expect(large).toBeLessThan(MAX_DRAFT_EVALUATIONS / 100);
    expect(lookup.schema.findings(bigTree(3, 7))).toEqual([]);
  });

  it("does not walk drafts of a schema without recursion", () => {
    const lookup = compileJsonSchema({ type: "object", properties: { a: { anyOf: [{}, {}] } } });
    expect(lookup.ok && draftEvaluations(lookup.schema, { a: chain(50) })).toBe(0);
  });
});

describe("a forking schema over deep content beside benign drafts", () => {
  it("validateDraft: the deep draft alone ends invalid_schema too_slow, the shallow ones as usual, in order", async () => {
    const registry = new PackRegistry();
    const events: string[] = [];
    const drafts = [
      { id: "shallow-ok", content: chain(8, { k0: 1 }) },
      // 2^26 evaluations: without the count Ajv returns after many seconds, so this fails rather than hangs.
      { id: "deep", content: chain(26) },
      { id: "shallow-bad", content: chain(8, { extra: true }) },
      { id: "tree", content: bigTree(3, 5), schema: tree },
    ];
    for (const { id, content, schema } of drafts) {
      await validateDraft(
        { id, kind: "json", context: { schema: schema ?? forking() }, content },
        { registry },
      ).then(
        // One error or hundreds (each branch of each level says so): what matters is that it ended.
        (report) => events.push(`${id} ${report.counts.error > 0 ? "errors" : "clean"}`),
        (error: { code?: string; message?: string }) =>
          events.push(`${id} ${error.code} ${String(error.message).includes(`${TOO_SLOW}:`)}`),
      );
    }
    expect(events).toEqual([
      "shallow-ok clean",
      "deep invalid_schema true",
      "shallow-bad errors",
      "tree clean",
    ]);
  }, 60_000);

  it("redraft run (the built bin): the deep draft ends rejected too_slow, the benign ones validated / needs_manual_review", async () => {
    const drafts = [
      { id: "benign-0", content: chain(6) },
      { id: "deep", content: chain(45) },
      { id: "benign-1", content: chain(6, { nope: 1 }) },
    ].map(({ id, content }) => ({ id, kind: "json", context: { schema: forking() }, content }));
    const file = join(work, "mixed.json");
    await writeFile(file, JSON.stringify(drafts));
    const run = spawnCli(["run", file, "--json", "--llm", "none", "--data-dir", join(work, "data")]);
    // Without the count Ajv never returns from the deep draft: stopped here so the test fails, not hangs.
    const stop = setTimeout(() => run.child.kill("SIGKILL"), 100_000);
    const finished = await run.done;
    clearTimeout(stop);
    const byId = Object.fromEntries(jsonLines(finished.stdout).map((r) => [r.draftId, r]));
    expect(byId.deep).toMatchObject({ status: "rejected", reason: "invalid_schema" });
    expect(String(byId.deep?.message)).toContain(`${TOO_SLOW}:`);
    expect(byId["benign-0"]?.status).toBe("validated");
    expect(byId["benign-1"]?.status).toBe("needs_manual_review");
  }, 120_000);
});
