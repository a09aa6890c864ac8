/**
 * Issue 34, "no input holds another draft": a json draft whose schema would take the validating thread
 * for ever (a chain of definitions each referenced twice, with `unevaluatedProperties`) is refused on
 * its own (`invalid_schema`, `too_slow`), and the drafts beside it in the same `redraft run` end as
 * they would alone.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_UNFOLDED_EVALUATIONS, unfoldedEvaluations } from "../../shared/packs/json/cost.js";
import { compileJsonSchema } from "../../shared/packs/json/json.js";
import { DRAFT_PATTERN_BUDGET_MS, TOO_SLOW } from "../../shared/packs/json/regex-guard.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";
import { jsonLines, spawnCli } from "../helpers/run-cli.js";

/** `depth` definitions, each applying the one below it twice through `keyword`, unevaluatedProperties closed. */
function doubling(keyword: "allOf" | "anyOf", depth: number): Record<string, unknown> {
  const $defs: Record<string, unknown> = {
    l0: { type: "object", properties: { a: { type: "string" }, b: { type: "integer" } } },
  };
  for (let i = 1; i <= depth; i++) {
    const below = { $ref: `#/$defs/l${i - 1}` };
    $defs[`l${i}`] = { [keyword]: [below, below], unevaluatedProperties: false };
  }
  return { $defs, $ref: `#/$defs/l${depth}` };
}

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-budget-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("the unfolded-size bound on a schema", () => {
  it("refuses a doubling chain as too slow, before Ajv compiles it", () => {
    for (const keyword of ["allOf", "anyOf"] as const) {
      const lookup = compileJsonSchema(doubling(keyword, 32));
      expect(lookup.ok).toBe(false);
      if (!lookup.ok) expect(lookup.problem.message).toContain(`${TOO_SLOW}:`);
    }
  });

  it("counts references by their targets once per place, recursion once", () => {
    expect(unfoldedEvaluations(doubling("allOf", 3), "2020-12")).toBe(
      // The root applies l3. Each level is itself, its `unevaluatedProperties: false`, and twice a
      // `{ $ref }` member (itself and the level below); l0 is itself and its two properties.
      1 + (2 + 2 * (1 + (2 + 2 * (1 + (2 + 2 * (1 + 3)))))),
    );
    // A tree: recursion through `items` is bounded by the instance, and counts once.
    const tree = {
      type: "object",
      properties: {
        name: { type: "string" },
        children: { type: "array", items: { $ref: "#" } },
        left: { $ref: "#" },
        right: { $ref: "#" },
      },
    };
    // The root, `name`, `children` and its `items`, `left` and `right`: each reference back to the root counts one.
    expect(unfoldedEvaluations(tree, "2020-12")).toBe(9);
    expect(compileJsonSchema(tree).ok).toBe(true);
  });

  it("lets a chain under the bound through, and stops measuring past it", () => {
    expect(compileJsonSchema(doubling("allOf", 10)).ok).toBe(true);
    expect(unfoldedEvaluations(doubling("anyOf", 64), "2020-12")).toBeUndefined();
    expect(MAX_UNFOLDED_EVALUATIONS).toBeLessThan(2 ** 20);
  });
});

describe("a doubling schema beside benign drafts in one redraft run (the built bin)", () => {
  it("the hostile drafts end rejected too_slow, the benign ones as they would alone", async () => {
    const matching = { a: "x", b: 1 };
    const hostile = (["allOf", "anyOf"] as const).map((keyword) => ({
      id: `deep-${keyword}`,
      kind: "json",
      context: { schema: doubling(keyword, 32) },
      content: matching,
    }));
    const benign = [0, 1, 2, 3].map((i) => ({
      id: `benign-${i}`,
      kind: "json",
      context: { schema: doubling("allOf", 4) },
      content: i % 2 === 0 ? matching : { a: 1 },
    }));
    const file = join(work, "mixed.json");
    await writeFile(
      file,
      JSON.stringify([hostile[0], ...benign.slice(0, 2), hostile[1], ...benign.slice(2)]),
    );
    const run = spawnCli(["run", file, "--json", "--llm", "none", "--data-dir", join(work, "data")]);
    // Today's main never returns from the first hostile draft: stopped here so the test fails, not hangs.
    const stop = setTimeout(() => run.child.kill("SIGKILL"), 100_000);
    const finished = await run.done;
    clearTimeout(stop);
    const byId = Object.fromEntries(jsonLines(finished.stdout).map((r) => [r.draftId, r]));
    for (const { id } of hostile) {
      expect(byId[id]).toMatchObject({ status: "rejected", reason: "invalid_schema" });
      expect(String(byId[id]?.message)).toContain(`${TOO_SLOW}:`);
    }
    expect(Object.fromEntries(benign.map(({ id }) => [id, byId[id]?.status]))).toEqual({
      "benign-0": "validated",
      "benign-1": "needs_manual_review",
      "benign-2": "validated",
      "benign-3": "needs_manual_review",
    });
  }, 120_000);
});

const schemaWith = (pattern: string) => ({
  type: "object",
  required: ["v"],
  properties: { v: { type: "string", pattern } },
});

describe("the pattern pool under pressure (validateDraft, deferred off the thread)", () => {
  it("ten hostile drafts at once: the benign drafts after them all end before the last hostile one", async () => {
    const registry = new PackRegistry();
    const events: string[] = [];
    const hostile = Array.from({ length: 10 }, (_, i) =>
      validateDraft(
        {
          id: `hostile-${i}`,
          kind: "json",
          // Ten distinct patterns (no answer is shared), each past its budget on its value.
          context: { schema: schemaWith(`^(?=1)(\\w|\\d)+$|^z{${i}}$`) },
          content: { v: `${"1".repeat(40)}!` },
        },
        { registry },
      ).then(
        () => events.push("hostile accepted"),
        (error: { code?: string; detail?: string }) => events.push(`hostile ${error.code} ${error.detail}`),
      ),
    );
    // Benign drafts whose patterns go to the pool too (a lookbehind, a back-reference), one after the other.
    for (const [i, [pattern, value]] of [
      ["(?<=a)b", "ab"],
      ["^(\\w)\\1$", "zz"],
      ["(?<=a)b", "b"],
      ["^(?!x)[a-z]+$", "abc"],
    ].entries()) {
      const report = await validateDraft(
        {
          id: `benign-${i}`,
          kind: "json",
          context: { schema: schemaWith(pattern as string) },
          content: { v: value },
        },
        { registry },
      );
      events.push(`benign-${i} ${report.counts.error}`);
    }
    await Promise.all(hostile);
    // Today's two workers served the tests in the order they came: every benign draft waited for all ten.
    const lastHostile = events.lastIndexOf(`hostile invalid_schema ${TOO_SLOW}`);
    expect(events.filter((e) => e.startsWith("hostile"))).toEqual(
      Array.from({ length: 10 }, () => `hostile invalid_schema ${TOO_SLOW}`),
    );
    expect(events.filter((e) => e.startsWith("benign"))).toEqual([
      "benign-0 0",
      "benign-1 0",
      "benign-2 1",
      "benign-3 0",
    ]);
    for (const i of [0, 1, 2, 3])
      expect(events.findIndex((e) => e.startsWith(`benign-${i}`))).toBeLessThan(lastHostile);
  }, 120_000);

  it("a schema of 300 patterns each slow but under its budget ends too_slow at the draft's budget", async () => {
    const count = 300;
    const properties = Object.fromEntries(
      Array.from({ length: count }, (_, i) => [
        `p${i}`,
        { type: "string", pattern: `(?=\\d)\\d*\\d*x|^q{${i}}$` },
      ]),
    );
    const content = Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, "1".repeat(300)]));
    const error = await validateDraft(
      { id: "many-slow", kind: "json", context: { schema: { type: "object", properties } }, content },
      { registry: new PackRegistry() },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid_schema", detail: TOO_SLOW });
    expect(DRAFT_PATTERN_BUDGET_MS).toBeLessThanOrEqual(2_000);
  }, 120_000);
});
