import pLimit from "p-limit";
import type {
  BatchJobStatus,
  BatchModelService,
  BatchRequestLine,
  BatchResult,
  BatchServiceLimits,
} from "../shared/batch/rounds.js";
import { ErrorNames } from "../shared/errors.js";
import { ANTHROPIC_BATCH_LIMITS } from "../shared/model/anthropic.js";
import type { ModelClient } from "../shared/model/types.js";

/**
 * A batch service on the local runtime, over the runtime's model (the replay cassette, usually):
 * each request of a submitted batch is answered by one call, matched by draft and purpose as on
 * demand, and the batch reports itself ended `latencyMs` after it was submitted (`--batch-latency`),
 * the stand-in for the hours a real batch may take. A call's failure becomes the request's result:
 * a timeout is an expired request (not processed in time), any other named error an errored one.
 */
export class LocalBatchService implements BatchModelService {
  readonly provider = "local";
  readonly model: string;
  readonly #jobs = new Map<
    string,
    {
      endsAt: number;
      lines: readonly BatchRequestLine[];
      results?: Promise<Map<string, BatchResult>>;
      canceled: boolean;
    }
  >();
  #next = 0;

  constructor(
    private readonly client: ModelClient,
    private readonly options: { latencyMs?: number; limits?: BatchServiceLimits; concurrency?: number } = {},
  ) {
    this.model = client.model;
  }

  get limits(): BatchServiceLimits {
    return this.options.limits ?? ANTHROPIC_BATCH_LIMITS;
  }

  requestBytes(line: BatchRequestLine): number {
    return Buffer.byteLength(JSON.stringify(line)) + 1;
  }

  /** Batches submitted so far, with their sizes: what a test or the bench counts. */
  readonly submitted: { name: string; requests: number }[] = [];

  async submit(name: string, lines: readonly BatchRequestLine[]): Promise<string> {
    const id = `local-${name}-${this.#next++}`;
    this.submitted.push({ name, requests: lines.length });
    this.#jobs.set(id, { endsAt: Date.now() + (this.options.latencyMs ?? 0), lines, canceled: false });
    return id;
  }

  async status(jobId: string): Promise<BatchJobStatus> {
    const job = this.#job(jobId);
    if (job.canceled) return { ended: true, status: "canceled" };
    const ended = Date.now() >= job.endsAt;
    return { ended, status: ended ? "ended" : "in_progress" };
  }

  /**
   * The answers, asked for once the batch has ended: a batch canceled before then asks nothing, so
   * its requests' answers stay in the cassette for the on-demand calls that replace them.
   */
  async results(jobId: string): Promise<Map<string, BatchResult>> {
    const job = this.#job(jobId);
    if (job.canceled) return new Map(job.lines.map((l) => [l.customId, { type: "canceled" }]));
    job.results ??= this.#answer(job.lines);
    return job.results;
  }

  async #answer(lines: readonly BatchRequestLine[]): Promise<Map<string, BatchResult>> {
    const limit = pLimit(this.options.concurrency ?? 8);
    const answered = await Promise.all(
      lines.map((line) =>
        limit(async (): Promise<[string, BatchResult]> => {
          try {
            return [line.customId, { type: "succeeded", response: await this.client.complete(line.request) }];
          } catch (error) {
            const e = error as Error;
            if (e.name === ErrorNames.ModelTimeout) return [line.customId, { type: "expired" }];
            return [line.customId, { type: "errored", error: { name: e.name, message: e.message } }];
          }
        }),
      ),
    );
    return new Map(answered);
  }

  async cancel(jobId: string): Promise<void> {
    this.#job(jobId).canceled = true;
  }

  #job(jobId: string) {
    const job = this.#jobs.get(jobId);
    if (!job) throw new Error(`no local batch ${jobId}`);
    return job;
  }
}
