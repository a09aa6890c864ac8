import { describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { validateDraft } from "../../shared/validate.js";
import { answer, makeDeps } from "./harness.js";

/** Seed 001's extraction case: optional pattern fields (orcid, issn, ISO 8601 duration) the model fills with "". */
const schema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  required: ["title", "authors"],
  additionalProperties: false,
  properties: {
    title: { type: "string", minLength: 1 },
    issn: { type: "string", pattern: "^\\d{4}-\\d{3}[\\dX]$" },
    followUp: { type: "string", pattern: "^P(\\d+Y)?(\\d+M)?(\\d+D)?$" },
    authors: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        required: ["name"],
        properties: {
          name: { type: "string", minLength: 1 },
          orcid: { type: "string", pattern: "^\\d{4}-\\d{4}-\\d{4}-\\d{3}[\\dX]$" },
        },
      },
    },
  },
};
const draft = (content: unknown, id = "paper-1"): Draft => ({
  id,
  kind: "json",
  context: { intent: "Extract the record.", schema },
  content,
});

describe("seed 001 acceptance criteria, through the loop", () => {
  it("repair removes empty strings that violate patterns of optional fields, and records it", async () => {
    const report = await validateDraft(
      draft({ title: "T", issn: "", followUp: "", authors: [{ name: "A", orcid: "" }] }),
    );
    expect(report.passed).toBe(true);
    expect(report.repairs.map((r) => r.path).sort()).toEqual(["/authors/0/orcid", "/followUp", "/issn"]);
    expect(report.repairs.every((r) => r.action === "remove" && r.before === "")).toBe(true);
  });

  it("scores proportionally: one error is not a cliff to zero", async () => {
    const report = await validateDraft(draft({ title: "", authors: [{ name: "A" }] }));
    expect(report.passed).toBe(false);
    expect(report.score).toBeGreaterThan(0.7);
    expect(report.score).toBeLessThan(1);
  });

  it("tells the model to omit optional fields rather than emit empty strings", async () => {
    const { deps, model } = makeDeps([answer("paper-1", { title: "T", authors: [{ name: "A" }] })]);
    await correctDraft(draft({ title: "", authors: [{ name: "A" }] }), deps);
    const system = model?.requests[0]?.system.map((b) => b.text).join("\n") ?? "";
    expect(system).toMatch(/never emit an empty string/i);
  });

  it("repairs the empty strings a correction introduces, without spending another attempt", async () => {
    const { deps } = makeDeps([
      answer("paper-1", { title: "T", issn: "", authors: [{ name: "A", orcid: "" }] }),
    ]);
    const result = await correctDraft(draft({ title: "", authors: [{ name: "A" }] }), deps);
    expect(result).toMatchObject({ status: "validated", attempts: 1 });
    expect(result.attemptsDetail[0]?.repairs.map((r) => r.path).sort()).toEqual([
      "/authors/0/orcid",
      "/issn",
    ]);
    expect(result.finalDraft?.content).toEqual({ title: "T", authors: [{ name: "A" }] });
  });

  it("feeds previous failures back as hints, and exits after 2 consecutive rollbacks", async () => {
    const bad = { title: "", authors: [] };
    const { deps, model } = makeDeps([
      answer("paper-1", bad),
      answer("paper-1", bad),
      answer("paper-1", bad),
    ]);
    const result = await correctDraft(
      { ...draft({ title: "", authors: [{ name: "A" }] }), options: { maxAttempts: 4, breakerThreshold: 3 } },
      deps,
    );
    expect(result.reason).toBe("stuck");
    expect(result.attempts).toBe(2);
    expect(model?.requests).toHaveLength(2);
    expect(model?.requests[1]?.user).toMatch(/broke rules that passed before: schema:minItems/);
    expect(model?.requests[1]?.user).toMatch(/rolled back/);
    expect(result.finalDraft?.content).toEqual({ title: "", authors: [{ name: "A" }] });
  });
});
