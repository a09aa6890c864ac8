/**
 * Drafts read from text parse their `context.schema` once per distinct schema text (shared/draft-text.ts):
 * the result is always what JSON.parse gives, and the schema object is shared (and frozen) only when the
 * text leaves no doubt which member JSON.parse would keep.
 */
import { describe, expect, it } from "vitest";
import { clearSchemaTextCache, parseDraftText, scanDraftText } from "../../shared/draft-text.js";
import { jsonTextDepth } from "../../shared/json-depth.js";
import { parseDraft } from "../../shared/validate.js";

const schema = { type: "object", properties: { a: { type: "string", pattern: "^[a-z]+$" } } };
const draftText = (extra = "") =>
  `{"id":"d","kind":"json"${extra},"context":{"note":"{[","schema":${JSON.stringify(schema)}},"content":{"a":"x"}}`;
const parse = (text: string) => parseDraftText(text, scanDraftText(text, 100));

describe("parsing a draft's text with its schema shared", () => {
  it("gives what JSON.parse gives, the same frozen schema object for the same schema text", () => {
    clearSchemaTextCache();
    const one = parse(draftText()) as { context: { schema: unknown } };
    const two = parse(draftText(',"metadata":{"k":1}')) as { context: { schema: unknown } };
    expect(one).toEqual(JSON.parse(draftText()));
    expect(two).toEqual(JSON.parse(draftText(',"metadata":{"k":1}')));
    expect(two.context.schema).toBe(one.context.schema);
    expect(Object.isFrozen((one.context.schema as { properties: object }).properties)).toBe(true);
    // parseDraft keeps the schema object (zod copies the context, not its values).
    expect(parseDraft(draftText()).context?.schema).toBe(one.context.schema);
  });

  it("measures depth as jsonTextDepth does, brackets inside strings and escapes included", () => {
    for (const text of [draftText(), '{"a":[1,{"b":"]]]{{{"}]}', '"\\"[[["', '{"a":"\\\\"}', "[[[[", "{]"]) {
      expect(scanDraftText(text, 100).depth).toBe(jsonTextDepth(text, 100));
    }
    expect(scanDraftText("[".repeat(1000), 100).depth).toBe(101);
  });

  it("leaves the schema to JSON.parse when a member is duplicated, escaped or not an object", () => {
    const texts = [
      '{"context":{"schema":{"type":"string"}},"context":{"note":1}}',
      '{"context":{"schema":{"type":"string"},"schema":{"type":"number"}}}',
      '{"context":{"schema":{"type":"string"}},"\\u0063ontext":{"x":1}}',
      '{"context":{"sch\\u0065ma":{"type":"number"},"schema":{"type":"string"}}}',
      '{"context":{"schema":true}}',
    ];
    for (const text of texts) {
      expect(scanDraftText(text, 100).schema).toBeUndefined();
      expect(parse(text)).toEqual(JSON.parse(text));
    }
  });

  it("an invalid text fails with JSON.parse's own message for the whole text", () => {
    for (const text of [
      '{"context":{"schema":{"type":"string",}},"content":1}',
      '{"context":{"schema":{"type":"string"}},"content":}',
      '{"context":{"schema":{"a" 1}}}',
    ]) {
      let expected = "";
      try {
        JSON.parse(text);
      } catch (error) {
        expected = (error as Error).message;
      }
      expect(expected).not.toBe("");
      expect(() => parse(text)).toThrow(expected);
    }
  });
});

describe("the schema the last draft carried", () => {
  it("is recognised in place, with the depth it adds, and still only when unambiguous", () => {
    clearSchemaTextCache();
    const first = parse(draftText()) as { context: { schema: unknown } };
    const scan = scanDraftText(draftText(), 100);
    expect(scan.known).toBe(first.context.schema);
    expect(scan.depth).toBe(jsonTextDepth(draftText(), 100));
    // Too deep with the schema's own depth counted: refused before anything is parsed.
    expect(scanDraftText(draftText(), 4).depth).toBeGreaterThan(4);
    const duplicated = draftText().replace('"content"', '"context":{"note":2},"content"');
    expect(scanDraftText(duplicated, 100).schema).toBeUndefined();
    expect(parse(duplicated)).toEqual(JSON.parse(duplicated));
  });
});
