import { describe, expect, it } from "vitest";
import {
  checkGrounding,
  type GroundingClaim,
  groundedFields,
  SOURCE_MISQUOTED,
  SOURCE_UNSUPPORTED,
} from "../../shared/grounding/check.js";
import { choosePassages, splitPassages } from "../../shared/grounding/passages.js";
import { findQuote, MIN_QUOTE_CHARS, normalize } from "../../shared/grounding/quotes.js";

const SOURCE = `In the trial, 412 patients with acute STEMI were enrolled.
Patients received aspirin and were taken to PCI within 90 minutes of arrival.

The investigators reported that “door-to-balloon time” fell from 110 to 84 minutes.`;

const fields = [
  { path: "/vignette", value: "412 patients with acute STEMI were enrolled in the trial." },
  { path: "/rationale", value: "Aspirin and PCI within 90 minutes are first-line." },
];
const draftText = JSON.stringify({ vignette: fields[0]?.value, rationale: fields[1]?.value });
const claim = (path: string, quotes: string[]): GroundingClaim => ({
  path,
  claim: `claim of ${path}`,
  quotes,
});

describe("checking the judge's quotes against the source", () => {
  it("accepts verbatim quotes and records where they occur", () => {
    const check = checkGrounding(
      SOURCE,
      fields,
      [
        claim("/vignette", ["412 patients with acute STEMI were enrolled"]),
        claim("/rationale", ["Patients received aspirin and were taken to PCI within 90 minutes"]),
      ],
      draftText,
    );
    expect(check.violations).toEqual([]);
    expect(check.fields.map((f) => f.status)).toEqual(["supported", "supported"]);
    const q = check.fields[0]?.quotes[0];
    expect(SOURCE.slice(q?.start, q?.end)).toBe("412 patients with acute STEMI were enrolled");
  });

  it("a quote that does not occur in the source is source_misquoted, and the field source_unsupported", () => {
    const check = checkGrounding(
      SOURCE,
      fields.slice(0, 1),
      [claim("/vignette", ["421 patients with acute STEMI were enrolled"])],
      draftText,
    );
    expect(check.violations.map((v) => [v.ruleId, v.severity, v.path])).toEqual([
      [SOURCE_MISQUOTED, "error", "/vignette"],
      [SOURCE_UNSUPPORTED, "error", "/vignette"],
    ]);
    expect(check.fields[0]?.quotes[0]?.problem).toBe("not_in_source");
    // The closest match is where the source says it, for the corrector and the person.
    expect(check.fields[0]?.excerpt?.text).toContain("412 patients with acute STEMI were enrolled");
  });

  it("forgives whitespace runs, line breaks and curly quotes, nothing else", () => {
    const check = checkGrounding(
      SOURCE,
      fields.slice(1),
      [
        claim("/rationale", [
          "aspirin  and were taken\n to PCI",
          'reported that "door-to-balloon time" fell from 110 to 84 minutes',
        ]),
      ],
      draftText,
    );
    expect(check.fields[0]?.quotes.map((q) => q.problem)).toEqual([undefined, undefined]);
    const curly = check.fields[0]?.quotes[1];
    expect(SOURCE.slice(curly?.start, curly?.end)).toBe(
      "reported that “door-to-balloon time” fell from 110 to 84 minutes",
    );
    // A changed letter's case, a changed digit or a dropped word is a different quote.
    for (const loose of [
      "Aspirin and were taken to PCI",
      "taken to PCI within 80 minutes",
      "Patients received aspirin and taken to PCI",
    ]) {
      expect(findQuote(normalize(SOURCE), loose)).toBeUndefined();
    }
  });

  it("a field the judge gave no quote for is source_unsupported at its path", () => {
    const check = checkGrounding(
      SOURCE,
      fields,
      [claim("/vignette", ["412 patients with acute STEMI"])],
      draftText,
    );
    expect(check.violations).toEqual([
      expect.objectContaining({
        ruleId: SOURCE_UNSUPPORTED,
        severity: "error",
        path: "/rationale",
        confidence: 1,
      }),
    ]);
    expect(check.fields[1]?.quotes).toEqual([]);
  });

  it("a quote of the draft instead of the source does not count", () => {
    const check = checkGrounding(
      SOURCE,
      fields.slice(1),
      [claim("/rationale", ["Aspirin and PCI within 90 minutes are first-line."])],
      draftText,
    );
    expect(check.fields[0]?.status).toBe("unsupported");
    expect(check.fields[0]?.quotes[0]?.problem).toBe("quotes_draft");
    expect(check.violations.map((v) => v.ruleId)).toEqual([SOURCE_MISQUOTED, SOURCE_UNSUPPORTED]);
    expect(check.violations[0]?.message).toMatch(/from the draft, not from the source/);
  });

  it(`a quote shorter than ${MIN_QUOTE_CHARS} characters carries no claim`, () => {
    const check = checkGrounding(
      SOURCE,
      fields.slice(0, 1),
      [claim("/vignette", ["acute STEMI"])],
      draftText,
    );
    expect(check.fields[0]?.quotes[0]?.problem).toBe("too_short");
    expect(check.violations.map((v) => v.ruleId)).toEqual([SOURCE_UNSUPPORTED]);
  });

  it("a bad quote beside a valid one is a warning: the field stays supported", () => {
    const check = checkGrounding(
      SOURCE,
      fields.slice(0, 1),
      [claim("/vignette", ["412 patients with acute STEMI were enrolled", "made-up sentence of the trial"])],
      draftText,
    );
    expect(check.fields[0]?.status).toBe("supported");
    expect(check.violations.map((v) => [v.ruleId, v.severity])).toEqual([[SOURCE_MISQUOTED, "warning"]]);
  });

  it('"all" grounds every text and number of the content; a pointer names one field', () => {
    const content = { title: "A", n: 412, nested: [{ x: "y" }], empty: " ", flag: true };
    expect(groundedFields(content, { fields: ["all"], mode: "quotes" }).map((f) => f.path)).toEqual([
      "/title",
      "/n",
      "/nested/0/x",
    ]);
    expect(groundedFields(content, { fields: ["/n", "/missing"], mode: "quotes" })).toEqual([
      { path: "/n", value: "412" },
    ]);
  });
});

describe("hostile and awkward inputs", () => {
  it('a source with "<" (the judge reads it as &lt;) still matches, and only that escape is undone', () => {
    const source = "The effect was significant (p < 0.05) in the treated group.";
    const f = [{ path: "/x", value: "significant" }];
    const seen = checkGrounding(source, f, [claim("/x", ["significant (p &lt; 0.05) in the treated"])], "");
    expect(seen.fields[0]?.status).toBe("supported");
    const plain = checkGrounding(source, f, [claim("/x", ["significant (p < 0.05) in the treated"])], "");
    expect(plain.fields[0]?.status).toBe("supported");
    const other = checkGrounding(source, f, [claim("/x", ["significant (p &gt; 0.05) in the treated"])], "");
    expect(other.fields[0]?.status).toBe("unsupported");
  });

  it("a judge answer flooding one field with quotes is checked only up to a bound", () => {
    const flood = Array.from({ length: 500 }, (_, i) =>
      claim("/vignette", Array(20).fill(`invented quote number ${i}`)),
    );
    const check = checkGrounding(SOURCE, fields.slice(0, 1), flood, draftText);
    expect(check.fields[0]?.quotes.length).toBeLessThanOrEqual(8);
    expect(check.violations.filter((v) => v.ruleId === SOURCE_MISQUOTED).length).toBeLessThanOrEqual(8);
    expect(check.fields[0]?.status).toBe("unsupported");
  });

  it("claims for paths that are not grounded are ignored; an empty quote never matches", () => {
    const check = checkGrounding(
      SOURCE,
      fields.slice(0, 1),
      [claim("/other", [SOURCE]), claim("/vignette", ["", "   "])],
      draftText,
    );
    expect(check.fields[0]?.status).toBe("unsupported");
    expect(check.fields.map((x) => x.path)).toEqual(["/vignette"]);
  });
});

describe("a long source", () => {
  const filler = (i: number) =>
    `Section ${i}. The committee discussed routine matters of budget and scheduling for the year ${1990 + i}. `.repeat(
      4,
    );
  const paragraphs = Array.from({ length: 120 }, (_, i) => filler(i));
  paragraphs[77] =
    "The warfarin arm had 37 major bleeding events among 1,204 patients over two years. ".repeat(3);
  const long = paragraphs.join("\n\n");

  it("is split into passages that cover it end to end", () => {
    const passages = splitPassages(long);
    expect(passages.length).toBeGreaterThan(20);
    expect(passages[0]?.start).toBe(0);
    expect(passages.at(-1)?.end).toBe(long.length);
    for (let i = 1; i < passages.length; i++) expect(passages[i]?.start).toBe(passages[i - 1]?.end);
  });

  it("sends the passages most like the grounded fields, the same ones every time", () => {
    const query = ["37 major bleeding events with warfarin"];
    const { passages, split } = choosePassages(long, query, 5_000);
    expect(split).toBe(true);
    expect(passages.reduce((n, p) => n + p.end - p.start, 0)).toBeLessThanOrEqual(5_000);
    const best = [...passages].sort((a, b) => (b.score ?? 0) - (a.score ?? 0))[0];
    expect(long.slice(best?.start, best?.end)).toContain("37 major bleeding events");
    expect(choosePassages(long, query, 5_000)).toEqual({ passages, split });
    // In source order.
    expect(passages.map((p) => p.id)).toEqual([...passages.map((p) => p.id)].sort((a, b) => a - b));
  });

  it("a short source goes whole", () => {
    expect(choosePassages(SOURCE, ["x"])).toEqual({
      passages: [{ id: 1, start: 0, end: SOURCE.length }],
      split: false,
    });
  });
});
