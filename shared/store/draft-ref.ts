import { BATCH_ITEMS_PREFIX, DRAFTS_PREFIX } from "./bucket-layout.js";

/**
 * Which objects a run may read as its draft. The execution input names the object (`draftRef`), and
 * a client's `Draft Submitted` event is the execution input, so without this a client could have a
 * run read any key of the stack's bucket with redraft's role: another run's `runs/…` or
 * `results/…`, another batch's `batch-items/…`. A run reads an upload under `drafts/`, or, when it
 * is a batch's child, an item of its own batch: its run id is the execution name the batch machine
 * gives it (`<batchId>-<line>`, never one λ start gives a delivery: `u-…`, `e-…`).
 */

/** A batch id as batchIdFor makes it (shared/batch/record.ts), or as a caller names it (`b-…`). */
const BATCH_ID = /^b-[A-Za-z0-9-]+$/;
/**
 * A batch child's run id: `<batchId>-<line>` (childRunId), or a resumed item's `….rerun-<n>`
 * (rerunId). Nothing but the line may follow the batch id, so a child of `b-x-5` is no child of `b-x`.
 */
const isChildOf = (runId: string, batchId: string): boolean =>
  runId.startsWith(`${batchId}-`) && /^\d+(\.rerun-\d+)?$/.test(runId.slice(batchId.length + 1));

/**
 * Why the run `runId` may not read `key` as its draft, in one sentence a person can act on, or
 * undefined when it may. Checked before anything is read.
 */
export function refusedDraftKey(key: string, runId: string): string | undefined {
  if (key.split("/").some((segment) => segment === "." || segment === ".."))
    return `draftRef "${key}" has a "." or ".." segment: name the upload by its own key under ${DRAFTS_PREFIX}`;
  if (key.startsWith(DRAFTS_PREFIX) && key.length > DRAFTS_PREFIX.length) return undefined;
  if (key.startsWith(BATCH_ITEMS_PREFIX)) {
    const batchId = key.slice(BATCH_ITEMS_PREFIX.length).split("/")[0] ?? "";
    if (BATCH_ID.test(batchId) && isChildOf(runId, batchId)) return undefined;
    return `draftRef "${key}" is a batch's item, and this run (${runId}) is not a child of that batch: a run reads only an upload under ${DRAFTS_PREFIX} or its own batch's items`;
  }
  return `draftRef "${key}" is outside ${DRAFTS_PREFIX}: a run reads only an upload under ${DRAFTS_PREFIX} (a batch's child, its own batch's items)`;
}
