import { CfnOutput, Duration, RemovalPolicy, Stack, Tags } from "aws-cdk-lib";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import { CfnTable, type ITable, type ITableV2, type Table, type TableV2 } from "aws-cdk-lib/aws-dynamodb";
import type { EventBus, IEventBus } from "aws-cdk-lib/aws-events";
import type { ManagedPolicy } from "aws-cdk-lib/aws-iam";
import type { Bucket, IBucket } from "aws-cdk-lib/aws-s3";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { type ITopic, Topic } from "aws-cdk-lib/aws-sns";
import type { StateMachine } from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { INDEXES, PARTITION_KEY, SORT_KEY } from "../contracts/table.js";
import { DEFAULT_RUN_DEADLINE_HOURS } from "../shared/loop-settings.js";
import { DEFAULT_MODEL_CONCURRENCY } from "../shared/model/limited.js";
import { type EnvConfig, loadConfig } from "./config.js";

export { type ConfigOverrides, type EnvConfig, loadConfig } from "./config.js";

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
   * concurrency, retention, deadlines, logs and alarm thresholds. Build one with `loadConfig(env,
   * overrides)`, exported beside the construct.
   * @default loadConfig("dev"): infra/config.ts's dev settings (Claude Haiku through Anthropic's API, 2 model
   * slots, resources destroyed with the stack)
   */
  readonly config?: EnvConfig;
  /**
   * A bucket the team already has, used for drafts (`drafts/`), runs (`runs/`), results
   * (`results/`) and batches (`batches/`, …) instead of a new one. Uploads start runs through
   * EventBridge: the construct turns the bucket's EventBridge notifications on with CDK's bucket
   * notifications custom resource, which adds that setting to the bucket's own notification
   * configuration and leaves the team's other notifications alone. Retention (lifecycle rules),
   * versioning, encryption and access logs stay the team's business.
   * @default a new versioned, encrypted, SSL-only drafts bucket with an access-logs bucket
   */
  readonly existingBucket?: IBucket | Bucket;
  /**
   * An event bus the team already has: `Draft Submitted` and `Batch Submitted` are read from it and
   * `Draft Validated` / `Draft Needs Review` published on it.
   * @default a new bus named `redraft-<env>` with a 14-day archive
   */
  readonly existingEventBus?: IEventBus | EventBus;
  /**
   * A table the team already has. It must have the key schema of contracts/table.ts: partition key
   * `pk` and sort key `sk` (both strings), the global secondary indexes of `INDEXES` there (each with
   * its string partition and sort key, projection KEYS_ONLY as INDEX_PROJECTION says), and may have
   * TTL on `ttl`. A `Table` defined in the same app is checked at synth time; an imported one (or a `TableV2`)
   * (`Table.fromTableAttributes`) cannot be, and must be imported with its `globalIndexes` so that
   * the grants cover them.
   * @default a new on-demand table with point-in-time recovery and deletion protection (retain)
   */
  readonly existingTable?: ITable | ITableV2 | Table | TableV2;
  /**
   * A topic every alarm also notifies (both directions, ALARM and OK). Required, as is
   * `config.alarmEmail` or `config.alarmTopicArn`, when `config.requireAlarmDestination` (prod).
   * @default only the construct's own alarm topic, subscribed by `config.alarmEmail` if set
   */
  readonly alarmTopic?: ITopic;
}

/**
 * One deployment of redraft: storage, the project's bus, the handlers, the correction workflow,
 * its triggers, the finalizer of stopped executions, and observability, wired together and nothing more.
 */
export class Redraft extends Construct {
  readonly storage: Storage;
  /** The bus the construct made (none when the team brought its own). */
  readonly projectBus: ProjectBus | undefined;
  /** Where drafts, runs and results live: the team's bucket or the construct's. */
  readonly bucket: IBucket;
  /** The table of runs, attempts and claims: the team's or the construct's. */
  readonly table: ITable;
  /** Where submissions are read and outcomes published: the team's bus or the construct's. */
  readonly bus: IEventBus;
  /** The per-draft state machine (the committed ASL). */
  readonly stateMachine: StateMachine;
  /** The batch state machine. */
  readonly batchStateMachine: StateMachine;
  /** The construct's own alarm topic, notified by every alarm. */
  readonly alarmTopic: Topic;
  /** For whoever reads runs and decides reviews. */
  readonly reviewerPolicy: ManagedPolicy;
  /** For whoever submits drafts and batches. */
  readonly submitterPolicy: ManagedPolicy;
  readonly functions: Functions;
  readonly workflow: CorrectionWorkflow;
  /** Model work waiting for a slot of λ correct or λ judge. */
  readonly modelQueue: ModelQueue;
  readonly batches: BatchWorkflow;
  readonly triggers: Triggers;
  readonly finalizer: Finalizer;
  readonly observability: Observability;
  readonly access: AccessPolicies;

  constructor(scope: Construct, id: string, props: RedraftProps = {}) {
    super(scope, id);
    const config = props.config ?? loadConfig("dev");
    // CDK's classes declare some optional members `T | undefined` where its interfaces say `T?`, which
    // exactOptionalPropertyTypes refuses to assign; the props take both, the construct the interface.
    const existingBucket = props.existingBucket as IBucket | undefined;
    const existingEventBus = props.existingEventBus as IEventBus | undefined;
    const existingTable = props.existingTable as ITable | undefined;
    if (config.requireAlarmDestination && !config.alarmEmail && !config.alarmTopicArn && !props.alarmTopic) {
      throw new Error(
        `redraft ${config.envName}: alarms need somewhere to go: deploy with -c alarmEmail=<address> or ` +
          "-c alarmTopicArn=<SNS topic ARN> (or set alarmEmail / alarmTopicArn in infra/config.ts, or pass alarmTopic)",
      );
    }
    const name = `redraft-${config.envName}`;
    const removalPolicy = config.removalPolicy === "destroy" ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    Tags.of(this).add("project", "redraft");
    Tags.of(this).add("environment", config.envName);

    this.storage = new Storage(this, "Storage", {
      removalPolicy: config.removalPolicy,
      retentionDays: config.retentionDays,
      existingBucket,
      existingTable: existingTable && checkedTable(existingTable),
    });
    this.bucket = this.storage.bucket;
    this.table = this.storage.table;
    // S3 sends "Object Created" to the default bus only when the bucket says so; the construct's
    // own bucket says so itself (eventBridgeEnabled), a team's bucket is told through CDK's
    // notifications custom resource.
    if (existingBucket) existingBucket.enableEventBridgeNotification();
    this.projectBus = existingEventBus ? undefined : new ProjectBus(this, "Events", { eventBusName: name });
    this.bus = existingEventBus ?? ((this.projectBus as ProjectBus).bus as IEventBus);

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
      table: this.table,
      bucket: this.bucket,
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
      table: this.table,
      bucket: this.bucket,
      bus: this.bus,
      stateMachineName: name,
      timeout: Duration.minutes(config.executionTimeoutMinutes),
      logRetention: config.logRetention,
      logs: config.stateMachineLogs,
      removalPolicy,
      modelQueue: this.modelQueue,
    });

    this.batches = new BatchWorkflow(this, "Batches", {
      config,
      table: this.table,
      bucket: this.bucket,
      bus: this.bus,
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
      bucket: this.bucket,
      bus: this.bus,
    });

    this.finalizer = new Finalizer(this, "Finalizer", {
      config,
      stateMachine: this.workflow.stateMachine,
      table: this.table,
      bus: this.bus,
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
      bus: this.bus,
      table: this.table,
      deadLetterQueue: this.triggers.deadLetterQueue,
      finalizerDeadLetterQueue: this.finalizer.deadLetterQueue,
      batches: { stateMachine: this.batches.stateMachine, deadLetterQueue: this.batches.deadLetterQueue },
      alarmEmail: config.alarmEmail,
      alarmTopicArn: config.alarmTopicArn,
      alarmTopic: props.alarmTopic,
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
        ...(props.alarmTopic ? [new SnsAction(props.alarmTopic)] : []),
      ];
      alarm.addAlarmAction(...notify);
      alarm.addOkAction(...notify);
    }
    this.observability.dashboard.addWidgets(...this.modelQueue.dashboardWidgets());

    this.access = new AccessPolicies(this, "Access", {
      namePrefix: name,
      table: this.table,
      bucket: this.bucket,
      bus: this.bus,
      stateMachineNames: [name, `${name}-batch`],
      modelQueues: Object.values(this.modelQueue.queues),
    });

    this.stateMachine = this.workflow.stateMachine;
    this.batchStateMachine = this.batches.stateMachine;
    this.alarmTopic = this.observability.alarmTopic;
    this.reviewerPolicy = this.access.reviewer;
    this.submitterPolicy = this.access.submitter;

    this.suppressCdkInternals();

    new CfnOutput(this, "BucketName", {
      value: this.bucket.bucketName,
      description: "Upload drafts under drafts/",
    });
    new CfnOutput(this, "TableName", { value: this.table.tableName });
    new CfnOutput(this, "EventBusName", { value: this.bus.eventBusName });
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
    // The model queues, so that `redraft --stack S show` and the viewer can say how deep the queue a
    // waiting run is in (GetQueueAttributes, allowed to the reviewer policy on these two queues only).
    new CfnOutput(this, "CorrectQueueUrl", { value: this.modelQueue.queues.correct.queueUrl });
    new CfnOutput(this, "JudgeQueueUrl", { value: this.modelQueue.queues.judge.queueUrl });
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

/**
 * A team's table defined in the same app is checked against contracts/table.ts's key schema and
 * indexes at synth time, so a mismatch fails the synth instead of the first run; an imported table
 * has no schema to read and is taken as documented (RedraftProps.existingTable).
 */
function checkedTable(table: ITable): ITable {
  const cfn = table.node.defaultChild;
  if (!(cfn instanceof CfnTable)) return table;
  const problems: string[] = [];
  const keys = Stack.of(table).resolve(cfn.keySchema) as CfnTable.KeySchemaProperty[];
  const keyOf = (schema: CfnTable.KeySchemaProperty[], type: string) =>
    schema.find((k) => k.keyType === type)?.attributeName;
  if (keyOf(keys, "HASH") !== PARTITION_KEY || keyOf(keys, "RANGE") !== SORT_KEY) {
    problems.push(`its key must be ${PARTITION_KEY} (partition) and ${SORT_KEY} (sort)`);
  }
  const indexes = (Stack.of(table).resolve(cfn.globalSecondaryIndexes) ??
    []) as CfnTable.GlobalSecondaryIndexProperty[];
  for (const index of Object.values(INDEXES)) {
    const found = indexes.find((i) => i.indexName === index.indexName);
    const schema = (found?.keySchema ?? []) as CfnTable.KeySchemaProperty[];
    if (!found || keyOf(schema, "HASH") !== index.partitionKey || keyOf(schema, "RANGE") !== index.sortKey) {
      problems.push(`it needs the index ${index.indexName} on ${index.partitionKey} and ${index.sortKey}`);
    }
  }
  if (problems.length > 0) {
    throw new Error(
      `redraft: existingTable ${table.node.path} does not fit: ${problems.join("; ")} (see contracts/table.ts)`,
    );
  }
  return table;
}
