/**
 * redraft as a library: the pure core (shared/) and `correctDraft`, which runs the committed state
 * machine (infra/state-machine.asl.json) in-process over the stores it is given.
 */
export { type CorrectDraftOptions, correctDraft, type EventSink } from "./local/in-process.js";
export * from "./shared/index.js";
