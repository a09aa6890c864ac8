import type { Template } from "aws-cdk-lib/assertions";
import { type AslDefinition, type AslOptions, type AslState, aslFromTemplate } from "../../contracts/asl.js";

/** The synthesized state machine as a plain ASL object (references replaced by fake ARNs). */
export function getAsl(template: Template, options?: AslOptions): AslDefinition {
  return aslFromTemplate(template.toJSON(), options);
}

/** One state of the ASL; fails the test with the known names when it is missing. */
export function stateOf(asl: AslDefinition, name: string): AslState {
  const state = asl.States[name];
  if (!state) throw new Error(`no state "${name}" (states: ${Object.keys(asl.States).join(", ")})`);
  return state;
}

/** A top-level Choice rule: a comparison on `Variable`, or an `And` / `Or` / `Not` of comparisons. */
export interface AslChoiceRule {
  Variable?: string;
  Next: string;
  [operator: string]: unknown;
}

/** The rules of a Choice state, in evaluation order. */
export function choicesOf(asl: AslDefinition, name: string): AslChoiceRule[] {
  const state = stateOf(asl, name);
  if (state.Type !== "Choice") throw new Error(`"${name}" is a ${state.Type}, not a Choice`);
  return state.Choices as AslChoiceRule[];
}
