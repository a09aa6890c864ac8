/**
 * Kept for the importers not yet moved: the state machine is no longer synthesized or cached at
 * run time, it is read from infra/state-machine.asl.json (local/state-machine.ts).
 */
export { loadAsl } from "./state-machine.js";
