import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { loadConfig } from "../../infra/config.js";
import { RedraftStack } from "../../infra/stack.js";
import { aslFromTemplate } from "../../infra/asl.js";
import cdk from "../../cdk.json" with { type: "json" };
// @ts-ignore
import aslValidator from "asl-validator";
const app = new App({ context: { ...cdk.context, "aws:cdk:bundling-stacks": [] } });
const stack = new RedraftStack(app, `Redraft-dev`, { config: loadConfig("dev") });
const asl = aslFromTemplate(Template.fromStack(stack).toJSON());
const r = aslValidator(structuredClone(asl));
console.log(r.isValid, JSON.stringify(r.errors, null, 1));
