import { SendTaskFailureCommand, SendTaskSuccessCommand, SFNClient } from "@aws-sdk/client-sfn";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { expired, failureAnswer, ModelTaskSchema } from "../../shared/loop/model-queue.js";
import { logger, tracer } from "./observability.js";

/** The model queue's longest backoff (modelQueueRetry's ceiling): the deadline must allow one more wait. */
const LONGEST_WAIT_MS = 60_000;

type StepHandler = (event: unknown, context?: Context) => Promise<unknown>;

/** Built once, at cold start, by the first queued message (a direct invoke never needs it). */
let sfn: SFNClient | undefined;
const client = () => {
  sfn ??= tracer.captureAWSv3Client(new SFNClient({}));
  return sfn;
};

/** Whether Step Functions has forgotten the token: the run ended (or timed out) while the work waited. */
const isGoneToken = (error: unknown) =>
  ["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"].includes(String((error as { name?: unknown })?.name));

/**
 * A model function's entry: work from its model queue (an SQS event of one message, sent by a
 * model state with its task token) is run by the step handler and answered to Step Functions —
 * SendTaskSuccess with the next loop state, or SendTaskFailure with the error's name for the
 * state's Retry and Catch (a transient model error past what the deadline allows becomes
 * DeadlinePassedError). Anything else is a direct invoke (batch pricing's rounds), passed through.
 *
 * A message is deleted once answered; only a failure to answer (Step Functions unreachable) returns
 * it to the queue, to be taken again after its visibility timeout: the steps are idempotent.
 */
export function queuedOrDirect(handler: StepHandler, now: () => Date = () => new Date()) {
  return async (event: unknown, context?: Context): Promise<unknown> => {
    const records = (event as Partial<SQSEvent> | undefined)?.Records;
    if (!Array.isArray(records)) return handler(event, context);
    const response: SQSBatchResponse = { batchItemFailures: [] };
    for (const record of records) {
      const task = ModelTaskSchema.parse(JSON.parse(record.body));
      let answer: SendTaskSuccessCommand | SendTaskFailureCommand;
      const late = expired(task, now());
      if (late) {
        answer = failure(task.taskToken, late);
      } else {
        try {
          const output = await handler(task.state, context);
          answer = new SendTaskSuccessCommand({ taskToken: task.taskToken, output: JSON.stringify(output) });
        } catch (error) {
          answer = failure(task.taskToken, failureAnswer(error, task, now(), LONGEST_WAIT_MS));
        }
      }
      try {
        await client().send(answer as SendTaskSuccessCommand);
      } catch (error) {
        if (isGoneToken(error)) {
          logger.warn("the task token is no longer waited for", { error: (error as Error).name });
          continue;
        }
        response.batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return response;
  };
}

/** SendTaskFailure with the error's name (Retry and Catch match it) and its message, within the API's bounds. */
function failure(taskToken: string, error: unknown): SendTaskFailureCommand {
  const e = error as { name?: unknown; message?: unknown };
  return new SendTaskFailureCommand({
    taskToken,
    error: String(e?.name ?? "Error").slice(0, 256),
    cause: String(e?.message ?? error).slice(0, 32_768),
  });
}
