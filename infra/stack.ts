import { Stack, type StackProps, Tags } from "aws-cdk-lib";
import type { Construct } from "constructs";
import type { EnvConfig } from "./config.js";
import type { AccessPolicies } from "./constructs/access-policies.js";
import type { BatchWorkflow } from "./constructs/batch-workflow.js";
import type { ProjectBus } from "./constructs/bus.js";
import type { Finalizer } from "./constructs/finalizer.js";
import type { Functions } from "./constructs/functions.js";
import type { ModelQueue } from "./constructs/model-queue.js";
import type { Observability } from "./constructs/observability.js";
import type { Storage } from "./constructs/storage.js";
import type { Triggers } from "./constructs/triggers.js";
import type { CorrectionWorkflow } from "./constructs/workflow.js";
import { Redraft } from "./redraft.js";

export interface RedraftStackProps extends StackProps {
  readonly config: EnvConfig;
}

/** `Redraft-<env>`: the stack name of an environment. */
export const stackName = (envName: string): string => `Redraft-${envName}`;

/**
 * One environment of redraft: a stack holding one {@link Redraft} construct, its first user. The
 * construct's id is "Default", which CDK leaves out of logical ids, so every resource keeps the
 * logical id it had when this stack built them itself (no stateful resource is replaced).
 */
export class RedraftStack extends Stack {
  readonly redraft: Redraft;
  readonly storage: Storage;
  readonly projectBus: ProjectBus;
  readonly functions: Functions;
  readonly workflow: CorrectionWorkflow;
  /** Model work waiting for a slot of λ correct or λ judge. */
  readonly modelQueue: ModelQueue;
  readonly batches: BatchWorkflow;
  readonly triggers: Triggers;
  readonly finalizer: Finalizer;
  readonly observability: Observability;
  readonly access: AccessPolicies;

  constructor(scope: Construct, id: string, props: RedraftStackProps) {
    super(scope, id, {
      ...props,
      terminationProtection: props.terminationProtection ?? props.config.terminationProtection,
    });
    // The stack's own tags (CloudFormation tags the stack with them); the construct tags its resources.
    Tags.of(this).add("project", "redraft");
    Tags.of(this).add("environment", props.config.envName);
    this.redraft = new Redraft(this, "Default", { config: props.config });
    // The repo's stack brings nothing of its own, so the construct made its bus.
    this.projectBus = this.redraft.projectBus as ProjectBus;
    ({
      storage: this.storage,
      functions: this.functions,
      workflow: this.workflow,
      modelQueue: this.modelQueue,
      batches: this.batches,
      triggers: this.triggers,
      finalizer: this.finalizer,
      observability: this.observability,
      access: this.access,
    } = this.redraft);
  }
}
