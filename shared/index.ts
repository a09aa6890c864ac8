/**
 * redraft's pure core: drafts, rule packs, validation, repair, and the correction loop's steps.
 * `correctDraft`, which runs those steps through the state machine, is exported by the library's
 * entry, index.ts at the root (it lives in local/, which shared/ never imports).
 */
export * from "./draft.js";
export * from "./engine.js";
export * from "./errors.js";
export * from "./hash.js";
export * from "./loop/judge.js";
export { blobKeys } from "./loop/keys.js";
export { resolveLimits } from "./loop/limits.js";
export * from "./loop/prompt.js";
export * from "./loop/response.js";
export * from "./loop/run.js";
export * from "./loop/state.js";
export * from "./loop/steps.js";
export * from "./model/index.js";
export * from "./pack.js";
export { codePack } from "./packs/code.js";
export { loadPackFile, packFromDefinition } from "./packs/declarative.js";
export { builtinPacks } from "./packs/index.js";
export { jsonPack } from "./packs/json.js";
export { mcqPack } from "./packs/mcq.js";
export * from "./pointer.js";
export * from "./registry.js";
export * from "./store/memory.js";
export * from "./store/types.js";
export * from "./validate.js";
