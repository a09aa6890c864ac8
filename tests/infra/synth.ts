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

/** An app with cdk.json's context that bundles no Lambda (no esbuild run in unit tests). */
export const unbundledApp = (): App => new App({ context: { ...cdkContext, "aws:cdk:bundling-stacks": [] } });

/** The alarm topic an environment that requires one is synthesized with when a test gives none. */
const TEST_ALARM_TOPIC = "arn:aws:sns:us-east-1:123456789012:redraft-tests-oncall";

export interface Synthesized {
  app: App;
  stack: RedraftStack;
  template: Template;
}

/**
 * One environment's stack, synthesized now without bundling the Lambdas (no esbuild run in unit
 * tests): for a test that changes the stack (adds an acknowledgment, removes a property), so that
 * no other test sees the change.
 */
export function synthesizeFresh(envName: EnvName, overrides: ConfigOverrides = {}): Synthesized {
  const app = unbundledApp();
  const config = loadConfig(envName, overrides);
  // An environment that refuses to synthesize without an alarm destination (prod) gets a test topic
  // when the test names none; tests/infra/observability.test.ts checks the refusal itself.
  const destined =
    config.requireAlarmDestination && !config.alarmEmail && !config.alarmTopicArn
      ? { ...config, alarmTopicArn: TEST_ALARM_TOPIC }
      : config;
  const stack = new RedraftStack(app, stackName(envName), { config: destined });
  return { app, stack, template: Template.fromStack(stack) };
}

/**
 * Stacks already synthesized in this process. The infra tests run without per-file isolation
 * (vitest.config.ts), so every file of a worker shares one synthesis per environment and overrides
 * instead of paying 2–7 s for each at import; a failure (an override the config refuses) is not kept.
 */
const synthesized = new Map<string, Synthesized>();

/**
 * One environment's stack, synthesized once per test process and shared: read it, never change it
 * (a test that changes one uses {@link synthesizeFresh}).
 */
export function synthesize(envName: EnvName, overrides: ConfigOverrides = {}): Synthesized {
  const key = JSON.stringify([envName, overrides]);
  let s = synthesized.get(key);
  if (!s) {
    s = synthesizeFresh(envName, overrides);
    synthesized.set(key, s);
  }
  return s;
}

/** The logical id CloudFormation gives a construct (its default child's, for L2 constructs). */
export const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);
