import type { Duration } from "aws-cdk-lib";
import type { RetryProps } from "aws-cdk-lib/aws-stepfunctions";
import { DEFAULT_LOOP_CAPS, DEFAULT_RUN_DEADLINE_HOURS } from "../shared/loop-settings.js";
import type { EnvConfig } from "./config.js";
import { FUNCTION_TIMEOUTS } from "./constructs/functions.js";
import {
  DIRECT_RETRIES,
  DIRECT_TASK_TIMEOUT,
  LAMBDA_TASK_SLACK,
  MODEL_QUEUE_STORE_RETRY,
  SERVICE_RETRY,
  SQS_SEND_RETRY,
} from "./retries.js";

/** One Task state's worst case: every attempt runs to its timeout, every wait is the longest. */
export interface StepWorstCase {
  /** The longest one attempt may take (the Task state's timeout). */
  attemptSeconds: number;
  /** 1 + the retriers' MaxAttempts: distinct errors may each use their own retrier's attempts. */
  attempts: number;
  /** The sum of the longest waits between attempts (jitter only shortens them). */
  backoffSeconds: number;
  totalSeconds: number;
}

export interface RunWorstCase {
  validate: StepWorstCase;
  /**
   * CorrectExecution and CorrectLogic (λ correct) through the model queue: the admitted call at its
   * timeout, with the retries the deadline does not bound (the store's error, SQS's send).
   */
  correct: StepWorstCase;
  /** Revalidate and RevalidateLogic. */
  revalidate: StepWorstCase;
  judge: StepWorstCase;
  /** One direct integration (Publish, Mark/Record, Announce). */
  direct: StepWorstCase;
  /** Corrections the caps allow, per phase, and the judge rounds they imply. */
  executionAttempts: number;
  logicAttempts: number;
  judgeRounds: number;
  /** The whole run's work, waits for a model slot apart: what executionTimeoutMinutes must cover. */
  totalSeconds: number;
  /**
   * The longest all of a run's model work may wait for a slot, re-queues after a 429 or an overload
   * included: the run's deadline, counted from the execution's start (the consumer answers
   * DeadlinePassedError past it, and each queued state's own timeout is the deadline). The state
   * machine's timeout is totalSeconds' bound plus this.
   */
  modelWaitSeconds: number;
}

/** The longest waits of one retrier: interval × rate^k, each capped at MaxDelay, over its attempts. */
export function backoffSeconds(retry: RetryProps): number {
  const interval = retry.interval?.toSeconds() ?? 1;
  const rate = retry.backoffRate ?? 2;
  const cap = retry.maxDelay?.toSeconds() ?? Number.POSITIVE_INFINITY;
  let total = 0;
  for (let k = 0; k < (retry.maxAttempts ?? 3); k++) total += Math.min(interval * rate ** k, cap);
  return total;
}

/** The worst case of a Task state bounded by `timeout` per attempt and retried by `retries`. */
export function stepWorstCase(timeout: Duration, retries: readonly RetryProps[]): StepWorstCase {
  const attemptSeconds = timeout.toSeconds();
  const attempts = 1 + retries.reduce((sum, r) => sum + (r.maxAttempts ?? 3), 0);
  const backoff = retries.reduce((sum, r) => sum + backoffSeconds(r), 0);
  return {
    attemptSeconds,
    attempts,
    backoffSeconds: backoff,
    totalSeconds: attempts * attemptSeconds + backoff,
  };
}

const lambdaTask = (fn: Duration) => fn.plus(LAMBDA_TASK_SLACK);

/**
 * The longest a run of this environment can take, from the same constants the stack deploys:
 * Validate; every execution-phase correction the caps allow (Correct + Revalidate); every judge
 * round (one more than the logic corrections) and logic correction (Correct + RevalidateLogic);
 * then Publish, Mark and Announce. Each step counts every attempt at its timeout plus its longest
 * backoffs. Budgets (tokens, cost) and the stop rules end most runs far earlier; this is the bound.
 */
export function worstCase(config: EnvConfig): RunWorstCase {
  const caps = config.deployment.caps;
  const validate = stepWorstCase(lambdaTask(FUNCTION_TIMEOUTS.validate), [SERVICE_RETRY]);
  // The queued model states (workflow.ts modelStep): a throttle no longer fails or retries an invoke
  // (the work waits in the queue), and a 429/overload re-queues it under modelQueueRetry until the
  // deadline, counted in modelWaitSeconds. What remains per state is the admitted call and the
  // retriers the consumer's deadline check does not end.
  const queuedRetries = [MODEL_QUEUE_STORE_RETRY, SQS_SEND_RETRY];
  const correct = stepWorstCase(lambdaTask(FUNCTION_TIMEOUTS.correct), queuedRetries);
  const revalidate = stepWorstCase(lambdaTask(FUNCTION_TIMEOUTS.revalidate), [SERVICE_RETRY]);
  const judge = stepWorstCase(lambdaTask(FUNCTION_TIMEOUTS.judge), queuedRetries);
  // Each direct state has one integration's retrier; the slowest of them bounds every one.
  const direct = DIRECT_RETRIES.map((retry) => stepWorstCase(DIRECT_TASK_TIMEOUT, [retry])).reduce((a, b) =>
    b.totalSeconds > a.totalSeconds ? b : a,
  );
  // The caps bound every pack's and draft's limits (shared/loop/limits.ts).
  const executionAttempts = caps?.maxAttempts ?? DEFAULT_LOOP_CAPS.maxAttempts;
  const logicAttempts = caps?.maxLogicAttempts ?? DEFAULT_LOOP_CAPS.maxLogicAttempts;
  const judgeRounds = logicAttempts + 1;
  const totalSeconds =
    validate.totalSeconds +
    (executionAttempts + logicAttempts) * (correct.totalSeconds + revalidate.totalSeconds) +
    judgeRounds * judge.totalSeconds +
    3 * direct.totalSeconds;
  return {
    validate,
    correct,
    revalidate,
    judge,
    direct,
    executionAttempts,
    logicAttempts,
    judgeRounds,
    totalSeconds,
    modelWaitSeconds: (config.runDeadlineHours ?? DEFAULT_RUN_DEADLINE_HOURS) * 3600,
  };
}
