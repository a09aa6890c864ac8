import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { loadConfig } from "../../infra/config.js";
import { RedraftStack } from "../../infra/stack.js";
import cdk from "../../cdk.json" with { type: "json" };
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
import { Template } from "aws-cdk-lib/assertions";
import { aslFromTemplate } from "../../infra/asl.js";
{
  const app = new App({ context: { ...cdk.context, "aws:cdk:bundling-stacks": [] } });
  const stack = new RedraftStack(app, `Redraft-dev`, { config: loadConfig("dev") });
  const t = Template.fromStack(stack).toJSON();
  const asl = aslFromTemplate(t);
  console.log(JSON.stringify(asl, null, 1));
}
