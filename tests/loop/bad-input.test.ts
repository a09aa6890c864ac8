import { describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import { SelfCorrectionError, StoreRequestFailedError, StoreUnavailableError } from "../../shared/errors.js";
import { jsonTextDepth, splitTopLevel, topLevelField, valueDepth } from "../../shared/json-depth.js";
import { buildRunResult } from "../../shared/loop/run.js";
import { validateStep } from "../../shared/loop/steps/validate.js";
import { DEFAULT_MAX_DRAFT_DEPTH, parseDraft } from "../../shared/validate.js";
import { FULLY_CORRECTED_DRAFT } from "../fixtures/seed004.js";
import { makeDeps } from "./harness.js";

const DEPTH = 10_000;
const deepArrayText = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
const deepObjectText = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
function deepValue(n: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < n; i++) value = { a: value };
  return value;
}
const GOOD = FULLY_CORRECTED_DRAFT;
const withContent = (id: string, content: string) =>
  `{"id":"${id}","kind":"mcq","metadata":{"note":"[[[ not nesting ]]]"},"content":${content}}`;

describe("depth without recursion", () => {
  it("measures the depth of a text and of a value with loops, brackets inside strings not counted", () => {
    expect(jsonTextDepth('{"a":[1,{"b":"]]]{{{"}]}', 100)).toBe(3);
    expect(jsonTextDepth('"\\"[[["', 100)).toBe(0);
    expect(jsonTextDepth(deepArrayText(1_000_000), 100)).toBe(101);
    expect(valueDepth({ a: [1, { b: "x" }] }, 100)).toBe(3);
    expect(valueDepth(deepValue(1_000_000), 100)).toBe(101);
  });

  it("splits an array at its top level without parsing its elements, and refuses a malformed one", () => {
    const deep = deepArrayText(DEPTH);
    expect(splitTopLevel(` [ {"id":"a"}, null , 7, ${deep} ]\n`)).toEqual({
      type: "array",
      elements: ['{"id":"a"}', "null", "7", deep],
    });
    expect(splitTopLevel("[]")).toEqual({ type: "array", elements: [] });
    expect(splitTopLevel("[1,]")).toBeUndefined();
    expect(splitTopLevel("[1] x")).toBeUndefined();
    expect(splitTopLevel("[1}")).toBeUndefined();
    expect(topLevelField(withContent("deep-1", deep), "id")).toBe("deep-1");
  });
});

describe("parseDraft on hostile input", () => {
  it("rejects JSON nested 10,000 levels deep, object or array, as too_deep before parsing it", () => {
    for (const text of [
      deepArrayText(DEPTH),
      deepObjectText(DEPTH),
      withContent("d", deepArrayText(DEPTH)),
    ]) {
      expect(() => parseDraft(text)).toThrow(
        expect.objectContaining({ code: "too_deep", message: expect.stringMatching(/100 levels/) }),
      );
    }
    expect(() => parseDraft({ ...GOOD, content: deepValue(DEPTH) })).toThrow(
      expect.objectContaining({ code: "too_deep" }),
    );
  });

  it("takes its limit from the caller, the default beside the size default", () => {
    expect(DEFAULT_MAX_DRAFT_DEPTH).toBe(100);
    const text = withContent("d", deepArrayText(5));
    expect(parseDraft(text, { maxDraftDepth: 6 }).id).toBe("d");
    expect(() => parseDraft(text, { maxDraftDepth: 5 })).toThrow(
      expect.objectContaining({ code: "too_deep" }),
    );
  });

  it("ignores a byte-order mark and names what it found instead of an object", () => {
    expect(parseDraft(`\uFEFF${JSON.stringify(GOOD)}`).id).toBe(GOOD.id);
    expect(() => parseDraft("null")).toThrow("draft must be a JSON object, got null");
    expect(() => parseDraft(null)).toThrow("got null");
    expect(() => parseDraft("7")).toThrow("got number");
    expect(() => parseDraft("[1]")).toThrow("got an array");
  });
});

describe("validateStep and correctDraft: one bad input, one record, nothing else lost", () => {
  it("rejects a draft whose content is 10,000 deep as too_deep, under its own id, uploaded or inline", async () => {
    const { deps, blobs, runs } = makeDeps(undefined);
    await blobs.put("drafts/deep.json", withContent("deep-upload", deepArrayText(DEPTH)));
    const uploaded = await validateStep({ runId: "r-up", draftRef: "drafts/deep.json" }, deps);
    expect(uploaded).toMatchObject({ decision: "rejected", reason: "too_deep", draftId: "deep-upload" });
    expect(await runs.getRun("r-up")).toMatchObject({
      status: "rejected",
      reason: "too_deep",
      message: expect.stringMatching(
        /^drafts\/deep\.json: draft is nested deeper than the limit of 100 levels/,
      ),
    });

    const inline = await correctDraft({ ...GOOD, id: "deep-inline", content: deepValue(DEPTH) }, deps);
    expect(inline).toMatchObject({ status: "rejected", reason: "too_deep", draftId: "deep-inline" });
    const good = await correctDraft(GOOD, deps);
    expect(good.status).toBe("validated");
  });

  it("accepts an upload that starts with a byte-order mark", async () => {
    const { deps, blobs } = makeDeps(undefined);
    await blobs.put("drafts/bom.json", `\uFEFF${JSON.stringify(GOOD)}`);
    expect(await validateStep({ runId: "r-bom", draftRef: "drafts/bom.json" }, deps)).toMatchObject({
      decision: "correct",
      draftId: GOOD.id,
      verdict: { errors: 0 },
    });
  });

  it("records a path the submitter could not read as rejected / unreadable, listed and shown like any run", async () => {
    const { deps, runs } = makeDeps(undefined);
    const state = await validateStep(
      {
        runId: "r-missing",
        rejectWith: {
          reason: "unreadable",
          message: "in/missing.json: no such file",
          draftId: "missing.json",
        },
      },
      deps,
    );
    expect(state).toMatchObject({ decision: "rejected", reason: "unreadable", draftId: "missing.json" });
    expect(await runs.listRuns({ status: "rejected" })).toHaveLength(1);
    expect(await buildRunResult("r-missing", deps)).toMatchObject({
      status: "rejected",
      reason: "unreadable",
      message: "in/missing.json: no such file",
    });
  });

  it("leaves a failed run record when Validate faults before registering the run, and throws on", async () => {
    const { deps, runs } = makeDeps(undefined);
    // With the depth guard off, the hashing walk overflows the stack: a fault, not bad input.
    const unguarded = { ...deps, maxDraftDepth: Number.POSITIVE_INFINITY };
    const text = withContent("overflow", deepArrayText(DEPTH));
    await deps.blobs.put("drafts/overflow.json", text);
    await expect(
      validateStep({ runId: "r-overflow", draftRef: "drafts/overflow.json" }, unguarded),
    ).rejects.toThrow(RangeError);
    expect(await runs.getRun("r-overflow")).toMatchObject({
      draftId: "overflow",
      status: "failed",
      reason: "system_error",
      message: expect.stringMatching(/^drafts\/overflow\.json: RangeError/),
    });

    const result = await correctDraft(
      { ...GOOD, id: "overflow-inline", content: deepValue(DEPTH) },
      unguarded,
    );
    expect(result).toMatchObject({ status: "failed", reason: "system_error", draftId: "overflow-inline" });
    expect(result.message).toMatch(/RangeError/);
  });

  it("records a store fault before registration as failed, but not one the workflow retries", async () => {
    const { deps, runs } = makeDeps(undefined);
    const failing = (name: string) => ({
      ...deps,
      blobs: {
        ...deps.blobs,
        get: deps.blobs.get.bind(deps.blobs),
        put: deps.blobs.put.bind(deps.blobs),
        putIfAbsent: async () => {
          throw Object.assign(new SelfCorrectionError("disk on fire", "store_request_failed"), { name });
        },
      },
    });
    await expect(
      validateStep({ runId: "r-fault", draft: GOOD }, failing("StoreRequestFailedError")),
    ).rejects.toThrow("disk on fire");
    expect(await runs.getRun("r-fault")).toMatchObject({ status: "failed", message: /disk on fire/ });
    await expect(
      validateStep({ runId: "r-retried", draft: GOOD }, failing("StoreUnavailableError")),
    ).rejects.toThrow("disk on fire");
    expect(await runs.getRun("r-retried")).toBeUndefined();
  });

  it("runs two drafts with one id and different content, each with its own record", async () => {
    const { deps } = makeDeps(undefined);
    const one = await correctDraft({ ...GOOD, id: "twin" }, { ...deps, submissionId: "batch" });
    const two = await correctDraft(
      { ...GOOD, id: "twin", metadata: { copy: 2 } },
      { ...deps, submissionId: "batch" },
    );
    expect([one.status, two.status]).toEqual(["validated", "validated"]);
    expect(one.runId).not.toBe(two.runId);
  });
});

describe("a store fault while reading the upload is not the draft's fault", () => {
  it("throws a transient store error on for the workflow's Retry, with no rejected record", async () => {
    const { deps, blobs, runs } = makeDeps(undefined);
    await blobs.put("drafts/ok.json", JSON.stringify(GOOD));
    const flaky = {
      ...deps,
      blobs: Object.assign(Object.create(blobs), {
        get: () =>
          Promise.reject(new StoreUnavailableError("GetObject drafts/ok.json", new Error("SlowDown"))),
      }),
    };
    await expect(validateStep({ runId: "r-flaky", draftRef: "drafts/ok.json" }, flaky)).rejects.toThrow(
      expect.objectContaining({ name: "StoreUnavailableError" }),
    );
    // The retried task registers the run; nothing may already say it was rejected.
    expect(await runs.getRun("r-flaky")).toBeUndefined();
  });

  it("records a terminal store error as a failed run (system_error), never as rejected input", async () => {
    const { deps, blobs, runs } = makeDeps(undefined);
    const denied = {
      ...deps,
      blobs: Object.assign(Object.create(blobs), {
        get: () =>
          Promise.reject(new StoreRequestFailedError("GetObject drafts/x.json", new Error("AccessDenied"))),
      }),
    };
    await expect(validateStep({ runId: "r-denied", draftRef: "drafts/x.json" }, denied)).rejects.toThrow(
      expect.objectContaining({ name: "StoreRequestFailedError" }),
    );
    expect(await runs.getRun("r-denied")).toMatchObject({ status: "failed", reason: "system_error" });
  });
});
