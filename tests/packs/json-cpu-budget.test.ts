/**
 * Issue 34: a json draft's check runs on a thread whose CPU time the host counts (shared/packs/json/
 * thread.ts), so a schema slow on every value, which the static guards let through (no recursion, a
 * small unfolded size, no pattern), holds only its own draft and ends rejected `invalid_schema` /
 * `too_slow`; the thread gives the same verdicts as the check in place.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFixtures } from "../../scripts/schemastore-corpus.js";
import type { Draft } from "../../shared/draft.js";
import { inspectWithPack, inspectWithPackAsync, resolvePack } from "../../shared/engine.js";
import { unfoldedEvaluations } from "../../shared/packs/json/cost.js";
import { draftEvaluations, isDraftCostGuarded } from "../../shared/packs/json/data-cost.js";
import { compileJsonSchema, jsonPack } from "../../shared/packs/json/json.js";
import { SchemaTooSlowError, TOO_SLOW } from "../../shared/packs/json/regex-guard.js";
import { jsonThreadChecks } from "../../shared/packs/json/thread.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";
import { jsonLines, spawnCli } from "../helpers/run-cli.js";

/** `{ a: [0, 1, …, 48, k] }`: equal to another row only after comparing all fifty numbers. */
const row = (k: number) => ({ a: Array.from({ length: 50 }, (_, i) => (i === 49 ? k : i)) });

/**
 * A huge `enum` over a large array: every item is compared (deeply) with every one of 500 members
 * before it fails. Measured in place: 2,000 items took 4.2 s of one thread; 20,000 take ten times that.
 */
const slowSchema = { type: "array", items: { enum: Array.from({ length: 500 }, (_, k) => row(k + 1)) } };
const slowContent = () => Array.from({ length: 20_000 }, () => row(0));

const benignSchema = {
  type: "object",
  required: ["name"],
  properties: { name: { type: "string", minLength: 1 }, note: { type: "string" }, n: { type: "integer" } },
  additionalProperties: false,
};
const benign = (i: number): Draft => ({
  id: `benign-${i}`,
  kind: "json",
  context: { schema: benignSchema },
  // Every third one has something to repair (an empty optional, a forbidden key), every other an error.
  content:
    i % 3 === 0
      ? { name: `n${i}`, note: "", extra: 1 }
      : i % 2 === 0
        ? { name: "" }
        : { name: `n${i}`, n: i },
});

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-json-cpu-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("the hostile schema defeats the static guards", () => {
  it("is small unfolded, not recursive (no per-draft count), and compiles", () => {
    expect(unfoldedEvaluations(slowSchema, "2020-12")).toBeLessThan(10);
    const lookup = compileJsonSchema(slowSchema);
    expect(lookup.ok).toBe(true);
    if (lookup.ok) expect(draftEvaluations(lookup.schema, slowContent())).toBe(0);
  });
});

describe("a json draft checked on a thread", () => {
  it("in place outside a deferral: a synchronous check sends nothing to a thread", () => {
    const before = jsonThreadChecks();
    const report = inspectWithPack(
      resolvePack(jsonPack, { settings: { thread: "always" } }),
      benign(1),
    ).report;
    expect(report.passed).toBe(true);
    expect(jsonThreadChecks()).toBe(before);
  });

  it("gives the verdicts, repairs, findings and scores of the check in place on the SchemaStore slice", async () => {
    const entries = readFixtures("tests/fixtures/json-schema-schemastore");
    // `always`: every draft to the thread (by default these ordinary drafts are checked in place).
    const packs = {
      lossless: resolvePack(jsonPack, { settings: { thread: "always" } }),
      aggressive: resolvePack(jsonPack, { settings: { repair: "aggressive", thread: "always" } }),
    };
    let compared = 0;
    let repaired = 0;
    let failing = 0;
    for (const entry of entries) {
      for (const doc of [...entry.valid, ...entry.invalid]) {
        if (doc.content === null || doc.content === undefined) continue;
        for (const resolved of Object.values(packs)) {
          const draft: Draft = {
            id: `${entry.name}/${doc.file}`,
            kind: "json",
            content: doc.content as Draft["content"],
            context: { schema: entry.schema },
          };
          const sent = jsonThreadChecks();
          const inPlace = inspectWithPack(resolved, draft);
          const onThread = await inspectWithPackAsync(resolved, draft);
          expect(jsonThreadChecks()).toBe(sent + 1);
          expect(onThread.report, draft.id).toEqual(inPlace.report);
          expect(onThread.draft, draft.id).toEqual(inPlace.draft);
          // Nothing repaired: the draft kept as it came, the same object.
          if (inPlace.draft === draft) expect(onThread.draft).toBe(draft);
          compared += 1;
          if (inPlace.report.repairs.length > 0) repaired += 1;
          if (!inPlace.report.passed) failing += 1;
        }
      }
    }
    expect(compared).toBeGreaterThan(100);
    expect(repaired).toBeGreaterThan(10);
    expect(failing).toBeGreaterThan(10);
  }, 120_000);

  it("by default keeps ordinary drafts in place and sends the risky ones: a recursive schema, a large schema over large content", async () => {
    const resolved = resolvePack(jsonPack);
    const sentFor = async (draft: Draft) => {
      const sent = jsonThreadChecks();
      await inspectWithPackAsync(resolved, draft).catch(() => undefined);
      return jsonThreadChecks() - sent;
    };
    // The slice's drafts stay (its recursive schemas count a few thousand evaluations on them).
    let recursive = 0;
    for (const entry of readFixtures("tests/fixtures/json-schema-schemastore")) {
      const doc = entry.valid[0];
      const lookup = compileJsonSchema(entry.schema);
      if (!doc || !lookup.ok) continue;
      const draft: Draft = { id: entry.name, kind: "json", content: doc.content as Draft["content"] };
      const sent = await sentFor({ ...draft, context: { schema: entry.schema } });
      expect(sent, entry.name).toBe(0);
      if (isDraftCostGuarded(lookup.schema)) recursive += 1;
    }
    expect(recursive).toBeGreaterThan(0);
    expect(await sentFor(benign(1))).toBe(0);
    const tree = {
      type: "object",
      properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } },
    };
    const treeDraft = (content: unknown): Draft => ({
      id: "tree",
      kind: "json",
      context: { schema: tree },
      content: content as Draft["content"],
    });
    const wide = (depth: number): unknown => ({
      name: "n",
      children: depth === 0 ? [] : [wide(depth - 1), wide(depth - 1), wide(depth - 1)],
    });
    // A small tree stays; one past IN_PLACE_EVALUATIONS (3^11 nodes: about half a million) goes.
    expect(await sentFor(treeDraft({ name: "a", children: [{ name: "b" }] }))).toBe(0);
    expect(await sentFor(treeDraft(wide(11)))).toBe(1);
    const large: Draft = { id: "large", kind: "json", context: { schema: slowSchema }, content: [row(1)] };
    // 74 KB of schema over one small item stays; over 2,000 items it goes.
    expect(await sentFor(large)).toBe(0);
    expect(await sentFor({ ...large, content: Array.from({ length: 2000 }, () => row(1)) })).toBe(1);
  }, 60_000);

  it("reports an unusable schema and a missing one as in place", async () => {
    const resolved = resolvePack(jsonPack, { settings: { thread: "always" } });
    const bad: Draft = { id: "bad", kind: "json", content: {}, context: { schema: { type: "nope" } } };
    const inPlace = (() => {
      try {
        inspectWithPack(resolved, bad);
      } catch (error) {
        return error as Error;
      }
    })();
    const onThread = await inspectWithPackAsync(resolved, bad).catch((error: Error) => error);
    expect(inPlace?.name).toBe("InvalidSchemaError");
    expect(onThread).toBeInstanceOf(Error);
    expect((onThread as Error).name).toBe(inPlace?.name);
    expect((onThread as Error).message).toBe(inPlace?.message);
    const missing: Draft = { id: "missing", kind: "json", content: {} };
    expect((await inspectWithPackAsync(resolved, missing)).report).toEqual(
      inspectWithPack(resolved, missing).report,
    );
  });

  it("guards a schema's backtracking pattern on the thread too (the regex guard's in-place path)", async () => {
    const draft: Draft = {
      id: "pattern",
      kind: "json",
      context: { schema: { type: "string", pattern: "^(?=1)(\\w|\\d)+$" } },
      content: `${"1".repeat(40)}!`,
    };
    const resolved = resolvePack(jsonPack, { settings: { thread: "always" } });
    const sent = jsonThreadChecks();
    const error = await inspectWithPackAsync(resolved, draft).catch((e: unknown) => e);
    expect(jsonThreadChecks()).toBe(sent + 1);
    expect(error).toBeInstanceOf(SchemaTooSlowError);
    expect((error as Error).message).toMatch(new RegExp(`^${TOO_SLOW}: the pattern`));
  }, 60_000);
});

describe("a schema slow on every value beside benign drafts", () => {
  it("validateDraft: the slow draft alone ends invalid_schema too_slow (CPU time), after the benign ones, which end as alone", async () => {
    const registry = new PackRegistry({ packs: { json: { settings: { cpuBudgetMs: 500 } } } });
    const resolved = resolvePack(jsonPack, { settings: { cpuBudgetMs: 500 } });
    const order: string[] = [];
    const hostile: Draft = {
      id: "slow",
      kind: "json",
      context: { schema: slowSchema },
      content: slowContent(),
    };
    const slow = validateDraft(hostile, { registry }).then(
      () => {
        order.push("slow");
        return undefined;
      },
      (error: Error & { code?: string }) => {
        order.push("slow");
        return error;
      },
    );
    const drafts = Array.from({ length: 6 }, (_, i) => benign(i));
    const reports = drafts.map((d) =>
      validateDraft(d, { registry }).then((report) => {
        order.push(d.id);
        return report;
      }),
    );
    const error = await slow;
    const settled = await Promise.all(reports);
    expect(error).toBeInstanceOf(SchemaTooSlowError);
    expect(error?.code).toBe("invalid_schema");
    expect(error?.message).toMatch(
      new RegExp(`^${TOO_SLOW}: checking this draft against its schema took more than 500 ms of CPU time`),
    );
    // Every benign draft ended before the slow one was stopped: it held its own thread, not theirs.
    expect(order.at(-1)).toBe("slow");
    settled.forEach((report, i) => {
      expect(report).toEqual(inspectWithPack(resolved, drafts[i] as Draft).report);
    });
    // The thread that was stopped is replaced: the next draft sent to a thread is checked as usual.
    const sent = jsonThreadChecks();
    const tree = { type: "array", items: { anyOf: [{ type: "integer" }, { $ref: "#" }] } };
    const nested: Draft = { id: "nested", kind: "json", context: { schema: tree }, content: [1, [2, [3]]] };
    const always = new PackRegistry({
      packs: { json: { settings: { cpuBudgetMs: 500, thread: "always" } } },
    });
    expect((await validateDraft(nested, { registry: always })).passed).toBe(true);
    expect(jsonThreadChecks()).toBe(sent + 1);
  }, 120_000);

  it("three slow drafts at once (more than the pool's two threads): each ends too_slow, the benign ones as alone", async () => {
    const registry = new PackRegistry({ packs: { json: { settings: { cpuBudgetMs: 300 } } } });
    const resolved = resolvePack(jsonPack, { settings: { cpuBudgetMs: 300 } });
    const hostile = (i: number): Draft => ({
      id: `slow-${i}`,
      kind: "json",
      context: { schema: slowSchema },
      content: slowContent(),
    });
    const drafts = [hostile(0), benign(1), hostile(1), benign(2), hostile(2), benign(3)];
    const outcomes = await Promise.all(
      drafts.map((d) => validateDraft(d, { registry }).catch((error: Error) => error)),
    );
    outcomes.forEach((outcome, i) => {
      const draft = drafts[i] as Draft;
      if (draft.id.startsWith("slow")) {
        expect(outcome, draft.id).toBeInstanceOf(SchemaTooSlowError);
        expect((outcome as Error).message).toContain("ms of CPU time");
      } else expect(outcome, draft.id).toEqual(inspectWithPack(resolved, draft).report);
    });
  }, 120_000);

  it("redraft run (the built bin, --config cpuBudgetMs): the slow draft ends rejected too_slow, the benign ones validated / needs_manual_review", async () => {
    const drafts = [
      { id: "slow", kind: "json", context: { schema: slowSchema }, content: slowContent() },
      benign(1),
      benign(2),
    ];
    const file = join(work, "mixed.json");
    await writeFile(file, JSON.stringify(drafts));
    const config = join(work, "config.json");
    await writeFile(config, JSON.stringify({ packs: { json: { settings: { cpuBudgetMs: 500 } } } }));
    const run = spawnCli([
      "run",
      file,
      "--json",
      "--llm",
      "none",
      "--config",
      config,
      "--data-dir",
      join(work, "data"),
    ]);
    // In place the slow draft takes minutes: stopped here so that the test fails, not hangs.
    const stop = setTimeout(() => run.child.kill("SIGKILL"), 100_000);
    const finished = await run.done;
    clearTimeout(stop);
    const byId = Object.fromEntries(jsonLines(finished.stdout).map((r) => [r.draftId, r]));
    expect(byId.slow).toMatchObject({ status: "rejected", reason: "invalid_schema" });
    expect(String(byId.slow?.message)).toContain(`${TOO_SLOW}: checking this draft`);
    expect(byId["benign-1"]?.status).toBe("validated");
    expect(byId["benign-2"]?.status).toBe("needs_manual_review");
  }, 120_000);
});
