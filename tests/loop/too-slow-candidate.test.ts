import { describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { answer, makeDeps } from "./harness.js";

/**
 * A pattern RE2 cannot read (a lookahead) whose backtracking explodes on a long run of digits:
 * the draft's own short value is checked in time, a model's long candidate value is not.
 */
const PATTERN = "^(?=1)(\\w|\\d)+$";
const draft: Draft = {
  id: "too-slow-candidate",
  kind: "json",
  content: { code: "1x!" },
  context: {
    schema: {
      type: "object",
      properties: { code: { type: "string", pattern: PATTERN } },
      required: ["code"],
    },
  },
} as unknown as Draft;

describe("a model candidate whose check the pattern guard stops (too_slow)", () => {
  it("is an unusable answer: the run goes on to the next attempt instead of failing", async () => {
    const hostile = `${"1".repeat(40)}!`;
    const { deps, runs } = makeDeps([
      answer(draft.id, { code: hostile }),
      answer(draft.id, { code: "12ab" }),
    ]);
    const result = await correctDraft(draft, deps);
    expect(result.status).toBe("validated");
    expect(result.attempts).toBe(2);
    expect(result.finalDraft?.content).toEqual({ code: "12ab" });
    const attempts = await runs.listAttempts(result.runId);
    expect(attempts[0]?.failure).toMatch(/^too_slow: the pattern/);
    expect(attempts[0]?.isBest).toBe(false);
    expect(attempts[1]?.isBest).toBe(true);
  }, 60_000);
});
