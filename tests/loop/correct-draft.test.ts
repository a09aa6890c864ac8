import { describe, expect, it } from "vitest";
import { StateNames } from "../../contracts/state-names.js";
import { correctDraft } from "../../local/in-process.js";
import { loadAsl } from "../../local/state-machine.js";
import type { Draft } from "../../shared/draft.js";
import { ErrorNames, StoreUnavailableError } from "../../shared/errors.js";
import type { BlobStore } from "../../shared/store/types.js";
import {
  DRAFT_WITH_ERRORS,
  FULLY_CORRECTED_DRAFT,
  PARTIALLY_CORRECTED_DRAFT,
  SEED004_ATTEMPT_TOKENS,
} from "../fixtures/seed004.js";
import { answer, makeDeps } from "./harness.js";

const ID = DRAFT_WITH_ERRORS.id;
const [T1, T2] = SEED004_ATTEMPT_TOKENS.map((t) => ({
  input_tokens: t.inputTokens,
  output_tokens: t.outputTokens,
}));
const errorIds = (vs: { ruleId: string; severity: string }[]) =>
  vs
    .filter((v) => v.severity === "error")
    .map((v) => v.ruleId)
    .sort();

/** Partial content with a different remaining error each time, each attempt better than the last. */
const withDuplicateOption = {
  ...(FULLY_CORRECTED_DRAFT.content as Record<string, unknown>),
  options: [
    { key: "A", text: "Administer aspirin and prepare for PCI" },
    { key: "B", text: "Administer aspirin and prepare for PCI" },
    { key: "C", text: "Prescribe broad-spectrum antibiotics" },
    { key: "D", text: "Start IV nitroglycerin infusion" },
    { key: "E", text: "Initiate beta-blocker therapy" },
  ],
};

describe("correctDraft (seed 004: SelfCorrectionService.correct)", () => {
  it("corrects the draft on the first attempt when all errors are resolved", async () => {
    const { deps, model } = makeDeps([answer(ID, FULLY_CORRECTED_DRAFT.content, T1)]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("validated");
    expect(result.reason).toBeNull();
    expect(result.attempts).toBe(1);
    expect(result.violationsPerAttempt).toEqual([3, 0]);
    expect(result.finalDraft?.content).toEqual(FULLY_CORRECTED_DRAFT.content);
    expect(model?.requests).toHaveLength(1);
  });

  it("retries up to 2 times and reads [3, 1, 0] like the seed's example", async () => {
    const { deps } = makeDeps([
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content, T1),
      answer(ID, FULLY_CORRECTED_DRAFT.content, T2),
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("validated");
    expect(result.attempts).toBe(2);
    expect(result.violationsPerAttempt).toEqual([3, 1, 0]);
    expect(errorIds(result.initialViolations)).toEqual(
      ["ext_rationale_completeness", "nbme_absolute_terms", "nbme_negation_detection"].sort(),
    );
    expect(errorIds(result.finalViolations)).toEqual([]);
    const [a1, a2] = result.attemptsDetail;
    expect(a1?.resolvedCount).toBe(3);
    expect(a1?.remainingCount).toBe(1);
    expect(errorIds(a2?.inputViolations ?? [])).toEqual(["nbme_answer_homogeneity"]);
    expect(a2?.resolvedCount).toBe(1);
    expect(a2?.remainingCount).toBe(0);
  });

  it("tracks token usage per attempt and in total (seed: 2000 + 1600 = 3600)", async () => {
    const { deps, runs } = makeDeps([
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content, T1),
      answer(ID, FULLY_CORRECTED_DRAFT.content, T2),
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.attemptsDetail.map((a) => a.tokens)).toEqual([
      { input: 1200, output: 800, cacheRead: 0, cacheWrite: 0 },
      { input: 1000, output: 600, cacheRead: 0, cacheWrite: 0 },
    ]);
    expect(result.tokens).toEqual({ input: 2200, output: 1400, cacheRead: 0, cacheWrite: 0, total: 3600 });
    expect((await runs.getRun(result.runId))?.tokens.total).toBe(3600);
  });

  it("marks needs_manual_review with reason max_attempts when errors remain after 2 attempts", async () => {
    const full = FULLY_CORRECTED_DRAFT.content as { options: { key: string; text: string }[] };
    const stillNegated = {
      ...full,
      stem: "Which of the following is NOT appropriate?",
      options: [
        { key: "A", text: "Always administer aspirin and prepare for PCI" },
        ...full.options.slice(1),
      ],
    };
    const { deps } = makeDeps([answer(ID, stillNegated), answer(ID, withDuplicateOption)]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("needs_manual_review");
    expect(result.reason).toBe("max_attempts");
    expect(result.attempts).toBe(2);
    expect(result.circuitBreakerRules).toEqual([]);
    expect(result.violationsPerAttempt).toEqual([3, 2, 1]);
  });

  it("only error-severity violations trigger a correction: a warnings-only draft is validated as is", async () => {
    const warningsOnly: Draft = { ...FULLY_CORRECTED_DRAFT, id: "w1", metadata: {} };
    const { deps, model } = makeDeps([]);
    const result = await correctDraft(warningsOnly, deps);
    expect(result.status).toBe("validated");
    expect(result.attempts).toBe(0);
    expect(result.initialViolations.some((v) => v.severity === "warning")).toBe(true);
    expect(result.finalDraft).toEqual(warningsOnly);
    expect(model?.requests).toHaveLength(0);
  });

  it("records a JSON Patch diff between the previous best and the corrected draft", async () => {
    const { deps } = makeDeps([answer(ID, FULLY_CORRECTED_DRAFT.content, T1)]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    const diff = result.attemptsDetail[0]?.diff ?? [];
    expect(diff).toContainEqual({
      op: "replace",
      path: "/content/stem",
      value: "Which of the following is the most appropriate treatment for acute MI?",
    });
    expect(diff.every((op) => String(op.path).startsWith("/content/"))).toBe(true);
  });

  it("trips the circuit breaker when the same rule fails in every attempt, naming the rule", async () => {
    const { deps } = makeDeps([
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content),
      answer(ID, {
        ...(PARTIALLY_CORRECTED_DRAFT.content as object),
        rationale: "Aspirin and PCI are the first-line treatments for acute MI.",
      }),
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("needs_manual_review");
    expect(result.reason).toBe("circuit_breaker");
    expect(result.circuitBreakerRules).toEqual(["nbme_answer_homogeneity"]);
  });

  it("stops a run with a larger budget early: the same rule in two consecutive attempts trips the breaker", async () => {
    const stillHomogeneity = {
      ...(PARTIALLY_CORRECTED_DRAFT.content as object),
      rationale: "Aspirin and PCI are the first-line treatments for acute MI.",
    };
    const { deps, model } = makeDeps([
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content),
      answer(ID, stillHomogeneity),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ]);
    const result = await correctDraft({ ...DRAFT_WITH_ERRORS, options: { maxAttempts: 4 } }, deps);
    expect(result.reason).toBe("circuit_breaker");
    expect(result.attempts).toBe(2);
    expect(model?.requests).toHaveLength(2);
    expect(result.circuitBreakerRules).toEqual(["nbme_answer_homogeneity"]);
  });

  it("takes breakerAfter from the draft, and still accepts the earlier name breakerThreshold", async () => {
    const stillHomogeneity = {
      ...(PARTIALLY_CORRECTED_DRAFT.content as object),
      rationale: "Aspirin and PCI are the first-line treatments for acute MI.",
    };
    for (const options of [{ breakerAfter: 3 }, { breakerThreshold: 3 }]) {
      const { deps } = makeDeps([
        answer(ID, PARTIALLY_CORRECTED_DRAFT.content),
        answer(ID, stillHomogeneity),
        answer(ID, FULLY_CORRECTED_DRAFT.content),
      ]);
      const result = await correctDraft(
        { ...DRAFT_WITH_ERRORS, options: { maxAttempts: 4, stuckAfter: 4, ...options } },
        deps,
      );
      expect(result.status).toBe("validated");
      expect(result.attempts).toBe(3);
    }
  });

  it("records the status transitions draft → correcting → validated with timestamps", async () => {
    const { deps, runs } = makeDeps([answer(ID, FULLY_CORRECTED_DRAFT.content)]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    const run = await runs.getRun(result.runId);
    expect(run?.transitions.map((t) => t.status)).toEqual(["draft", "correcting", "validated"]);
    expect(run?.transitions.every((t) => !Number.isNaN(Date.parse(t.at)))).toBe(true);
  });

  it("records draft → correcting → needs_manual_review on failure", async () => {
    const { deps, runs } = makeDeps([
      answer(ID, DRAFT_WITH_ERRORS.content),
      answer(ID, DRAFT_WITH_ERRORS.content),
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    const run = await runs.getRun(result.runId);
    expect(run?.transitions.map((t) => t.status)).toEqual(["draft", "correcting", "needs_manual_review"]);
    expect(result.reason).toBe("circuit_breaker");
    expect(result.circuitBreakerRules).toEqual(
      ["ext_rationale_completeness", "nbme_absolute_terms", "nbme_negation_detection"].sort(),
    );
  });
});

describe("correctDraft: stop rules and failures", () => {
  it("counts an answer that is not JSON as a failed attempt whose tokens still count", async () => {
    const { deps } = makeDeps([
      {
        draftId: ID,
        purpose: "correct",
        raw: "Sure! Here is the corrected question.",
        usage: { input_tokens: 900, output_tokens: 20 },
      },
      answer(ID, FULLY_CORRECTED_DRAFT.content, T1),
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("validated");
    expect(result.attempts).toBe(2);
    expect(result.attemptsDetail[0]?.failure).toMatch(/not JSON/);
    expect(result.attemptsDetail[0]?.rolledBack).toBe(true);
    expect(result.violationsPerAttempt).toEqual([3, 3, 0]);
    expect(result.tokens.total).toBe(920 + 2000);
  });

  it("treats an answer that breaks the output schema, or is empty, as a failed attempt", async () => {
    const { deps } = makeDeps([
      { draftId: ID, purpose: "correct", output: { content: DRAFT_WITH_ERRORS.content } },
      { draftId: ID, purpose: "correct", output: { content: {}, analysis: "", fixDescription: "" } },
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("needs_manual_review");
    expect(result.attemptsDetail[0]?.failure).toMatch(/output schema/);
    expect(result.attemptsDetail[1]?.failure).toMatch(/empty/);
    expect(result.finalDraft?.content).toEqual(DRAFT_WITH_ERRORS.content);
  });

  it("never lets a correction change metadata, id or kind", async () => {
    const { deps } = makeDeps([
      {
        draftId: ID,
        purpose: "correct",
        output: {
          content: FULLY_CORRECTED_DRAFT.content,
          analysis: "a",
          fixDescription: "f",
          metadata: { course_id: "other" },
        },
      },
      answer(ID, { ...(FULLY_CORRECTED_DRAFT.content as object) }),
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.attemptsDetail[0]?.failure).toMatch(/protected field "metadata"/);
    expect(result.status).toBe("validated");
    expect(result.finalDraft?.metadata).toEqual(DRAFT_WITH_ERRORS.metadata);
    expect(result.finalDraft?.id).toBe(ID);
    expect(result.finalDraft?.kind).toBe("mcq");
  });

  it("stops with budget_exhausted once the token budget is spent", async () => {
    const { deps, model } = makeDeps([
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content, T1),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ]);
    const result = await correctDraft({ ...DRAFT_WITH_ERRORS, options: { maxTokens: 1500 } }, deps);
    expect(result.status).toBe("needs_manual_review");
    expect(result.reason).toBe("budget_exhausted");
    expect(result.attempts).toBe(1);
    expect(model?.requests).toHaveLength(1);
  });

  it("stops as stuck after stuckAfter attempts that do not beat the best, and keeps the best draft", async () => {
    const worse = { ...(DRAFT_WITH_ERRORS.content as object), correct_answer: "Z" };
    const worseStill = {
      ...(DRAFT_WITH_ERRORS.content as object),
      options: [{ key: "A", text: "All of the above" }],
    };
    const { deps } = makeDeps([
      answer(ID, worse),
      answer(ID, worseStill),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ]);
    const result = await correctDraft(
      { ...DRAFT_WITH_ERRORS, options: { maxAttempts: 4, breakerThreshold: 3 } },
      deps,
    );
    expect(result.reason).toBe("stuck");
    expect(result.attempts).toBe(2);
    expect(result.finalDraft?.content).toEqual(DRAFT_WITH_ERRORS.content);
    expect(result.attemptsDetail.every((a) => a.rolledBack)).toBe(true);
  });

  it("does not stop as stuck when only the final attempt is left: it makes that attempt", async () => {
    const worse = { ...(DRAFT_WITH_ERRORS.content as object), correct_answer: "Z" };
    const worseStill = {
      ...(DRAFT_WITH_ERRORS.content as object),
      options: [{ key: "A", text: "All of the above" }],
    };
    const { deps, model } = makeDeps([
      answer(ID, worse),
      answer(ID, worseStill),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ]);
    const result = await correctDraft(
      { ...DRAFT_WITH_ERRORS, options: { maxAttempts: 3, breakerThreshold: 3 } },
      deps,
    );
    expect(result.status).toBe("validated");
    expect(result.attempts).toBe(3);
    expect(model?.requests).toHaveLength(3);
  });

  it("rolls back a regression: the next correction starts from the best so far, and the hint says so", async () => {
    const worse = { ...(DRAFT_WITH_ERRORS.content as object), correct_answer: "Z" };
    const { deps, model } = makeDeps([
      answer(ID, PARTIALLY_CORRECTED_DRAFT.content),
      answer(ID, worse),
      answer(ID, {
        ...(PARTIALLY_CORRECTED_DRAFT.content as object),
        stem: "Which of the following is the best first step?",
      }),
    ]);
    const result = await correctDraft(
      { ...DRAFT_WITH_ERRORS, options: { maxAttempts: 3, breakerThreshold: 3, stuckAfter: 3 } },
      deps,
    );
    const third = model?.requests[2]?.user ?? "";
    expect(third).toContain("PCI alone");
    expect(third).toMatch(/rolled back: restart from attempt 1/);
    expect(result.attemptsDetail[1]?.rolledBack).toBe(true);
    expect(result.finalDraft?.content).toEqual(
      result.attemptsDetail.filter((a) => a.isBest).length ? expect.anything() : DRAFT_WITH_ERRORS.content,
    );
    const best = result.attemptsDetail.filter((a) => a.isBest).at(-1);
    expect(result.violationsPerAttempt[best?.attempt ?? 0]).toBe(Math.min(...result.violationsPerAttempt));
  });

  it("returns the best draft, not the last, when the last attempt regressed", async () => {
    const worse = { ...(DRAFT_WITH_ERRORS.content as object), correct_answer: "Z" };
    const { deps } = makeDeps([answer(ID, PARTIALLY_CORRECTED_DRAFT.content), answer(ID, worse)]);
    const result = await correctDraft({ ...DRAFT_WITH_ERRORS, options: { breakerThreshold: 3 } }, deps);
    expect(result.reason).toBe("max_attempts");
    expect(result.finalDraft?.content).toEqual(PARTIALLY_CORRECTED_DRAFT.content);
    expect(errorIds(result.finalViolations)).toEqual(["nbme_answer_homogeneity"]);
  });

  it("ends with reason no_model when no model is configured and errors remain", async () => {
    const { deps } = makeDeps(undefined);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("needs_manual_review");
    expect(result.reason).toBe("no_model");
    expect(result.attempts).toBe(0);
  });

  it("retries transient model errors and then succeeds", async () => {
    const { deps, model } = makeDeps([
      { draftId: ID, purpose: "correct", error: "rate_limited" },
      { draftId: ID, purpose: "correct", error: "overloaded" },
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("validated");
    expect(result.attempts).toBe(1);
    expect(model?.requests).toHaveLength(3);
  });

  it("retries a rate-limited model call as often as the ASL's Retry says, then records a model failure", async () => {
    const asl = await loadAsl();
    const retriers = (asl.States[StateNames.CorrectExecution]?.Retry ?? []) as {
      ErrorEquals: string[];
      MaxAttempts: number;
    }[];
    const retries = retriers.find((r) => r.ErrorEquals.includes(ErrorNames.ModelRateLimited))?.MaxAttempts;
    expect(retries).toBeGreaterThan(0);
    const limited = { draftId: ID, purpose: "correct", error: "rate_limited" };
    const recovers = makeDeps([...Array(retries).fill(limited), answer(ID, FULLY_CORRECTED_DRAFT.content)]);
    expect(await correctDraft(DRAFT_WITH_ERRORS, recovers.deps)).toMatchObject({
      status: "validated",
      attempts: 1,
    });
    expect(recovers.model?.requests).toHaveLength(Number(retries) + 1);

    const gives = makeDeps(Array(Number(retries) + 1).fill(limited));
    const result = await correctDraft(DRAFT_WITH_ERRORS, gives.deps);
    expect(result).toMatchObject({ status: "failed", reason: "model_error" });
    expect(gives.model?.requests).toHaveLength(Number(retries) + 1);
  });

  it("retries a step whose store was briefly unavailable, as the ASL retries StoreUnavailableError", async () => {
    const { deps, blobs } = makeDeps([answer(ID, FULLY_CORRECTED_DRAFT.content)]);
    let failures = 0;
    const flaky: BlobStore = {
      get: (key) => blobs.get(key),
      putIfAbsent: (key, body) => blobs.putIfAbsent(key, body),
      put: async (key, body) => {
        if (key.endsWith("attempts/1/draft.json") && failures++ === 0)
          throw new StoreUnavailableError("PutObject", new Error("SlowDown"));
        return blobs.put(key, body);
      },
    };
    const result = await correctDraft(DRAFT_WITH_ERRORS, { ...deps, blobs: flaky });
    expect(failures).toBe(2);
    expect(result).toMatchObject({ status: "validated", attempts: 1 });
  });

  it("ends a run as failed, saying why, on a model failure that is not transient", async () => {
    const { deps, runs } = makeDeps([
      { draftId: ID, purpose: "correct", error: "failed", message: "invalid x-api-key" },
    ]);
    const result = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(result.status).toBe("failed");
    expect(result.reason).toBe("model_error");
    expect((await runs.getRun(result.runId))?.message).toMatch(/invalid x-api-key/);
  });

  it("rejects a draft that is not a valid Draft with a message naming the field", async () => {
    const { deps } = makeDeps([]);
    const result = await correctDraft({ id: "bad 1", kind: "mcq" }, deps);
    expect(result.status).toBe("rejected");
    expect(result.reason).toBe("invalid_input");
    expect(result.message).toMatch(/id: /);
    expect(result.message).toMatch(/content: /);
    expect(result.finalDraft).toBeNull();
  });

  it("rejects a draft over the size limit with reason too_large", async () => {
    const { deps } = makeDeps([]);
    const result = await correctDraft(
      { ...DRAFT_WITH_ERRORS, context: { source: "x".repeat(5000) } },
      { ...deps, maxDraftBytes: 4096 },
    );
    expect(result).toMatchObject({ status: "rejected", reason: "too_large" });
    expect(result.message).toMatch(/over the limit of 4096 bytes/);
  });

  it("rejects an unknown kind", async () => {
    const { deps } = makeDeps([]);
    const result = await correctDraft({ id: "x", kind: "poem", content: {} }, deps);
    expect(result.reason).toBe("unknown_kind");
    expect(result.message).toMatch(/poem/);
  });

  it("honours per-deployment maxAttempts and caps a draft's own option", async () => {
    const answers = [
      answer(ID, DRAFT_WITH_ERRORS.content),
      answer(ID, DRAFT_WITH_ERRORS.content),
      answer(ID, DRAFT_WITH_ERRORS.content),
    ];
    const one = makeDeps(answers, { packs: { mcq: { loop: { maxAttempts: 1 } } } });
    expect((await correctDraft(DRAFT_WITH_ERRORS, one.deps)).attempts).toBe(1);
    const capped = makeDeps(answers, { caps: { maxAttempts: 2 } });
    const result = await correctDraft(
      { ...DRAFT_WITH_ERRORS, options: { maxAttempts: 9, breakerThreshold: 9, stuckAfter: 9 } },
      capped.deps,
    );
    expect(result.attempts).toBe(2);
    expect(result.reason).toBe("max_attempts");
  });
});

describe("attempt records stay small", () => {
  it("lists at most a bounded number of violations inline, says how many it left out, and points at the whole report", async () => {
    const authors = Array.from({ length: 3000 }, (_, i) => ({ name: "", orcid: `bad-${i}` }));
    const schema = {
      type: "object",
      required: ["authors"],
      properties: {
        authors: {
          type: "array",
          items: {
            type: "object",
            required: ["name"],
            properties: { name: { type: "string", minLength: 1 }, orcid: { type: "string" } },
          },
        },
      },
    };
    const draft: Draft = { id: "wide", kind: "json", context: { schema }, content: { authors } };
    const { deps, blobs } = makeDeps([answer("wide", { authors }), answer("wide", { authors })]);
    const result = await correctDraft(draft, deps);
    const record = result.attemptsDetail[0];
    expect(record?.outputViolations.length).toBeLessThanOrEqual(100);
    expect(record?.omitted?.outputViolations).toBe(3000 - (record?.outputViolations.length ?? 0));
    expect(Buffer.byteLength(JSON.stringify(record))).toBeLessThan(400 * 1000);
    const whole = JSON.parse(await blobs.get(String(record?.reportRef)));
    expect(whole.violations).toHaveLength(3000);
  });
});

describe("failures never go unrecorded", () => {
  it("records a run whose Validate failed before registering it, saying why", async () => {
    const { deps, runs, blobs } = makeDeps([]);
    const failingBlobs = {
      put: async () => {
        throw new Error("disk full");
      },
      get: (key: string) => blobs.get(key),
      putIfAbsent: async () => {
        throw new Error("disk full");
      },
    };
    const result = await correctDraft(DRAFT_WITH_ERRORS, { ...deps, blobs: failingBlobs });
    expect(result).toMatchObject({ status: "failed", reason: "system_error", draftId: DRAFT_WITH_ERRORS.id });
    expect(result.message).toMatch(/disk full/);
    expect((await runs.getRun(result.runId))?.transitions.at(-1)?.status).toBe("failed");
  });

  it("lets a resubmission of a failed run's content start afresh instead of being a duplicate", async () => {
    const { deps } = makeDeps([
      { draftId: DRAFT_WITH_ERRORS.id, purpose: "correct", error: "failed", message: "bad key" },
      answer(DRAFT_WITH_ERRORS.id, FULLY_CORRECTED_DRAFT.content),
    ]);
    const first = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(first.status).toBe("failed");
    const second = await correctDraft(DRAFT_WITH_ERRORS, deps);
    expect(second.reason).not.toBe("duplicate");
  });
});

describe("a json draft's context.schema is untrusted input", () => {
  it("rejects a schema with a remote $ref as invalid_schema, naming the ref, before any model call", async () => {
    const draft: Draft = {
      id: "remote-ref",
      kind: "json",
      context: { schema: { type: "object", properties: { a: { $ref: "https://evil.example/x.json" } } } },
      content: { a: 1 },
    };
    const { deps, model, runs } = makeDeps([answer("remote-ref", { a: 2 })]);
    const result = await correctDraft(draft, deps);
    expect(result).toMatchObject({ status: "rejected", reason: "invalid_schema", attempts: 0 });
    expect(result.message).toContain('"https://evil.example/x.json"');
    expect(model?.requests).toHaveLength(0);
    expect((await runs.getRun(result.runId))?.status).toBe("rejected");
  });

  it("corrects a draft whose draft-07 schema carries vendor keywords and tuple items, sending that schema as the tool's content when the whole draft is asked for", async () => {
    const schema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      "x-owner": "extraction",
      type: "object",
      required: ["point"],
      properties: { point: { type: "array", items: [{ type: "number" }, { type: "number" }] } },
    };
    // An array where an object belongs: a violation at the root, so the whole draft is asked for (a
    // violation at a field is answered with a patch, whose tool carries no content schema).
    const draft: Draft = { id: "tuple", kind: "json", context: { schema }, content: [1, 2] };
    const { deps, model } = makeDeps([answer("tuple", { point: [1, 2] })]);
    const result = await correctDraft(draft, deps);
    expect(result).toMatchObject({ status: "validated", attempts: 1 });
    expect(result.finalDraft?.content).toEqual({ point: [1, 2] });
    expect(model?.requests[0]?.tool?.inputSchema).toMatchObject({ properties: { content: schema } });
  });
});
