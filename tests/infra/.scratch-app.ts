import { App, Stack, Validations } from "aws-cdk-lib";
import { Queue } from "aws-cdk-lib/aws-sqs";
import { AwsSolutionsChecks } from "cdk-nag";
const app = new App();
const s = new Stack(app, "NagProbe");
new Queue(s, "Q");
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: false }));
