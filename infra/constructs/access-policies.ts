import { ArnFormat, Stack } from "aws-cdk-lib";
import type { ITable } from "aws-cdk-lib/aws-dynamodb";
import type { IEventBus } from "aws-cdk-lib/aws-events";
import { Effect, ManagedPolicy, PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { BatchEvents, OUTCOME_EVENT_SOURCE, OutcomeEvents, SubmissionEvent } from "../../contracts/events.js";
import { RUN_KEY_PREFIX } from "../../contracts/table.js";
import {
  BATCHES_PREFIX,
  batchKeys,
  DRAFTS_PREFIX,
  RESULTS_PREFIX,
  RUNS_PREFIX,
} from "../../shared/store/bucket-layout.js";
import { acknowledge, referenceFinding } from "../nag.js";

export interface AccessPoliciesProps {
  /** `redraft-<env>`: the policies are `<prefix>-reviewer` and `<prefix>-submitter`. */
  readonly namePrefix: string;
  readonly table: ITable;
  readonly bucket: IBucket;
  readonly bus: IEventBus;
  /** The state machines whose executions a reviewer reads (names, not ARNs: execution ARNs are built from them). */
  readonly stateMachineNames: readonly string[];
  /** The model queues (λ correct's, λ judge's): a reviewer reads their depth while a run waits in one. */
  readonly modelQueues?: readonly IQueue[];
}

/**
 * The two managed policies people are given, attached to nobody by the stack (an account attaches
 * them to its own roles, users or groups):
 *
 * - `<prefix>-reviewer`: read runs, attempts and batch records and the run's objects, read execution
 *   history, write decisions (UpdateItem on run items only, and the retention tag of the run's
 *   objects), put `Draft Reviewed` on the bus, read the model queues' depth (GetQueueAttributes);
 * - `<prefix>-submitter`: put objects under `drafts/` and `batches/`, put `Draft Submitted` /
 *   `Batch Submitted` on the bus.
 *
 * Both may read the stack's outputs, which is how `redraft --stack` finds the resources. A reviewer's
 * `edit` submits the edited draft, and `run`/`batch --stack` follow outcomes: those need both.
 */
export class AccessPolicies extends Construct {
  readonly reviewer: ManagedPolicy;
  readonly submitter: ManagedPolicy;

  constructor(scope: Construct, id: string, props: AccessPoliciesProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const { table, bucket, bus } = props;
    const objects = (prefix: string) => bucket.arnForObjects(`${prefix}*`);
    // `redraft --stack redraft-<env>` asks for that spelling first and falls back to the stack's own
    // (`Redraft-<env>`, cli/cloud/resources.ts); IAM matches ARNs case-sensitively, and a denied
    // DescribeStacks is an AccessDenied the CLI does not fall back from, so both spellings are allowed.
    const stackNames = [...new Set([stack.stackName, stack.stackName.toLowerCase()])];
    const readStack = new PolicyStatement({
      sid: "ReadStackOutputs",
      actions: ["cloudformation:DescribeStacks"],
      resources: stackNames.map((name) =>
        stack.formatArn({ service: "cloudformation", resource: "stack", resourceName: `${name}/*` }),
      ),
    });

    this.reviewer = new ManagedPolicy(this, "Reviewer", {
      managedPolicyName: `${props.namePrefix}-reviewer`,
      description: "redraft: read runs and their evidence and execution history, decide reviews",
      statements: [
        readStack,
        new PolicyStatement({
          sid: "ReadRunsAndAttempts",
          actions: ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"],
          resources: [table.tableArn, `${table.tableArn}/index/*`],
        }),
        new PolicyStatement({
          sid: "WriteDecisions",
          actions: ["dynamodb:UpdateItem"],
          resources: [table.tableArn],
          // Run and attempt items only: never a content claim or a batch record.
          conditions: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": [`${RUN_KEY_PREFIX}*`] } },
        }),
        new PolicyStatement({
          sid: "ReadRunObjects",
          actions: ["s3:GetObject"],
          resources: [objects(RUNS_PREFIX), objects(RESULTS_PREFIX)],
        }),
        new PolicyStatement({
          // `redraft batch … --json --stack` prints each item from the batch's per-item results.
          sid: "ReadBatchResults",
          actions: ["s3:GetObject"],
          resources: [bucket.arnForObjects(batchKeys.results("*"))],
        }),
        new PolicyStatement({
          sid: "RetainDecidedRunObjects",
          actions: ["s3:PutObjectTagging"],
          resources: [objects(RUNS_PREFIX), objects(RESULTS_PREFIX)],
        }),
        new PolicyStatement({
          sid: "ListRunObjects",
          actions: ["s3:ListBucket"],
          resources: [bucket.bucketArn],
          conditions: { StringLike: { "s3:prefix": [`${RUNS_PREFIX}*`] } },
        }),
        new PolicyStatement({
          sid: "ReadExecutionHistory",
          actions: ["states:DescribeExecution", "states:GetExecutionHistory"],
          resources: props.stateMachineNames.map((name) =>
            stack.formatArn({
              service: "states",
              resource: "execution",
              resourceName: `${name}:*`,
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          ),
        }),
        // `show --stack` and the viewer print how many messages wait in the model queue of a run
        // that waits for a slot (cli/cloud/waiting.ts): the queue's attributes, nothing of its messages.
        ...(props.modelQueues?.length
          ? [
              new PolicyStatement({
                sid: "ReadModelQueueDepth",
                actions: ["sqs:GetQueueAttributes"],
                resources: props.modelQueues.map((queue) => queue.queueArn),
              }),
            ]
          : []),
        new PolicyStatement({
          sid: "AnnounceReviews",
          actions: ["events:PutEvents"],
          resources: [bus.eventBusArn],
          conditions: {
            StringEquals: {
              "events:detail-type": OutcomeEvents.Reviewed,
              "events:source": OUTCOME_EVENT_SOURCE,
            },
          },
        }),
      ],
    });

    this.submitter = new ManagedPolicy(this, "Submitter", {
      managedPolicyName: `${props.namePrefix}-submitter`,
      description: "redraft: submit drafts and batch manifests",
      statements: [
        readStack,
        new PolicyStatement({
          sid: "UploadDraftsAndManifests",
          actions: ["s3:PutObject"],
          resources: [objects(DRAFTS_PREFIX), objects(BATCHES_PREFIX)],
        }),
        new PolicyStatement({
          sid: "SubmitByEvent",
          effect: Effect.ALLOW,
          actions: ["events:PutEvents"],
          resources: [bus.eventBusArn],
          conditions: {
            StringEquals: {
              "events:detail-type": [SubmissionEvent.detailType, BatchEvents.submitted],
              "events:source": SubmissionEvent.source,
            },
          },
        }),
      ],
    });
    const stackFindings = stackNames.map(
      (name) =>
        `Resource::arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/${name}/*`,
    );
    const executionFindings = props.stateMachineNames.map(
      (name) => `Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${name}:*`,
    );
    const readStackReason = (who: string) =>
      stackFindings.map((finding, i) => ({
        id: `AwsSolutions-IAM5[${finding}]`,
        reason: `A ${who} finds the resources in this stack's outputs, under any of its stack ids (a stack id ends in a UUID)${i === 0 ? "" : `, by the spelling ${stackNames[i]} that --stack tries first`}.`,
      }));
    acknowledge(
      this.reviewer,
      ...readStackReason("reviewer"),
      {
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, `/${batchKeys.results("*")}`)}]`,
        reason:
          "A batch's per-item results, batch-results/<batchId>/items.jsonl, named by batch id at run time.",
      },
      {
        id: `AwsSolutions-IAM5[${referenceFinding(table, "/index/*")}]`,
        reason: "The table's indexes: the review queue and the listings query them.",
      },
      ...[RUNS_PREFIX, RESULTS_PREFIX].map((prefix) => ({
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, `/${prefix}*`)}]`,
        reason: `A run's evidence and published draft, named by run id at run time (${prefix}).`,
      })),
      ...executionFindings.map((finding, i) => ({
        id: `AwsSolutions-IAM5[${finding}]`,
        reason: `The executions of ${props.stateMachineNames[i]}, each named at run time (a run or batch id).`,
      })),
    );
    acknowledge(
      this.submitter,
      ...readStackReason("submitter"),
      ...[DRAFTS_PREFIX, BATCHES_PREFIX].map((prefix) => ({
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, `/${prefix}*`)}]`,
        reason: `Uploads are named by whoever submits them, under ${prefix} only.`,
      })),
    );
  }
}
