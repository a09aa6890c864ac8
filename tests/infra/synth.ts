import { readFileSync } from "node:fs";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { type EnvName, loadConfig } from "../../infra/config.js";
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
export function synthesize(envName: EnvName): Synthesized {
  const app = new App({ context: { ...cdkContext, "aws:cdk:bundling-stacks": [] } });
  const stack = new RedraftStack(app, stackName(envName), { config: loadConfig(envName) });
  return { app, stack, template: Template.fromStack(stack) };
}
