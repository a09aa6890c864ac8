/**
 * The scenario corpus that drives every path of the synthesized state machine: each scenario runs
 * real drafts through the local runtime (real handlers, dynalite, a folder), with model answers
 * replayed from a cassette and faults injected only through the doubles in ./faults.ts.
 * tests/workflow/coverage.test.ts and `npm run coverage:asl` both run it.
 */

import { randomUUID } from "node:crypto";
import type { AslDefinition } from "../../contracts/asl.js";
import { type StateName, StateNames } from "../../contracts/state-names.js";
import { type ExecutionSummary, LOCAL_BUCKET, type LocalRuntime } from "../../local/runtime.js";
import { DeadlinePassedError } from "../../shared/errors.js";
import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import { blobKeys } from "../../shared/store/bucket-layout.js";
import type { RunRecord, RunStatus } from "../../shared/store/types.js";
import { DRAFT_WITH_ERRORS, FULLY_CORRECTED_DRAFT, PARTIALLY_CORRECTED_DRAFT } from "../fixtures/seed004.js";
import { answer } from "../loop/harness.js";
import {
  type BlobFault,
  busDown,
  FaultyBlobStore,
  faultyStatusUpdates,
  finalizedDuringValidate,
  publishUnreachableOnce,
  resultsBlocked,
} from "./faults.js";
import { openRuntime } from "./harness.js";

/** How one execution must end: its last state, and the run record it leaves (null: none). */
interface Outcome {
  terminal: StateName;
  status: RunStatus | null;
  reason?: string;
}

export interface Scenario {
  name: string;
  /** Cassette entries; undefined: no model configured. */
  responses?: unknown[];
  /** Executed in order, each uploaded under drafts/ as S3 would. */
  drafts: unknown[];
  /** Faults to inject before the executions; `runIds` are the executions' run ids. Returns an undo. */
  faults?: (runtime: LocalRuntime, runIds: readonly string[]) => Promise<(() => void) | undefined>;
  expect: Outcome[];
}

export interface ScenarioResult {
  scenario: Scenario;
  executions: { summary: ExecutionSummary; run: RunRecord | undefined }[];
}

const ID = DRAFT_WITH_ERRORS.id;
const WARNINGS_ONLY = { ...FULLY_CORRECTED_DRAFT, id: "w1", metadata: {} };
const full = FULLY_CORRECTED_DRAFT.content as { options: { key: string; text: string }[] };
/** Fixes the errors it was asked to, and makes two new ones. */
const NEW_ERRORS = {
  ...full,
  stem: "Which of the following is NOT appropriate?",
  options: [{ key: "A", text: "Always administer aspirin and prepare for PCI" }, ...full.options.slice(1)],
};
const DUPLICATE_OPTIONS = { ...full, options: [full.options[0], full.options[0], ...full.options.slice(2)] };
const WORSE = { ...(DRAFT_WITH_ERRORS.content as object), correct_answer: "Z" };
const WORSE_STILL = {
  ...(DRAFT_WITH_ERRORS.content as object),
  options: [{ key: "A", text: "All of the above" }],
};

const JUDGE_CONTEXT = {
  intent: "First-line treatment of acute MI",
  personas: [{ name: "expert", constraints: ["follows current guidelines"] }],
};
/** A clean draft the judge reviews. */
const JUDGED = { ...FULLY_CORRECTED_DRAFT, id: "j1", context: JUDGE_CONTEXT, options: { judge: true } };
/** A draft with errors the judge reviews once they are corrected. */
const JUDGED_WITH_ERRORS = { ...DRAFT_WITH_ERRORS, context: JUDGE_CONTEXT, options: { judge: true } };
const judge = (draftId: string, findings: unknown[]) => ({
  draftId,
  purpose: "judge",
  output: { findings },
  usage: { input_tokens: 600, output_tokens: 60 },
});
const CRITICAL = {
  ruleId: "intent_mismatch",
  severity: "error",
  confidence: 0.92,
  message: "PCI availability is not stated.",
  suggestion: "State it.",
  path: "/vignette",
};
const IMPROVED = { ...full, vignette: "A patient with STEMI at a PCI-capable hospital." };
const modelError = (draftId: string, purpose: "correct" | "judge", error: string) => ({
  draftId,
  purpose,
  error,
});

const validated: Outcome = { terminal: StateNames.DraftValidated, status: "validated" };
const review = (reason: string): Outcome => ({
  terminal: StateNames.DraftNeedsReview,
  status: "needs_manual_review",
  reason,
});
const failed = (reason: "system_error" | "model_error" | "deadline"): Outcome => ({
  terminal: StateNames.CorrectionFailed,
  status: "failed",
  reason,
});
/**
 * The model queue answers the run's model work with DeadlinePassedError from its `after`-th call on
 * (calls before it go to the cassette): what the consumer answers once the run's deadline passed
 * (shared/loop/model-queue.ts; tests/workflow/model-queue.test.ts reaches it through the clock).
 */
const deadlinePassesAfter = (after: number) => async (runtime: LocalRuntime) => {
  const deps = runtime.deps as { model?: LoopDeps["model"] };
  const model = deps.model;
  let calls = 0;
  if (model)
    deps.model = {
      provider: model.provider,
      model: model.model,
      complete: (request) =>
        ++calls > after
          ? Promise.reject(new DeadlinePassedError("2026-01-02T00:00:00.000Z"))
          : model.complete(request),
    };
  return () => {
    deps.model = model;
  };
};
const blobs =
  (faults: (runId: string) => BlobFault[]) =>
  async (runtime: LocalRuntime, [runId]: readonly string[]) => {
    FaultyBlobStore.install(runtime, faults(String(runId)));
    return undefined;
  };

export const SCENARIOS: readonly Scenario[] = [
  // The loop's outcomes.
  {
    name: "a warnings-only draft validates without a correction",
    responses: [],
    drafts: [WARNINGS_ONLY],
    expect: [validated],
  },
  {
    name: "a draft with errors is corrected on attempt 1",
    responses: [answer(ID, FULLY_CORRECTED_DRAFT.content)],
    drafts: [DRAFT_WITH_ERRORS],
    expect: [validated],
  },
  {
    name: "two attempts leave errors: max_attempts",
    responses: [answer(ID, NEW_ERRORS), answer(ID, DUPLICATE_OPTIONS)],
    drafts: [DRAFT_WITH_ERRORS],
    expect: [review("max_attempts")],
  },
  {
    name: "a draft allowing no attempt goes to review at once: max_attempts",
    responses: [],
    drafts: [{ ...DRAFT_WITH_ERRORS, options: { maxAttempts: 0 } }],
    expect: [review("max_attempts")],
  },
  { name: "no model configured: no_model", drafts: [DRAFT_WITH_ERRORS], expect: [review("no_model")] },
  {
    name: "the same rule fails in every attempt: circuit_breaker",
    responses: [answer(ID, PARTIALLY_CORRECTED_DRAFT.content), answer(ID, PARTIALLY_CORRECTED_DRAFT.content)],
    drafts: [DRAFT_WITH_ERRORS],
    expect: [review("circuit_breaker")],
  },
  {
    name: "two answers in a row worse than the best: stuck",
    responses: [answer(ID, WORSE), answer(ID, WORSE_STILL)],
    drafts: [{ ...DRAFT_WITH_ERRORS, options: { maxAttempts: 4, breakerThreshold: 3 } }],
    expect: [review("stuck")],
  },
  {
    name: "the token budget is spent by an execution attempt: budget_exhausted",
    responses: [answer(ID, PARTIALLY_CORRECTED_DRAFT.content, { input_tokens: 1200, output_tokens: 800 })],
    drafts: [{ ...DRAFT_WITH_ERRORS, options: { maxTokens: 1000 } }],
    expect: [review("budget_exhausted")],
  },
  {
    name: "the token budget is spent by a judge with critical findings: budget_exhausted",
    responses: [judge("j1", [CRITICAL])],
    drafts: [{ ...JUDGED, options: { judge: true, maxTokens: 500 } }],
    expect: [review("budget_exhausted")],
  },
  {
    name: "input that is not JSON is rejected",
    responses: [],
    drafts: ["{ not json"],
    expect: [{ terminal: StateNames.InputRejected, status: "rejected", reason: "invalid_input" }],
  },
  {
    name: "a second delivery of the same content is ignored",
    responses: [answer(ID, FULLY_CORRECTED_DRAFT.content)],
    drafts: [DRAFT_WITH_ERRORS, DRAFT_WITH_ERRORS],
    expect: [validated, { terminal: StateNames.DuplicateIgnored, status: "rejected", reason: "duplicate" }],
  },

  {
    name: "the finalizer fails the run while Validate still runs (an aborted execution): the run stays failed / aborted",
    responses: [],
    drafts: [DRAFT_WITH_ERRORS],
    faults: async (runtime, [runId]) => {
      finalizedDuringValidate(runtime, String(runId));
      return undefined;
    },
    expect: [{ terminal: StateNames.CorrectionFailed, status: "failed", reason: "aborted" }],
  },

  // The logic phase.
  { name: "the judge finds nothing", responses: [judge("j1", [])], drafts: [JUDGED], expect: [validated] },
  {
    name: "a critical finding is fixed by one logic correction",
    responses: [judge("j1", [CRITICAL]), answer("j1", IMPROVED), judge("j1", [])],
    drafts: [JUDGED],
    expect: [validated],
  },
  {
    name: "a critical finding outlives the logic budget: logic_unresolved",
    responses: [judge("j1", [CRITICAL]), answer("j1", IMPROVED), judge("j1", [CRITICAL])],
    drafts: [JUDGED],
    expect: [review("logic_unresolved")],
  },
  {
    name: "the judge's answer is unusable: logic_unresolved",
    responses: [
      {
        draftId: "j1",
        purpose: "judge",
        raw: "looks fine to me",
        usage: { input_tokens: 600, output_tokens: 5 },
      },
    ],
    drafts: [JUDGED],
    expect: [review("logic_unresolved")],
  },

  // Model faults: retried when transient, recorded as the model's when not.
  {
    name: "a throttled, then overloaded model call is retried and answers",
    responses: [
      modelError(ID, "correct", "rate_limited"),
      modelError(ID, "correct", "overloaded"),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
    ],
    drafts: [DRAFT_WITH_ERRORS],
    expect: [validated],
  },
  // The model queue: work that waited past the run's deadline is recorded as such, from each model state.
  {
    name: "the correction waits past the run's deadline, and RecordDeadline's response is lost: deadline",
    responses: [],
    drafts: [DRAFT_WITH_ERRORS],
    faults: async (runtime) => {
      const undoModel = await deadlinePassesAfter(0)(runtime);
      const undoRecord = faultyStatusUpdates(["failed"], "response-lost");
      return () => {
        undoRecord();
        undoModel();
      };
    },
    expect: [failed("deadline")],
  },
  {
    name: "the judge waits past the run's deadline: deadline",
    responses: [],
    drafts: [JUDGED],
    faults: deadlinePassesAfter(0),
    expect: [failed("deadline")],
  },
  {
    name: "the logic correction waits past the run's deadline: deadline",
    responses: [judge("j1", [CRITICAL])],
    drafts: [JUDGED],
    faults: deadlinePassesAfter(1),
    expect: [failed("deadline")],
  },
  {
    name: "SQS refuses every model state's first SendMessage once, and every retry carries on",
    responses: [
      answer(ID, FULLY_CORRECTED_DRAFT.content),
      judge(ID, [CRITICAL]),
      answer(ID, IMPROVED),
      judge(ID, []),
    ],
    drafts: [JUDGED_WITH_ERRORS],
    faults: async (runtime) => {
      const queue = runtime.modelQueue;
      const submit = queue.submit.bind(queue);
      let sends = 0;
      // Every other send fails as the SDK integration names a request that got no answer.
      queue.submit = (task, run) =>
        ++sends % 2 === 1
          ? Promise.reject(Object.assign(new Error("socket hang up"), { name: "SQS.SdkClientException" }))
          : submit(task, run);
      return () => {
        queue.submit = submit;
      };
    },
    expect: [validated],
  },
  {
    name: "the model refuses the correction: model_error",
    responses: [modelError(ID, "correct", "failed")],
    drafts: [DRAFT_WITH_ERRORS],
    expect: [failed("model_error")],
  },
  {
    name: "the judge is throttled, retried, then refuses: model_error",
    responses: [modelError("j1", "judge", "rate_limited"), modelError("j1", "judge", "failed")],
    drafts: [JUDGED],
    expect: [failed("model_error")],
  },
  {
    name: "the logic correction is throttled, retried, then refused: model_error",
    responses: [
      judge("j1", [CRITICAL]),
      modelError("j1", "correct", "rate_limited"),
      modelError("j1", "correct", "failed"),
    ],
    drafts: [JUDGED],
    expect: [failed("model_error")],
  },

  // Storage faults in the Lambdas: S3 slowing down is retried in every one of them; a refusal is a system failure.
  {
    name: "S3 slows down once in each Lambda of both loops, and every retry carries on",
    // A model answer whose own write failed is asked for again (twice in all); the judge's answer
    // was stored before its report failed to write, so the retried Judge reuses it (once).
    responses: [
      answer(ID, FULLY_CORRECTED_DRAFT.content),
      answer(ID, FULLY_CORRECTED_DRAFT.content),
      judge(ID, [CRITICAL]),
      answer(ID, IMPROVED),
      answer(ID, IMPROVED),
      judge(ID, []),
    ],
    drafts: [JUDGED_WITH_ERRORS],
    faults: blobs((runId) =>
      [
        blobKeys.original(runId), // Validate
        blobKeys.attemptAnswer(runId, 1), // CorrectExecution
        blobKeys.attemptDraft(runId, 1), // Revalidate
        blobKeys.judgeReport(runId, 1), // Judge
        blobKeys.attemptAnswer(runId, 2), // CorrectLogic
        blobKeys.attemptDraft(runId, 2), // RevalidateLogic
      ].map((key) => ({ key, kind: "unavailable", times: 1 })),
    ),
    expect: [validated],
  },
  {
    name: "S3 refuses the run's copy of the upload in Validate: system_error before the run is registered",
    responses: [],
    drafts: [DRAFT_WITH_ERRORS],
    faults: blobs((runId) => [{ key: blobKeys.original(runId), kind: "refused" }]),
    expect: [failed("system_error")],
  },
  {
    name: "S3 refuses the attempt's draft in Revalidate: system_error",
    responses: [answer(ID, FULLY_CORRECTED_DRAFT.content)],
    drafts: [DRAFT_WITH_ERRORS],
    faults: blobs((runId) => [{ key: blobKeys.attemptDraft(runId, 1), kind: "refused" }]),
    expect: [failed("system_error")],
  },
  {
    name: "S3 refuses the logic attempt's draft in RevalidateLogic: system_error",
    responses: [judge("j1", [CRITICAL]), answer("j1", IMPROVED)],
    drafts: [JUDGED],
    faults: blobs((runId) => [{ key: blobKeys.attemptDraft(runId, 1), kind: "refused" }]),
    expect: [failed("system_error")],
  },

  // Faults in the direct integrations: Publish (S3), Mark/Record (DynamoDB), Announce (EventBridge).
  {
    name: "nothing can be published for a validated draft: system_error",
    responses: [],
    drafts: [WARNINGS_ONLY],
    faults: async (runtime) => {
      await resultsBlocked(runtime, WARNINGS_ONLY.id);
      return undefined;
    },
    expect: [failed("system_error")],
  },
  {
    name: "nothing can be published for a draft that needs review: system_error",
    drafts: [DRAFT_WITH_ERRORS],
    faults: async (runtime) => {
      await resultsBlocked(runtime, ID);
      return undefined;
    },
    expect: [failed("system_error")],
  },
  {
    name: "the bucket's folder is unreachable once when publishing: Publish is retried and the draft validates",
    responses: [],
    drafts: [WARNINGS_ONLY],
    faults: async () => publishUnreachableOnce(),
    expect: [validated],
  },
  {
    name: "the bucket's folder is unreachable once when publishing for review: Publish is retried, the draft waits for review",
    drafts: [DRAFT_WITH_ERRORS],
    faults: async () => publishUnreachableOnce(),
    expect: [review("no_model")],
  },
  {
    name: "DynamoDB refuses MarkValidated (AccessDeniedException): not retried, recorded as failed / system_error",
    responses: [],
    drafts: [WARNINGS_ONLY],
    faults: async () => faultyStatusUpdates(["validated"], "denied"),
    expect: [failed("system_error")],
  },
  {
    name: "MarkValidated's response is lost: the retry finds the status in place and carries on",
    responses: [],
    drafts: [WARNINGS_ONLY],
    faults: async () => faultyStatusUpdates(["validated"], "response-lost"),
    expect: [validated],
  },
  {
    name: "MarkNeedsReview's response is lost: the retry finds the status in place and carries on",
    drafts: [DRAFT_WITH_ERRORS],
    faults: async () => faultyStatusUpdates(["needs_manual_review"], "response-lost"),
    expect: [review("no_model")],
  },
  {
    name: "DynamoDB is down for MarkValidated and for RecordFailure: the run keeps its last status",
    responses: [],
    drafts: [WARNINGS_ONLY],
    faults: async () => faultyStatusUpdates(["validated", "failed"], "down"),
    expect: [{ terminal: StateNames.CorrectionFailed, status: "draft" }],
  },
  {
    name: "DynamoDB is down for MarkNeedsReview, and RecordFailure's response is lost: system_error",
    drafts: [DRAFT_WITH_ERRORS],
    faults: async () => {
      const undoMark = faultyStatusUpdates(["needs_manual_review"], "down");
      const undoRecord = faultyStatusUpdates(["failed"], "response-lost");
      return () => {
        undoRecord();
        undoMark();
      };
    },
    expect: [failed("system_error")],
  },
  {
    name: "RecordModelFailure's response is lost: the retry finds the status in place, the execution still fails: model_error",
    responses: [modelError(ID, "correct", "failed")],
    drafts: [DRAFT_WITH_ERRORS],
    faults: async () => faultyStatusUpdates(["failed"], "response-lost"),
    expect: [failed("model_error")],
  },
  {
    name: "the bus is down when announcing a validated draft: the run stays validated",
    responses: [],
    drafts: [WARNINGS_ONLY],
    faults: async (runtime) => {
      await busDown(runtime);
      return undefined;
    },
    expect: [{ terminal: StateNames.CorrectionFailed, status: "validated" }],
  },
  {
    name: "the bus is down when announcing a review: the run stays in review",
    drafts: [DRAFT_WITH_ERRORS],
    faults: async (runtime) => {
      await busDown(runtime);
      return undefined;
    },
    expect: [{ terminal: StateNames.CorrectionFailed, status: "needs_manual_review", reason: "no_model" }],
  },
];

/** Runs one scenario in a fresh data folder and returns each execution with the run it left. */
async function runScenario(scenario: Scenario, asl: AslDefinition): Promise<ScenarioResult> {
  const rt = await openRuntime(scenario.responses, {}, asl);
  const runIds = scenario.drafts.map(() => randomUUID());
  const undo = await scenario.faults?.(rt.runtime, runIds);
  try {
    const executions: ScenarioResult["executions"] = [];
    for (const [i, draft] of scenario.drafts.entries()) {
      const body = typeof draft === "string" ? draft : JSON.stringify(draft);
      const key = `drafts/upload-${i}.json`;
      await rt.runtime.blobs.putIfAbsent(key, body);
      const summary = await rt.runtime.execute({ draftRef: { bucket: LOCAL_BUCKET, key } }, runIds[i]);
      executions.push({ summary, run: await rt.runtime.runs.getRun(summary.runId) });
    }
    return { scenario, executions };
  } finally {
    undo?.();
    await rt.close();
  }
}

/**
 * Runs the whole corpus on `asl`, one scenario after another (faults on the DynamoDB client are
 * process-wide).
 */
export async function runCorpus(
  asl: AslDefinition,
  onResult?: (result: ScenarioResult) => void,
  scenarios: readonly Scenario[] = SCENARIOS,
): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    const result = await runScenario(scenario, asl);
    onResult?.(result);
    results.push(result);
  }
  return results;
}

/** Where an execution differs from what its scenario expects; empty when it ends as it should. */
export function outcomeMismatch(result: ScenarioResult): string[] {
  const problems: string[] = [];
  const { scenario, executions } = result;
  if (executions.length !== scenario.expect.length)
    problems.push(`${executions.length} executions, expected ${scenario.expect.length}`);
  for (const [i, expected] of scenario.expect.entries()) {
    const e = executions[i];
    const actual = {
      terminal: e?.summary.terminalState,
      status: e?.run?.status ?? null,
      ...(expected.reason !== undefined && { reason: e?.run?.reason }),
    };
    if (JSON.stringify(actual) !== JSON.stringify(expected))
      problems.push(`execution ${i}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
  }
  return problems;
}

/** The histories of every execution of the corpus, for {@link coverageOf}. */
export const historiesOf = (results: readonly ScenarioResult[]) =>
  results.flatMap((r) => r.executions.map((e) => e.summary.history));
