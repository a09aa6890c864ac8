import { Stack } from "aws-cdk-lib";
import { CfnApplicationInferenceProfile } from "aws-cdk-lib/aws-bedrock";
import { Construct } from "constructs";

/** Bedrock's system (cross-Region) inference-profile prefixes (`us.`, `eu.`, `apac.`, `global.`…). */
const SYSTEM_PROFILE = /^[a-z]{2,6}\.anthropic\./;

export interface ModelInferenceProfileProps {
  /** The environment's name: the profile is `redraft-<env>`, one per environment and Region. */
  readonly envName: string;
  /** The configured Bedrock model or system inference-profile id (infra/config.ts `model.id`). */
  readonly modelId: string;
}

/**
 * The environment's Bedrock application inference profile: a copy of the configured system
 * (cross-Region) profile, or of the foundation model when the id names one, that the model
 * functions invoke in its place. Bedrock attributes an invocation's cost to the application
 * profile's tags, so model spend in Cost Explorer carries the stack's `project` / `environment`
 * tags (applied by `Tags.of(stack)`: the resource is taggable), which a shared system profile or
 * foundation model cannot.
 */
export class ModelInferenceProfile extends Construct {
  readonly profile: CfnApplicationInferenceProfile;
  /** The profile's ARN (`…:application-inference-profile/<id>`), what the functions invoke. */
  readonly arn: string;

  constructor(scope: Construct, id: string, props: ModelInferenceProfileProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const { modelId } = props;
    // A system profile lives in the stack's account and Region; a foundation model has no account.
    const copyFrom = SYSTEM_PROFILE.test(modelId)
      ? `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${modelId}`
      : `arn:${stack.partition}:bedrock:${stack.region}::foundation-model/${modelId}`;
    this.profile = new CfnApplicationInferenceProfile(this, "Resource", {
      inferenceProfileName: `redraft-${props.envName}`,
      // The description allows letters, digits and `:._- ` only (CloudFormation's pattern).
      description: `redraft ${props.envName} model calls: ${modelId}`,
      modelSource: { copyFrom },
    });
    this.arn = this.profile.attrInferenceProfileArn;
  }
}
