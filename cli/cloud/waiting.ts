import type { HistoryEvent as SfnEvent } from "@aws-sdk/client-sfn";

/** A deployed run that waits for a model slot: what `redraft --stack S show` prints, as local `show` does. */
export interface CloudWaiting {
  state: "waiting_for_model_slot";
  /** When its model work was sent to the model queue (the task's TaskSubmitted, else TaskScheduled). */
  since: string;
  ageSeconds: number;
  /** The model state that waits (its name in the state machine). */
  stateName: string;
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
  let open: { stateName: string; since: Date } | undefined;
  for (const event of events) {
    if (event.stateEnteredEventDetails) stateName = event.stateEnteredEventDetails.name ?? "";
    if (isQueuedModelTask(event)) open = { stateName, since: event.timestamp ?? new Date(now) };
    else if (open && event.type === "TaskSubmitted" && event.timestamp) open.since = event.timestamp;
    else if (CLOSES_TASK.has(event.type ?? "")) open = undefined;
  }
  if (!open) return undefined;
  return {
    state: "waiting_for_model_slot",
    since: open.since.toISOString(),
    ageSeconds: Math.max(0, Math.round((now - open.since.getTime()) / 1000)),
    stateName: open.stateName,
  };
}
