import { Duration } from "aws-cdk-lib";
import { JitterType, type RetryProps } from "aws-cdk-lib/aws-stepfunctions";
import { ErrorNames, TRANSIENT_MODEL_ERRORS } from "../shared/errors.js";

/**
 * Which errors the state machines retry, catch or record, and how long their tasks may take: one
 * table read by both workflows (infra/constructs/workflow.ts, batch-workflow.ts, batch-rounds.ts),
 * by the worst-case bound (infra/worst-case.ts) and by the tests. The error names the functions
 * raise are shared/errors.ts's; the ones here are those Lambda and the direct integrations raise.
 */

/** Model failures, recorded with reason `model_error` (the transient ones once their retries are spent). */
export const MODEL_FAILURES = [
  ...TRANSIENT_MODEL_ERRORS,
  ErrorNames.ModelRequestFailed,
  ErrorNames.ModelNotConfigured,
  ErrorNames.CassetteExhausted,
];

/**
 * Errors Lambda itself raises around an invocation, worth retrying unlike the function's own:
 * the service's hiccups, a throttled invoke, and a crashed or timed-out sandbox (`Lambda.Unknown`,
 * `Sandbox.Timedout`: the steps are idempotent, so a second try is safe).
 */
export const LAMBDA_SERVICE_ERRORS = [
  "Lambda.ClientExecutionTimeoutException",
  "Lambda.ServiceException",
  "Lambda.AWSLambdaException",
  "Lambda.SdkClientException",
  "Lambda.TooManyRequestsException",
  "Lambda.Unknown",
  "Sandbox.Timedout",
];

/** Transient model errors: backoff with full jitter, so parallel runs do not retry in lockstep. */
export const MODEL_RETRY: RetryProps = {
  errors: [...TRANSIENT_MODEL_ERRORS],
  interval: Duration.seconds(2),
  backoffRate: 2,
  maxAttempts: 4,
  maxDelay: Duration.seconds(60),
  jitterStrategy: JitterType.FULL,
};

/**
 * A model state served through the model queue (infra/constructs/model-queue.ts): a 429, an
 * overload or a model timeout puts the work back in the queue after this backoff, for as long as
 * the run's deadline allows. The consumer answers DeadlinePassedError instead once the next wait
 * would pass the deadline, so the attempts here only have to outlast it: at the 60 s ceiling, one
 * attempt a minute over the whole deadline and the first doublings. No jitter: the queue, not the
 * timing of the retries, spreads the work over the slots, and without jitter every wait is the
 * longest, so the attempts cannot run out before the deadline.
 */
export function modelQueueRetry(deadline: Duration): RetryProps {
  const maxDelay = Duration.seconds(60);
  return {
    errors: [...TRANSIENT_MODEL_ERRORS],
    interval: Duration.seconds(2),
    backoffRate: 2,
    maxDelay,
    maxAttempts: Math.ceil(deadline.toSeconds() / maxDelay.toSeconds()) + 6,
    jitterStrategy: JitterType.NONE,
  };
}

/**
 * The store's transient error, raised by a model function inside the queue's consumer and answered
 * to the waiting state by name: the work goes back in the queue, as SERVICE_RETRY retries it on the
 * other steps. (A crashed consumer raises nothing here: SQS hands its message over again.)
 */
export const MODEL_QUEUE_STORE_RETRY: RetryProps = {
  errors: [ErrorNames.StoreUnavailable],
  interval: Duration.seconds(2),
  backoffRate: 2,
  maxAttempts: 3,
  maxDelay: Duration.seconds(30),
  jitterStrategy: JitterType.FULL,
};

/**
 * Errors of the SendMessage that puts work in the model queue: SQS got no answer, or answered with
 * its base exception (its throttling among them). A few tries; the message is small and ours.
 */
export const SQS_SEND_RETRY: RetryProps = {
  errors: ["SQS.SdkClientException", "SQS.AmazonSQSException"],
  interval: Duration.seconds(1),
  backoffRate: 2,
  maxAttempts: 3,
  maxDelay: Duration.seconds(20),
  jitterStrategy: JitterType.FULL,
};

/** Lambda's own errors and the store's transient one, on the steps that never call the model. */
export const SERVICE_RETRY: RetryProps = {
  errors: [...LAMBDA_SERVICE_ERRORS, ErrorNames.StoreUnavailable],
  interval: Duration.seconds(2),
  backoffRate: 2,
  maxAttempts: 3,
  maxDelay: Duration.seconds(30),
  jitterStrategy: JitterType.FULL,
};

/**
 * The same errors on the model steps, whose functions have reserved concurrency
 * (`modelConcurrency`): a burst beyond it is throttled (`Lambda.TooManyRequestsException`) and
 * waits here, long and jittered, instead of reaching the model API as 429s.
 */
export const MODEL_LOAD_RETRY: RetryProps = {
  ...SERVICE_RETRY,
  interval: Duration.seconds(5),
  backoffRate: 2,
  maxAttempts: 6,
  maxDelay: Duration.seconds(120),
};

/**
 * How long a direct integration (S3 copy, DynamoDB update, EventBridge put) may take before Step
 * Functions gives up on it (`States.Timeout`): each is one small request.
 */
export const DIRECT_TASK_TIMEOUT = Duration.seconds(20);

/**
 * How the direct integrations retry: a few jittered tries, each bounded by DIRECT_TASK_TIMEOUT. The
 * three retriers below share it and differ only in the error names they match.
 */
const DIRECT_BACKOFF = {
  interval: Duration.seconds(1),
  backoffRate: 2,
  maxAttempts: 3,
  maxDelay: Duration.seconds(20),
  jitterStrategy: JitterType.FULL,
} as const satisfies Omit<RetryProps, "errors">;

// Which errors of a direct integration can pass, by the names Step Functions gives them. Sources,
// AWS Step Functions Developer Guide:
// - "Learning to use AWS service SDK integrations": an SDK integration (Publish's
//   `aws-sdk:s3:copyObject`) fails with `ServiceName.ErrorName`, and the error name always carries
//   the `Exception` suffix, even where the service's own reference has none
//   (`S3.BucketAlreadyExistsException`).
// - "Call DynamoDB APIs with Step Functions": the optimized integration's prefix is `DynamoDB`
//   (the SDK integration's is `DynamoDb`).
// - "Add EventBridge events with Step Functions": PutEvents answering a non-zero FailedEntryCount
//   fails the state with `EventBridge.FailedEntry`.
// An error the service does not model for the operation arrives under the SDK's base exception
// (`DynamoDB.AmazonDynamoDBException`, which the guide's synchronous Express sample retries;
// `S3.S3Exception`). That one name covers AccessDenied, validation errors and a missing table or
// bucket as well as S3's SlowDown. DynamoDB's is never retried: its throttling and faults have names
// of their own. S3's is: CopyObject models no error, so SlowDown (503) and InternalError (500) arrive
// only under it, and S3 asks to be retried with backoff on both; a permanent refusal then costs the
// few backed-off tries before it is recorded. `*.SdkClientException` is the SDK failing to get an answer at all, the name the guide's
// "Handle Lambda service exceptions" gives Lambda's (`Lambda.SdkClientException`) and that
// cdklabs/construct-hub retries on its `aws-sdk:s3` states. `States.Timeout`: DIRECT_TASK_TIMEOUT.

/**
 * DynamoDB UpdateItem (Mark*, Record*): of the errors DynamoDB's API model gives UpdateItem (the
 * `UpdateItemError` the AWS SDKs generate from it), those that are the service's own fault
 * (`InternalServerError`), throttling (`ProvisionedThroughputExceededException`,
 * `RequestLimitExceeded`, `ThrottlingException`) or a transaction in flight on the item
 * (`TransactionConflictException`), suffixed as Step Functions reports them. Not
 * `ConditionalCheckFailedException` (the status is in place: caught), `ResourceNotFoundException`,
 * `ItemCollectionSizeLimitExceededException`, nor the base exception. (`ReplicatedWriteConflictException`
 * concerns multi-Region strongly consistent global tables, which this table is not.)
 */
export const DYNAMODB_TRANSIENT_ERRORS = [
  "DynamoDB.ProvisionedThroughputExceededException",
  "DynamoDB.RequestLimitExceededException",
  "DynamoDB.ThrottlingException",
  "DynamoDB.InternalServerErrorException",
  "DynamoDB.TransactionConflictException",
  "DynamoDB.SdkClientException",
  "States.Timeout",
] as const;

/**
 * S3 CopyObject (Publish*): a copy that got no answer, and S3's own errors, which share
 * `S3.S3Exception`: SlowDown (503) and InternalError (500) as much as AccessDenied. The first two
 * pass with backoff, which is what S3 asks for; the third is a deployment fault that fails after the
 * same few tries and is recorded.
 */
export const S3_TRANSIENT_ERRORS = ["S3.S3Exception", "S3.SdkClientException", "States.Timeout"] as const;

/**
 * EventBridge PutEvents (Announce*): the API's one modeled error (`InternalException`, HTTP 500) and
 * a failed entry. PutEventsResultEntry's retryable codes (`ThrottlingException`, `InternalFailure`)
 * arrive as `EventBridge.FailedEntry`, like its permanent ones (`MalformedDetail`,
 * `NotAuthorizedForSourceException`…), which the name cannot tell apart. It is retried: the entry
 * is built by the state machine itself, so a permanent failure is a deployment fault that costs a
 * few seconds here, the outcome being recorded already, while a throttled one would lose the event.
 */
export const EVENTBRIDGE_TRANSIENT_ERRORS = [
  "EventBridge.FailedEntry",
  "EventBridge.InternalException",
  "EventBridge.SdkClientException",
  "States.Timeout",
] as const;

/** Mark* and Record*: throttling, DynamoDB's own faults and transaction conflicts; never a refusal. */
export const DYNAMODB_RETRY: RetryProps = { errors: [...DYNAMODB_TRANSIENT_ERRORS], ...DIRECT_BACKOFF };
/** Publish*: S3's throttling and 5xx, and a copy that got no answer. */
export const S3_RETRY: RetryProps = { errors: [...S3_TRANSIENT_ERRORS], ...DIRECT_BACKOFF };
/** Announce*: EventBridge's own fault, a throttled or failed entry. */
export const EVENTBRIDGE_RETRY: RetryProps = { errors: [...EVENTBRIDGE_TRANSIENT_ERRORS], ...DIRECT_BACKOFF };

/** Every direct integration's retrier, for what is true of all of them (the worst case, the tests). */
export const DIRECT_RETRIES: readonly RetryProps[] = [S3_RETRY, DYNAMODB_RETRY, EVENTBRIDGE_RETRY];

/** Extra time a Lambda Task state allows beyond the function's own timeout (see `lambdaStep`). */
export const LAMBDA_TASK_SLACK = Duration.seconds(30);

/** The error Step Functions reports when a DynamoDB condition fails in a direct integration. */
export const CONDITIONAL_CHECK_FAILED = "DynamoDB.ConditionalCheckFailedException";
