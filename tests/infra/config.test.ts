import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { ENV_NAMES, EnvConfigSchema, environments, loadConfig } from "../../infra/config.js";
import { stackName } from "../../infra/stack.js";
import { synthesize } from "./synth.js";

const dev = synthesize("dev");
const prod = synthesize("prod");

describe("per-environment settings", () => {
  it("validates every environment with the one schema", () => {
    for (const name of ENV_NAMES)
      expect(EnvConfigSchema.parse(environments[name])).toEqual(environments[name]);
  });

  it("fails clearly for an unknown environment", () => {
    expect(() => loadConfig("qa")).toThrow('unknown environment "qa": use -c env=dev|staging|prod');
  });

  it("fails on an invalid override, naming the field", () => {
    expect(() => loadConfig("dev", { alarmEmail: "not-an-address" })).toThrow(/alarmEmail/);
    expect(() => loadConfig("dev", { alarmTopicArn: "oncall" })).toThrow(/alarmTopicArn/);
    expect(loadConfig("dev", { alarmEmail: "ops@example.org" }).alarmEmail).toBe("ops@example.org");
  });

  it("rejects a Claude API id for the Bedrock provider", () => {
    const bad = { ...environments.prod, model: { provider: "bedrock", id: "claude-sonnet-5-5" } };
    expect(EnvConfigSchema.safeParse(bad).success).toBe(false);
  });

  it("names the stack, bus and state machine after the environment", () => {
    expect(dev.stack.stackName).toBe(stackName("dev"));
    expect(prod.stack.stackName).toBe("Redraft-prod");
    prod.template.hasResourceProperties("AWS::Events::EventBus", { Name: "redraft-prod" });
    prod.template.hasResourceProperties("AWS::StepFunctions::StateMachine", {
      StateMachineName: "redraft-prod",
    });
  });

  it("retains prod's data and destroys dev's", () => {
    for (const type of ["AWS::S3::Bucket", "AWS::DynamoDB::Table"]) {
      prod.template.allResources(type, { DeletionPolicy: "Retain", UpdateReplacePolicy: "Retain" });
      dev.template.allResources(type, { DeletionPolicy: "Delete" });
    }
    prod.template.hasResourceProperties("AWS::DynamoDB::Table", { DeletionProtectionEnabled: true });
    prod.template.resourceCountIs("Custom::S3AutoDeleteObjects", 0);
    dev.template.resourceCountIs("Custom::S3AutoDeleteObjects", 2);
  });

  it("configures the model, provider and limits per environment", () => {
    expect(environments.dev.model.id).not.toBe(environments.prod.model.id);
    dev.template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          MODEL_PROVIDER: "anthropic",
          MODEL_ID: environments.dev.model.id,
          ANTHROPIC_SECRET_ARN: Match.anyValue(),
          POWERTOOLS_LOG_LEVEL: "DEBUG",
        }),
      },
    });
    prod.template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          MODEL_PROVIDER: "bedrock",
          MODEL_ID: environments.prod.model.id,
          ANTHROPIC_SECRET_ARN: Match.absent(),
          POWERTOOLS_LOG_LEVEL: "INFO",
          DEPLOYMENT_CONFIG: JSON.stringify(loadConfig("prod").deployment),
        }),
      },
    });
    dev.template.hasResourceProperties("AWS::SecretsManager::Secret", {
      Name: "redraft-dev/anthropic-api-key",
    });
  });

  it("sets log retention per environment, and the alarm address from configuration", () => {
    prod.template.allResourcesProperties("AWS::Logs::LogGroup", { RetentionInDays: 180 });
    const { template } = synthesize("prod", { alarmEmail: "oncall@redraft.dev" });
    template.hasResourceProperties("AWS::SNS::Subscription", { Endpoint: "oncall@redraft.dev" });
  });
});
