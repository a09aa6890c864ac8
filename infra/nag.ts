import { type CfnElement, Stack, Validations } from "aws-cdk-lib";
import type { IConstruct } from "constructs";

/** A cdk-nag finding acknowledged in code, with the reason a reviewer reads. */
export interface NagAcknowledgment {
  /** `AwsSolutions-S1`, or one finding of a rule: `AwsSolutions-IAM5[Resource::*]`. */
  readonly id: string;
  readonly reason: string;
}

/** Acknowledges cdk-nag findings on a construct and everything under it (cdk-nag 3: CDK Validations). */
export function acknowledge(scope: IConstruct, ...rules: NagAcknowledgment[]): void {
  Validations.of(scope).acknowledge(...rules);
}

/** The AWS-managed policy every Lambda's role gets for writing its own logs. */
export const BASIC_EXECUTION_ROLE_FINDING =
  "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole";

/**
 * How cdk-nag names a resource built from a reference in a policy (`Resource::<LogicalId.Arn>/runs/*`),
 * so that an acknowledgment names exactly one prefix of one resource rather than a pattern.
 */
export function referenceFinding(construct: IConstruct, suffix = "", attribute = "Arn"): string {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return `Resource::<${Stack.of(construct).getLogicalId(element)}.${attribute}>${suffix}`;
}
