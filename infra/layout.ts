import { blobKeys } from "../shared/loop/keys.js";

/** The bucket's top-level prefixes, taken from the blob layout so that IAM and the core cannot drift. */
const prefixOf = (key: string): string => key.slice(0, key.indexOf("/") + 1);

/** Uploads that start runs; never written by redraft. */
export const DRAFTS_PREFIX = "drafts/";
/** Every attempt's draft, report, answer and diff. */
export const RUNS_PREFIX = prefixOf(blobKeys.original("run"));
/** Published drafts, `results/<draftId>/<runId>.json`. */
export const RESULTS_PREFIX = prefixOf(blobKeys.result("draft", "run"));
