/**
 * Issue 34, "inputs keep their meaning", for every file a person hands redraft besides drafts (those
 * are tests/app/encodings.test.ts): a pack file, a pack module, `--config`, a `context.source` file, a
 * batch manifest and a replay cassette. Each is read as a draft file is (shared/text-encoding.ts): a
 * Latin-1 file, a UTF-16 file without a byte-order mark and invalid UTF-8 are refused in one line naming
 * the file and what is wrong with its bytes (exit 2 on the command line, `invalid_input` for a draft's
 * source), never read with U+FFFD in place of their bytes; UTF-16 with a mark is read as its mark says,
 * exactly (the non-ASCII letters below come through unchanged).
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageError } from "../../app/inputs.js";
import { readManifest } from "../../cli/batch.js";
import { chooseModel } from "../../cli/model.js";
import { loadConfig, loadPacks } from "../../cli/packs.js";
import { readLocalSource } from "../../local/source.js";
import { InvalidPackError, SelfCorrectionError } from "../../shared/errors.js";
import { loadPackFile } from "../../shared/packs/declarative.js";
import { builtinPacks } from "../../shared/packs/index.js";
import { jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-input-encodings-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** `text` (which holds an é) as bytes that are not UTF-8 text, each with what the refusal must say. */
const BAD: [string, (text: string) => Buffer, RegExp][] = [
  ["Latin-1", (t) => Buffer.from(t, "latin1"), /is not UTF-8 text \(byte 0xE[9B] at offset \d+: Latin-1/],
  [
    "UTF-16 without a byte-order mark",
    (t) => Buffer.from(t, "utf16le"),
    /is not UTF-8 text \(a NUL byte at offset 1: UTF-16 without a byte-order mark\?\); save it as UTF-8/,
  ],
  [
    // 0xC3 opens a two-byte sequence that "(" does not continue.
    "invalid UTF-8",
    (t) => {
      const [before, after] = t.split("é");
      return Buffer.concat([Buffer.from(before ?? ""), Buffer.from([0xc3, 0x28]), Buffer.from(after ?? "")]);
    },
    /is not UTF-8 text \(byte 0xC3 at offset \d+/,
  ],
];

/** `text` as UTF-16 with a byte-order mark, little- or big-endian. */
const MARKED: [string, (text: string) => Buffer][] = [
  ["UTF-16LE with a mark", (t) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(t, "utf16le")])],
  [
    "UTF-16BE with a mark",
    (t) => Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(t, "utf16le").swap16()]),
  ],
];

let files = 0;
async function file(name: string, bytes: Buffer): Promise<string> {
  files += 1;
  const path = join(work, `${files}-${name}`);
  await writeFile(path, bytes);
  return path;
}

const slug = (name: string) => name.replace(/\W+/g, "-");

/** What a promise rejects with (it must reject). */
async function refusal(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error as Error,
  );
  if (outcome === undefined) throw new Error("expected a refusal");
  return outcome;
}

/** The command line's one stderr line for a refused input, and its exit code 2. */
function oneLine(out: { code: number; stdout: string; stderr: string }): string {
  expect(out.code, out.stderr).toBe(2);
  const lines = out.stderr.split("\n").filter((line) => line.trim() !== "");
  expect(lines, out.stderr).toHaveLength(1);
  expect(out.stderr).not.toMatch(/system failure|^\s+at /m);
  return lines[0] ?? "";
}

const PACK = JSON.stringify({ kind: "accented", description: "Café au lait, Zoë's pack", rules: [] });

describe("a declarative pack file (--pack x.json)", () => {
  it.each(BAD)("%s: refused in one line naming the pack file (exit 2)", async (name, encode, said) => {
    const path = await file(`${slug(name)}.pack.json`, encode(PACK));
    const error = await refusal(loadPackFile(path));
    expect(error).toBeInstanceOf(InvalidPackError);
    expect(error.message).toBe(error.message.split("\n")[0]);
    expect(error.message).toMatch(said);
    expect(error.message).toContain(`pack file ${path} `);

    const line = oneLine(await redraft(["--data-dir", join(work, "data"), "--pack", path, "packs"]));
    expect(line).toContain(path);
    expect(line).toMatch(said);
  });

  it.each(MARKED)("%s: read as its mark says", async (name, encode) => {
    const path = await file(`${slug(name)}.pack.json`, encode(PACK));
    const pack = await loadPackFile(path);
    expect(pack.description).toBe("Café au lait, Zoë's pack");
    const out = await redraft(["--data-dir", join(work, "data"), "--pack", path, "packs"]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain("accented — Café au lait, Zoë's pack");
  });
});

describe("a pack module (--pack x.mjs)", () => {
  const MODULE = `export const pack = { kind: "accented", description: "Café au lait, Zoë's pack", settings: {}, rules: [] };\n`;

  it.each(BAD)(
    "%s: refused before Node loads it, one line naming the module (exit 2)",
    async (name, encode, said) => {
      const path = await file(`${slug(name)}.mjs`, encode(MODULE));
      const error = await refusal(loadPacks(path));
      expect(error).toBeInstanceOf(UsageError);
      expect(error.message).toMatch(said);
      expect(error.message).toContain(`pack module ${path} `);

      const line = oneLine(await redraft(["--data-dir", join(work, "data"), "--pack", path, "packs"]));
      expect(line).toContain(path);
      expect(line).toMatch(said);
    },
  );

  it.each(MARKED)(
    "%s: refused in one line, since Node loads a module only as UTF-8 (not a syntax error that does not say why)",
    async (name, encode) => {
      const path = await file(`${slug(name)}.mjs`, encode(MODULE));
      const line = oneLine(await redraft(["--data-dir", join(work, "data"), "--pack", path, "packs"]));
      expect(line).toBe(
        `redraft: pack module ${path} is UTF-16 text (its byte-order mark says so), and Node loads a module only as UTF-8; save it as UTF-8`,
      );
    },
  );

  it("UTF-8 with a mark loads, its text exact", async () => {
    const path = await file(
      "utf8-mark.mjs",
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(MODULE)]),
    );
    const [pack] = await loadPacks(path);
    expect(pack?.description).toBe("Café au lait, Zoë's pack");
  });
});

describe("--config", () => {
  // A config whose only non-ASCII letter sits in a disabled rule's id, so that reading it exactly matters.
  const ACCENTED = JSON.stringify({ packs: { mcq: { disabledRules: ["réglé"] } } });

  it.each(BAD)("%s: refused in one line naming --config and the file", async (_name, encode, said) => {
    const path = await file("config.json", encode(ACCENTED));
    const error = await refusal(loadConfig(path, builtinPacks));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(new RegExp(`^--config ${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: `));
    expect(error.message).toMatch(said);
  });

  it.each(MARKED)("%s: read as its mark says (the rule id comes through exactly)", async (_name, encode) => {
    const path = await file("config.json", encode(ACCENTED));
    // The id is read exactly, so it is the unknown rule the message names (not "r\uFFFDgle").
    await expect(loadConfig(path, builtinPacks)).rejects.toThrow(
      `--config ${path}: packs.mcq.disabledRules[0]: unknown rule "réglé"`,
    );
  });
});

describe("a draft's context.source file", () => {
  const SOURCE = "Zoë, 63, was seen at the café with chest pain.";

  it.each(BAD)("%s: the draft is rejected invalid_input, naming the source", async (_name, encode, said) => {
    const path = await file("source.txt", encode(SOURCE));
    const error = await refusal(readLocalSource(path));
    expect(error).toBeInstanceOf(SelfCorrectionError);
    expect((error as SelfCorrectionError).code).toBe("invalid_input");
    expect(error.message).toContain(`context.source ${path} `);
    expect(error.message).toMatch(said);
  });

  it.each(MARKED)("%s: read as its mark says", async (_name, encode) => {
    const path = await file("source.txt", encode(SOURCE));
    expect(await readLocalSource(path)).toBe(SOURCE);
  });

  it("redraft run rejects the draft whose source is Latin-1 as invalid_input, and runs the others", async () => {
    const path = await file("latin1-source.txt", Buffer.from(SOURCE, "latin1"));
    const draft = (id: string, source: unknown) => ({
      id,
      kind: "json",
      content: { name: "Zoë" },
      context: { schema: { type: "object" }, source },
    });
    const drafts = await file(
      "drafts.jsonl",
      Buffer.from(
        `${JSON.stringify(draft("latin1-source", { ref: path }))}\n${JSON.stringify(draft("inline-source", SOURCE))}\n`,
      ),
    );
    const out = await redraft([
      "--data-dir",
      join(work, "run-data"),
      "run",
      drafts,
      "--llm",
      "none",
      "--json",
    ]);
    const results = Object.fromEntries(jsonLines(out.stdout).map((r) => [r.draftId, r]));
    expect(results["latin1-source"]).toMatchObject({ status: "rejected", reason: "invalid_input" });
    expect(String(results["latin1-source"]?.message)).toMatch(BAD[0]?.[2] as RegExp);
    expect(String(results["latin1-source"]?.message)).toContain(path);
    expect(results["inline-source"]).toMatchObject({ status: "validated" });
  });
});

describe("a batch manifest", () => {
  const LINE = `${JSON.stringify({ id: "café", kind: "json", content: { name: "Zoë" }, context: { schema: {} } })}\n`;

  it.each(BAD)("%s: refused in one line naming the manifest (exit 2)", async (name, encode, said) => {
    const path = await file(`${slug(name)}.jsonl`, encode(LINE));
    const error = await refusal(readManifest(path));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(said);
    expect(error.message).toContain(`the manifest ${path} `);

    const line = oneLine(await redraft(["--data-dir", join(work, "data"), "batch", path, "--llm", "none"]));
    expect(line).toContain(path);
    expect(line).toMatch(said);
  });

  it.each(MARKED)("%s: read as its mark says", async (_name, encode) => {
    const path = await file("manifest.jsonl", encode(LINE));
    expect(await readManifest(path)).toBe(LINE);
  });
});

describe("a replay cassette (--llm replay:file)", () => {
  const CASSETTE = JSON.stringify({
    version: 1,
    note: "Zoë's answers, from the café",
    responses: [],
  });

  it.each(BAD)("%s: refused in one line naming the flag and the file", async (_name, encode, said) => {
    const path = await file("cassette.json", encode(CASSETTE));
    let error: unknown;
    try {
      chooseModel(`replay:${path}`, {});
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(/^--llm replay:.*cassette\.json: the file /);
    expect((error as Error).message).toMatch(said);
  });

  it.each(MARKED)("%s: read as its mark says", async (_name, encode) => {
    const path = await file("cassette.json", encode(CASSETTE));
    expect(chooseModel(`replay:${path}`, {}).live).toBe(false);
  });
});

describe("a FIFO named as a person's file is refused in one line, never opened (it would hold the command)", () => {
  let fifo: string;
  beforeAll(() => {
    fifo = join(work, "fifo");
    execFileSync("mkfifo", [fifo]);
  });

  it.each([
    [
      "--config",
      () => ["--config", fifo, "run", join(ROOT, "examples", "drafts", "mcq-clean.json"), "--llm", "none"],
      "--config ",
    ],
    [
      "--llm replay:",
      () => ["--llm", `replay:${fifo}`, "run", join(ROOT, "examples", "drafts", "mcq-clean.json")],
      "--llm replay:",
    ],
    ["a batch manifest", () => ["batch", fifo, "--llm", "none"], "cannot read the manifest "],
  ])("%s", async (_name, args, prefix) => {
    const line = oneLine(await redraft(["--data-dir", join(work, "data"), ...args()]));
    expect(line).toBe(`redraft: ${prefix}${fifo}: not a regular file (a FIFO or a device is never read)`);
  });
});
