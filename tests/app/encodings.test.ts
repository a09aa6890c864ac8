/**
 * Issue 34, "inputs keep their meaning": a draft file in another encoding is refused naming the byte
 * that is not UTF-8, never read with U+FFFD in place of its bytes; UTF-16 is read only when a
 * byte-order mark says so.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectDrafts } from "../../app/inputs.js";
import { decodeText } from "../../app/text-encoding.js";

const draft = { id: "café", kind: "json", content: { name: "Zoë" }, context: { schema: {} } };
const text = JSON.stringify(draft);

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-encodings-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const utf16be = (s: string) => Buffer.from(s, "utf16le").swap16();

describe("draft files in other encodings", () => {
  it("refuses Latin-1 and UTF-16 without a mark, reads UTF-8 and UTF-16 with one, each as its bytes say", async () => {
    const files: Record<string, Buffer> = {
      "latin1.json": Buffer.from(text, "latin1"),
      "utf16-no-mark.json": Buffer.from(text, "utf16le"),
      "utf8.json": Buffer.from(text, "utf8"),
      "utf8-mark.json": Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, "utf8")]),
      "utf16le-mark.json": Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]),
      "utf16be-mark.json": Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be(text)]),
      "lines.jsonl": Buffer.concat([
        Buffer.from(`${text}\n`, "utf8"),
        Buffer.from(`${text}\n`, "latin1"),
        Buffer.from(`${text}\n`, "utf8"),
      ]),
      "lines16.jsonl": Buffer.concat([
        Buffer.from([0xff, 0xfe]),
        Buffer.from(`${text}\n${text}\n`, "utf16le"),
      ]),
    };
    for (const [name, bytes] of Object.entries(files)) await writeFile(join(work, name), bytes);
    const sources = await collectDrafts([work], work);
    const refused = Object.fromEntries(
      sources.filter((s) => s.rejectWith).map((s) => [s.label, s.rejectWith?.message]),
    );
    expect(refused).toEqual({
      "latin1.json":
        "latin1.json is not UTF-8 text (byte 0xE9 at offset 10: Latin-1 or Windows-1252?); save it as UTF-8",
      "utf16-no-mark.json":
        "utf16-no-mark.json is not UTF-8 text (a NUL byte at offset 1: UTF-16 without a byte-order mark?); save it as UTF-8",
      "lines.jsonl:2":
        "lines.jsonl:2 is not UTF-8 text (byte 0xE9 at offset 10: Latin-1 or Windows-1252?); save it as UTF-8",
    });
    expect(sources.filter((s) => s.rejectWith).every((s) => s.rejectWith?.reason === "invalid_input")).toBe(
      true,
    );
    const read = sources.filter((s) => !s.rejectWith);
    expect(read.map((s) => s.label).sort()).toEqual(
      [
        "lines.jsonl:1",
        "lines.jsonl:3",
        "lines16.jsonl:1",
        "lines16.jsonl:2",
        "utf16be-mark.json",
        "utf16le-mark.json",
        "utf8-mark.json",
        "utf8.json",
      ].sort(),
    );
    // Every file read holds the draft exactly: no U+FFFD, no mark.
    for (const source of read) expect(JSON.parse(source.body)).toEqual(draft);
  });

  it("decodeText refuses a UTF-16 file whose mark does not fit its bytes", () => {
    expect(decodeText(Buffer.from([0xff, 0xfe, 0x41]))).toEqual({
      problem: "is not well-formed UTF-16LE text, as its byte-order mark says it is",
    });
    expect(decodeText(Buffer.from([0x7b, 0x7d]))).toEqual({ text: "{}" });
  });
});
