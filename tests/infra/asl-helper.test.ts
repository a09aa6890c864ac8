import { describe, expect, it } from "vitest";
import { aslFromTemplate, stateMachineIds, type TemplateJson } from "../../contracts/asl.js";

const definition = (parts: unknown[]) => ({ "Fn::Join": ["", parts] });

/** A minimal template in the shape CDK synthesizes: the definition is a Fn::Join of ASL text and references. */
const template: TemplateJson = {
  Resources: {
    Fn1: { Type: "AWS::Lambda::Function", Properties: {} },
    Table1: { Type: "AWS::DynamoDB::Table", Properties: {} },
    Bus1: { Type: "AWS::Events::EventBus", Properties: { Name: "redraft-test" } },
    Bucket1: { Type: "AWS::S3::Bucket", Properties: {} },
    Machine: {
      Type: "AWS::StepFunctions::StateMachine",
      Properties: {
        DefinitionString: definition([
          '{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:',
          { Ref: "AWS::Partition" },
          ':states:::lambda:invoke","Parameters":{"FunctionName":"',
          { "Fn::GetAtt": ["Fn1", "Arn"] },
          '","Table":"',
          { Ref: "Table1" },
          '","Bus":"',
          { "Fn::GetAtt": ["Bus1", "Arn"] },
          '","Bucket":"',
          { Ref: "Bucket1" },
          '"},"End":true}}}',
        ]),
      },
    },
  },
};

describe("aslFromTemplate", () => {
  it("resolves references to deterministic fake names and ARNs", () => {
    const asl = aslFromTemplate(template);
    expect(asl.StartAt).toBe("A");
    expect(asl.States.A).toEqual({
      Type: "Task",
      Resource: "arn:aws:states:::lambda:invoke",
      Parameters: {
        FunctionName: "arn:aws:lambda:us-east-1:123456789012:function:Fn1",
        Table: "Table1",
        Bus: "arn:aws:events:us-east-1:123456789012:event-bus/redraft-test",
        Bucket: "bucket1",
      },
      End: true,
    });
    expect(aslFromTemplate(template)).toEqual(asl);
  });

  it("lets the caller choose values (the local runtime's bucket, table…)", () => {
    const asl = aslFromTemplate(template, {
      region: "eu-west-1",
      resolve: (ref) => (ref.type === "AWS::S3::Bucket" ? "local-bucket" : undefined),
    });
    expect(asl.States.A?.Parameters).toMatchObject({
      Bucket: "local-bucket",
      FunctionName: "arn:aws:lambda:eu-west-1:123456789012:function:Fn1",
    });
  });

  it("applies DefinitionSubstitutions", () => {
    const withSubs: TemplateJson = {
      Resources: {
        Fn1: { Type: "AWS::Lambda::Function" },
        M: {
          Type: "AWS::StepFunctions::StateMachine",
          Properties: {
            // biome-ignore lint/suspicious/noTemplateCurlyInString: a DefinitionSubstitutions placeholder, not a JS template
            DefinitionString: '{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${fn}","End":true}}}',
            DefinitionSubstitutions: { fn: { "Fn::GetAtt": ["Fn1", "Arn"] } },
          },
        },
      },
    };
    expect(aslFromTemplate(withSubs).States.A?.Resource).toBe(
      "arn:aws:lambda:us-east-1:123456789012:function:Fn1",
    );
  });

  it("says what is wrong instead of guessing", () => {
    expect(() => aslFromTemplate({ Resources: {} })).toThrow("no state machine");
    const two: TemplateJson = {
      Resources: { ...template.Resources, Other: template.Resources?.Machine as never },
    };
    expect(stateMachineIds(two)).toEqual(["Machine", "Other"]);
    expect(() => aslFromTemplate(two)).toThrow(/2 state machines.*stateMachineLogicalId/);
    expect(aslFromTemplate(two, { stateMachineLogicalId: "Other" }).StartAt).toBe("A");
    const unknownRef: TemplateJson = {
      Resources: {
        M: {
          Type: "AWS::StepFunctions::StateMachine",
          Properties: { DefinitionString: definition(['{"x":"', { Ref: "Nope" }, '"}']) },
        },
      },
    };
    expect(() => aslFromTemplate(unknownRef)).toThrow("Nope, which is not in the template");
    const unsupported: TemplateJson = {
      Resources: {
        M: {
          Type: "AWS::StepFunctions::StateMachine",
          Properties: { DefinitionString: { "Fn::ImportValue": "x" } },
        },
      },
    };
    expect(() => aslFromTemplate(unsupported)).toThrow("unsupported intrinsic Fn::ImportValue");
  });
});
