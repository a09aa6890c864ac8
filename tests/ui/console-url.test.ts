import { describe, expect, it } from "vitest";
import { executionConsoleUrl } from "../../shared/console-url.js";

const ARN =
  "arn:aws:states:eu-west-3:123456789012:execution:redraft-dev-Workflow1A2B:3f2c9a1e-1111-4222-8333-444455556666";

describe("the Step Functions console link of an execution", () => {
  it("opens the execution's page in the ARN's own region", () => {
    expect(executionConsoleUrl(ARN)).toBe(
      `https://eu-west-3.console.aws.amazon.com/states/home?region=eu-west-3#/v2/executions/details/${ARN}`,
    );
    const east = ARN.replace("eu-west-3", "us-east-1");
    expect(new URL(executionConsoleUrl(east) ?? "").host).toBe("us-east-1.console.aws.amazon.com");
    expect(new URL(executionConsoleUrl(east) ?? "").searchParams.get("region")).toBe("us-east-1");
  });

  it("links batch items and reruns, whose names hold dots and dashes", () => {
    const item = "arn:aws:states:ap-southeast-2:123456789012:execution:redraft-dev:b-0123abcd-12.rerun-1";
    expect(executionConsoleUrl(item)).toMatch(/#\/v2\/executions\/details\/arn:aws:states:ap-southeast-2:/);
  });

  it("gives no link for what is not a standard execution of the aws partition", () => {
    for (const arn of [
      "",
      "not an arn",
      // another partition, whose console lives elsewhere
      ARN.replace("arn:aws:", "arn:aws-cn:"),
      // a state machine, not an execution
      "arn:aws:states:eu-west-3:123456789012:stateMachine:redraft-dev",
      // an express execution has one more field
      "arn:aws:states:eu-west-3:123456789012:express:redraft-dev:abc:def",
      // a malformed region or account
      ARN.replace("eu-west-3", "moon"),
      ARN.replace("123456789012", "1234"),
    ])
      expect(executionConsoleUrl(arn), arn).toBeUndefined();
  });

  it("refuses names that could break out of the link: spaces, quotes, fragments, control characters, markup", () => {
    for (const name of [
      'x" onclick="alert(1)',
      "x y",
      "x#/other",
      "x?region=evil",
      "x\u0000",
      "<script>",
      "x/../y",
      "a".repeat(81),
    ])
      expect(
        executionConsoleUrl(`arn:aws:states:eu-west-3:123456789012:execution:redraft-dev:${name}`),
        name,
      ).toBe(undefined);
    // And a line break after an otherwise good ARN.
    expect(executionConsoleUrl(`${ARN}\nhttps://evil.example`)).toBeUndefined();
  });
});
