/**
 * Usage of judge round k is counted (`addUsage`) under this key + k: attempts are 1..9999, so the
 * keys never meet. Here, beside the blob layout, for the readers that reconcile a run's tokens.
 */
export const JUDGE_USAGE_KEY_BASE = 100_000;

/**
 * Blob layout. Uploads land under `drafts/` and are never written to; every attempt's draft,
 * report and model answer is kept under `runs/`; the corrected draft is published under `results/`.
 */
export const blobKeys = {
  original: (runId: string) => `runs/${runId}/original.json`,
  attemptDraft: (runId: string, n: number) => `runs/${runId}/attempts/${n}/draft.json`,
  attemptReport: (runId: string, n: number) => `runs/${runId}/attempts/${n}/report.json`,
  attemptCandidate: (runId: string, n: number) => `runs/${runId}/attempts/${n}/candidate.json`,
  attemptAnswer: (runId: string, n: number) => `runs/${runId}/attempts/${n}/answer.json`,
  attemptDiff: (runId: string, n: number) => `runs/${runId}/attempts/${n}/diff.json`,
  judgeReport: (runId: string, round: number) => `runs/${runId}/judge/${round}.json`,
  judgeAnswer: (runId: string, round: number) => `runs/${runId}/judge/${round}.answer.json`,
  result: (draftId: string, runId: string) => `results/${draftId}/${runId}.json`,
};
