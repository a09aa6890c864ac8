import { BlobNotFoundError, RunFinishedError, RunNotFoundError } from "../errors.js";
import { type ContentClaim, claimTerms, mayTakeClaim } from "./claim.js";
import {
  type AttemptRecord,
  addTotals,
  type BlobStore,
  isActiveStatus,
  type Review,
  type RunOutcome,
  type RunQuery,
  type RunRecord,
  type RunStatus,
  type RunStore,
  type TokenTotals,
} from "./types.js";

const clone = <T>(v: T): T => structuredClone(v);

/** In-memory RunStore for the library API and tests; same contract as the DynamoDB store. */
export class MemoryRunStore implements RunStore {
  readonly #runs = new Map<string, RunRecord>();
  readonly #attempts = new Map<string, Map<number, AttemptRecord>>();
  readonly #claims = new Map<string, ContentClaim>();
  readonly #counted = new Map<string, Set<number>>();

  async createRun(run: RunRecord): Promise<boolean> {
    if (this.#runs.has(run.runId)) return false;
    this.#runs.set(run.runId, clone(run));
    return true;
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const run = this.#runs.get(runId);
    return run && clone(run);
  }

  async claimContent(
    contentHash: string,
    runId: string,
    now: string,
    windowMs: number,
    replaceHolder?: string,
  ): Promise<string> {
    const terms = claimTerms(runId, now, windowMs, replaceHolder);
    const held = this.#claims.get(contentHash);
    if (held && !mayTakeClaim(held, terms)) return held.runId;
    this.#claims.set(contentHash, terms.claim);
    return runId;
  }

  #mustGet(runId: string): RunRecord {
    const run = this.#runs.get(runId);
    if (!run) throw new RunNotFoundError(runId);
    return run;
  }

  async setStatus(
    runId: string,
    status: RunStatus,
    at: string,
    fields: Partial<RunOutcome> = {},
  ): Promise<void> {
    const run = this.#mustGet(runId);
    if (run.status === status) return;
    // An outcome stands: a step that outlived its execution cannot put the run back under way.
    if (isActiveStatus(status) && !isActiveStatus(run.status))
      throw new RunFinishedError(runId, run.status, status);
    Object.assign(run, clone(fields), { status, updatedAt: at });
    run.transitions.push({ status, at });
  }

  async updateRun(runId: string, fields: Partial<RunOutcome>): Promise<void> {
    Object.assign(this.#mustGet(runId), clone(fields));
  }

  async putAttempt(attempt: AttemptRecord): Promise<boolean> {
    let attempts = this.#attempts.get(attempt.runId);
    if (!attempts) {
      attempts = new Map();
      this.#attempts.set(attempt.runId, attempts);
    }
    if (attempts.has(attempt.attempt)) return false;
    attempts.set(attempt.attempt, clone(attempt));
    return true;
  }

  async addUsage(runId: string, attempt: number, usage: TokenTotals, costUsd: number): Promise<boolean> {
    const run = this.#mustGet(runId);
    let counted = this.#counted.get(runId);
    if (!counted) {
      counted = new Set();
      this.#counted.set(runId, counted);
    }
    if (counted.has(attempt)) return false;
    counted.add(attempt);
    run.tokens = addTotals(run.tokens, usage);
    run.costUsd += costUsd;
    return true;
  }

  async listAttempts(runId: string): Promise<AttemptRecord[]> {
    return [...(this.#attempts.get(runId)?.values() ?? [])].sort((a, b) => a.attempt - b.attempt).map(clone);
  }

  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    return (
      [...this.#runs.values()]
        .filter(
          (r) =>
            (!query.status || r.status === query.status) && (!query.draftId || r.draftId === query.draftId),
        )
        // The review queue orders by when a run entered its status; other listings by creation.
        .sort((a, b) =>
          query.status ? b.updatedAt.localeCompare(a.updatedAt) : b.createdAt.localeCompare(a.createdAt),
        )
        .slice(0, query.limit ?? Number.POSITIVE_INFINITY)
        .map(clone)
    );
  }

  async setReview(runId: string, review: Review): Promise<void> {
    this.#mustGet(runId).review = clone(review);
  }

  async claimReview(
    runId: string,
    from: readonly RunStatus[],
    review: Review,
    staleBefore: string,
  ): Promise<boolean> {
    const run = this.#mustGet(runId);
    if (!from.includes(run.status) || (run.review && run.review.at >= staleBefore)) return false;
    run.review = clone(review);
    return true;
  }

  async releaseReview(runId: string, review: Review): Promise<void> {
    const run = this.#mustGet(runId);
    if (run.review?.at === review.at && run.review.reviewer === review.reviewer) delete run.review;
  }
}

export class MemoryBlobStore implements BlobStore {
  readonly #blobs = new Map<string, string>();

  async put(key: string, body: string): Promise<void> {
    this.#blobs.set(key, body);
  }

  async get(key: string): Promise<string> {
    const body = this.#blobs.get(key);
    if (body === undefined) throw new BlobNotFoundError(key);
    return body;
  }

  async putIfAbsent(key: string, body: string): Promise<boolean> {
    if (this.#blobs.has(key)) return false;
    this.#blobs.set(key, body);
    return true;
  }

  keys(): string[] {
    return [...this.#blobs.keys()];
  }
}
