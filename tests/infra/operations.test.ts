import { describe, expect, it } from "vitest";
import { type AslState, aslFromTemplate } from "../../contracts/asl.js";
import { LIVE_ALIAS, liveAlias } from "../../infra/constructs/functions.js";
import { logicalId, synthesize } from "./synth.js";

/** A synthesized resource's properties, read as the JSON they are. */
type Json = ReturnType<typeof JSON.parse>;

const prod = synthesize("prod");
const dev = synthesize("dev");
const resources = (t: typeof prod.template) =>
  t.toJSON().Resources as Record<string, { Type: string; Properties: Json }>;

/** Every Task state of a definition, into a Map's item processor too. */
function tasks(states: Record<string, AslState>): [string, AslState][] {
  return Object.entries(states).flatMap(([name, state]) => {
    const inner = (state.ItemProcessor as { States?: Record<string, AslState> } | undefined)?.States;
    return [
      ...(state.Type === "Task" ? [[name, state] as [string, AslState]] : []),
      ...(inner ? tasks(inner) : []),
    ];
  });
}

describe("operations: termination protection", () => {
  it("protects prod's stack from deletion, and leaves dev's and staging's deletable", () => {
    expect(prod.stack.terminationProtection).toBe(true);
    expect(dev.stack.terminationProtection).toBe(false);
    expect(synthesize("staging").stack.terminationProtection).toBe(false);
  });
});

describe("operations: every Lambda is invoked through its live alias", () => {
  const all = resources(prod.template);
  const functions = Object.entries(all).filter(
    ([id, r]) =>
      r.Type === "AWS::Lambda::Function" &&
      r.Properties.Handler === "index.handler" &&
      // CDK's own bucket-notifications handler is CDK's to invoke.
      !id.startsWith("BucketNotificationsHandler"),
  );

  it("gives each redraft function a `live` alias on a published version of its code", () => {
    expect(functions.length).toBeGreaterThanOrEqual(9);
    const aliases = Object.values(all).filter((r) => r.Type === "AWS::Lambda::Alias");
    for (const [id] of functions) {
      const alias = aliases.find((a) => a.Properties.FunctionName?.Ref === id);
      expect(alias?.Properties.Name, id).toBe(LIVE_ALIAS);
      const version = all[alias?.Properties.FunctionVersion["Fn::GetAtt"][0]];
      expect(version?.Type).toBe("AWS::Lambda::Version");
      expect(version?.Properties.FunctionName).toEqual({ Ref: id });
    }
  });

  it.each([
    ["the per-draft state machine", () => prod.stack.workflow.stateMachine],
    ["the batch state machine", () => prod.stack.batches.stateMachine],
  ])("points every Lambda task of %s at an alias, never at $LATEST", (_name, machine) => {
    const asl = aslFromTemplate(prod.template.toJSON(), { stateMachineLogicalId: logicalId(machine()) });
    const invoked = tasks(asl.States)
      .map(([, s]) =>
        s.Resource === "arn:aws:states:::lambda:invoke"
          ? (s.Parameters as { FunctionName?: string }).FunctionName
          : String(s.Resource),
      )
      .filter(
        (arn): arn is string =>
          typeof arn === "string" && arn.includes(":lambda:") && arn.includes(":function:"),
      );
    expect(invoked.length).toBeGreaterThan(0);
    for (const arn of invoked) expect(arn).toMatch(/:function:[^:]+:live$/);
  });

  it("points every rule's Lambda target at an alias", () => {
    const aliasIds = new Set(
      Object.entries(all)
        .filter(([, r]) => r.Type === "AWS::Lambda::Alias")
        .map(([id]) => id),
    );
    const targets = Object.values(all)
      .filter((r) => r.Type === "AWS::Events::Rule")
      .flatMap((r) => r.Properties.Targets as { Arn: Json }[])
      .filter((t) => JSON.stringify(t.Arn).includes("Lambda") || t.Arn.Ref || t.Arn["Fn::GetAtt"]);
    const lambdaTargets = targets.filter((t) => !JSON.stringify(t.Arn).includes("StateMachine"));
    expect(lambdaTargets.length).toBeGreaterThanOrEqual(6);
    for (const t of lambdaTargets) expect(aliasIds.has(t.Arn.Ref), JSON.stringify(t.Arn)).toBe(true);
    expect(logicalId(liveAlias(prod.stack.triggers.starter))).toMatch(/^TriggersstartLive/);
  });
});
