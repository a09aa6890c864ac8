/**
 * The loop's steps, one module each under steps/: Validate (attempt 0), Correct (one model call),
 * Revalidate (check, record, verdict), Judge (the logic phase), and recording a failure. Each is
 * what one Lambda runs and what the state machine calls in every other runtime; this module is
 * their one import path. (DEFAULT_DEDUPE_WINDOW_MS lives in limits.ts with the other defaults;
 * it is exported here too because the library exported it from here.)
 */
export { DEFAULT_DEDUPE_WINDOW_MS } from "./limits.js";
export { correctStep } from "./steps/correct.js";
export { type LoopDeps, loadJson } from "./steps/deps.js";
export { recordFailure } from "./steps/failure.js";
export type { InputRejection, ValidateInput } from "./steps/input.js";
export { JUDGE_USAGE_KEY_BASE, type JudgeReport, judgeStep } from "./steps/judge.js";
export { revalidateStep } from "./steps/revalidate.js";
export { validateStep } from "./steps/validate.js";
