// Promise.withResolvers polyfill for Node 20
const P = Promise as unknown as { withResolvers?: unknown };
if (!P.withResolvers) {
  P.withResolvers = () => { let resolve, reject; const promise = new Promise((a, b) => { resolve = a; reject = b; }); return { promise, resolve, reject }; };
}
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { loadConfig } from "../../infra/config.js";
import { RedraftStack } from "../../infra/stack.js";
import { aslFromTemplate } from "../../infra/asl.js";
import cdk from "../../cdk.json" with { type: "json" };
const { StateMachine } = await import("aws-local-stepfunctions");
const app = new App({ context: { ...cdk.context, "aws:cdk:bundling-stacks": [] } });
const stack = new RedraftStack(app, `Redraft-dev`, { config: loadConfig("dev") });
const asl = aslFromTemplate(Template.fromStack(stack).toJSON());
const sm = new StateMachine(asl as never, { validationOptions: {} });
const base = (errors: number) => ({
  runId: "r1", draftId: "d1", kind: "mcq", decision: "correct", phase: "execution",
  counters: { execution: 0, logic: 0 }, limits: { maxAttempts: 2, breakerThreshold: 2, stuckAfter: 2, maxLogicAttempts: 1, maxTokens: 0, maxCostUsd: 0 },
  modelAvailable: true, verdict: { errors, warnings: 0, score: 0.5, breakerTripped: false, stuck: false, budgetExhausted: false },
  best: { attempt: 0, draftRef: "runs/r1/attempts/0/draft.json", reportRef: "x", errors, score: 0.5 },
});
const calls: string[] = [];
const rec = (name: string) => async (input: unknown) => { calls.push(`${name} ${JSON.stringify(input).slice(0, 400)}`); return {}; };
let revalidations = 0;
const overrides = {
  taskResourceLocalHandlers: {
    Validate: async (input: any) => { calls.push(`Validate ${JSON.stringify(input)}`); return { Payload: base(2) }; },
    CorrectExecution: async (input: any) => { calls.push(`Correct counters=${JSON.stringify(input.Payload.counters)}`); return { Payload: input.Payload }; },
    Revalidate: async (input: any) => { revalidations++; calls.push(`Revalidate counters=${JSON.stringify(input.Payload.counters)}`); return { Payload: { ...input.Payload, verdict: { ...input.Payload.verdict, errors: process.argv[2] === "review" ? 1 : 0 } } }; },
    PublishCorrectedDraft: rec("PublishCorrectedDraft"), PublishBestDraft: rec("PublishBestDraft"),
    MarkValidated: rec("MarkValidated"), MarkNeedsReview: rec("MarkNeedsReview"), RecordFailure: rec("RecordFailure"),
    AnnounceValidated: rec("AnnounceValidated"), AnnounceNeedsReview: rec("AnnounceNeedsReview"),
  },
  retryIntervalOverrides: Object.fromEntries(Object.keys(asl.States).map((k) => [k, 0])),
};
const exec = sm.run({ draft: { id: "d1" } }, { overrides, context: { Execution: { Name: "r1", Input: {}, StartTime: new Date().toISOString() }, State: { EnteredTime: new Date().toISOString(), Name: "x" } } } as never);
try {
  const out = await exec.result;
  console.log("OUT", JSON.stringify(out).slice(0, 300));
} catch (e) { console.log("ERR", e); }
console.log(calls.join("\n"));
