import * as z from "zod";
import { DeadlinePassedError, TRANSIENT_MODEL_ERRORS } from "../errors.js";

/**
 * Model work as a queue (issue "a burst becomes a backlog"): the Correct and Judge states send
 * their loop state with a task token to a queue (`sqs:sendMessage.waitForTaskToken`), and the
 * model function takes it when one of its slots is free. A burst waits in the queue instead of
 * being throttled. This module is the contract both consumers share: the message, and when a
 * transient model failure has run out of time.
 */

/** Which model function takes the work. */
const ModelStepSchema = z.enum(["correct", "judge"]);
export type ModelStep = z.infer<typeof ModelStepSchema>;

/** The message a model state sends: the token to answer, the step, the run's clock, the loop state. */
export const ModelTaskSchema = z.object({
  taskToken: z.string().min(1),
  step: ModelStepSchema,
  /** `$$.Execution.StartTime`: the deadline counts from it. */
  startedAt: z.iso.datetime({ offset: true }),
  deadlineSeconds: z.number().int().positive(),
  state: z.unknown(),
});
export type ModelTask = z.infer<typeof ModelTaskSchema>;

/** The moment the run's model work must be done by. */
function deadlineOf(task: Pick<ModelTask, "startedAt" | "deadlineSeconds">): Date {
  return new Date(Date.parse(task.startedAt) + task.deadlineSeconds * 1000);
}

const TRANSIENT: readonly string[] = TRANSIENT_MODEL_ERRORS;

/**
 * What to answer the state machine with when the model step failed: a transient model failure
 * (429, overload, timeout) goes back as itself, for the state's Retry to put the work back in the
 * queue after its backoff, unless the deadline will have passed by then (`nextWaitMs`, the longest
 * the Retry waits): then DeadlinePassedError, which nothing retries. Any other error is unchanged.
 */
export function failureAnswer(error: unknown, task: ModelTask, now: Date, nextWaitMs: number): unknown {
  const name = (error as { name?: unknown })?.name;
  if (typeof name !== "string" || !TRANSIENT.includes(name)) return error;
  const deadline = deadlineOf(task);
  return now.getTime() + nextWaitMs >= deadline.getTime()
    ? new DeadlinePassedError(deadline.toISOString(), { cause: error })
    : error;
}

/** The work is taken from the queue after its deadline: it is not started. */
export function expired(task: ModelTask, now: Date): DeadlinePassedError | undefined {
  const deadline = deadlineOf(task);
  return now.getTime() >= deadline.getTime() ? new DeadlinePassedError(deadline.toISOString()) : undefined;
}
