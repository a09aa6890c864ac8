/**
 * A repaired run says so where a person looks: `initialViolations` are what the draft had before repair,
 * the result line lists the repairs (path, before, after), the tables say `validated · N repairs`, and the
 * run record keeps the count the outcome event and metric carry.
 */
import { describe, expect, it } from "vitest";
import { jsonLine, ResultsTable, runsTable, type SourcedResult } from "../../cli/format.js";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { makeDeps } from "./harness.js";

const schema = {
  type: "object",
  required: ["name"],
  additionalProperties: false,
  properties: {
    name: { type: "string", minLength: 1 },
    code: { type: "string", pattern: "^[A-Z]{3}$" },
    timeout: { type: "number" },
  },
};
const draft = (content: unknown): Draft => ({ id: "rec", kind: "json", context: { schema }, content });
const wide = { color: false, width: 200 } as const;

/** The closing table of `redraft run` over these results. */
function resultsTable(results: SourcedResult[], style: { color: boolean; width: number }): string {
  const table = new ResultsTable();
  for (const r of results) table.add(r);
  return table.render(style);
}

describe("repairs are never silent", () => {
  it("a run validated by repair alone reports the violations it had and the repairs that fixed them", async () => {
    const { deps, runs } = makeDeps(undefined);
    const result = await correctDraft(draft({ name: "n", code: "", stray: 1 }), deps);
    expect(result.status).toBe("validated");
    expect(result.initialViolations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:additionalProperties", "/stray"],
      ["schema:pattern", "/code"],
    ]);
    expect(result.finalViolations).toEqual([]);
    const line = JSON.parse(jsonLine(result));
    expect(line.repairs).toEqual([
      { path: "/code", before: "" },
      { path: "/stray", before: 1 },
    ]);
    expect(resultsTable([result], wide)).toContain("validated · 2 repairs");
    const record = await runs.getRun(result.runId);
    expect(record?.repairs).toBe(2);
    expect(runsTable(record ? [record] : [], wide)).toContain("validated · 2 repairs");
  });

  it("a run with nothing repaired reads as before", async () => {
    const { deps } = makeDeps(undefined);
    const result = await correctDraft(draft({ name: "n" }), deps);
    expect(result.repairs).toEqual([]);
    expect(resultsTable([result], wide)).not.toContain("repair");
  });

  it("without a model, a wrong non-empty value is not repaired away: the run goes to review", async () => {
    const { deps } = makeDeps(undefined);
    const result = await correctDraft(draft({ name: "n", timeout: "100h" }), deps);
    expect(result.status).toBe("needs_manual_review");
    expect(result.repairs).toEqual([]);
    expect(result.finalDraft?.content).toEqual({ name: "n", timeout: "100h" });
  });
});
