/** redraft's pure core: drafts, rule packs, validation, repair, and the correction loop. */
export * from "./draft.js";
export * from "./engine.js";
export * from "./errors.js";
export * from "./hash.js";
export { blobKeys } from "./loop/keys.js";
export { resolveLimits } from "./loop/limits.js";
export * from "./loop/prompt.js";
export * from "./loop/response.js";
export * from "./loop/run.js";
export * from "./loop/state.js";
export * from "./loop/steps.js";
export * from "./pack.js";
export { builtinPacks } from "./packs/index.js";
export * from "./pointer.js";
export * from "./registry.js";
export * from "./store/memory.js";
export * from "./store/types.js";
export * from "./validate.js";
