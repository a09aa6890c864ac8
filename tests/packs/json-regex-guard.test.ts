/**
 * Patterns RE2 cannot read: matched in this thread only when short and provably forced, otherwise in a
 * worker stopped past its budget (shared/packs/json/regex-guard.ts). The budget is wall time, so the test
 * that matters is that it never decides a benign verdict: the same drafts give the same reports on an
 * idle machine and on one kept busy by other threads.
 */
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { inspectWithPack } from "../../shared/engine.js";
import { compileJsonSchema } from "../../shared/packs/json/json.js";
import { guardWorkersStarted, SchemaTooSlowError, TOO_SLOW } from "../../shared/packs/json/regex-guard.js";
import { matchesInBoundedSteps } from "../../shared/packs/json/regex-safety.js";
import { PackRegistry } from "../../shared/registry.js";
import { parseDraft, validateDraft } from "../../shared/validate.js";

const schemaWith = (pattern: string) => ({
  type: "object",
  properties: { v: { type: "string", pattern }, list: { type: "array", items: { type: "string", pattern } } },
});

/** Patterns, short values (some conform, some do not) and a long conforming value (past the in-thread length). */
const BENIGN: [string, string[], string][] = [
  // Forced splits: matched in this thread when short.
  [
    "^P(?!$)(\\d+Y)?(\\d+M)?(\\d+W)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+S)?)?$",
    ["P1Y2M", "PT5M", "P", "P1Q"],
    `P${"1".repeat(300)}Y`,
  ],
  // Not provably forced: every test goes to the worker.
  ["^(?=1)(\\w|\\d)+$", ["12ab", "1", "x1", "1 2"], "1".repeat(300)],
  ["(?<=a)b", ["ab", "b", "cab"], `${"a".repeat(300)}b`],
  ["^(\\w)\\1$", ["aa", "ab"], "zz"],
];

function drafts() {
  return BENIGN.flatMap(([pattern, values, long], p) =>
    values.map((v, i) => ({
      id: `d-${p}-${i}`,
      kind: "json",
      context: { schema: schemaWith(pattern) },
      content: { v, list: [v, long] },
    })),
  );
}

async function reports(registry: PackRegistry) {
  const out = [];
  for (const draft of drafts()) {
    const report = await validateDraft(draft, { registry });
    out.push({ id: draft.id, violations: report.violations, counts: report.counts });
  }
  return out;
}

/** Threads that spin for `ms`, so that every other thread of the machine waits for a core. */
function busy(threads: number, ms: number): Promise<unknown[]> {
  const code = `const end = Date.now() + ${ms}; let x = 0; while (Date.now() < end) x++; require("node:worker_threads").parentPort.postMessage(x);`;
  return Promise.all(
    Array.from({ length: threads }, () => {
      const worker = new Worker(code, { eval: true });
      return new Promise((resolve) => worker.once("message", resolve));
    }),
  );
}

describe("patterns RE2 cannot read", () => {
  it("are matched in this thread only when every split is forced", () => {
    expect(matchesInBoundedSteps(BENIGN[0]?.[0] as string)).toBe(true);
    for (const pattern of [
      "^(?=1)(\\w|\\d)+$",
      "^(?=a)(a{1,30}){1,30}$",
      "^(?=a)(a|a)*$",
      "(?=\\d)\\d*\\d*\\d*x",
      "^(?=\\d)\\d*\\d*x",
      "^(a)?(a)?(a)?(a)?(a)?(a)?(a)?(a)?(a)?a{9}$",
      "^(?=.*x).*$",
      "^(\\w)\\1$",
    ]) {
      expect(matchesInBoundedSteps(pattern), pattern).toBe(false);
    }
  });

  it("give the same reports on an idle machine and on a busy one, and no worker is ever stopped", async () => {
    const registry = new PackRegistry();
    const idle = await reports(registry);
    const started = guardWorkersStarted();
    const load = busy(4, 4000);
    const loaded = await reports(registry);
    await load;
    expect(loaded).toEqual(idle);
    expect(guardWorkersStarted()).toBe(started);
    // They are real verdicts: some drafts conform, some do not.
    expect(idle.filter((r) => r.counts.error === 0).length).toBeGreaterThan(0);
    expect(idle.filter((r) => r.counts.error > 0).length).toBeGreaterThan(0);
  }, 60_000);

  it("a test past the budget stops the worker and refuses the schema as too slow; the next test gets a new worker", () => {
    const lookup = compileJsonSchema(schemaWith("^(?=1)(\\w|\\d)+$"));
    if (!lookup.ok) throw new Error(lookup.problem.message);
    // The in-place worker is up (a long value goes to it), so the count below is the restart only.
    expect(lookup.schema.isValid({ v: "1".repeat(300) })).toBe(true);
    const before = guardWorkersStarted();
    let caught: unknown;
    try {
      lookup.schema.isValid({ v: `${"1".repeat(40)}!` });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SchemaTooSlowError);
    expect(caught).toMatchObject({ name: "InvalidSchemaError", code: "invalid_schema", detail: TOO_SLOW });
    expect((caught as Error).message).toMatch(/^too_slow: the pattern/);
    expect(lookup.schema.isValid({ v: "11" })).toBe(true);
    expect(guardWorkersStarted()).toBe(before + 1);
  }, 30_000);
});

describe("a pattern test inside validateDraft (deferred off the thread)", () => {
  it("gives the same reports as the test waited for in place", async () => {
    const registry = new PackRegistry();
    const json = registry.get("json");
    for (const draft of drafts()) {
      const inPlace = inspectWithPack(json, parseDraft(draft)).report;
      expect(await validateDraft(draft, { registry }), draft.id).toEqual(inPlace);
    }
  }, 60_000);

  it("a hostile pattern holds only its own draft: the others are validated while it runs out its budget", async () => {
    const registry = new PackRegistry();
    const events: string[] = [];
    const hostile = validateDraft(
      {
        id: "hostile",
        kind: "json",
        context: { schema: schemaWith("^(?=1)(\\w|\\d)+$") },
        content: { v: `${"1".repeat(40)}!` },
      },
      { registry },
    ).then(
      () => events.push("hostile accepted"),
      (error: { code?: string; detail?: string }) => events.push(`hostile ${error.code} ${error.detail}`),
    );
    // Benign drafts whose patterns also go to a worker (a lookbehind, a back-reference), one after the other.
    for (const [i, [pattern, value]] of [
      ["(?<=a)b", "ab"],
      ["^(\\w)\\1$", "zz"],
      ["(?<=a)b", "b"],
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
    await hostile;
    expect(events).toEqual(["benign-0 0", "benign-1 0", "benign-2 1", `hostile invalid_schema ${TOO_SLOW}`]);
  }, 60_000);
});
