#!/usr/bin/env node
import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { type EnvConfig, loadConfig } from "./config.js";
import { RedraftStack, stackName } from "./stack.js";

/**
 * `npx cdk synth|deploy -c env=dev|staging|prod` (default dev). `-c alarmEmail=ops@…` and
 * `-c alarmTopicArn=arn:aws:sns:…` set where alarms go. cdk-nag's AwsSolutions and Serverless checks run on every synth.
 */
const app = new App();
const envName = String(app.node.tryGetContext("env") ?? "dev");
const alarmEmail = app.node.tryGetContext("alarmEmail") as string | undefined;
const alarmTopicArn = app.node.tryGetContext("alarmTopicArn") as string | undefined;

// A bad setting, or prod without an alarm destination, is one line on stderr, not a stack trace.
try {
  const config: EnvConfig = loadConfig(envName, { alarmEmail, alarmTopicArn });
  new RedraftStack(app, stackName(config.envName), {
    config,
    description: `redraft (${config.envName}): serverless self-correction of LLM drafts`,
    env: {
      ...(config.account && { account: config.account }),
      ...(config.region && { region: config.region }),
    },
  });
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
// Any finding not acknowledged in code (with its reason) stops the synth.
Validations.of(app).addPlugins(
  new AwsSolutionsChecks(app, { verbose: true }),
  new ServerlessChecks(app, { verbose: true }),
);
