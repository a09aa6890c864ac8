import type { AttemptRecord, RunRecord } from "../../shared/store/types.js";
import { ZERO_TOTALS } from "../../shared/store/types.js";

const BASE = Date.parse("2025-03-01T12:00:00.000Z");

/** An ISO timestamp `minutes` after a fixed base, so that orderings are stated, not raced. */
export const at = (minutes: number): string => new Date(BASE + minutes * 60_000).toISOString();

export function makeRun(runId: string, overrides: Partial<RunRecord> = {}): RunRecord {
  const createdAt = overrides.createdAt ?? at(0);
  return {
    runId,
    draftId: "draft-1",
    kind: "mcq",
    status: "draft",
    attempts: 0,
    logicAttempts: 0,
    violationsPerAttempt: [],
    resolvedRules: [],
    persistentRules: [],
    circuitBreakerRules: [],
    tokens: { ...ZERO_TOTALS },
    costUsd: 0,
    originalRef: `runs/${runId}/original.json`,
    contentHash: "0".repeat(64),
    transitions: [{ status: overrides.status ?? "draft", at: createdAt }],
    createdAt,
    updatedAt: createdAt,
    ...overrides,
  };
}

/** An attempt with the awkward values a real one carries: nulls, empty strings, nested patches. */
export function makeAttempt(
  runId: string,
  attempt: number,
  overrides: Partial<AttemptRecord> = {},
): AttemptRecord {
  return {
    runId,
    attempt,
    phase: "execution",
    inputViolations: [
      {
        ruleId: "mcq.single-correct",
        severity: "error",
        message: "exactly one option must be correct",
        path: "/options",
        suggestion: "mark one option correct",
        source: "rule",
      },
      {
        ruleId: "judge.clarity",
        severity: "warning",
        message: "stem is long",
        source: "judge",
        confidence: 0.55,
      },
    ],
    outputViolations: [],
    resolvedCount: 1,
    remainingCount: 0,
    repairs: [
      { ruleId: "trim", action: "trim", path: "/stem", message: "trimmed", before: " x ", after: "x" },
    ],
    diff: [
      { op: "replace", path: "/options/1/correct", value: true },
      { op: "add", path: "/explanation", value: "" },
      { op: "add", path: "/meta", value: { tags: [], note: null } },
      { op: "remove", path: "/hint" },
    ],
    analysis: "two options were marked correct",
    fixDescription: "unmarked option 3",
    tokens: { input: 1200, output: 300, cacheRead: 900, cacheWrite: 0 },
    costUsd: 0.0081,
    model: "claude-sonnet-4-5",
    latencyMs: 1834,
    at: at(attempt),
    draftRef: `runs/${runId}/attempts/${attempt}/draft.json`,
    errorCount: 0,
    score: 0.985,
    rolledBack: false,
    isBest: true,
    ...overrides,
  };
}
