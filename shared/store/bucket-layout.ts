/**
 * The bucket's layout: its top-level prefixes and the key of every object redraft reads or writes.
 * IAM policies, trigger rules and lifecycle rules (infra/), the handlers and the blob stores
 * (functions/, local/) and the command line all take their keys from here, so a prefix the policies
 * grant is the one the code writes under.
 */

/** Uploads that start runs; never written by redraft. */
export const DRAFTS_PREFIX = "drafts/";
/** Every attempt's draft, report, answer and diff, under `runs/<runId>/`. */
export const RUNS_PREFIX = "runs/";
/** Published drafts, `results/<draftId>/<runId>.json`. */
export const RESULTS_PREFIX = "results/";
/** Uploaded batch manifests: each one starts a batch. */
export const BATCHES_PREFIX = "batches/";
/** The items a batch split its manifest into, and the Map's item list. */
export const BATCH_ITEMS_PREFIX = "batch-items/";
/** A batch's per-item results and its rounds' lists. */
export const BATCH_RESULTS_PREFIX = "batch-results/";
/** Sources drafts are grounded in (`context.source: { ref: "sources/…" }`); read by Validate, never written. */
export const SOURCES_PREFIX = "sources/";
/** Batch pricing on Bedrock: each job's input and output files (the service role may read and write there). */
export const BEDROCK_JOBS_PREFIX = "batch-jobs/";

/** `runs/<runId>/`: every object of one run. */
export const runPrefix = (runId: string): string => `${RUNS_PREFIX}${runId}/`;

/**
 * One run's objects. The uploaded draft is copied to `original.json` so the run keeps it whatever
 * happens to the upload; each attempt's draft, report and model answer is kept; the corrected draft
 * is published under `results/`.
 */
export const blobKeys = {
  original: (runId: string) => `${runPrefix(runId)}original.json`,
  attemptDraft: (runId: string, n: number) => `${runPrefix(runId)}attempts/${n}/draft.json`,
  attemptReport: (runId: string, n: number) => `${runPrefix(runId)}attempts/${n}/report.json`,
  attemptCandidate: (runId: string, n: number) => `${runPrefix(runId)}attempts/${n}/candidate.json`,
  attemptAnswer: (runId: string, n: number) => `${runPrefix(runId)}attempts/${n}/answer.json`,
  attemptDiff: (runId: string, n: number) => `${runPrefix(runId)}attempts/${n}/diff.json`,
  judgeReport: (runId: string, round: number) => `${runPrefix(runId)}judge/${round}.json`,
  judgeAnswer: (runId: string, round: number) => `${runPrefix(runId)}judge/${round}.answer.json`,
  /** The run's copy of its draft's `context.source`, read once by Validate (shared/grounding/source.ts). */
  source: (runId: string) => `${runPrefix(runId)}source.txt`,
  result: (draftId: string, runId: string) => `${RESULTS_PREFIX}${draftId}/${runId}.json`,
};

/** One batch's objects (shared/batch/steps.ts writes them). */
export const batchKeys = {
  /** The Map's ItemReader input: JSONL of `MapItem`. */
  items: (batchId: string) => `${BATCH_ITEMS_PREFIX}${batchId}/items.jsonl`,
  /** One item's draft, as the manifest held it: what its child run reads, like an upload. */
  item: (batchId: string, line: number) => `${BATCH_ITEMS_PREFIX}${batchId}/line-${line}.json`,
  /** The per-item results: JSONL of `BatchItem`, in line order. */
  results: (batchId: string) => `${BATCH_RESULTS_PREFIX}${batchId}/items.jsonl`,
};

/** Where a batch-priced batch's rounds keep their lists (shared/batch/round-steps.ts). */
export const roundListKeys = {
  items: (batchId: string, round: number) => `${BATCH_RESULTS_PREFIX}${batchId}/rounds/${round}/items.jsonl`,
  requests: (batchId: string, round: number) =>
    `${BATCH_RESULTS_PREFIX}${batchId}/rounds/${round}/requests.json`,
  /** Every part's batch id, once all of them are created. */
  jobs: (batchId: string, round: number) => `${BATCH_RESULTS_PREFIX}${batchId}/rounds/${round}/jobs.json`,
  /** One part's batch id, saved the moment the service returns it. */
  job: (batchId: string, round: number, part: number) =>
    `${BATCH_RESULTS_PREFIX}${batchId}/rounds/${round}/jobs/${part}.json`,
  onDemand: (batchId: string, round: number) =>
    `${BATCH_RESULTS_PREFIX}${batchId}/rounds/${round}/on-demand.jsonl`,
};

/**
 * Where a parked call's request and its batch result lie: beside the answer the step would store
 * (`runs/<runId>/attempts/<n>/answer.json`, `runs/<runId>/judge/<k>.answer.json`), so each is as
 * unique as the attempt or judge round it answers, and the run's own prefix holds it.
 */
export const roundKeys = {
  request: (answerKey: string) => answerKey.replace(/answer\.json$/, "batch-request.json"),
  result: (answerKey: string) => answerKey.replace(/answer\.json$/, "batch-result.json"),
};

/** One Bedrock batch inference job's files (functions/lib/bedrock-batch.ts). */
export const bedrockJobKeys = {
  input: (jobName: string) => `${BEDROCK_JOBS_PREFIX}${jobName}/input.jsonl`,
  /** The folder the service writes the job's output into. */
  output: (jobName: string) => `${BEDROCK_JOBS_PREFIX}${jobName}/output/`,
};
