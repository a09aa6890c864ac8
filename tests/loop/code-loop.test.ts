import { describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { answer, makeDeps } from "./harness.js";

const tests = [
  { name: "adds", code: "assert.equal(add(2, 3), 5)" },
  { name: "negatives", code: "assert.equal(add(-2, -3), -5)" },
  { name: "strings are rejected", code: "assert.throws(() => add('a', 1))" },
];
const draft: Draft = {
  id: "code-1",
  kind: "code",
  context: { intent: "An add(a, b) function for numbers that rejects non-numbers." },
  content: { language: "javascript", source: "function add(a, b) { return a - b; }", tests },
};
const half = { language: "javascript", source: "function add(a, b) { return a + b; }", tests };
const fixed = {
  language: "javascript",
  source:
    "function add(a, b) {\n  if (typeof a !== 'number' || typeof b !== 'number') throw new TypeError('numbers only');\n  return a + b;\n}",
  tests,
};

describe("code drafts (seed 003)", () => {
  it("is corrected until its tests pass, keeping each attempt's analysis, fix and diff", async () => {
    const { deps } = makeDeps([
      answer("code-1", half, undefined, {
        analysis: "add subtracted instead of adding.",
        fixDescription: "Use + instead of -.",
      }),
      answer("code-1", fixed, undefined, {
        analysis: "Strings were concatenated, not rejected.",
        fixDescription: "Throw a TypeError for non-numbers.",
      }),
    ]);
    const result = await correctDraft(draft, deps);
    expect(result.status).toBe("validated");
    expect(result.attempts).toBe(2);
    expect(result.violationsPerAttempt).toEqual([3, 1, 0]);
    expect(result.initialViolations.map((v) => v.ruleId).sort()).toEqual([
      "test:adds",
      "test:negatives",
      "test:strings are rejected",
    ]);
    expect(result.attemptsDetail[0]).toMatchObject({
      analysis: "add subtracted instead of adding.",
      fixDescription: "Use + instead of -.",
    });
    expect(result.attemptsDetail[0]?.score).toBeCloseTo(2 / 3);
    expect(result.attemptsDetail[1]?.diff).toContainEqual(
      expect.objectContaining({ path: "/content/source" }),
    );
  });

  it("gets 3 attempts by default and escalates when the tests still fail", async () => {
    const { deps } = makeDeps([
      answer("code-1", half),
      answer("code-1", { ...half, source: `${half.source}\n` }),
      answer("code-1", half),
    ]);
    const result = await correctDraft(draft, deps);
    expect(result.status).toBe("needs_manual_review");
    expect(result.attempts).toBe(3);
    expect(result.reason).toBe("circuit_breaker");
    expect(result.circuitBreakerRules).toEqual(["test:strings are rejected"]);
  });

  it("never accepts an answer that edits the tests", async () => {
    const cheat = { ...half, tests: [{ name: "adds", code: "assert(true)" }] };
    const { deps } = makeDeps([answer("code-1", cheat), answer("code-1", fixed)]);
    const result = await correctDraft(draft, deps);
    expect(result.attemptsDetail[0]?.failure).toMatch(/changed \/tests/);
    expect(result.status).toBe("validated");
    expect(result.finalDraft?.content).toMatchObject({ tests });
  });

  it("does not validate a correction whose source forges the verdict of its tests", async () => {
    const forging = {
      ...half,
      source: [
        "Object.defineProperty(globalThis, 'assert', { value: { equal() {}, throws() {} } });",
        "try { Promise.prototype.constructor = Object; } catch {}",
        "Object.defineProperty(TypeError, Symbol.hasInstance, { value: () => true });",
        "function add(a, b) { return a - b; }",
      ].join("\n"),
    };
    const { deps } = makeDeps([
      answer("code-1", forging),
      answer("code-1", forging),
      answer("code-1", forging),
    ]);
    const result = await correctDraft(draft, deps);
    expect(result.status).not.toBe("validated");
    expect(result.finalViolations.map((v) => v.ruleId).sort()).toEqual([
      "test:adds",
      "test:negatives",
      "test:strings are rejected",
    ]);
  });

  it("fails the validation of code that tries to escape, without harming the host", async () => {
    const escaping = {
      ...draft,
      content: {
        ...(draft.content as object),
        source:
          "const fs = require('fs'); fs.writeFileSync('/tmp/pwned', 'x'); function add(a,b){return a+b}",
      },
    };
    const { deps } = makeDeps(undefined);
    const result = await correctDraft(escaping, deps);
    expect(result.status).toBe("needs_manual_review");
    expect(result.initialViolations.length).toBeGreaterThan(0);
    expect(result.initialViolations.every((v) => v.severity === "error")).toBe(true);
  });
});
