import { randomUUID } from "node:crypto";
import pLimit from "p-limit";
import * as z from "zod";
import { readJson } from "../shared/batch/rounds.js";
import { ErrorNames } from "../shared/errors.js";
import { ANTHROPIC_BATCH_LIMITS } from "../shared/model/anthropic.js";
import type {
  BatchJobStatus,
  BatchModelService,
  BatchRequestLine,
  BatchResult,
  BatchServiceLimits,
} from "../shared/model/batch.js";
import type { ModelClient, ModelRequest } from "../shared/model/types.js";
import { BEDROCK_JOBS_PREFIX } from "../shared/store/bucket-layout.js";
import type { BlobStore } from "../shared/store/types.js";

/** A submitted batch as the local service keeps it: its requests, when it ends, whether it was canceled. */
const LocalJobSchema = z.object({
  submittedAt: z.number().optional(),
  endsAt: z.number(),
  lines: z.array(
    z.object({ customId: z.string(), request: z.custom<ModelRequest>((v) => typeof v === "object") }),
  ),
  canceled: z.boolean(),
  /** When the cancel came: the requests the batch had finished by then keep their answers. */
  canceledAt: z.number().optional(),
});
type LocalJob = z.infer<typeof LocalJobSchema>;

/** Where a job lies in the data folder, beside the files a Bedrock job of that name would have. */
const jobKey = (jobId: string) => `${BEDROCK_JOBS_PREFIX}${jobId}/local-job.json`;

/**
 * A batch service on the local runtime, over the runtime's model (the replay cassette, usually):
 * each request of a submitted batch is answered by one call, matched by draft and purpose as on
 * demand, and the batch reports itself ended `latencyMs` after it was submitted (`--batch-latency`),
 * the stand-in for the hours a real batch may take. A call's failure becomes the request's result:
 * a timeout is an expired request (not processed in time), any other named error an errored one.
 *
 * A canceled batch behaves as the services' do: it ends at once, the requests it had finished
 * before the cancel keep their answers (it works through them in order, evenly over its latency)
 * and the rest are `canceled`; canceling a batch that has already ended is refused, as Bedrock
 * refuses to stop a completed job.
 *
 * Given the data folder's blobs, a submitted batch is kept there, as a real service keeps it: a
 * batch whose process died is resumed by another process, which finds the batches its rounds sent
 * and polls them to their end instead of failing on ids it never issued.
 */
export class LocalBatchService implements BatchModelService {
  readonly provider = "local";
  readonly model: string;
  readonly #jobs = new Map<string, LocalJob & { results?: Promise<Map<string, BatchResult>> }>();

  constructor(
    private readonly client: ModelClient,
    private readonly options: {
      latencyMs?: number;
      limits?: BatchServiceLimits;
      concurrency?: number;
      /** Where submitted batches are kept for another process; absent, in this process only. */
      blobs?: BlobStore;
      /** The service's clock (a test moves it). @default Date.now */
      now?: () => number;
    } = {},
  ) {
    this.model = client.model;
  }

  get limits(): BatchServiceLimits {
    return this.options.limits ?? ANTHROPIC_BATCH_LIMITS;
  }

  requestBytes(line: BatchRequestLine): number {
    return Buffer.byteLength(JSON.stringify(line)) + 1;
  }

  /** Batches submitted so far, with their ids and sizes: what a test or the bench counts. */
  readonly submitted: { id: string; name: string; requests: number }[] = [];

  /**
   * Each submit is a new batch, whatever its name, as on the Message Batches API (which takes no
   * idempotency key): a step that submits the same part twice has two batches to pay for.
   */
  async submit(name: string, lines: readonly BatchRequestLine[]): Promise<string> {
    const id = `local-${name}-${randomUUID().slice(0, 8)}`;
    this.submitted.push({ id, name, requests: lines.length });
    const submittedAt = this.#now();
    const job: LocalJob = {
      submittedAt,
      endsAt: submittedAt + (this.options.latencyMs ?? 0),
      lines: [...lines],
      canceled: false,
    };
    await this.options.blobs?.put(jobKey(id), JSON.stringify(job));
    this.#jobs.set(id, job);
    return id;
  }

  async status(jobId: string): Promise<BatchJobStatus> {
    const job = await this.#job(jobId);
    if (job.canceled) return { ended: true, status: "canceled" };
    const ended = this.#now() >= job.endsAt;
    return { ended, status: ended ? "ended" : "in_progress" };
  }

  /**
   * The answers, asked for once the batch has ended. A batch canceled before then answers only the
   * requests it had finished, so the answers of the others stay in the cassette for the on-demand
   * calls that replace them.
   */
  async results(jobId: string): Promise<Map<string, BatchResult>> {
    const job = await this.#job(jobId);
    job.results ??= (async () => {
      const finished = finishedBy(job, job.canceled ? (job.canceledAt ?? 0) : Number.POSITIVE_INFINITY);
      const answered = await this.#answer(job.lines.slice(0, finished));
      for (const line of job.lines.slice(finished)) answered.set(line.customId, { type: "canceled" });
      return answered;
    })();
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
    const job = await this.#job(jobId);
    const now = this.#now();
    if (job.canceled || now >= job.endsAt) {
      const error = new Error(`local batch ${jobId} has already ended and cannot be canceled`);
      error.name = "ValidationException";
      throw error;
    }
    job.canceled = true;
    job.canceledAt = now;
    const { results: _results, ...kept } = job;
    await this.options.blobs?.put(jobKey(jobId), JSON.stringify(kept));
  }

  #now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** A batch this process submitted, or one another process did and kept in the data folder. */
  async #job(jobId: string) {
    let job = this.#jobs.get(jobId);
    if (!job && this.options.blobs) {
      const kept = await readJson(this.options.blobs, jobKey(jobId), LocalJobSchema);
      if (kept) {
        job = kept;
        this.#jobs.set(jobId, job);
      }
    }
    if (!job) throw new Error(`no local batch ${jobId}`);
    return job;
  }
}

/** How many of a job's requests, worked through in order over its latency, were done at `at`. */
function finishedBy(job: LocalJob, at: number): number {
  const start = job.submittedAt ?? job.endsAt;
  if (at >= job.endsAt) return job.lines.length;
  return Math.floor((job.lines.length * Math.max(0, at - start)) / (job.endsAt - start));
}
