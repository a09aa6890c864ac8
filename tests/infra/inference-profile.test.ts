import { Match, type Template } from "aws-cdk-lib/assertions";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import type { IConstruct } from "constructs";
import { describe, expect, it } from "vitest";
import { environments } from "../../infra/config.js";
import { logicalId, synthesize } from "./synth.js";

const PROFILE = "AWS::Bedrock::ApplicationInferenceProfile";

const dev = synthesize("dev");
const prod = synthesize("prod");

type Statement = { Action: string | string[]; Resource: unknown };

/** The resources of the role's `bedrock:InvokeModel` statements. */
function invokeResources(template: Template, fn: IFunction): unknown[] {
  const policies = template.findResources("AWS::IAM::Policy", {
    Properties: { Roles: Match.arrayWith([{ Ref: logicalId(fn.role as IConstruct) }]) },
  });
  return Object.values(policies)
    .flatMap(
      (p) =>
        (p as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
          .Statement,
    )
    .filter((s) => [s.Action].flat().includes("bedrock:InvokeModel"))
    .flatMap((s) => [s.Resource].flat());
}

/** A function's environment variables as synthesized. */
function environmentOf(template: Template, fn: IFunction): Record<string, unknown> {
  const resource = template.toJSON().Resources[logicalId(fn as unknown as IConstruct)] as {
    Properties: { Environment?: { Variables?: Record<string, unknown> } };
  };
  return resource.Properties.Environment?.Variables ?? {};
}

describe("the Bedrock application inference profile (issue 33)", () => {
  it("prod (bedrock): one profile per environment, copied from the configured cross-Region profile", () => {
    expect(environments.prod.model.provider).toBe("bedrock");
    prod.template.resourceCountIs(PROFILE, 1);
    const [profile] = Object.values(prod.template.findResources(PROFILE)) as {
      Properties: { InferenceProfileName: string; ModelSource: { CopyFrom: unknown } };
    }[];
    expect(profile?.Properties.InferenceProfileName).toBe("redraft-prod");
    // `global.anthropic.…` is a system profile: the copy is made from its ARN in this account and Region.
    const copyFrom = JSON.stringify(profile?.Properties.ModelSource.CopyFrom);
    expect(copyFrom).toContain(`:inference-profile/${environments.prod.model.id}`);
    expect(copyFrom).toContain("AWS::Region");
    expect(copyFrom).toContain("AWS::AccountId");
  });

  it("carries the stack's tags, so model spend is allocated to the project and the environment", () => {
    const [profile] = Object.values(prod.template.findResources(PROFILE)) as {
      Properties: { Tags?: { Key: string; Value: string }[] };
    }[];
    expect(profile?.Properties.Tags).toEqual(
      expect.arrayContaining([
        { Key: "project", Value: "redraft" },
        { Key: "environment", Value: "prod" },
      ]),
    );
  });

  it("correct and judge may invoke it and get its ARN as MODEL_INFERENCE_PROFILE_ARN; MODEL_ID stays the model's id", () => {
    const profileId = logicalId(prod.stack.functions.inferenceProfile?.profile as IConstruct);
    const arn = { "Fn::GetAtt": [profileId, "InferenceProfileArn"] };
    for (const fn of [prod.stack.functions.correct, prod.stack.functions.judge]) {
      expect(invokeResources(prod.template, fn)).toContainEqual(arn);
      const env = environmentOf(prod.template, fn);
      expect(env.MODEL_INFERENCE_PROFILE_ARN).toEqual(arn);
      expect(env.MODEL_ID).toBe(environments.prod.model.id);
      expect(env.MODEL_PROVIDER).toBe("bedrock");
    }
    // The steps that never call the model get neither the ARN nor the grant.
    for (const fn of [prod.stack.functions.validate, prod.stack.functions.revalidate]) {
      expect(environmentOf(prod.template, fn)).not.toHaveProperty("MODEL_INFERENCE_PROFILE_ARN");
      expect(invokeResources(prod.template, fn)).toEqual([]);
    }
  });

  it("dev (anthropic): no profile, no variable", () => {
    expect(environments.dev.model.provider).toBe("anthropic");
    dev.template.resourceCountIs(PROFILE, 0);
    expect(dev.stack.functions.inferenceProfile).toBeUndefined();
    for (const fn of [dev.stack.functions.correct, dev.stack.functions.judge]) {
      expect(environmentOf(dev.template, fn)).not.toHaveProperty("MODEL_INFERENCE_PROFILE_ARN");
    }
  });
});
