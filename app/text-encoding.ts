/**
 * Text files as their bytes say: the decoder lives in shared/text-encoding.ts, so that every layer
 * that reads a person's file (packs, sources, cassettes, configs) reads it the same way.
 */
export { decodeText } from "../shared/text-encoding.js";
