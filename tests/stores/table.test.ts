import { describe, expect, it } from "vitest";
import {
  attemptKey,
  claimKey,
  createdPartition,
  DESIGN_ATTRIBUTES,
  expiresAt,
  INDEXES,
  KEY_ATTRIBUTES,
  OUTCOME_FIELDS,
  type OutcomeField,
  runIndexKeys,
  runKey,
  statusUpdate,
  statusUpdateValues,
  storeError,
} from "../../contracts/table.js";
import {
  ErrorNames,
  RunNotFoundError,
  StoreRequestFailedError,
  StoreUnavailableError,
} from "../../shared/errors.js";
import { at, makeRun } from "./fixtures.js";

/** Every `#name` / `:value` placeholder an expression mentions. */
const placeholders = (text: string, sigil: "#" | ":") =>
  new Set(text.match(sigil === "#" ? /#\w+/g : /:\w+/g) ?? []);

describe("keys", () => {
  it("pads attempt numbers so that the sort key orders them numerically", () => {
    const sks = [10, 2, 1, 100, 9].map((n) => attemptKey("r1", n).sk).sort();
    expect(sks).toEqual(["ATTEMPT#0001", "ATTEMPT#0002", "ATTEMPT#0009", "ATTEMPT#0010", "ATTEMPT#0100"]);
    expect(attemptKey("r1", 1).pk).toBe(runKey("r1").pk);
  });

  it("refuses attempt numbers the sort key cannot order", () => {
    for (const n of [0, -1, 1.5, 10_000]) expect(() => attemptKey("r1", n)).toThrow(RangeError);
  });

  it("puts claims in their own partition and index keys on runs only", () => {
    expect(claimKey("ab")).toEqual({ pk: "CONTENT#ab", sk: "CLAIM" });
    const run = makeRun("r1", { draftId: "d1", status: "validated", createdAt: at(0), updatedAt: at(3) });
    expect(runIndexKeys(run)).toEqual({
      byDraftPk: "DRAFT#d1",
      byDraftSk: `${at(0)}#r1`,
      byStatusPk: "STATUS#validated",
      byStatusSk: `${at(3)}#r1`,
      byCreatedPk: createdPartition("r1"),
      byCreatedSk: `${at(0)}#r1`,
    });
    expect(Object.keys(runIndexKeys(run)).every((k) => DESIGN_ATTRIBUTES.includes(k))).toBe(true);
    expect(KEY_ATTRIBUTES).toHaveLength(2 + 2 * Object.keys(INDEXES).length);
  });

  it("computes ttl in epoch seconds", () => {
    expect(expiresAt("1970-01-02T00:00:00.000Z", 1)).toBe(2 * 86_400);
    expect(() => expiresAt("yesterday", 1)).toThrow(RangeError);
  });
});

describe("statusUpdate", () => {
  const subsets: OutcomeField[][] = [
    [],
    ["reason", "finalRef", "resultRef"],
    ["finalRef", "resultRef"],
    OUTCOME_FIELDS,
  ];

  it.each(subsets.map((fields) => [fields.join(",") || "(no fields)", fields] as const))(
    "uses every name and value it declares, and declares every one it uses: %s",
    (_label, fields) => {
      const update = statusUpdate("validated", fields);
      const text = `${update.UpdateExpression} ${update.ConditionExpression}`;
      // DynamoDB rejects an expression with an undeclared placeholder, and a declared one left unused.
      expect(placeholders(text, "#")).toEqual(new Set(Object.keys(update.ExpressionAttributeNames)));
      const values = statusUpdateValues(update, {
        runId: "r1",
        at: at(1),
        fields: Object.fromEntries(fields.map((f) => [f, f === "attempts" ? 1 : "x"])),
      });
      expect(placeholders(text, ":")).toEqual(new Set(Object.keys(values)));
    },
  );

  it("is conditional on the run existing in another status, and appends the transition", () => {
    const update = statusUpdate("needs_manual_review", ["reason"]);
    expect(update.ConditionExpression).toBe("attribute_exists(pk) AND #status <> :status");
    expect(update.UpdateExpression).toContain("list_append(#transitions, :transition)");
    expect(update.fixedValues).toEqual({
      ":status": "needs_manual_review",
      ":statusKey": "STATUS#needs_manual_review",
    });
    expect(statusUpdateValues(update, { runId: "r1", at: at(2), fields: { reason: "stuck" } })).toEqual({
      ":status": "needs_manual_review",
      ":statusKey": "STATUS#needs_manual_review",
      ":statusSort": `${at(2)}#r1`,
      ":at": at(2),
      ":transition": [{ status: "needs_manual_review", at: at(2) }],
      ":reason": "stuck",
    });
  });

  it("refuses to leave a declared field without a value", () => {
    const update = statusUpdate("validated", ["resultRef"]);
    expect(() => statusUpdateValues(update, { runId: "r1", at: at(1) })).toThrow(/resultRef/);
  });

  it("refuses a field that is not part of a run's outcome", () => {
    expect(() => statusUpdate("validated", ["status" as OutcomeField])).toThrow(RangeError);
  });
});

describe("storeError", () => {
  const awsError = (name: string, httpStatusCode: number) =>
    Object.assign(new Error(`${name} happened`), { name, $metadata: { httpStatusCode } });

  it("names throttling and server faults as unavailable, so that the state machine retries them", () => {
    for (const error of [
      awsError("ProvisionedThroughputExceededException", 400),
      awsError("ThrottlingException", 400),
      awsError("SlowDown", 503),
      awsError("SomethingNew", 500),
    ]) {
      const translated = storeError("getRun", error);
      expect(translated).toBeInstanceOf(StoreUnavailableError);
      expect(translated.name).toBe(ErrorNames.StoreUnavailable);
      expect(translated.cause).toBe(error);
    }
  });

  it("names everything else as a failed request, with the operation and the cause in the message", () => {
    const translated = storeError("putAttempt", awsError("ValidationException", 400));
    expect(translated).toBeInstanceOf(StoreRequestFailedError);
    expect(translated.message).toContain("putAttempt");
    expect(translated.message).toContain("ValidationException");
  });

  it("passes redraft's own errors through", () => {
    const own = new RunNotFoundError("r1");
    expect(storeError("getRun", own)).toBe(own);
  });
});
