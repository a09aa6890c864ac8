import { CfnOutput, Duration, RemovalPolicy, Stack, Tags } from "aws-cdk-lib";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { Topic } from "aws-cdk-lib/aws-sns";
import { Construct } from "constructs";
import { DEFAULT_RUN_DEADLINE_HOURS } from "../shared/loop-settings.js";
import { DEFAULT_MODEL_CONCURRENCY } from "../shared/model/limited.js";
import type { EnvConfig } from "./config.js";
import { AccessPolicies } from "./constructs/access-policies.js";
import { BatchWorkflow } from "./constructs/batch-workflow.js";
import { ProjectBus } from "./constructs/bus.js";
import { Finalizer } from "./constructs/finalizer.js";
import { Functions, modelConcurrencyShares } from "./constructs/functions.js";
import { ModelQueue } from "./constructs/model-queue.js";
import { Observability } from "./constructs/observability.js";
import { Storage } from "./constructs/storage.js";
import { Triggers } from "./constructs/triggers.js";
import { CorrectionWorkflow } from "./constructs/workflow.js";
import { expectedHourlyModelCostUsd } from "./expected-cost.js";
import { acknowledge, BASIC_EXECUTION_ROLE_FINDING } from "./nag.js";

export interface RedraftProps {
  /**
   * The deployment's settings (infra/config.ts, EnvConfigSchema): its name, the model and its
   * concurrency, retention, deadlines, logs and alarm thresholds.
   */
  readonly config: EnvConfig;
}

/**
 * One deployment of redraft: storage, the project's bus, the handlers, the correction workflow,
 * its triggers, the finalizer of stopped executions, and observability, wired together and nothing more.
 */
export class Redraft extends Construct {
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

  constructor(scope: Construct, id: string, props: RedraftProps) {
    super(scope, id);
    const { config } = props;
    if (config.requireAlarmDestination && !config.alarmEmail && !config.alarmTopicArn) {
      throw new Error(
        `redraft ${config.envName}: alarms need somewhere to go: deploy with -c alarmEmail=<address> or ` +
          "-c alarmTopicArn=<SNS topic ARN> (or set alarmEmail / alarmTopicArn in infra/config.ts)",
      );
    }
    const name = `redraft-${config.envName}`;
    const removalPolicy = config.removalPolicy === "destroy" ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    Tags.of(this).add("project", "redraft");
    Tags.of(this).add("environment", config.envName);

    this.storage = new Storage(this, "Storage", {
      removalPolicy: config.removalPolicy,
      retentionDays: config.retentionDays,
    });
    this.projectBus = new ProjectBus(this, "Events", { eventBusName: name });

    const anthropicSecret =
      config.model.provider === "anthropic"
        ? new Secret(this, "AnthropicApiKey", {
            secretName: `${name}/anthropic-api-key`,
            description: `Anthropic API key of redraft ${config.envName}: put the key here after the first deploy`,
            removalPolicy,
          })
        : undefined;
    if (anthropicSecret) {
      acknowledge(anthropicSecret, {
        id: "AwsSolutions-SMG4",
        reason:
          "A third-party API key: it is rotated in the Anthropic console and put here by hand, not by a Lambda.",
      });
    }

    this.functions = new Functions(this, "Functions", {
      config,
      table: this.storage.table,
      bucket: this.storage.bucket,
      anthropicSecret,
    });

    const shares = modelConcurrencyShares(config.deployment.modelConcurrency ?? DEFAULT_MODEL_CONCURRENCY);
    this.modelQueue = new ModelQueue(this, "ModelQueue", {
      name,
      functions: { correct: this.functions.correct, judge: this.functions.judge },
      slots: shares,
      deadline: Duration.hours(config.runDeadlineHours ?? DEFAULT_RUN_DEADLINE_HOURS),
    });

    this.workflow = new CorrectionWorkflow(this, "Workflow", {
      validate: this.functions.validate,
      correct: this.functions.correct,
      revalidate: this.functions.revalidate,
      judge: this.functions.judge,
      table: this.storage.table,
      bucket: this.storage.bucket,
      bus: this.projectBus.bus,
      stateMachineName: name,
      timeout: Duration.minutes(config.executionTimeoutMinutes),
      logRetention: config.logRetention,
      logs: config.stateMachineLogs,
      removalPolicy,
      modelQueue: this.modelQueue,
    });

    this.batches = new BatchWorkflow(this, "Batches", {
      config,
      table: this.storage.table,
      bucket: this.storage.bucket,
      bus: this.projectBus.bus,
      validate: this.functions.validate,
      revalidate: this.functions.revalidate,
      anthropicSecret,
      perDraft: this.workflow.stateMachine,
      stateMachineName: `${name}-batch`,
    });

    this.triggers = new Triggers(this, "Triggers", {
      config,
      stateMachine: this.workflow.stateMachine,
      batchStateMachine: this.batches.stateMachine,
      bucket: this.storage.bucket,
      bus: this.projectBus.bus,
    });

    this.finalizer = new Finalizer(this, "Finalizer", {
      config,
      stateMachine: this.workflow.stateMachine,
      table: this.storage.table,
      bus: this.projectBus.bus,
    });

    this.observability = new Observability(this, "Observability", {
      envName: config.envName,
      stateMachine: this.workflow.stateMachine,
      functions: {
        validate: this.functions.validate,
        correct: this.functions.correct,
        revalidate: this.functions.revalidate,
        judge: this.functions.judge,
        outcome: this.functions.outcome,
        start: this.triggers.starter,
        finalize: this.finalizer.function,
        batch: this.batches.function,
        rounds: this.batches.rounds.function,
      },
      outcome: this.functions.outcome,
      bus: this.projectBus.bus,
      table: this.storage.table,
      deadLetterQueue: this.triggers.deadLetterQueue,
      finalizerDeadLetterQueue: this.finalizer.deadLetterQueue,
      batches: { stateMachine: this.batches.stateMachine, deadLetterQueue: this.batches.deadLetterQueue },
      alarmEmail: config.alarmEmail,
      alarmTopicArn: config.alarmTopicArn,
      reviewRateThreshold: config.alarms.reviewRateThreshold,
      reviewRateMinRuns: config.alarms.reviewRateMinRuns,
      failureRateThreshold: config.alarms.failureRateThreshold,
      hourlyCostUsd:
        expectedHourlyModelCostUsd(config.envName, config.alarms.expectedDraftsPerDay) *
        config.alarms.costHeadroom,
    });
    // The model queue's age alarms go where every other alarm goes.
    const externalAlarmTopic =
      config.alarmTopicArn && Topic.fromTopicArn(this, "ModelQueueAlarmTopic", config.alarmTopicArn);
    for (const alarm of this.modelQueue.alarms) {
      const notify = [
        new SnsAction(this.observability.alarmTopic),
        ...(externalAlarmTopic ? [new SnsAction(externalAlarmTopic)] : []),
      ];
      alarm.addAlarmAction(...notify);
      alarm.addOkAction(...notify);
    }

    this.access = new AccessPolicies(this, "Access", {
      namePrefix: name,
      table: this.storage.table,
      bucket: this.storage.bucket,
      bus: this.projectBus.bus,
      stateMachineNames: [name, `${name}-batch`],
    });

    this.suppressCdkInternals();

    new CfnOutput(this, "BucketName", {
      value: this.storage.bucket.bucketName,
      description: "Upload drafts under drafts/",
    });
    new CfnOutput(this, "TableName", { value: this.storage.table.tableName });
    new CfnOutput(this, "EventBusName", { value: this.projectBus.bus.eventBusName });
    new CfnOutput(this, "StateMachineArn", { value: this.workflow.stateMachine.stateMachineArn });
    new CfnOutput(this, "BatchStateMachineArn", {
      value: this.batches.stateMachine.stateMachineArn,
      description: "Upload a manifest under batches/, or put a Batch Submitted event",
    });
    // What `redraft --stack` reads (cli/cloud/resources.ts): the resources above and the people's policies.
    new CfnOutput(this, "StateMachineName", { value: this.workflow.stateMachine.stateMachineName });
    new CfnOutput(this, "BatchStateMachineName", { value: this.batches.stateMachine.stateMachineName });
    new CfnOutput(this, "ReviewerPolicyArn", {
      value: this.access.reviewer.managedPolicyArn,
      description: "Attach to whoever reads runs and decides reviews (redraft --stack runs/show/review)",
    });
    new CfnOutput(this, "SubmitterPolicyArn", {
      value: this.access.submitter.managedPolicyArn,
      description:
        "Attach to whoever submits drafts and batches (uploads under drafts/ and batches/, or events)",
    });
    if (anthropicSecret) {
      new CfnOutput(this, "AnthropicSecretArn", {
        value: anthropicSecret.secretArn,
        description: "aws secretsmanager put-secret-value --secret-id <this> --secret-string <key>",
      });
    }
  }

  /** CDK's singleton Lambda for bucket notifications: not ours to change. */
  private suppressCdkInternals(): void {
    const internals = Stack.of(this)
      .node.findAll()
      .filter((c) => /^BucketNotificationsHandler/.test(c.node.id));
    for (const construct of internals) {
      acknowledge(construct, {
        id: `AwsSolutions-IAM4[${BASIC_EXECUTION_ROLE_FINDING}]`,
        reason: "CDK's own bucket-notifications handler uses the basic execution role; CDK builds its role.",
      });
    }
  }
}
