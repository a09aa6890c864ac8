import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * Issue 33, "the batch machine cannot overrun or starve the slots", read from the committed ASL the
 * cloud and the local runtime both execute. A batch-priced round's model states (CorrectExecution,
 * CorrectLogic, Judge inside RunRound) invoke λ rounds, whose model (`RoundModelClient`,
 * shared/batch/rounds.ts) answers from a collected batch result or parks the request for the next
 * Message Batches / Bedrock batch job: it never calls the model on demand, so it holds no model slot.
 * The on-demand work of a batch (RunOnDemand, and every item of a batch not batch-priced) runs as
 * child executions of the per-draft machine, whose model states wait in the model queue.
 */
const read = (name: string) => readFileSync(new URL(`../../contracts/${name}`, import.meta.url), "utf8");
const batchAsl = read("batch-state-machine.asl.json");
const perDraftAsl = read("state-machine.asl.json");

/** `${Kind:LogicalId}` → `Kind:LogicalId`. */
const placeholders = (asl: string, field: string) =>
  [
    ...new Set(
      [...asl.matchAll(new RegExp(`"${field}": "([^"]*)"`, "g"))].map((m) =>
        m[1]?.replace(/^\$\{(.*)\}$/, "$1"),
      ),
    ),
  ].sort();

describe("the batch machine and the model slots", () => {
  it("invokes no model function and sends nothing to the model queues itself", () => {
    const functions = placeholders(batchAsl, "FunctionName");
    expect(functions.length).toBeGreaterThan(0);
    expect(functions.filter((f) => /Functions(correct|judge)/.test(f ?? ""))).toEqual([]);
    expect(functions).toContain("FunctionAliasArn:BatchesRoundsroundsLive");
    expect(placeholders(batchAsl, "QueueUrl")).toEqual([]);
  });

  it("runs its on-demand drafts as per-draft executions, whose model calls wait in the model queue", () => {
    expect(placeholders(batchAsl, "StateMachineArn")).toEqual(["StateMachineArn:WorkflowStateMachine"]);
    expect(
      placeholders(perDraftAsl, "FunctionName").filter((f) => /Functions(correct|judge)/.test(f ?? "")),
    ).toEqual([]);
    expect(placeholders(perDraftAsl, "QueueUrl")).toEqual([
      "QueueUrl:ModelQueuecorrect",
      "QueueUrl:ModelQueuejudge",
    ]);
  });
});
