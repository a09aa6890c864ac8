import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ErrorNames, isTransientModelError } from "../../shared/errors.js";
import { createModelClient } from "../../shared/model/index.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import type { ModelPurpose, ModelRequest } from "../../shared/model/types.js";

function call(draftId: string, purpose: ModelPurpose = "correct", runId = "run-1"): ModelRequest {
  return {
    runId,
    draftId,
    purpose,
    system: [{ text: "system", cache: true }],
    user: "draft",
    tool: { name: "submit_correction", description: "d", inputSchema: { type: "object" } },
    maxTokens: 1000,
  };
}

const first = { content: { stem: "v1" }, analysis: "a1", fixDescription: "f1" };
const second = { content: { stem: "v2" }, analysis: "a2", fixDescription: "f2" };
const verdict = { findings: [] };

const cassette = {
  version: 1,
  note: "two corrections for q1, a judgement, and q2's throttled call",
  responses: [
    {
      draftId: "q1",
      purpose: "correct",
      output: first,
      usage: {
        input_tokens: 1200,
        output_tokens: 800,
        cache_read_input_tokens: 900,
        cache_creation_input_tokens: 0,
      },
      model: "claude-sonnet-5-5",
    },
    { draftId: "q1", purpose: "judge", output: verdict },
    { draftId: "q1", purpose: "correct", output: second, usage: { input_tokens: 1300, output_tokens: 700 } },
    { draftId: "q2", purpose: "correct", error: "rate_limited", message: "slow down" },
    { draftId: "q2", purpose: "correct", raw: "Sure! Here is the corrected draft: {not json" },
  ],
};

const errorOf = (promise: Promise<unknown>) =>
  promise.then(() => undefined).catch((e: unknown) => e as Error);

describe("ReplayModelClient", () => {
  it("answers each draft and purpose with its own entries, in the order listed", async () => {
    const replay = ReplayModelClient.fromCassette(cassette);

    const judged = await replay.complete(call("q1", "judge"));
    const one = await replay.complete(call("q1"));
    const two = await replay.complete(call("q1"));

    expect(judged.output).toEqual(verdict);
    expect(one).toEqual({
      output: first,
      usage: { input: 1200, output: 800, cacheRead: 900, cacheWrite: 0 },
      model: "claude-sonnet-5-5",
      latencyMs: 0,
    });
    expect(two.output).toEqual(second);
    expect(two.usage).toEqual({ input: 1300, output: 700, cacheRead: 0, cacheWrite: 0 });
    expect(two.model).toBe("replay");
  });

  it("replays a draft from its first answer in every run", async () => {
    const replay = ReplayModelClient.fromCassette(cassette);

    await replay.complete(call("q1", "correct", "run-1"));
    const otherRun = await replay.complete(call("q1", "correct", "run-2"));
    const sameRun = await replay.complete(call("q1", "correct", "run-1"));

    expect(otherRun.output).toEqual(first);
    expect(sameRun.output).toEqual(second);
  });

  it("counts a missing usage as zero tokens", async () => {
    const replay = ReplayModelClient.fromCassette(cassette);

    const judged = await replay.complete(call("q1", "judge"));

    expect(judged.usage).toEqual({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
  });

  it("throws an error entry's named transient error, then answers the retried call with the next entry", async () => {
    const replay = ReplayModelClient.fromCassette(cassette);

    const throttled = await errorOf(replay.complete(call("q2")));
    const retried = await replay.complete(call("q2"));

    expect(throttled?.name).toBe(ErrorNames.ModelRateLimited);
    expect(throttled?.message).toBe("slow down");
    expect(isTransientModelError(throttled)).toBe(true);
    expect(retried).toEqual({
      raw: "Sure! Here is the corrected draft: {not json",
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      model: "replay",
      latencyMs: 0,
    });
    expect(retried).not.toHaveProperty("output");
  });

  it.each([
    ["rate_limited", ErrorNames.ModelRateLimited, true],
    ["overloaded", ErrorNames.ModelOverloaded, true],
    ["timeout", ErrorNames.ModelTimeout, true],
    ["failed", ErrorNames.ModelRequestFailed, false],
  ] as const)("stages a %s error as %s", async (kind, name, transient) => {
    const replay = ReplayModelClient.fromCassette({
      version: 1,
      responses: [{ draftId: "q9", purpose: "correct", error: kind }],
    });

    const error = await errorOf(replay.complete(call("q9")));

    expect(error?.name).toBe(name);
    expect(isTransientModelError(error)).toBe(transient);
  });

  it("throws CassetteExhaustedError when a draft has no answer left", async () => {
    const replay = ReplayModelClient.fromCassette(cassette);
    await replay.complete(call("q1", "judge"));

    const exhausted = await errorOf(replay.complete(call("q1", "judge")));
    const unknown = await errorOf(replay.complete(call("nope")));

    expect(exhausted?.name).toBe(ErrorNames.CassetteExhausted);
    expect(exhausted?.message).toContain('draft "q1"');
    expect(exhausted?.message).toContain("1 already used");
    expect(unknown?.name).toBe(ErrorNames.CassetteExhausted);
  });

  it.each([
    [
      "an entry with no answer",
      { version: 1, responses: [cassette.responses[0], { draftId: "q3", purpose: "correct" }] },
      /responses\[1\] \(draft "q3", correct\): needs one of "output", "raw" or "error"/,
    ],
    [
      "an unknown error kind",
      { version: 1, responses: [{ draftId: "q4", purpose: "correct", error: "exploded" }] },
      /responses\[0\] \(draft "q4", correct\):[\s\S]*error/,
    ],
    [
      "a misspelt usage field",
      {
        version: 1,
        responses: [{ draftId: "q5", purpose: "judge", output: {}, usage: { input: 1, output_tokens: 2 } }],
      },
      /responses\[0\] \(draft "q5", judge\):[\s\S]*usage/,
    ],
    [
      "an unknown purpose",
      { version: 1, responses: [{ draftId: "q6", purpose: "fix", raw: "x" }] },
      /purpose/,
    ],
    ["another version", { version: 2, responses: [] }, /version/],
  ])("rejects a cassette with %s, naming the entry", (_, value, message) => {
    let thrown: Error | undefined;
    try {
      ReplayModelClient.fromCassette(value);
    } catch (error) {
      thrown = error as Error;
    }

    expect(thrown?.name).toBe(ErrorNames.ModelNotConfigured);
    expect(thrown?.message).toMatch(message);
  });
});

describe("ReplayModelClient.fromFile", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("reads a cassette file, also through createModelClient", async () => {
    dir = await mkdtemp(join(tmpdir(), "redraft-replay-"));
    const path = join(dir, "cassette.json");
    await writeFile(path, JSON.stringify(cassette));

    const fromFile = await ReplayModelClient.fromFile(path).complete(call("q1"));
    const viaSpec = await createModelClient({ provider: "replay", cassette: path })?.complete(call("q1"));

    expect(fromFile.output).toEqual(first);
    expect(viaSpec?.output).toEqual(first);
  });

  it("names the file when it is not JSON", async () => {
    dir = await mkdtemp(join(tmpdir(), "redraft-replay-"));
    const path = join(dir, "broken.json");
    await writeFile(path, "{ nope");

    expect(() => ReplayModelClient.fromFile(path)).toThrow(/broken\.json cannot be read as JSON/);
  });

  it("refuses a cassette in another encoding, naming its first byte that is not UTF-8; reads UTF-16 with a mark", async () => {
    dir = await mkdtemp(join(tmpdir(), "redraft-replay-"));
    const text = JSON.stringify({ ...cassette, note: "Zoë's answers" });
    const latin1 = join(dir, "latin1.json");
    await writeFile(latin1, Buffer.from(text, "latin1"));
    expect(() => ReplayModelClient.fromFile(latin1)).toThrow(
      /latin1\.json cannot be read as JSON: is not UTF-8 text \(byte 0xEB at offset \d+: Latin-1/,
    );
    const utf16 = join(dir, "utf16.json");
    await writeFile(utf16, Buffer.from(text, "utf16le"));
    expect(() => ReplayModelClient.fromFile(utf16)).toThrow(
      /a NUL byte at offset 1: UTF-16 without a byte-order mark/,
    );
    const marked = join(dir, "marked.json");
    await writeFile(
      marked,
      Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, "utf16le").swap16()]),
    );
    expect((await ReplayModelClient.fromFile(marked).complete(call("q1"))).output).toEqual(first);
  });
});
