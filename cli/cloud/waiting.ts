import type { HistoryEvent as SfnEvent } from "@aws-sdk/client-sfn";
import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { StateNames } from "../../contracts/state-names.js";
import type { ModelStep } from "../../shared/loop/model-queue.js";

/** A deployed run that waits for a model slot: what `redraft --stack S show` prints, as local `show` does. */
export interface CloudWaiting {
  state: "waiting_for_model_slot";
  /** When its model work was sent to the model queue (the task's TaskSubmitted, else TaskScheduled). */
  since: string;
  ageSeconds: number;
  /** The model state that waits (its name in the state machine). */
  stateName: string;
  /** The queue the work was sent to, as the task's parameters name it (absent from a history that does not say). */
  queueUrl?: string;
}

/** What a model state's task is in the history: the queued send of infra/constructs/workflow.ts's queuedStep. */
const isQueuedModelTask = (event: SfnEvent) =>
  event.type === "TaskScheduled" &&
  event.taskScheduledEventDetails?.resourceType === "sqs" &&
  event.taskScheduledEventDetails.resource === "sendMessage.waitForTaskToken";

/** The events that close a task (its token answered, failed, timed out, or never sent). */
const CLOSES_TASK = new Set([
  "TaskSucceeded",
  "TaskFailed",
  "TaskTimedOut",
  "TaskStartFailed",
  "TaskSubmitFailed",
  "TaskStateExited",
  "ExecutionSucceeded",
  "ExecutionFailed",
  "ExecutionTimedOut",
  "ExecutionAborted",
]);

/**
 * Whether an execution waits for a model slot, from its history alone (the GetExecutionHistory
 * `show` already reads, so no other permission): a `sqs:sendMessage.waitForTaskToken` task
 * scheduled and not closed since. The history cannot tell the time in the queue from the model
 * call the consumer then makes (both are before SendTaskSuccess), so `since` is when the work
 * entered the queue; a call takes minutes, a wait for a slot up to the run's deadline.
 */
export function modelSlotWait(events: readonly SfnEvent[], now = Date.now()): CloudWaiting | undefined {
  let stateName = "";
  let open: { stateName: string; since: Date; queueUrl?: string } | undefined;
  for (const event of events) {
    if (event.stateEnteredEventDetails) stateName = event.stateEnteredEventDetails.name ?? "";
    if (isQueuedModelTask(event)) {
      const queueUrl = queueUrlOf(event.taskScheduledEventDetails?.parameters);
      open = { stateName, since: event.timestamp ?? new Date(now), ...(queueUrl && { queueUrl }) };
    } else if (open && event.type === "TaskSubmitted" && event.timestamp) open.since = event.timestamp;
    else if (CLOSES_TASK.has(event.type ?? "")) open = undefined;
  }
  if (!open) return undefined;
  return {
    state: "waiting_for_model_slot",
    since: open.since.toISOString(),
    ageSeconds: Math.max(0, Math.round((now - open.since.getTime()) / 1000)),
    stateName: open.stateName,
    ...(open.queueUrl && { queueUrl: open.queueUrl }),
  };
}

/** The `QueueUrl` of a queued send's resolved parameters (a JSON text), if it has one. */
function queueUrlOf(parameters: string | undefined): string | undefined {
  try {
    const url = (JSON.parse(parameters ?? "{}") as { QueueUrl?: unknown }).QueueUrl;
    return typeof url === "string" && url ? url : undefined;
  } catch {
    return undefined;
  }
}

/** The model queues' URLs, from the stack's `CorrectQueueUrl` / `JudgeQueueUrl` outputs. */
export type ModelQueueUrls = Partial<Record<ModelStep, string>>;

/** Which model queue a wait is in: the one its task's parameters name, else the one its state sends to. */
export function queueOfWait(wait: CloudWaiting, urls: ModelQueueUrls): ModelStep {
  for (const step of ["correct", "judge"] as const)
    if (wait.queueUrl && urls[step] === wait.queueUrl) return step;
  return wait.stateName === StateNames.Judge ? "judge" : "correct";
}

/**
 * How deep a model queue is, from SQS's GetQueueAttributes: the messages waiting for a slot
 * (`ApproximateNumberOfMessages`) and those a consumer has taken, whose model call is under way
 * (`ApproximateNumberOfMessagesNotVisible`). `depth` is their sum: the run's own message is one of
 * them. No position: a standard queue keeps no order (a consumer may receive any message), so "N
 * ahead" could not be justified. The oldest message's age is not an attribute of the queue (it is
 * CloudWatch's `ApproximateAgeOfOldestMessage`, alarmed by the stack): the run's own wait is a lower
 * bound of it, since its message is still in the queue.
 */
export interface QueueDepth {
  /** The model queue (`correct` or `judge`). */
  name: ModelStep;
  /** Waiting + in flight; null when it could not be read (`unknown` says why). */
  depth: number | null;
  /** Messages waiting for a slot. */
  waiting?: number;
  /** Messages taken by a consumer (a model call under way). */
  inFlight?: number;
  /** Why the depth is unknown. */
  unknown?: string;
}

const ACCESS_DENIED = new Set(["AccessDenied", "AccessDeniedException"]);
const NO_QUEUE = new Set(["AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"]);

/**
 * The depth of the queue a run waits in. A stack deployed before the queues were outputs has no URL
 * to read, and a reviewer policy from then has no GetQueueAttributes: both say the depth is unknown
 * (and why) instead of failing `show`. So does any other refusal of SQS (after the SDK's own
 * retries), named: the depth is what `show` and the viewer add beside the run, and the run's own
 * story must not fail for it.
 */
export async function queueDepth(
  sqs: SQSClient,
  queue: ModelStep,
  url: string | undefined,
): Promise<QueueDepth> {
  if (!url)
    return {
      name: queue,
      depth: null,
      unknown: `the stack has no ${queue === "correct" ? "CorrectQueueUrl" : "JudgeQueueUrl"} output (deployed before it was added)`,
    };
  try {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
      }),
    );
    const waiting = Number(Attributes?.ApproximateNumberOfMessages);
    const inFlight = Number(Attributes?.ApproximateNumberOfMessagesNotVisible);
    if (!Number.isInteger(waiting) || !Number.isInteger(inFlight))
      return { name: queue, depth: null, unknown: "SQS did not give the queue's message counts" };
    return { name: queue, depth: waiting + inFlight, waiting, inFlight };
  } catch (error) {
    const name = (error as { name?: string; Code?: string }).name ?? "";
    const unknown = ACCESS_DENIED.has(name)
      ? "this identity may not read the queue (sqs:GetQueueAttributes: a reviewer policy from before it was granted)"
      : NO_QUEUE.has(name)
        ? "the queue does not exist"
        : `SQS answered ${name || "an error"}: ${(error as Error).message}`.slice(0, 300);
    return { name: queue, depth: null, unknown };
  }
}
