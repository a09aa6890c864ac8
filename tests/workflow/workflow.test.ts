import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { StateNames } from "../../contracts/state-names.js";
import { blobKeys } from "../../shared/store/bucket-layout.js";
import { DRAFT_WITH_ERRORS, FULLY_CORRECTED_DRAFT, PARTIALLY_CORRECTED_DRAFT } from "../fixtures/seed004.js";
import { answer } from "../loop/harness.js";
import { openRuntime, path, synthesizedAsl } from "./harness.js";

const ID = DRAFT_WITH_ERRORS.id;
const body = (d: unknown) => JSON.stringify(d);
let open: Awaited<ReturnType<typeof openRuntime>> | undefined;

beforeAll(async () => {
  await synthesizedAsl();
}, 120_000);

afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function start(responses: unknown[] | undefined) {
  open = await openRuntime(responses);
  return open;
}

describe("the synthesized state machine, executed locally", () => {
  it("validates a warnings-only draft with no correction", async () => {
    const rt = await start([]);
    const { execution, result } = await rt.runUpload(
      body({ ...FULLY_CORRECTED_DRAFT, id: "w1", metadata: {} }),
    );
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    expect(path(execution.history)).not.toContain(StateNames.CorrectExecution);
    expect(result.status).toBe("validated");
    const run = await rt.runtime.runs.getRun(execution.runId);
    expect(run?.status).toBe("validated");
    expect(run?.transitions.map((t) => t.status)).toEqual(["draft", "validated"]);
    expect(await rt.runtime.runs.listAttempts(execution.runId)).toEqual([]);
    expect(await rt.runtime.blobs.get(blobKeys.result("w1", execution.runId))).toContain('"id":"w1"');
    // The run keeps its own copy of the upload; the upload itself is untouched.
    expect(run?.originalRef).toBe(blobKeys.original(execution.runId));
    expect(run?.uploadRef).toMatch(/^drafts\//);
    expect(JSON.parse(await rt.runtime.blobs.get(String(run?.originalRef))).id).toBe("w1");
  });

  it("corrects on attempt 1", async () => {
    const rt = await start([
      answer(ID, FULLY_CORRECTED_DRAFT.content, { input_tokens: 1200, output_tokens: 800 }),
    ]);
    const { execution, result } = await rt.runUpload(body(DRAFT_WITH_ERRORS));
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    expect(path(execution.history)).toEqual([
      StateNames.Validate,
      StateNames.HasErrors,
      StateNames.CorrectExecution,
      StateNames.CountExecutionAttempt,
      StateNames.Revalidate,
      StateNames.NextStep,
      StateNames.JudgeEnabled,
      StateNames.PublishCorrectedDraft,
      StateNames.MarkValidated,
      StateNames.AnnounceValidated,
      StateNames.DraftValidated,
    ]);
    const run = await rt.runtime.runs.getRun(execution.runId);
    expect(run).toMatchObject({ status: "validated", attempts: 1, violationsPerAttempt: [3, 0] });
    expect(run?.tokens).toMatchObject({ input: 1200, output: 800, total: 2000 });
    expect(run?.transitions.map((t) => t.status)).toEqual(["draft", "correcting", "validated"]);
    const attempts = await rt.runtime.runs.listAttempts(execution.runId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attempt: 1, resolvedCount: 3, remainingCount: 0 });
    expect(result.finalDraft?.content).toEqual(FULLY_CORRECTED_DRAFT.content);
  });

  it("corrects on attempt 2 and reads [3, 1, 0]", async () => {
    const rt = await start([
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ]);
    const { execution } = await rt.runUpload(body(DRAFT_WITH_ERRORS));
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    const run = await rt.runtime.runs.getRun(execution.runId);
    expect(run).toMatchObject({ status: "validated", attempts: 2, violationsPerAttempt: [3, 1, 0] });
    expect((await rt.runtime.runs.listAttempts(execution.runId)).map((a) => a.attempt)).toEqual([1, 2]);
    expect(path(execution.history).filter((s) => s === StateNames.CountExecutionAttempt)).toHaveLength(2);
  });

  it("routes to review with max_attempts through the visible MaxAttemptsReached branch", async () => {
    const full = FULLY_CORRECTED_DRAFT.content as { options: { key: string; text: string }[] };
    const first = {
      ...full,
      stem: "Which of the following is NOT appropriate?",
      options: [
        { key: "A", text: "Always administer aspirin and prepare for PCI" },
        ...full.options.slice(1),
      ],
    };
    const second = { ...full, options: [full.options[0], full.options[0], ...full.options.slice(2)] };
    const rt = await start([answer(ID, first), answer(ID, second)]);
    const { execution } = await rt.runUpload(body(DRAFT_WITH_ERRORS));
    expect(path(execution.history)).toContain(StateNames.MaxAttemptsReached);
    expect(execution.terminalState).toBe(StateNames.DraftNeedsReview);
    const run = await rt.runtime.runs.getRun(execution.runId);
    expect(run).toMatchObject({ status: "needs_manual_review", reason: "max_attempts", attempts: 2 });
    expect(run?.transitions.map((t) => t.status)).toEqual(["draft", "correcting", "needs_manual_review"]);
  });

  it("trips the circuit breaker through the CircuitBreakerTripped branch, naming the rule", async () => {
    const rt = await start([
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content),
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content),
    ]);
    const { execution } = await rt.runUpload(body(DRAFT_WITH_ERRORS));
    expect(path(execution.history)).toContain(StateNames.CircuitBreakerTripped);
    const run = await rt.runtime.runs.getRun(execution.runId);
    expect(run).toMatchObject({
      status: "needs_manual_review",
      reason: "circuit_breaker",
      circuitBreakerRules: ["nbme_answer_homogeneity"],
    });
  });

  it("stops a stuck loop through the StuckNoImprovement branch", async () => {
    const worse = { ...(DRAFT_WITH_ERRORS.content as object), correct_answer: "Z" };
    const worseStill = {
      ...(DRAFT_WITH_ERRORS.content as object),
      options: [{ key: "A", text: "All of the above" }],
    };
    const rt = await start([answer(ID, worse), answer(ID, worseStill)]);
    const { execution } = await rt.runUpload(
      body({ ...DRAFT_WITH_ERRORS, options: { maxAttempts: 4, breakerThreshold: 3 } }),
    );
    expect(path(execution.history)).toContain(StateNames.StuckNoImprovement);
    const run = await rt.runtime.runs.getRun(execution.runId);
    expect(run).toMatchObject({ status: "needs_manual_review", reason: "stuck", attempts: 2 });
  });

  it("counts an unparseable answer as a failed attempt whose tokens still count", async () => {
    const rt = await start([
      { draftId: ID, purpose: "correct", raw: "I fixed it!", usage: { input_tokens: 500, output_tokens: 5 } },
      answer(ID, FULLY_CORRECTED_DRAFT.content, { input_tokens: 1000, output_tokens: 500 }),
    ]);
    const { execution } = await rt.runUpload(body(DRAFT_WITH_ERRORS));
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    const attempts = await rt.runtime.runs.listAttempts(execution.runId);
    expect(attempts[0]?.failure).toMatch(/not JSON/);
    expect((await rt.runtime.runs.getRun(execution.runId))?.tokens.total).toBe(505 + 1500);
  });

  it("retries a throttled model call in the state machine, then succeeds", async () => {
    const rt = await start([
      { draftId: ID, purpose: "correct", error: "rate_limited" },
      { draftId: ID, purpose: "correct", error: "overloaded" },
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ]);
    const { execution } = await rt.runUpload(body(DRAFT_WITH_ERRORS));
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    expect(
      execution.history.filter((h) => h.type === "StateRetried" && h.state === StateNames.CorrectExecution),
    ).toHaveLength(2);
    expect(await rt.runtime.runs.listAttempts(execution.runId)).toHaveLength(1);
  });

  it("ends a non-transient model failure in the failure path with the run saying why", async () => {
    const rt = await start([
      { draftId: ID, purpose: "correct", error: "failed", message: "invalid x-api-key" },
    ]);
    const { execution } = await rt.runUpload(body(DRAFT_WITH_ERRORS));
    expect(execution.status).toBe("FAILED");
    expect(path(execution.history)).toContain(StateNames.RecordModelFailure);
    const run = await rt.runtime.runs.getRun(execution.runId);
    expect(run?.status).toBe("failed");
    expect(run?.reason).toBe("model_error");
    expect(run?.message).toMatch(/ModelRequestFailedError/);
  });

  it("starts no second correction for a duplicate delivery of the same content", async () => {
    const rt = await start([
      answer(ID, FULLY_CORRECTED_DRAFT.content),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ]);
    const first = await rt.runUpload(body(DRAFT_WITH_ERRORS), "drafts/q.json");
    const again = await rt.runtime.execute({ draftRef: { bucket: "redraft-local", key: "drafts/q.json" } });
    expect(first.execution.terminalState).toBe(StateNames.DraftValidated);
    expect(again.terminalState).toBe(StateNames.DuplicateIgnored);
    expect(path(again.history)).not.toContain(StateNames.CorrectExecution);
    const dup = await rt.runtime.runs.getRun(again.runId);
    expect(dup).toMatchObject({ status: "rejected", reason: "duplicate" });
    expect(dup?.message).toContain(first.execution.runId);
    expect(await rt.runtime.runs.listAttempts(again.runId)).toEqual([]);
  });

  it("rejects bad input cleanly, recording why, with no retry", async () => {
    const rt = await start([]);
    const cases = [
      { body: "{ not json", reason: "invalid_input", match: /not valid JSON/ },
      { body: body({ id: "x", kind: "mcq" }), reason: "invalid_input", match: /content/ },
      { body: body({ id: "x", kind: "sonnet", content: {} }), reason: "unknown_kind", match: /sonnet/ },
      { body: "\u0000\u0001PNG binary\u0000", reason: "invalid_input", match: /binary/ },
    ];
    for (const c of cases) {
      const { execution } = await rt.runUpload(c.body);
      expect(execution.terminalState).toBe(StateNames.InputRejected);
      expect(execution.history.some((h) => h.type === "StateRetried")).toBe(false);
      const run = await rt.runtime.runs.getRun(execution.runId);
      expect(run?.status).toBe("rejected");
      expect(run?.reason).toBe(c.reason);
      expect(run?.message).toMatch(c.match);
    }
  });

  it("keeps state and items small for a draft of a few MB by passing references", async () => {
    const big = "x".repeat(3 * 1024 * 1024);
    // The source would have the mcq kind's grounding judge it; this case is about size, not grounding.
    const draft = {
      ...DRAFT_WITH_ERRORS,
      id: "big",
      context: { intent: "long source", source: big },
      options: { skipJudge: true },
    };
    const rt = await start([answer("big", FULLY_CORRECTED_DRAFT.content)]);
    const { execution } = await rt.runUpload(body(draft));
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    const payloads = execution.history.flatMap((h) => [h.input, h.output]).filter((p) => p !== undefined);
    expect(payloads.length).toBeGreaterThan(10);
    const largestState = Math.max(...payloads.map((p) => Buffer.byteLength(JSON.stringify(p))));
    expect(largestState).toBeLessThan(256 * 1024);
    const attempt = (await rt.runtime.runs.listAttempts(execution.runId))[0];
    expect(Buffer.byteLength(JSON.stringify(attempt))).toBeLessThan(400 * 1000);
    expect(Buffer.byteLength(JSON.stringify(await rt.runtime.runs.getRun(execution.runId)))).toBeLessThan(
      400 * 1000,
    );
  });
});

describe("the two loops in the synthesized state machine", () => {
  const judged = {
    ...FULLY_CORRECTED_DRAFT,
    id: "j1",
    context: {
      intent: "First-line treatment of acute MI",
      personas: [{ name: "expert", constraints: ["follows current guidelines"] }],
    },
    options: { judge: true },
  };
  const judge = (findings: unknown[]) => ({
    draftId: "j1",
    purpose: "judge",
    output: { findings },
    usage: { input_tokens: 600, output_tokens: 60 },
  });
  const critical = {
    ruleId: "intent_mismatch",
    severity: "error",
    confidence: 0.92,
    message: "PCI availability is not stated.",
    suggestion: "State it.",
    path: "/vignette",
  };
  const improved = {
    ...(FULLY_CORRECTED_DRAFT.content as object),
    vignette: "A patient with STEMI at a PCI-capable hospital.",
  };

  it("validates when the judge finds nothing", async () => {
    const rt = await start([judge([])]);
    const { execution, result } = await rt.runUpload(body(judged));
    expect(path(execution.history)).toEqual(
      expect.arrayContaining([StateNames.JudgeEnabled, StateNames.Judge, StateNames.HasCriticalFindings]),
    );
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    expect(result.logicAttempts).toBe(0);
    expect((await rt.runtime.runs.getRun(execution.runId))?.tokens.total).toBe(660);
  });

  it("keeps a finding below the threshold as a warning, with no logic correction", async () => {
    const rt = await start([judge([{ ...critical, confidence: 0.5 }])]);
    const { execution, result } = await rt.runUpload(body(judged));
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    expect(path(execution.history)).not.toContain(StateNames.CorrectLogic);
    expect(result.finalViolations).toContainEqual(
      expect.objectContaining({ ruleId: "intent_mismatch", severity: "warning", source: "judge" }),
    );
  });

  it("fixes a critical finding with one logic correction: distinct states, its own counter, evidence stored", async () => {
    const rt = await start([
      judge([critical]),
      answer("j1", improved, undefined, {
        analysis: "PCI availability missing",
        fixDescription: "Stated it",
      }),
      judge([]),
    ]);
    const { execution, result } = await rt.runUpload(body(judged));
    const states = path(execution.history);
    expect(states).toEqual(
      expect.arrayContaining([
        StateNames.CorrectLogic,
        StateNames.CountLogicAttempt,
        StateNames.RevalidateLogic,
      ]),
    );
    expect(states).not.toContain(StateNames.CorrectExecution);
    expect(states.filter((s) => s === StateNames.Judge)).toHaveLength(2);
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    const run = await rt.runtime.runs.getRun(execution.runId);
    expect(run).toMatchObject({ status: "validated", attempts: 1, logicAttempts: 1 });
    const [attempt] = await rt.runtime.runs.listAttempts(execution.runId);
    expect(attempt).toMatchObject({
      phase: "logic",
      analysis: "PCI availability missing",
      personas: ["expert: follows current guidelines"],
    });
    expect(attempt?.inputViolations[0]).toMatchObject({ ruleId: "intent_mismatch", source: "judge" });
    expect(attempt?.diff).toContainEqual(expect.objectContaining({ path: "/content/vignette" }));
    const evidence = JSON.parse(await rt.runtime.blobs.get(blobKeys.judgeReport(execution.runId, 1)));
    expect(evidence.blocking[0].message).toBe(critical.message);
    expect(result.logicAttempts).toBe(1);
  });

  it("ends in review with logic_unresolved once the logic budget is spent", async () => {
    const rt = await start([judge([critical]), answer("j1", improved), judge([critical])]);
    const { execution, result } = await rt.runUpload(body(judged));
    expect(path(execution.history)).toContain(StateNames.LogicUnresolved);
    expect(execution.terminalState).toBe(StateNames.DraftNeedsReview);
    expect(result).toMatchObject({ status: "needs_manual_review", reason: "logic_unresolved" });
    expect(result.finalViolations).toContainEqual(
      expect.objectContaining({ ruleId: "intent_mismatch", severity: "error" }),
    );
  });

  it("lets acceptFindings override the blocker and records that it did", async () => {
    const rt = await start([judge([critical])]);
    const { execution } = await rt.runUpload(
      body({ ...judged, options: { judge: true, acceptFindings: ["intent_mismatch"] } }),
    );
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    expect((await rt.runtime.runs.getRun(execution.runId))?.overrides).toEqual([
      "acceptFindings:intent_mismatch",
    ]);
  });

  const tests = [
    { name: "adds", code: "assert.equal(add(2, 3), 5)" },
    { name: "rejects strings", code: "assert.throws(() => add('a', 1))" },
  ];
  const code = {
    id: "c1",
    kind: "code",
    content: { language: "javascript", source: "function add(a, b) { return a - b; }", tests },
  };

  it("corrects code until its tests pass, on attempt 2", async () => {
    const half = { ...code.content, source: "function add(a, b) { return a + b; }" };
    const fixed = {
      ...code.content,
      source: "function add(a, b) { if (typeof a !== 'number') throw new TypeError('n'); return a + b; }",
    };
    const rt = await start([answer("c1", half), answer("c1", fixed)]);
    const { execution } = await rt.runUpload(body(code));
    expect(execution.terminalState).toBe(StateNames.DraftValidated);
    expect(await rt.runtime.runs.getRun(execution.runId)).toMatchObject({
      attempts: 2,
      violationsPerAttempt: [2, 1, 0],
    });
  });

  it("fails the validation of code that tries to escape or never ends, and the host carries on", async () => {
    const attempts = [
      "const fs = require('fs'); function add(a, b) { return a + b; }",
      "process.exit(1); function add(a, b) { return a + b; }",
      "globalThis.constructor.constructor('return process')().exit(1); function add(a, b) { return a + b; }",
      "while (true) {} function add(a, b) { return a + b; }",
      "const a = []; while (true) a.push(new Array(1e6).fill(1)); function add(a, b) { return a + b; }",
    ];
    const rt = await start(undefined);
    for (const source of attempts) {
      const { execution, result } = await rt.runUpload(
        body({ ...code, content: { ...code.content, source } }),
      );
      expect(execution.terminalState).toBe(StateNames.DraftNeedsReview);
      expect(result.initialViolations.length).toBeGreaterThan(0);
    }
    expect(process.exitCode ?? 0).toBe(0);
  }, 60_000);

  it("reports a timeout as a violation of the test that ran too long", async () => {
    const slow = { ...code, content: { ...code.content, source: "function add(a, b) { while (true) {} }" } };
    const rt = await start(undefined);
    const { result } = await rt.runUpload(body(slow));
    expect(result.initialViolations).toContainEqual(
      expect.objectContaining({ ruleId: "test:adds", message: expect.stringMatching(/used up its budget/) }),
    );
  }, 60_000);
});
