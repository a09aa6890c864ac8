import { Duration } from "aws-cdk-lib";
import { type EventBus, EventField, Match, Rule, RuleTargetInput } from "aws-cdk-lib/aws-events";
import { SfnStateMachine } from "aws-cdk-lib/aws-events-targets";
import type { Bucket } from "aws-cdk-lib/aws-s3";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import type { StateMachine } from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { DRAFTS_PREFIX } from "../layout.js";
import { acknowledge } from "../nag.js";
import { SubmissionEvent } from "../state-names.js";

export interface TriggersProps {
  readonly stateMachine: StateMachine;
  /** The drafts bucket (EventBridge notifications enabled). */
  readonly bucket: Bucket;
  /** The project's bus, where clients put `Draft Submitted`. */
  readonly bus: EventBus;
  /**
   * How long EventBridge keeps retrying to start an execution before the event goes to the DLQ.
   * @default Duration.hours(2)
   */
  readonly maxEventAge?: Duration;
  /** @default 8 */
  readonly retryAttempts?: number;
}

/**
 * What starts a run:
 * - an upload under `drafts/` (S3 → default bus → rule), input `{ draftRef: { bucket, key, versionId }, submissionId: etag }`;
 * - a `Draft Submitted` event on the project's bus from source `redraft.client`, whose detail is the
 *   execution input: `{ draft }` inline, or `{ draftRef: { bucket, key } }`, plus optional
 *   `submissionId` / `parentRunId`.
 *
 * Both deliver at least once; Validate's content claim turns a repeated delivery into `DuplicateIgnored`.
 * Events that cannot start an execution land in one encrypted DLQ.
 */
export class Triggers extends Construct {
  readonly deadLetterQueue: Queue;
  readonly uploadRule: Rule;
  readonly submissionRule: Rule;

  constructor(scope: Construct, id: string, props: TriggersProps) {
    super(scope, id);
    const { bucket, bus, stateMachine } = props;

    this.deadLetterQueue = new Queue(this, "DeadLetters", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(this.deadLetterQueue, {
      id: "AwsSolutions-SQS3",
      reason: "This queue is itself the dead-letter queue of the trigger rules.",
    });
    const targetOptions = {
      deadLetterQueue: this.deadLetterQueue,
      retryAttempts: props.retryAttempts ?? 8,
      maxEventAge: props.maxEventAge ?? Duration.hours(2),
    };

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
    this.uploadRule.addTarget(
      new SfnStateMachine(stateMachine, {
        ...targetOptions,
        input: RuleTargetInput.fromObject({
          draftRef: {
            bucket: EventField.fromPath("$.detail.bucket.name"),
            key: EventField.fromPath("$.detail.object.key"),
            // The bucket is versioned: the run reads exactly the version that was uploaded.
            versionId: EventField.fromPath("$.detail.object.version-id"),
          },
          // The same upload delivered twice carries the same etag: Validate's dedupe treats it as one.
          submissionId: EventField.fromPath("$.detail.object.etag"),
        }),
      }),
    );

    this.submissionRule = new Rule(this, "DraftSubmitted", {
      description: `Start a correction run for each "${SubmissionEvent.detailType}" event from ${SubmissionEvent.source}`,
      eventBus: bus,
      eventPattern: { source: [SubmissionEvent.source], detailType: [SubmissionEvent.detailType] },
    });
    this.submissionRule.addTarget(
      new SfnStateMachine(stateMachine, {
        ...targetOptions,
        input: RuleTargetInput.fromEventPath("$.detail"),
      }),
    );
  }
}
