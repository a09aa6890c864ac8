import { describe, expect, it } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { type ContentClaim, claimHash, claimTerms, mayTakeClaim } from "../../shared/store/claim.js";
import { at } from "./fixtures.js";

const WINDOW_MS = 15 * 60_000;
const claimedAt = (minutes: number, runId = "holder"): ContentClaim => ({
  runId,
  claimedAtMs: Date.parse(at(minutes)),
});

describe("claimTerms", () => {
  it("resolves a request to the claim it writes, the staleness bound and the holders it may displace", () => {
    expect(claimTerms("r2", at(20), WINDOW_MS, "r1")).toEqual({
      claim: { runId: "r2", claimedAtMs: Date.parse(at(20)) },
      staleBefore: Date.parse(at(5)),
      takesFrom: ["r2", "r1"],
    });
    expect(claimTerms("r2", at(20), WINDOW_MS).takesFrom).toEqual(["r2", "r2"]);
  });

  it("refuses a time that is not a timestamp", () => {
    expect(() => claimTerms("r1", "not a time", WINDOW_MS)).toThrow(RangeError);
  });
});

describe("mayTakeClaim", () => {
  // Each row: the claim held (or none), the request, and whether the request takes the content.
  const cases: [string, ContentClaim | undefined, Parameters<typeof claimTerms>, boolean][] = [
    ["nothing is held", undefined, ["r2", at(0), WINDOW_MS], true],
    ["another run holds it within the window", claimedAt(0), ["r2", at(5), WINDOW_MS], false],
    ["the window's last instant still belongs to the holder", claimedAt(0), ["r2", at(15), WINDOW_MS], false],
    ["the holder's claim has expired", claimedAt(0), ["r2", at(16), WINDOW_MS], true],
    ["the caller holds it already (a retried task)", claimedAt(0, "r2"), ["r2", at(1), WINDOW_MS], true],
    ["the caller replaces the holder (a failed run)", claimedAt(0), ["r2", at(1), WINDOW_MS, "holder"], true],
    ["the caller replaces some other run", claimedAt(0), ["r2", at(1), WINDOW_MS, "r9"], false],
    ["a window of 0 expires every earlier claim", claimedAt(0), ["r2", at(1), 0], true],
    [
      "a claim with no readable time is held until replaced",
      { runId: "holder", claimedAtMs: Number.NaN },
      ["r2", at(60), WINDOW_MS],
      false,
    ],
  ];
  it.each(cases)("%s", (_, held, request, expected) => {
    expect(mayTakeClaim(held, claimTerms(...request))).toBe(expected);
  });
});

describe("claimHash", () => {
  const draft: Draft = { id: "q1", kind: "mcq", content: { stem: "2 + 2?", options: ["3", "4"] } };

  it("keys the content, not how its keys happen to be ordered", () => {
    const reordered: Draft = { content: { options: ["3", "4"], stem: "2 + 2?" }, kind: "mcq", id: "q1" };
    expect(claimHash(reordered)).toBe(claimHash(draft));
    expect(claimHash(draft)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("tells a deliberate resubmission and a changed draft apart from a repeated delivery", () => {
    expect(claimHash(draft, "second")).not.toBe(claimHash(draft));
    expect(claimHash(draft, "second")).toBe(claimHash(draft, "second"));
    expect(claimHash({ ...draft, content: { stem: "2 + 3?", options: ["3", "4"] } })).not.toBe(
      claimHash(draft),
    );
  });
});
