import { App } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { loadConfig } from "../../infra/config.js";
import { RedraftStack } from "../../infra/stack.js";
import cdk from "../../cdk.json" with { type: "json" };
const env = process.argv[2] ?? "dev";
const app = new App({ context: { ...cdk.context, "aws:cdk:bundling-stacks": [] } });
const stack = new RedraftStack(app, `Redraft-${env}`, { config: loadConfig(env) });
const t = Template.fromStack(stack);
const a = Annotations.fromStack(stack);
console.log("WARN", JSON.stringify(a.findWarning("*", Match.anyValue()).map(m => [m.id, m.entry.data])));
console.log("ERR", JSON.stringify(a.findError("*", Match.anyValue()).map(m => [m.id, m.entry.data])));
const j = t.toJSON();
for (const [id, r] of Object.entries<any>(j.Resources)) {
  if (r.Type === "AWS::IAM::Policy") console.log(id, JSON.stringify(r.Properties.PolicyDocument.Statement));
}
const types: Record<string, number> = {};
for (const r of Object.values<any>(j.Resources)) types[r.Type] = (types[r.Type] ?? 0) + 1;
console.log(types);
