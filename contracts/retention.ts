/**
 * How the bucket's lifecycle tells a run awaiting review from the others, shared by the blob store,
 * λ outcome and the lifecycle rules in `infra/` (no SDK import, so the CDK app can read it).
 *
 * Every object redraft writes under `runs/` and `results/` carries {@link RETENTION_TAG} =
 * `standard`, and only objects so tagged expire. When a run needs review, λ outcome re-tags its
 * objects `review`: they are kept until a decision re-tags them `standard`.
 */
export const RETENTION_TAG = "redraft-retention";
export const RetentionTagValues = { standard: "standard", review: "review" } as const;
/** The `Tagging` header of a PutObject: URL query form. */
export const STANDARD_TAGGING = `${RETENTION_TAG}=${RetentionTagValues.standard}`;
