import { describe, expect, it } from "vitest";
import { ResultsTable, runsTable, type SourcedResult } from "../../cli/format.js";
import type { RunRecord } from "../../shared/store/types.js";
import { makeRun } from "../stores/fixtures.js";

const BATCH = `b-${"611b40".padEnd(24, "c")}`;

/** Runs with the widest cells a listing shows: long draft ids, the longest status and reasons. */
const RUNS: RunRecord[] = [
  makeRun("3f2c9a1e-1111-4000-8000-000000000001", {
    draftId: "paper-extraction-with-a-long-name",
    status: "needs_manual_review",
    reason: "circuit_breaker",
    attempts: 2,
    tokens: { input: 9000, output: 1000, cacheRead: 0, cacheWrite: 0, total: 10000 },
    costUsd: 0.0123,
  }),
  makeRun(`${BATCH}-12`, {
    draftId: "line-12.json",
    kind: "unknown",
    status: "rejected",
    reason: "invalid_input",
  }),
  makeRun(`${BATCH}-3`, { draftId: "mcq-clean", status: "validated" }),
  makeRun("77aa0000-2222-4000-8000-000000000002", {
    draftId: "json-stuck",
    kind: "json",
    status: "needs_manual_review",
    reason: "budget_exhausted",
  }),
];

const result = (run: RunRecord, extra: Partial<SourcedResult> = {}): SourcedResult => ({
  draftId: run.draftId,
  runId: run.runId,
  status: run.status,
  reason: run.reason ?? null,
  attempts: run.attempts,
  logicAttempts: 0,
  initialViolations: [],
  repairs: [],
  finalViolations: [],
  violationsPerAttempt: [3, 1, 1],
  circuitBreakerRules: [],
  tokens: run.tokens,
  costUsd: run.costUsd,
  finalDraft: null,
  attemptsDetail: [],
  source: `examples/drafts/${run.draftId}.json`,
  ...extra,
});

/** Lines of a table that hold cells (not rules). */
const contentLines = (table: string) => table.split("\n").filter((l) => l.startsWith("│"));

describe.each([60, 80, 100])("tables at %i columns", (width) => {
  const plain = { color: false, width };

  it("redraft runs: one line per run, no line wider, each reason and run id whole", () => {
    const table = runsTable(RUNS, plain);
    for (const line of table.split("\n")) expect(line.length, line).toBeLessThanOrEqual(width);
    expect(contentLines(table)).toHaveLength(RUNS.length + 1);
    for (const reason of ["circuit_breaker", "invalid_input", "budget_exhausted"])
      expect(table).toContain(` ${reason} `);
    for (const id of ["3f2c9a1e", "b-611b40-12", "b-611b40-3", "77aa0000"])
      expect(table).toContain(` ${id} `);
    expect(table).toMatch(/ (needs_manual_review|review) /);
  });

  it("the results of a run: one line per draft, and duplicates said in the table", () => {
    const results = RUNS.map((r, i) => result(r, i % 2 ? { duplicate: true } : {}));
    const filled = new ResultsTable();
    for (const r of results) filled.add(r);
    const table = filled.render(plain).split("\n┌")[0] ?? "";
    for (const line of table.split("\n")) expect(line.length, line).toBeLessThanOrEqual(width);
    expect(contentLines(table)).toHaveLength(RUNS.length + 1);
    if (width >= 80) {
      expect(contentLines(table)[0]).toContain(" duplicate ");
      expect(contentLines(table).filter((l) => / yes /.test(l))).toHaveLength(2);
    }
    expect(table).toContain(" circuit_breaker ");
  });
});

describe("columns dropped before any wraps", () => {
  it("keeps every column at 100 when the cells fit, and drops tokens before cutting a draft id", () => {
    const wide = runsTable(RUNS, { color: false, width: 100 });
    expect(contentLines(wide)[0]).not.toContain("tokens");
    expect(wide).toContain("paper-extraction-with-a-long-name");
    const roomy = runsTable(RUNS, { color: false, width: 200 });
    expect(contentLines(roomy)[0]).toContain("tokens");
  });
});

describe("status colours", () => {
  it("are painted on a terminal, around the status only, and never without colour", () => {
    const coloured = runsTable(RUNS, { color: true, width: 100 });
    expect(coloured).toContain("\x1b[32mvalidated\x1b[39m");
    expect(coloured).toContain("\x1b[31mrejected\x1b[39m");
    expect(coloured).toContain("\x1b[33mneeds_manual_review\x1b[39m");
    // The padding stays outside the colour, so columns line up as without it.
    const strip = (text: string) => text.replace(new RegExp(`${"\x1b"}\\[\\d+m`, "g"), "");
    expect(strip(coloured)).toBe(runsTable(RUNS, { color: false, width: 100 }));
    expect(runsTable(RUNS, { color: false, width: 100 })).not.toContain("\x1b[");
  });
});
