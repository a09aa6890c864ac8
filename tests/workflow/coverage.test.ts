import { beforeAll, describe, expect, it } from "vitest";
import type { AslDefinition } from "../../contracts/asl.js";
import { StateNames } from "../../contracts/state-names.js";
import { CONDITIONAL_CHECK_FAILED } from "../../infra/retries.js";
import { ErrorNames } from "../../shared/errors.js";
import { type CoverageReport, coverageOf, transitionsOf, transitionsTaken } from "./asl-coverage.js";
import { path, synthesizedAsl } from "./harness.js";
import { historiesOf, outcomeMismatch, runCorpus, SCENARIOS, type ScenarioResult } from "./scenarios.js";

let asl: AslDefinition;
let results: ScenarioResult[];
let report: CoverageReport;

beforeAll(async () => {
  asl = await synthesizedAsl();
  results = await runCorpus(asl);
  report = await coverageOf(asl, historiesOf(results));
}, 300_000);

const resultOf = (name: string) => {
  const result = results.find((r) => r.scenario.name === name);
  if (!result) throw new Error(`no scenario "${name}"`);
  return result;
};

describe("the scenario corpus, run through the synthesized state machine", () => {
  it.each(SCENARIOS.map((s) => s.name))("%s", (name) => {
    expect(outcomeMismatch(resultOf(name))).toEqual([]);
  });
});

describe("path coverage of the synthesized state machine", () => {
  it("enters every state and takes every Next, Choice rule, Default, Catch and Retry", () => {
    expect(
      { neverEntered: report.missingStates, neverTaken: report.missingTransitions },
      report.summary,
    ).toEqual({ neverEntered: [], neverTaken: [] });
    expect(report.complete).toBe(true);
  });

  it("enters BudgetExhausted both after an execution attempt and after the judge", () => {
    const into = transitionsOf(asl).filter((t) => t.to === StateNames.BudgetExhausted);
    expect(new Set(into.map((t) => t.from))).toEqual(
      new Set([StateNames.NextStep, StateNames.HasCriticalFindings]),
    );
    for (const t of into)
      expect(report.transitions.find((r) => r.id === t.id)?.taken, t.id).toBeGreaterThan(0);
  });

  it("tells apart two Choice rules that lead to the same state", async () => {
    const rules = transitionsOf(asl).filter(
      (t) => t.from === StateNames.HasCriticalFindings && t.to === StateNames.LogicUnresolved,
    );
    expect(rules).toHaveLength(2);
    const takenBy = async (name: string) => {
      const [execution] = resultOf(name).executions;
      const { taken } = await transitionsTaken(asl, execution?.summary.history ?? []);
      return rules.filter((r) => taken.includes(r.id)).map((r) => r.index);
    };
    const unusable = await takenBy("the judge's answer is unusable: logic_unresolved");
    const spent = await takenBy("a critical finding outlives the logic budget: logic_unresolved");
    expect(unusable).toHaveLength(1);
    expect(spent).toHaveLength(1);
    expect(unusable).not.toEqual(spent);
  });

  it("counts a declined retry (MaxAttempts 0) only when its error was not retried", async () => {
    const [execution] = resultOf(
      "MarkValidated's response is lost: the retry finds the status in place and carries on",
    ).executions;
    const { taken } = await transitionsTaken(asl, execution?.summary.history ?? []);
    const mark = (kind: string) =>
      taken.filter((id) => id.startsWith(`${StateNames.MarkValidated} `) && id.includes(kind));
    // Lost response: retried once as a task failure; the retry meets the status in place, is not retried, is caught.
    expect(mark("retry 1:")).toHaveLength(1);
    expect(mark("retry 0:")).toHaveLength(1);
    expect(mark("catch 0:")).toHaveLength(1);
  });

  it("fails a permanent error of a direct integration at once, and records why", () => {
    const [denied] = resultOf(
      "DynamoDB refuses MarkValidated (AccessDeniedException): not retried, recorded as failed / system_error",
    ).executions;
    const history = denied?.summary.history ?? [];
    const of = (state: string, type: string) => history.filter((h) => h.state === state && h.type === type);
    expect(of(StateNames.MarkValidated, "StateEntered")).toHaveLength(1);
    expect(of(StateNames.MarkValidated, "StateRetried")).toEqual([]);
    expect(of(StateNames.MarkValidated, "StateFailed").map((h) => h.error)).toEqual([
      "DynamoDB.AmazonDynamoDBException",
    ]);
    expect(path(history).slice(-3)).toEqual([
      StateNames.ClassifyFailure,
      StateNames.RecordFailure,
      StateNames.CorrectionFailed,
    ]);
    expect(denied?.summary.status).toBe("FAILED");
    expect(denied?.run).toMatchObject({ status: "failed", reason: "system_error" });
    expect(denied?.run?.message).toMatch(
      /^DynamoDB\.AmazonDynamoDBException: User: .* is not authorized to perform: dynamodb:UpdateItem \(Service: DynamoDB, Status Code: 400, Error Code: AccessDeniedException\)$/,
    );

    // S3 refusing the copy (S3.S3Exception, the name SlowDown and 500s share) is retried a few
    // times with backoff, then recorded.
    const [blocked] = resultOf("nothing can be published for a validated draft: system_error").executions;
    const publish = (blocked?.summary.history ?? []).filter(
      (h) => h.state === StateNames.PublishCorrectedDraft,
    );
    expect(publish.filter((h) => h.type === "StateRetried")).toHaveLength(3);
    expect(publish.filter((h) => h.type === "StateFailed").map((h) => h.error)).toEqual(
      Array(4).fill("S3.S3Exception"),
    );
  });

  it("retries what can pass: a copy that got no answer, DynamoDB's own fault, a failed event entry", () => {
    const retried = (scenario: string, state: string) =>
      (resultOf(scenario).executions[0]?.summary.history ?? [])
        .filter((h) => h.state === state && h.type === "StateFailed")
        .map((h) => h.error);
    expect(
      retried(
        "the bucket's folder is unreachable once when publishing: Publish is retried and the draft validates",
        StateNames.PublishCorrectedDraft,
      ),
    ).toEqual(["S3.SdkClientException"]);
    expect(
      retried(
        "DynamoDB is down for MarkValidated and for RecordFailure: the run keeps its last status",
        StateNames.MarkValidated,
      ),
    ).toEqual(Array(4).fill("DynamoDB.InternalServerErrorException"));
    expect(
      retried(
        "the bus is down when announcing a validated draft: the run stays validated",
        StateNames.AnnounceValidated,
      ),
    ).toEqual(Array(4).fill("EventBridge.FailedEntry"));
  });

  it("keeps the finalizer's failed against a Validate that outlived its execution, and RecordFailure too", () => {
    const [raced] = resultOf(
      "the finalizer fails the run while Validate still runs (an aborted execution): the run stays failed / aborted",
    ).executions;
    const history = raced?.summary.history ?? [];
    const failures = (state: string) =>
      history.filter((h) => h.state === state && h.type === "StateFailed").map((h) => h.error);
    expect(failures(StateNames.Validate)).toEqual([ErrorNames.RunFinished]);
    // RecordFailure fails only a run under way: its condition refuses, and the finalizer's record stands.
    expect(failures(StateNames.RecordFailure)).toEqual([CONDITIONAL_CHECK_FAILED]);
    expect(raced?.run).toMatchObject({ status: "failed", reason: "aborted" });
    expect(raced?.run?.message).toMatch(/ ABORTED$/);
    expect(raced?.run?.transitions.map((t) => t.status)).toEqual(["draft", "failed"]);
  });

  it("leaves a state the ASL gains uncovered until a scenario enters it", async () => {
    const announce = asl.States[StateNames.AnnounceValidated];
    const catchers = (announce?.Catch ?? []) as unknown[];
    const grown = {
      ...asl,
      States: {
        ...asl.States,
        // A new first Catch that no failure so far matches, and the state it leads to.
        [StateNames.AnnounceValidated]: {
          ...announce,
          Catch: [{ ErrorEquals: ["EventBridge.ThrottlingException"], Next: "NotifyOperators" }, ...catchers],
        },
        NotifyOperators: { Type: "Pass", Next: StateNames.CorrectionFailed },
      },
    } as AslDefinition;
    const grownReport = await coverageOf(grown, historiesOf(results));
    expect(grownReport.complete).toBe(false);
    expect(grownReport.missingStates).toEqual(["NotifyOperators"]);
    expect(grownReport.missingTransitions).toEqual([
      `${StateNames.AnnounceValidated} -> NotifyOperators [catch 0: EventBridge.ThrottlingException]`,
      `NotifyOperators -> ${StateNames.CorrectionFailed} [next]`,
    ]);
  });

  it("covers nothing without executions", async () => {
    const empty = await coverageOf(asl, []);
    expect(empty.missingStates).toHaveLength(Object.keys(asl.States).length);
    expect(empty.summary).toBe(
      `states 0/${Object.keys(asl.States).length}, transitions 0/${transitionsOf(asl).length}`,
    );
  });
});
