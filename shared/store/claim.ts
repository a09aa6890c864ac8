/**
 * Content claims: which run handles a draft's content (its hash) within the dedupe window, so that
 * a repeated delivery starts no second run. Who may take a claim is decided here, once, for both
 * stores: the memory store applies {@link mayTakeClaim} directly; the DynamoDB store writes the same
 * terms as the condition of one conditional put (the decision has to be atomic there) and applies
 * {@link mayTakeClaim} to the claim it reads back when that put is refused.
 */
import type { Draft } from "../draft.js";
import { canonicalJson, sha256 } from "../hash.js";

/**
 * The content a claim is keyed on: the draft as canonical JSON (key order does not matter) and the
 * submission id, so that a deliberate resubmission (a new `submissionId`) is not taken for a
 * duplicate delivery of the same upload.
 */
export function claimHash(draft: Draft, submissionId = ""): string {
  return sha256(`${canonicalJson(draft)}\n${submissionId}`);
}

/** A claim as a store keeps it: the run holding the content, and when it claimed it. */
export interface ContentClaim {
  runId: string;
  /** Milliseconds since the epoch. Staleness is decided by this, never by the claim having been deleted. */
  claimedAtMs: number;
}

/** One request for a claim, resolved to the values the decision compares. */
export interface ClaimTerms {
  /** The claim written when the request wins. */
  claim: ContentClaim;
  /** A held claim made before this instant has expired: any run may take it. */
  staleBefore: number;
  /**
   * Holders whose claim may be taken at any age: the caller itself (a retried task claims again)
   * and the run it replaces (a run that failed holds its claim in vain). Two entries, the second
   * repeating the first when nothing is replaced, as the DynamoDB condition needs two values.
   */
  takesFrom: readonly [string, string];
}

/**
 * The terms of a claim on content for `runId` at `now` (an ISO timestamp) with a dedupe window of
 * `windowMs`, optionally taking over the claim of `replaceHolder`. Throws a RangeError when `now`
 * is not a timestamp: a claim whose age cannot be told would never expire.
 */
export function claimTerms(runId: string, now: string, windowMs: number, replaceHolder?: string): ClaimTerms {
  const nowMs = Date.parse(now);
  if (Number.isNaN(nowMs)) throw new RangeError(`claimContent: "${now}" is not a timestamp`);
  return {
    claim: { runId, claimedAtMs: nowMs },
    staleBefore: nowMs - windowMs,
    takesFrom: [runId, replaceHolder ?? runId],
  };
}

/** Whether a request with these terms takes the content from `held`: free, expired, ours, or replaced. */
export function mayTakeClaim(held: ContentClaim | undefined, terms: ClaimTerms): boolean {
  return held === undefined || held.claimedAtMs < terms.staleBefore || terms.takesFrom.includes(held.runId);
}
