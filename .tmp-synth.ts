import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { loadConfig } from "/work/main/infra/config.js";
import { RedraftStack } from "/work/main/infra/stack.js";
import cdk from "/work/main/cdk.json" with { type: "json" };
for (const env of ["dev", "prod"]) {
  const t0 = Date.now();
  const app = new App({ context: { ...cdk.context, "aws:cdk:bundling-stacks": [] } });
  const stack = new RedraftStack(app, `Redraft-${env}`, { config: loadConfig(env) });
  const nag = new AwsSolutionsChecks(app);
  const report = nag.validateScope(app);
  console.log(env, "nag", JSON.stringify(report.violations.map(v => [v.ruleName, v.violatingResources.map(r => r.constructPath)]), null, 1));
  const asm = app.synth();
  console.log(env, "synth ms", Date.now() - t0);
}
