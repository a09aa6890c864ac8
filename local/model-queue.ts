import {
  expired,
  failureAnswer,
  type ModelStep,
  type ModelTask,
  ModelTaskSchema,
} from "../shared/loop/model-queue.js";
import type { TaskHandler } from "./execution-types.js";

/** The model queue's longest backoff in the cloud (infra/retries.ts, modelQueueRetry's ceiling). */
const CLOUD_LONGEST_WAIT_MS = 60_000;

export interface LocalModelQueueOptions {
  /** Model calls in flight at once: the SQS event source's `maximumConcurrency` in the cloud. */
  slots: number;
  /** @default the wall clock */
  now?: () => Date;
  /**
   * The longest wait before the state machine puts 429'd work back (the deadline must allow it).
   * @default 60 000, the cloud's; a runtime that zeroes the ASL's retry intervals passes its own
   */
  longestWaitMs?: number;
  /** Told when a run's model work enters the queue, and when it leaves it (`redraft show` says so). */
  onWait?: (runId: string, since: Date) => void;
  onLeave?: (runId: string) => void;
}

interface Waiting {
  task: ModelTask;
  run: TaskHandler;
  since: number;
  /** Whether `onWait` was told: it found no slot free. */
  waited: boolean;
  resolve: (output: unknown) => void;
  reject: (error: unknown) => void;
}

/** Where a run's model work stands in the queue (`redraft show`). */
export interface QueuePosition {
  /** 1 for the next to be taken. */
  position: number;
  /** When it was put in the queue (ISO). */
  since: string;
}

/**
 * The model queue of the cloud (infra/constructs/model-queue.ts) in-process: a model state's
 * `sqs:sendMessage.waitForTaskToken` puts its work here, first come first served, and it runs when
 * one of `slots` is free; the state's output is the step's answer, as SendTaskSuccess would give it.
 * A transient model error is answered as the cloud consumer answers it (functions/lib/model-queue.ts),
 * so the ASL's Retry puts the work back and a run fails only when its deadline passes. A burst
 * waits; nothing is refused for being one call too many.
 */
export class LocalModelQueue {
  readonly slots: number;
  #inFlight = 0;
  #waiting: Waiting[] = [];
  #peak = 0;
  readonly #now: () => Date;
  readonly #longestWaitMs: number;
  readonly #onWait: LocalModelQueueOptions["onWait"];
  readonly #onLeave: LocalModelQueueOptions["onLeave"];

  constructor(options: LocalModelQueueOptions) {
    if (!Number.isInteger(options.slots) || options.slots < 1)
      throw new RangeError(`model slots must be a whole number ≥ 1, not ${options.slots}`);
    this.slots = options.slots;
    this.#now = options.now ?? (() => new Date());
    this.#longestWaitMs = options.longestWaitMs ?? CLOUD_LONGEST_WAIT_MS;
    this.#onWait = options.onWait;
    this.#onLeave = options.onLeave;
  }

  /** Work waiting for a slot (ApproximateNumberOfMessagesVisible). */
  get depth(): number {
    return this.#waiting.length;
  }

  /** The most work that ever waited at once. */
  get peakDepth(): number {
    return this.#peak;
  }

  /** How long the oldest waiting work has waited, in ms (ApproximateAgeOfOldestMessage). */
  oldestAgeMs(): number {
    const first = this.#waiting[0];
    return first ? this.#now().getTime() - first.since : 0;
  }

  /** Where the model work of `runId` waits, if it does. */
  positionOf(runId: string): QueuePosition | undefined {
    const index = this.#waiting.findIndex((w) => runIdOf(w.task) === runId);
    const found = this.#waiting[index];
    return found && { position: index + 1, since: new Date(found.since).toISOString() };
  }

  /** The task handler of a model state: its input is the SendMessage request the ASL builds. */
  handler(steps: Record<ModelStep, TaskHandler>): TaskHandler {
    return (input) => {
      const task = ModelTaskSchema.parse((input as { MessageBody?: unknown }).MessageBody);
      return this.submit(task, steps[task.step]);
    };
  }

  /** Puts `task` in the queue; resolves with what `run` answers once a slot took it. */
  submit(task: ModelTask, run: TaskHandler): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const since = this.#now();
      // Only work that does not find a slot free at once is said to wait.
      const runId = this.#inFlight >= this.slots ? runIdOf(task) : undefined;
      this.#waiting.push({ task, run, since: since.getTime(), waited: runId !== undefined, resolve, reject });
      this.#peak = Math.max(this.#peak, this.#waiting.length);
      if (runId) this.#onWait?.(runId, since);
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#inFlight < this.slots) {
      const next = this.#waiting.shift();
      if (!next) return;
      const runId = next.waited ? runIdOf(next.task) : undefined;
      if (runId) this.#onLeave?.(runId);
      const late = expired(next.task, this.#now());
      if (late) {
        next.reject(late);
        continue;
      }
      this.#inFlight += 1;
      next
        .run(next.task.state)
        .then(next.resolve, (error: unknown) =>
          next.reject(failureAnswer(error, next.task, this.#now(), this.#longestWaitMs)),
        )
        .finally(() => {
          this.#inFlight -= 1;
          this.#pump();
        });
    }
  }
}

const runIdOf = (task: ModelTask): string | undefined => {
  const runId = (task.state as { runId?: unknown } | null)?.runId;
  return typeof runId === "string" ? runId : undefined;
};
