import { describe, expect, it } from "vitest";
import { buildMachine } from "../../local/asl-interpreter.js";
import { loadAsl, loadBatchAsl } from "../../local/state-machine.js";

// The runtime builds its machines without the engine's validation (local/asl-interpreter.ts): this is
// where the committed definitions meet it, so that a definition the engine refuses fails here.
describe("the engine's validation of the committed state machines", () => {
  it("accepts the per-draft state machine", async () => {
    const asl = await loadAsl();
    expect(() => buildMachine(asl, { validate: true })).not.toThrow();
  });

  it("accepts the batch state machine", async () => {
    const asl = await loadBatchAsl();
    expect(() => buildMachine(asl, { validate: true })).not.toThrow();
  });

  it("refuses a definition with a broken path when asked to validate, and not otherwise", async () => {
    const asl = await loadAsl();
    const [name, state] = Object.entries(asl.States).find(([, s]) => s.Type === "Task") ?? [];
    if (!name || !state) throw new Error("the state machine has no Task state");
    asl.States[name] = { ...state, ResultPath: "not a path" };
    expect(() => buildMachine(asl, { validate: true })).toThrow();
    expect(() => buildMachine(asl)).not.toThrow();
  });
});
