import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadRunEvidence, timeline } from "../../cli/show.js";
import { correctDraft } from "../../local/in-process.js";
import { makeDeps } from "../loop/harness.js";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "grounding");

describe("redraft show of a draft with one unsupported value", () => {
  it("prints the source, and per field the draft's value beside the source's words and each quote's fate", async () => {
    const draft = JSON.parse(await readFile(join(FIXTURES, "case14.json"), "utf8"));
    const cassette = JSON.parse(await readFile(join(FIXTURES, "case14.cassette.json"), "utf8"));
    const { deps, runs } = makeDeps(cassette.responses);
    const result = await correctDraft(draft, deps);
    expect([result.status, result.reason]).toEqual(["needs_manual_review", "logic_unresolved"]);
    const run = await runs.getRun(result.runId);
    if (!run) throw new Error("no run");
    const text = timeline(result, run, await loadRunEvidence(result, deps), undefined);
    expect(text).toMatch(/^Source: 513 characters: "Case 14/m);
    expect(text).toContain(
      "grounding: 1 of 2 field(s) unsupported; the judge saw the whole source (513 characters)",
    );
    expect(text).toMatch(
      /UNSUPPORTED \/vignette — .*\n {6}draft: {2}"A 58-year-old man presents.*\n {6}source: "A 63-year-old man presents with crushing substernal chest pain" \[32–94\] \(the closest match\)\n {6}quote: {2}"A 58-year-old man presents with crushing substernal chest pain" — quotes the draft, not the source/,
    );
    expect(text).toMatch(
      /supported {3}\/rationale .*\n.*\n {6}source: "Aspirin and PCI are first-line.*" \[304–418\]/,
    );
    expect(text).toMatch(/error {3}source_unsupported \/vignette/);
  });
});
