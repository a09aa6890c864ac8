import { readFileSync } from "node:fs";
import { App, type CfnElement, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type { IConstruct } from "constructs";
import { type ConfigOverrides, type EnvName, loadConfig } from "../../infra/config.js";
import { RedraftStack, stackName } from "../../infra/stack.js";

/** The feature flags and context of cdk.json, so that tests synthesize what `cdk synth` does. */
const cdkContext = (
  JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as {
    context: Record<string, unknown>;
  }
).context;

export interface Synthesized {
  app: App;
  stack: RedraftStack;
  template: Template;
}

/** One environment's stack, synthesized without bundling the Lambdas (no esbuild run in unit tests). */
export function synthesize(envName: EnvName, overrides: ConfigOverrides = {}): Synthesized {
  const app = new App({ context: { ...cdkContext, "aws:cdk:bundling-stacks": [] } });
  const stack = new RedraftStack(app, stackName(envName), { config: loadConfig(envName, overrides) });
  return { app, stack, template: Template.fromStack(stack) };
}

/** The logical id CloudFormation gives a construct (its default child's, for L2 constructs). */
export const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);
