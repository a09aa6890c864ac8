import { type CfnElement, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import type { ITable } from "aws-cdk-lib/aws-dynamodb";
import { type IEventBus, Rule } from "aws-cdk-lib/aws-events";
import { LambdaFunction as LambdaTarget } from "aws-cdk-lib/aws-events-targets";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import { LogGroup } from "aws-cdk-lib/aws-logs";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { Secret } from "aws-cdk-lib/aws-secretsmanager";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import {
  Choice,
  Condition,
  DefinitionBody,
  DistributedMap,
  Fail,
  JsonPath,
  LogLevel,
  Pass,
  Result,
  type StateMachine,
  StateMachineType,
  StateMachine as StepFunctionsStateMachine,
  Succeed,
  TaskInput,
  Timeout,
} from "aws-cdk-lib/aws-stepfunctions";
import {
  DynamoAttributeValue,
  DynamoPutItem,
  EventBridgePutEvents,
  LambdaInvoke,
} from "aws-cdk-lib/aws-stepfunctions-tasks";
import { Construct } from "constructs";
import { BatchEnvSchema } from "../../contracts/env.js";
import { BatchEvents, OUTCOME_EVENT_SOURCE } from "../../contracts/events.js";
import { BatchStateNames, STOPPED_STATUSES } from "../../contracts/state-names.js";
import {
  BATCH_KEY_PREFIX,
  BATCH_SORT_KEY,
  BATCHES_PARTITION,
  INDEXES,
  PARTITION_KEY,
  SORT_KEY,
} from "../../contracts/table.js";
import { BATCH_ID_PREFIX } from "../../shared/batch/record.js";
import type { Pricing } from "../../shared/batch/rounds.js";
import {
  BATCH_ITEMS_PREFIX,
  BATCH_RESULTS_PREFIX,
  BATCHES_PREFIX,
} from "../../shared/store/bucket-layout.js";
import type { EnvConfig } from "../config.js";
import { acknowledge, referenceFinding } from "../nag.js";
import {
  CONDITIONAL_CHECK_FAILED,
  DIRECT_TASK_TIMEOUT,
  DYNAMODB_RETRY,
  EVENTBRIDGE_RETRY,
  LAMBDA_TASK_SLACK,
  SERVICE_RETRY,
} from "../retries.js";
import { BatchRounds } from "./batch-rounds.js";
import { childExecution } from "./child-execution.js";
import { deadLetterQueue } from "./dead-letter-queue.js";
import { liveAlias, redraftFunction } from "./functions.js";
import { PrefixedJsonLItemReader, PrefixedResultWriter } from "./map-io.js";

export interface BatchWorkflowProps {
  readonly config: EnvConfig;
  readonly table: ITable;
  readonly bucket: IBucket;
  readonly bus: IEventBus;
  /** λ validate: each child reads its item under `batch-items/`. */
  readonly validate: NodejsFunction;
  /** λ revalidate: batch pricing's rounds run it on each answered item. */
  readonly revalidate: NodejsFunction;
  /** The Anthropic API key (provider `anthropic`): batch pricing submits with it. */
  readonly anthropicSecret?: Secret | undefined;
  /** The per-draft state machine: each item is one child execution of it. */
  readonly perDraft: StateMachine;
  readonly stateMachineName: string;
}

/**
 * How cdk-nag names a wildcard over a state machine's executions: CDK builds the ARN from the
 * state machine's name, taken out of its `Ref` (the ARN) at deploy time.
 */
function executionFinding(stateMachine: StateMachine, suffix: string): string {
  const id = Stack.of(stateMachine).getLogicalId(stateMachine.node.defaultChild as CfnElement);
  const name = JSON.stringify({ "Fn::Select": [6, { "Fn::Split": [":", { Ref: id }] }] });
  return `Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${name}${suffix}`;
}

/** The Lambda step of a batch: prepare or aggregate, over a whole manifest. */
const BATCH_FUNCTION_TIMEOUT = Duration.minutes(15);

/**
 * The batch workflow: CreateBatch (conditional put; a duplicate delivery ends at once) →
 * PrepareItems (λ batch: one blob per item, the item list) → RunItems (Distributed Map over the
 * item list, each item a `.sync:2` child execution of the per-draft state machine named
 * `<batchId>-<line>`, MaxConcurrency `batchConcurrency`, ToleratedFailurePercentage, ResultWriter)
 * → AggregateBatch (λ batch: the children's runs into the batch record) → AnnounceBatch
 * (`Batch Completed`). A refused manifest or a Map that failed goes to AggregateBatch too, so the
 * record and the event always say how the batch ended.
 */
export class BatchWorkflow extends Construct {
  readonly stateMachine: StepFunctionsStateMachine;
  readonly function: NodejsFunction;
  readonly logGroup: LogGroup;
  /** Step Functions' events for a batch execution that stopped without ending, to λ batch. */
  readonly stoppedRule: Rule;
  readonly deadLetterQueue: Queue;
  /** Batch pricing's branch and its λ rounds. */
  readonly rounds: BatchRounds;

  constructor(scope: Construct, id: string, props: BatchWorkflowProps) {
    super(scope, id);
    const { config, table, bucket, bus, perDraft } = props;

    this.deadLetterQueue = deadLetterQueue(this, "DeadLetters");
    this.function = redraftFunction(this, "batch", {
      description: "Prepare a batch's items; sum its children's runs up",
      timeout: BATCH_FUNCTION_TIMEOUT,
      envSchemas: [BatchEnvSchema],
      environment: {
        TABLE_NAME: table.tableName,
        BUCKET_NAME: bucket.bucketName,
        RETENTION_DAYS: String(config.retentionDays),
        EVENT_BUS_NAME: bus.eventBusName,
        POWERTOOLS_SERVICE_NAME: "redraft",
        POWERTOOLS_LOG_LEVEL: config.logLevel,
      },
      config,
      // Prepares and sums up: no model is ever called, so no model SDK in the bundle.
      modelSdk: "none",
      // Asynchronous invocations (the stopped-batch rule) that failed Lambda's own retries.
      deadLetterQueue: this.deadLetterQueue,
    });
    // Reads the children's runs, finishes the batch record: single items of the table, no index.
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ["dynamodb:GetItem", "dynamodb:UpdateItem"],
        resources: [table.tableArn],
      }),
    );
    const objects = (prefix: string) => bucket.arnForObjects(`${prefix}*`);
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:GetObject", "s3:GetObjectVersion"],
        resources: [objects(BATCHES_PREFIX)],
      }),
    );
    // The blob store writes every object with its retention tag, which S3 authorizes as s3:PutObjectTagging.
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
        resources: [objects(BATCH_ITEMS_PREFIX), objects(BATCH_RESULTS_PREFIX)],
      }),
    );
    // Each child's Validate reads its item like an upload.
    props.validate.addToRolePolicy(
      new PolicyStatement({ actions: ["s3:GetObject"], resources: [objects(BATCH_ITEMS_PREFIX)] }),
    );
    const prefixFinding = (prefix: string) => `AwsSolutions-IAM5[${referenceFinding(bucket, `/${prefix}*`)}]`;
    acknowledge(
      this.function,
      {
        id: prefixFinding(BATCHES_PREFIX),
        reason: "A manifest is any object uploaded under batches/, named by whoever submits it.",
      },
      {
        id: prefixFinding(BATCH_ITEMS_PREFIX),
        reason: "One object per item under batch-items/<batchId>/, named at run time.",
      },
      {
        id: prefixFinding(BATCH_RESULTS_PREFIX),
        reason: "The per-item results under batch-results/<batchId>/, named at run time.",
      },
    );
    acknowledge(props.validate, {
      id: prefixFinding(BATCH_ITEMS_PREFIX),
      reason:
        "A batch item's child run reads its draft under batch-items/<batchId>/lines/, named at run time.",
    });

    const batchKey = {
      [PARTITION_KEY]: DynamoAttributeValue.fromString(
        JsonPath.format(`${BATCH_KEY_PREFIX}{}`, JsonPath.stringAt("$.batchId")),
      ),
      [SORT_KEY]: DynamoAttributeValue.fromString(BATCH_SORT_KEY),
    };
    const createBatch = new DynamoPutItem(this, BatchStateNames.CreateBatch, {
      comment:
        "The batch record, once per manifest version: a repeated delivery finds it and starts nothing.",
      table,
      item: {
        ...batchKey,
        batchId: DynamoAttributeValue.fromString(JsonPath.stringAt("$.batchId")),
        status: DynamoAttributeValue.fromString("running"),
        manifest: DynamoAttributeValue.fromString(JsonPath.jsonToString(JsonPath.objectAt("$.manifestRef"))),
        // Decided before the record exists (PricingGiven?): a resumed or redriven batch keeps it.
        pricing: DynamoAttributeValue.fromString(JsonPath.stringAt("$.pricing")),
        startedAt: DynamoAttributeValue.fromString(JsonPath.stringAt("$$.State.EnteredTime")),
        [INDEXES.byCreated.partitionKey]: DynamoAttributeValue.fromString(BATCHES_PARTITION),
        [INDEXES.byCreated.sortKey]: DynamoAttributeValue.fromString(
          JsonPath.format("{}#{}", JsonPath.stringAt("$$.State.EnteredTime"), JsonPath.stringAt("$.batchId")),
        ),
      },
      conditionExpression: "attribute_not_exists(#pk)",
      expressionAttributeNames: { "#pk": PARTITION_KEY },
      resultPath: JsonPath.DISCARD,
      taskTimeout: Timeout.duration(DIRECT_TASK_TIMEOUT),
    });
    createBatch.addRetry(DYNAMODB_RETRY);
    const alreadyStarted = new Succeed(this, BatchStateNames.BatchAlreadyStarted, {
      comment: "A repeated delivery of a manifest version whose batch exists: nothing more to do.",
    });
    createBatch.addCatch(alreadyStarted, {
      errors: [CONDITIONAL_CHECK_FAILED],
      resultPath: JsonPath.DISCARD,
    });

    const prepareItems = this.batchStep(BatchStateNames.PrepareItems, {
      step: "prepare",
      input: {
        batchId: JsonPath.stringAt("$.batchId"),
        manifestRef: JsonPath.objectAt("$.manifestRef"),
        pricing: JsonPath.stringAt("$.pricing"),
      },
    });
    prepareItems.addRetry(SERVICE_RETRY);

    // ── One child per item ──────────────────────────────────────────────────────────────────
    const runDraft = childExecution(this, BatchStateNames.RunDraft, {
      perDraft,
      comment: "The item as its own run: a child execution of the per-draft state machine, waited for.",
      name: JsonPath.format("{}-{}", JsonPath.stringAt("$.batchId"), JsonPath.stringAt("$.line")),
      alreadyRan: {
        id: BatchStateNames.ItemAlreadyRan,
        comment: "A retried or resumed item whose child already exists: AggregateBatch reads its run.",
        keep: { "line.$": "$.line" },
      },
      executionTimeoutMinutes: config.executionTimeoutMinutes,
    });

    const runItems = new DistributedMap(this, BatchStateNames.RunItems, {
      comment:
        "Every item of the manifest as a child execution, at most batchConcurrency at once; too many failed children end the batch.",
      itemReader: new PrefixedJsonLItemReader({
        bucket: bucket as IBucket,
        key: JsonPath.stringAt("$.prepared.itemsKey"),
        prefix: BATCH_ITEMS_PREFIX,
      }),
      itemSelector: {
        batchId: JsonPath.stringAt("$.batchId"),
        line: JsonPath.stringAt("$$.Map.Item.Value.line"),
        draftRef: JsonPath.objectAt("$$.Map.Item.Value.draftRef"),
      },
      maxConcurrency: config.batchConcurrency,
      toleratedFailurePercentage: config.batchToleratedFailurePercentage,
      resultWriterV2: new PrefixedResultWriter({
        bucket: bucket as IBucket,
        prefix: BATCH_RESULTS_PREFIX.replace(/\/$/, ""),
      }),
      mapExecutionType: StateMachineType.STANDARD,
      resultPath: "$.map",
    });
    runItems.itemProcessor(runDraft);

    const aggregate = this.batchStep(BatchStateNames.AggregateBatch, {
      step: "aggregate",
      batchId: JsonPath.stringAt("$.batchId"),
      "prepared.$": "$.prepared",
      "map.$": "$.map",
      "error.$": "$.error",
      "pricing.$": "$.pricing",
      "rounds.$": "$.rounds.history",
      // Batch pricing: the failed items of the rounds, counted with the fallback's over the batch.
      "roundsState.$": "$.rounds",
    });
    aggregate.addRetry(SERVICE_RETRY);

    const announce = new EventBridgePutEvents(this, BatchStateNames.AnnounceBatch, {
      entries: [
        {
          eventBus: bus,
          source: OUTCOME_EVENT_SOURCE,
          detailType: BatchEvents.completed,
          detail: TaskInput.fromJsonPathAt("$.outcome"),
        },
      ],
      resultPath: JsonPath.DISCARD,
      taskTimeout: Timeout.duration(DIRECT_TASK_TIMEOUT),
    });
    announce.addRetry(EVENTBRIDGE_RETRY);

    const ended = new Choice(this, BatchStateNames.BatchEndedHow)
      .when(
        Condition.stringEquals("$.outcome.status", "failed"),
        new Fail(this, BatchStateNames.BatchFailed, {
          comment: "The manifest was refused or too many items failed; the batch record says which.",
          errorPath: "$.outcome.error.error",
          causePath: "$.outcome.error.cause",
        }),
      )
      .otherwise(new Succeed(this, BatchStateNames.BatchCompleted));

    // Defaults so AggregateBatch always finds its fields, whichever path led to it.
    const defaults = new Pass(this, "BatchDefaults", {
      comment: "Empty fields for AggregateBatch, whichever path reaches it.",
      parameters: {
        "batchId.$": "$.batchId",
        "manifestRef.$": "$.manifestRef",
        "pricing.$": "$.pricing",
        prepared: {},
        map: {},
        error: {},
        rounds: { history: [] },
      },
    });
    const start = new Choice(this, BatchStateNames.PricingGiven, {
      comment: "The request's own pricing, or the deployment's default.",
    })
      .when(Condition.isPresent("$.pricing"), defaults)
      .otherwise(
        new Pass(this, BatchStateNames.DefaultPricing, {
          comment: "The deployment's batchPricing.default.",
          result: Result.fromString(config.batchPricing.default),
          resultPath: "$.pricing",
        }).next(defaults),
      );
    aggregate.next(announce).next(ended);
    prepareItems.addCatch(aggregate, { errors: ["States.ALL"], resultPath: "$.error" });
    runItems.addCatch(aggregate, { errors: ["States.ALL"], resultPath: "$.error" });
    runItems.next(aggregate);
    const rounds = new BatchRounds(this, "Rounds", {
      config,
      table,
      bucket,
      bus,
      validate: props.validate,
      revalidate: props.revalidate,
      perDraft,
      anthropicSecret: props.anthropicSecret,
      aggregate,
      onError: { handler: aggregate, resultPath: "$.error" },
    });
    this.rounds = rounds;
    const pricedHow = new Choice(this, BatchStateNames.PricedHow, {
      comment: "On demand: one child execution per item. Batch pricing: rounds of batch requests.",
    })
      .when(Condition.stringEquals("$.pricing", "batch" satisfies Pricing), rounds.start)
      .otherwise(runItems);
    defaults.next(createBatch).next(prepareItems).next(pricedHow);
    const definition = start;

    this.logGroup = new LogGroup(this, "Logs", {
      retention: config.logRetention,
      removalPolicy: config.removalPolicy === "destroy" ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    });
    this.stateMachine = new StepFunctionsStateMachine(this, "StateMachine", {
      stateMachineName: props.stateMachineName,
      stateMachineType: StateMachineType.STANDARD,
      comment: "redraft batches: every draft of a manifest as its own run, summed up in one batch record",
      definitionBody: DefinitionBody.fromChainable(definition),
      timeout: Duration.hours(config.batchTimeoutHours),
      tracingEnabled: true,
      logs: {
        destination: this.logGroup,
        level: LogLevel[config.stateMachineLogs.level],
        includeExecutionData: config.stateMachineLogs.includeExecutionData,
      },
    });
    acknowledge(
      this.stateMachine,
      {
        id: "AwsSolutions-IAM5[Resource::*]",
        reason:
          "Log delivery (logs:CreateLogDelivery…) and X-Ray actions support no resource-level permissions.",
      },
      {
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, `/${BATCH_ITEMS_PREFIX}*`)}]`,
        reason:
          "The Distributed Map's ItemReader: the item list PrepareItems wrote under batch-items/<batchId>/.",
      },
      {
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, `/${BATCH_RESULTS_PREFIX}*`)}]`,
        reason:
          "The Distributed Map's ResultWriter (its result files) and the rounds' item lists, under batch-results/<batchId>/.",
      },
      {
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, "/runs/*")}]`,
        reason:
          "A round's items publish their best draft from runs/<runId>/, named at run time (batch pricing).",
      },
      {
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, "/results/*")}]`,
        reason:
          "A round's items publish to results/<draftId>/<runId>.json, named at run time (batch pricing).",
      },
      {
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<${Stack.of(this).getLogicalId(perDraft.node.defaultChild as CfnElement)}.Name>:${BATCH_ID_PREFIX}*]`,
        reason:
          ".sync children: describe and stop the per-draft executions a batch starts, named <batchId>-<line> at run time.",
      },
      {
        id: `AwsSolutions-IAM5[${executionFinding(this.stateMachine, ":*")}]`,
        reason:
          "CDK's Distributed Map policy: describing and stopping the Map Run of this batch's executions.",
      },
      {
        id: `AwsSolutions-IAM5[${executionFinding(this.stateMachine, "/*:*")}]`,
        reason: "CDK's Distributed Map policy: the child workflow executions a Map Run starts, one per item.",
      },
    );
    // A batch execution that times out, is aborted, or fails outside its Catches never reaches
    // AggregateBatch: λ batch finishes its record as failed (if still running) and announces it.
    bus.grantPutEventsTo(this.function);
    this.stoppedRule = new Rule(this, "BatchStopped", {
      description: "Finish the record of a failed, timed-out or aborted batch execution (λ batch)",
      eventPattern: {
        source: ["aws.states"],
        detailType: ["Step Functions Execution Status Change"],
        detail: { stateMachineArn: [this.stateMachine.stateMachineArn], status: [...STOPPED_STATUSES] },
      },
      targets: [
        new LambdaTarget(liveAlias(this.function), {
          deadLetterQueue: this.deadLetterQueue,
          retryAttempts: 8,
          maxEventAge: Duration.hours(6),
        }),
      ],
    });

    if (config.stateMachineLogs.level !== "ALL") {
      acknowledge(this.stateMachine, {
        id: "AwsSolutions-SF1",
        reason:
          "Per environment on purpose, like the per-draft state machine: the batch record holds the outcome.",
      });
    }
  }

  /** λ batch with one step's payload; Lambda's own timeout ends a stuck call first. */
  private batchStep(name: string, payload: Record<string, unknown>): LambdaInvoke {
    return new LambdaInvoke(this, name, {
      lambdaFunction: liveAlias(this.function),
      payload: TaskInput.fromObject(payload),
      taskTimeout: Timeout.duration(BATCH_FUNCTION_TIMEOUT.plus(LAMBDA_TASK_SLACK)),
      resultPath: name === BatchStateNames.PrepareItems ? "$.prepared" : "$.outcome",
      payloadResponseOnly: true,
      retryOnServiceExceptions: false,
    });
  }
}
