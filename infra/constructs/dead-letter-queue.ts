import { Duration } from "aws-cdk-lib";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { acknowledge } from "../nag.js";

/**
 * A dead-letter queue as every one of the stack's is: SQS-managed encryption, SSL only, messages
 * kept 14 days (the owner alarms on it), and cdk-nag's redrive rule acknowledged, since a queue
 * behind a dead-letter queue would only move the same messages.
 */
export function deadLetterQueue(scope: Construct, id: string): Queue {
  const queue = new Queue(scope, id, {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  acknowledge(queue, {
    id: "Serverless-SQSRedrivePolicy",
    reason:
      "A dead-letter queue itself: what lands here is kept 14 days and alarmed on; a queue behind it would only move the same messages.",
  });
  return queue;
}
