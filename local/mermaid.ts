import type { AslDefinition, AslState } from "../contracts/asl.js";

/** Mermaid node ids must be plain; state names hold `?` and spaces. */
const nodeId = (name: string) => name.replace(/[^A-Za-z0-9_]/g, "_");
const label = (text: string) => text.replace(/"/g, "'");

function shape(name: string, state: AslState): string {
  const id = nodeId(name);
  switch (state.Type) {
    case "Choice":
      return `${id}{"${label(name)}"}`;
    case "Succeed":
      return `${id}(["${label(name)}"])`;
    case "Fail":
      return `${id}[["${label(name)}"]]`;
    case "Pass":
      return `${id}["${label(name)}"]`;
    default:
      return `${id}("${label(name)}")`;
  }
}

/** A short reading of a Choice rule: `$.verdict.errors == 0`, `$.counters.execution >= $.limits.maxAttempts`. */
function describeCondition(rule: Record<string, unknown>): string {
  if (Array.isArray(rule.And))
    return rule.And.map((r) => describeCondition(r as Record<string, unknown>)).join(" and ");
  if (Array.isArray(rule.Or))
    return rule.Or.map((r) => describeCondition(r as Record<string, unknown>)).join(" or ");
  if (rule.Not) return `not (${describeCondition(rule.Not as Record<string, unknown>)})`;
  const ops: Record<string, string> = {
    StringEquals: "==",
    NumericEquals: "==",
    BooleanEquals: "==",
    NumericGreaterThanEquals: ">=",
    NumericGreaterThanEqualsPath: ">=",
    NumericGreaterThan: ">",
    NumericLessThan: "<",
    NumericLessThanEquals: "<=",
    NumericEqualsPath: "==",
  };
  for (const [key, value] of Object.entries(rule)) {
    if (key === "Variable" || key === "Next") continue;
    const op = ops[key] ?? key;
    const shown = typeof value === "string" && !key.endsWith("Path") ? JSON.stringify(value) : String(value);
    return `${String(rule.Variable)} ${op} ${shown}`;
  }
  return String(rule.Variable);
}

/**
 * The state machine as a Mermaid flowchart, generated from the synthesized ASL (docs/operations.md's
 * architecture picture is this output; a test keeps the two equal).
 */
export function aslToMermaid(asl: AslDefinition): string {
  const lines = ["flowchart TD"];
  const states = Object.entries(asl.States);
  for (const [name, state] of states) lines.push(`  ${shape(name, state)}`);
  lines.push(`  start((start)) --> ${nodeId(asl.StartAt)}`);
  for (const [name, state] of states) {
    const from = nodeId(name);
    if (Array.isArray(state.Choices)) {
      for (const rule of state.Choices as Record<string, unknown>[]) {
        lines.push(`  ${from} -->|"${label(describeCondition(rule))}"| ${nodeId(String(rule.Next))}`);
      }
      if (state.Default) lines.push(`  ${from} -->|otherwise| ${nodeId(String(state.Default))}`);
    }
    if (typeof state.Next === "string") lines.push(`  ${from} --> ${nodeId(state.Next)}`);
    if (Array.isArray(state.Catch)) {
      for (const c of state.Catch as { ErrorEquals: string[]; Next: string }[]) {
        lines.push(`  ${from} -.->|"${label(c.ErrorEquals.join(", "))}"| ${nodeId(c.Next)}`);
      }
    }
  }
  return lines.join("\n");
}
