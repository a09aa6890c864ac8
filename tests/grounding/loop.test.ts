import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import { readLocalSource } from "../../local/source.js";
import type { Draft } from "../../shared/draft.js";
import { MAX_SOURCE_BYTES } from "../../shared/grounding/source.js";
import type { JudgeReport } from "../../shared/loop/steps/judge.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";
import { blobKeys } from "../../shared/store/bucket-layout.js";
import { FULLY_CORRECTED_DRAFT } from "../fixtures/seed004.js";
import { answer, makeDeps } from "../loop/harness.js";

const ID = "grounded-1";
const SOURCE = `Case 14. A 63-year-old man with acute STEMI arrives 20 minutes from a PCI-capable centre.
He is given aspirin in the ambulance.

Guideline summary: Aspirin and PCI are first-line treatments for acute MI when a PCI-capable centre can be reached in time.`;
const content = {
  ...(FULLY_CORRECTED_DRAFT.content as object),
  vignette: "A 58-year-old man with acute STEMI arrives 20 minutes from a PCI-capable centre.",
  rationale: "Aspirin and PCI are first-line treatments for acute MI per AHA guidelines.",
};
const draft: Draft = {
  ...FULLY_CORRECTED_DRAFT,
  id: ID,
  content,
  context: { intent: "A question on acute MI, from case 14.", source: SOURCE },
};
const RATIONALE_QUOTE = "Aspirin and PCI are first-line treatments for acute MI";
const VIGNETTE_QUOTE = "A 63-year-old man with acute STEMI arrives 20 minutes from a PCI-capable centre.";

/** The judge's answer: no findings, and per path the quotes it gives. */
const judge = (quotes: Record<string, string[]>, draftId = ID) => ({
  draftId,
  purpose: "judge" as const,
  output: {
    findings: [],
    grounding: Object.entries(quotes).map(([path, q]) => ({ path, claim: `what ${path} says`, quotes: q })),
  },
  usage: { input_tokens: 900, output_tokens: 120 },
});

describe("a draft grounded in its source", () => {
  it("an unsupported value goes back to the corrector with the source excerpt, and is fixed", async () => {
    const { deps, model, blobs } = makeDeps([
      judge({ "/vignette": [], "/rationale": [RATIONALE_QUOTE] }),
      answer(ID, { ...content, vignette: VIGNETTE_QUOTE }),
      judge({ "/vignette": [VIGNETTE_QUOTE], "/rationale": [RATIONALE_QUOTE] }),
    ]);
    const events: { type: string; detail: Record<string, unknown> }[] = [];
    const result = await correctDraft(draft, {
      ...deps,
      events: { publish: async (type, detail) => void events.push({ type, detail }) },
    });
    expect(result.status).toBe("validated");
    expect(model?.requests.map((r) => r.purpose)).toEqual(["judge", "correct", "judge"]);
    // The judge saw the source and the grounded fields; the mcq default grounds the vignette and rationale.
    const judgeUser = model?.requests[0]?.user ?? "";
    expect(judgeUser).toContain("<source_passages>");
    expect(judgeUser).toContain('"path": "/vignette"');
    expect(model?.requests[0]?.tool.inputSchema).toMatchObject({ required: ["findings", "grounding"] });
    // The correction prompt carries the source around the closest match of the unsupported field.
    const correction = model?.requests[1];
    expect(correction?.user).toMatch(
      /<source_excerpt>\n- \/vignette: "[^"]*A 63-year-old man with acute STEMI/,
    );
    expect(correction?.subject?.violations).toEqual([{ ruleId: "source_unsupported", path: "/vignette" }]);
    // Evidence per field, with offsets into the source, stored with the round and the attempt it judged.
    const first = JSON.parse(await blobs.get(blobKeys.judgeReport(result.runId, 1))) as JudgeReport;
    expect(first.attempt).toBe(0);
    expect(first.grounding?.fields.map((f) => [f.path, f.status])).toEqual([
      ["/vignette", "unsupported"],
      ["/rationale", "supported"],
    ]);
    const q = first.grounding?.fields[1]?.quotes[0];
    expect(SOURCE.slice(q?.start, q?.end)).toBe(RATIONALE_QUOTE);
    expect(first.grounding?.split).toBe(false);
    expect(await blobs.get(blobKeys.source(result.runId))).toBe(SOURCE);
    // The outcome event says where each field's support lies.
    const announced = events.find((e) => e.type === "Draft Validated")?.detail.grounding;
    expect(announced).toMatchObject({ checked: true, supported: 2, unsupported: 0 });
    expect((announced as { fields: { quotes: unknown[] }[] }).fields[0]?.quotes).toEqual([
      { start: SOURCE.indexOf(VIGNETTE_QUOTE), end: SOURCE.indexOf(VIGNETTE_QUOTE) + VIGNETTE_QUOTE.length },
    ]);
  });

  it("after the logic budget, a person gets the run with the evidence: source_unsupported at the path", async () => {
    const invented = "A 58-year-old man with acute STEMI arrives";
    const { deps } = makeDeps([
      judge({ "/vignette": [invented], "/rationale": [RATIONALE_QUOTE] }),
      answer(ID, content),
      judge({ "/vignette": [invented], "/rationale": [RATIONALE_QUOTE] }),
    ]);
    const events: { type: string; detail: Record<string, unknown> }[] = [];
    const result = await correctDraft(draft, {
      ...deps,
      events: { publish: async (type, detail) => void events.push({ type, detail }) },
    });
    expect(result.status).toBe("needs_manual_review");
    expect(result.reason).toBe("logic_unresolved");
    expect(result.finalViolations).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ ruleId: "source_unsupported", severity: "error", path: "/vignette" }),
        expect.objectContaining({ ruleId: "source_misquoted", severity: "error", path: "/vignette" }),
      ]),
    );
    expect(events.find((e) => e.type === "Draft Needs Review")?.detail.grounding).toMatchObject({
      unsupported: 1,
      supported: 1,
    });
  });

  it("a long source is split; the record says which passages the judge saw", async () => {
    const filler = (i: number) =>
      `Appendix ${i}: the ward rota, parking permits and canteen hours were reviewed without change. `.repeat(
        6,
      );
    const long = [
      ...Array.from({ length: 60 }, (_, i) => filler(i)),
      SOURCE,
      ...Array.from({ length: 60 }, (_, i) => filler(60 + i)),
    ].join("\n\n");
    const { deps, model, blobs } = makeDeps([
      judge({ "/vignette": [VIGNETTE_QUOTE], "/rationale": [RATIONALE_QUOTE] }),
    ]);
    const result = await correctDraft(
      { ...draft, content: { ...content, vignette: VIGNETTE_QUOTE }, context: { source: long } },
      deps,
    );
    expect(result.status).toBe("validated");
    const report = JSON.parse(await blobs.get(blobKeys.judgeReport(result.runId, 1))) as JudgeReport;
    expect(report.grounding?.split).toBe(true);
    expect(report.grounding?.sourceChars).toBe(long.length);
    const seen = report.grounding?.passages ?? [];
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.reduce((n, p) => n + p.end - p.start, 0)).toBeLessThan(long.length);
    // The passage that holds the case was sent, and the prompt holds only the passages sent.
    expect(seen.some((p) => long.slice(p.start, p.end).includes("63-year-old"))).toBe(true);
    const user = model?.requests[0]?.user ?? "";
    expect(user.length).toBeLessThan(long.length);
    for (const p of seen) expect(user).toContain(`[passage ${p.id}, characters ${p.start}–${p.end}]`);
    // The quotes are found at their place in the whole source.
    const q = report.grounding?.fields[0]?.quotes[0];
    expect(long.slice(q?.start, q?.end)).toBe(VIGNETTE_QUOTE);
  });

  it("a source given by reference is read once and kept with the run; one over the limit is refused", async () => {
    const dir = await mkdtemp(join(tmpdir(), "redraft-source-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, "case14.txt");
    await writeFile(file, SOURCE);
    const { deps, blobs } = makeDeps([
      judge({ "/vignette": [VIGNETTE_QUOTE], "/rationale": [RATIONALE_QUOTE] }),
    ]);
    const withRef = {
      ...draft,
      content: { ...content, vignette: VIGNETTE_QUOTE },
      context: { source: { ref: file } },
    };
    const result = await correctDraft(withRef, { ...deps, readSource: readLocalSource });
    expect(result.status).toBe("validated");
    expect(await blobs.get(blobKeys.source(result.runId))).toBe(SOURCE);

    await writeFile(file, "x".repeat(MAX_SOURCE_BYTES + 1));
    const big = await correctDraft(
      { ...withRef, id: "grounded-2" },
      { ...makeDeps([]).deps, readSource: readLocalSource },
    );
    expect([big.status, big.reason]).toEqual(["rejected", "too_large"]);
    const missing = await correctDraft(
      { ...withRef, id: "grounded-3", context: { source: { ref: join(dir, "nope.txt") } } },
      { ...makeDeps([]).deps, readSource: readLocalSource },
    );
    expect([missing.status, missing.reason]).toEqual(["rejected", "unreadable"]);
    // In the cloud a reference is a key under sources/ of the bucket, and nothing else.
    const cloud = makeDeps([judge({ "/vignette": [VIGNETTE_QUOTE], "/rationale": [RATIONALE_QUOTE] })]);
    await cloud.blobs.put("sources/case14.txt", SOURCE);
    const fromBucket = await correctDraft(
      { ...withRef, context: { source: { ref: "sources/case14.txt" } } },
      cloud.deps,
    );
    expect(fromBucket.status).toBe("validated");
    const outside = await correctDraft(
      { ...withRef, id: "grounded-4", context: { source: { ref: "runs/other/original.json" } } },
      makeDeps([]).deps,
    );
    expect([outside.status, outside.reason]).toEqual(["rejected", "invalid_input"]);
  });
});

/** A client of its own provider that answers the judge and remembers what it was asked. */
class JudgeSpy implements ModelClient {
  readonly model = "judge-default";
  readonly requests: ModelRequest[] = [];
  constructor(readonly provider: string) {}
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    return {
      output: {
        findings: [],
        grounding: [
          { path: "/vignette", claim: "c", quotes: [VIGNETTE_QUOTE] },
          { path: "/rationale", claim: "c", quotes: [RATIONALE_QUOTE] },
        ],
      },
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
      model: request.model ?? this.model,
      latencyMs: 1,
    };
  }
}

describe("a judge that is not the author", () => {
  const fixed = { ...draft, content: { ...content, vignette: "A 58-year-old man with acute STEMI." } };

  it("judge.model names the model the judge step calls; the corrector keeps its own", async () => {
    const { deps, model } = makeDeps(
      [
        judge({ "/vignette": [], "/rationale": [RATIONALE_QUOTE] }),
        answer(ID, { ...content, vignette: VIGNETTE_QUOTE }),
        judge({ "/vignette": [VIGNETTE_QUOTE], "/rationale": [RATIONALE_QUOTE] }),
      ],
      { packs: { mcq: { judge: { model: "claude-haiku-4-5" } } } },
    );
    const result = await correctDraft(fixed, deps);
    expect(result.status).toBe("validated");
    expect(model?.requests.map((r) => [r.purpose, r.model])).toEqual([
      ["judge", "claude-haiku-4-5"],
      ["correct", undefined],
      ["judge", "claude-haiku-4-5"],
    ]);
  });

  it("`<provider>:<id>` calls the judge client of that provider, never the author's", async () => {
    const { deps, model } = makeDeps([], { judge: { model: "bedrock:anthropic.claude-haiku-4-5" } });
    const judgeModel = new JudgeSpy("bedrock");
    const result = await correctDraft(
      { ...fixed, content: { ...content, vignette: VIGNETTE_QUOTE } },
      {
        ...deps,
        judgeModel,
      },
    );
    expect(result.status).toBe("validated");
    expect(model?.requests).toEqual([]);
    expect(judgeModel.requests.map((r) => [r.purpose, r.model])).toEqual([
      ["judge", "anthropic.claude-haiku-4-5"],
    ]);
  });

  it("a provider with no client is a configuration fault, not a silent fallback to the author", async () => {
    const { deps, model } = makeDeps([], { judge: { model: "bedrock:anthropic.claude-haiku-4-5" } });
    const result = await correctDraft({ ...fixed, content: { ...content, vignette: VIGNETTE_QUOTE } }, deps);
    expect([result.status, result.reason]).toEqual(["failed", "model_error"]);
    expect(model?.requests).toEqual([]);
  });
});
