import { Duration } from "aws-cdk-lib";
import { type IEventBus, Match, Rule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import type { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import type { StateMachine } from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { StartEnvSchema } from "../../contracts/env.js";
import { BatchEvents, SubmissionEvent } from "../../contracts/events.js";
import { BATCHES_PREFIX, DRAFTS_PREFIX } from "../../shared/store/bucket-layout.js";
import type { EnvConfig } from "../config.js";
import { deadLetterQueue } from "./dead-letter-queue.js";
import { liveAlias, redraftFunction } from "./functions.js";

export interface TriggersProps {
  readonly config: EnvConfig;
  readonly stateMachine: StateMachine;
  /** The batch state machine: manifests under `batches/` and `Batch Submitted` events start it. */
  readonly batchStateMachine: StateMachine;
  /** The drafts bucket (EventBridge notifications enabled). */
  readonly bucket: IBucket;
  /** The project's bus, where clients put `Draft Submitted`. */
  readonly bus: IEventBus;
  /**
   * How long EventBridge keeps retrying to start an execution before the event goes to the DLQ.
   * @default Duration.hours(2)
   */
  readonly maxEventAge?: Duration;
  /** @default 8 */
  readonly retryAttempts?: number;
}

/**
 * What starts a run, through λ start (`functions/start.ts`), which names the execution after the
 * delivery so that a repeated delivery starts nothing (`ExecutionAlreadyExists` is success):
 * - an upload under `drafts/` (S3 → default bus → rule), input `{ draftRef: { bucket, key, versionId } }`,
 *   named from bucket, key and version id;
 * - a `Draft Submitted` event on the project's bus from source `redraft.client`, whose detail is the
 *   execution input: `{ draft }` inline, or `{ draftRef: { bucket, key } }`, plus optional
 *   `submissionId` / `parentRunId`; named from the event id.
 *
 * A new upload of the same content is a new submission: Validate's content claim marks it
 * `duplicate` within the dedupe window. Events that cannot start an execution (the rule could not
 * invoke λ start, or λ start failed its retries) land in one encrypted DLQ.
 */
export class Triggers extends Construct {
  readonly deadLetterQueue: Queue;
  readonly uploadRule: Rule;
  readonly submissionRule: Rule;
  readonly batchUploadRule: Rule;
  readonly batchSubmissionRule: Rule;
  readonly starter: NodejsFunction;

  constructor(scope: Construct, id: string, props: TriggersProps) {
    super(scope, id);
    const { bucket, bus, stateMachine } = props;

    this.deadLetterQueue = deadLetterQueue(this, "DeadLetters");
    this.starter = redraftFunction(this, "start", {
      description: "Start one execution per delivery, named after it",
      timeout: Duration.seconds(30),
      envSchemas: [StartEnvSchema],
      environment: {
        STATE_MACHINE_ARN: stateMachine.stateMachineArn,
        BATCH_STATE_MACHINE_ARN: props.batchStateMachine.stateMachineArn,
        POWERTOOLS_SERVICE_NAME: "redraft",
        POWERTOOLS_LOG_LEVEL: props.config.logLevel,
      },
      config: props.config,
      deadLetterQueue: this.deadLetterQueue,
    });
    stateMachine.grantStartExecution(this.starter);
    props.batchStateMachine.grantStartExecution(this.starter);
    const target = new LambdaFunction(liveAlias(this.starter), {
      deadLetterQueue: this.deadLetterQueue,
      retryAttempts: props.retryAttempts ?? 8,
      maxEventAge: props.maxEventAge ?? Duration.hours(2),
    });

    this.uploadRule = new Rule(this, "DraftUploaded", {
      description: `Start a correction run for each draft uploaded under ${DRAFTS_PREFIX}`,
      eventPattern: {
        source: ["aws.s3"],
        detailType: ["Object Created"],
        detail: {
          bucket: { name: [bucket.bucketName] },
          object: { key: Match.prefix(DRAFTS_PREFIX) },
        },
      },
    });
    this.uploadRule.addTarget(target);

    this.submissionRule = new Rule(this, "DraftSubmitted", {
      description: `Start a correction run for each "${SubmissionEvent.detailType}" event from ${SubmissionEvent.source}`,
      eventBus: bus,
      eventPattern: { source: [SubmissionEvent.source], detailType: [SubmissionEvent.detailType] },
    });
    this.submissionRule.addTarget(target);

    this.batchUploadRule = new Rule(this, "BatchUploaded", {
      description: `Start a batch for each manifest uploaded under ${BATCHES_PREFIX}`,
      eventPattern: {
        source: ["aws.s3"],
        detailType: ["Object Created"],
        detail: {
          bucket: { name: [bucket.bucketName] },
          object: { key: Match.prefix(BATCHES_PREFIX) },
        },
      },
    });
    this.batchUploadRule.addTarget(target);

    this.batchSubmissionRule = new Rule(this, "BatchSubmitted", {
      description: `Start a batch for each "${BatchEvents.submitted}" event from ${SubmissionEvent.source}`,
      eventBus: bus,
      eventPattern: { source: [SubmissionEvent.source], detailType: [BatchEvents.submitted] },
    });
    this.batchSubmissionRule.addTarget(target);
  }
}
