import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ErrorNames, ModelOverloadedError } from "../../shared/errors.js";
import { RecordingModelClient } from "../../shared/model/recorder.js";
import { CassetteSchema, ReplayModelClient } from "../../shared/model/replay.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";

function call(draftId: string, purpose: "correct" | "judge" = "correct"): ModelRequest {
  return {
    runId: "run-rec",
    draftId,
    purpose,
    system: [{ text: "system", cache: true }],
    user: "draft",
    tool: { name: "submit_correction", description: "d", inputSchema: { type: "object" } },
    maxTokens: 1000,
  };
}

/** A stand-in for a real provider: answers from a script, one per call. */
class ScriptedClient implements ModelClient {
  readonly provider = "scripted";
  readonly model = "claude-sonnet-5-5";
  constructor(private readonly script: (ModelResponse | Error)[]) {}
  async complete(): Promise<ModelResponse> {
    const next = this.script.shift();
    if (next === undefined) throw new Error("script exhausted");
    if (next instanceof Error) throw next;
    return next;
  }
}

const corrected: ModelResponse = {
  output: { content: { stem: "fixed" }, analysis: "a", fixDescription: "f" },
  raw: "Here is the fix.",
  usage: { input: 1200, output: 800, cacheRead: 1000, cacheWrite: 0 },
  model: "claude-sonnet-5-5",
  latencyMs: 950,
  stopReason: "tool_use",
};
const textOnly: ModelResponse = {
  raw: "I would rather not.",
  usage: { input: 900, output: 20, cacheRead: 0, cacheWrite: 1000 },
  model: "claude-sonnet-5-5",
  latencyMs: 400,
};
const judged: ModelResponse = {
  output: { findings: [] },
  usage: { input: 500, output: 60, cacheRead: 0, cacheWrite: 0 },
  model: "claude-sonnet-5-5",
  latencyMs: 300,
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "redraft-recorder-"));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe("RecordingModelClient", () => {
  it("records answers into a new cassette that ReplayModelClient plays back the same", async () => {
    const path = join(dir, "nested", "cassette.json");
    const recorder = new RecordingModelClient(new ScriptedClient([corrected, judged, textOnly]), path);

    const live = [
      await recorder.complete(call("q1")),
      await recorder.complete(call("q1", "judge")),
      await recorder.complete(call("q1")),
    ];

    const file = CassetteSchema.parse(JSON.parse(await readFile(path, "utf8")));
    expect(file.responses[0]).toEqual({
      draftId: "q1",
      purpose: "correct",
      usage: {
        input_tokens: 1200,
        output_tokens: 800,
        cache_read_input_tokens: 1000,
        cache_creation_input_tokens: 0,
      },
      model: "claude-sonnet-5-5",
      output: corrected.output,
      raw: "Here is the fix.",
    });
    const replay = ReplayModelClient.fromFile(path);
    const replayed = [
      await replay.complete(call("q1")),
      await replay.complete(call("q1", "judge")),
      await replay.complete(call("q1")),
    ];
    expect(replayed).toEqual(
      live.map(({ latencyMs: _, stopReason: __, ...rest }) => ({ ...rest, latencyMs: 0 })),
    );
    expect(replayed[2]).not.toHaveProperty("output");
  });

  it("keeps the entries already in the file", async () => {
    const path = join(dir, "cassette.json");
    const existing = {
      version: 1,
      note: "hand-written",
      responses: [{ draftId: "q0", purpose: "correct", raw: "x" }],
    };
    await writeFile(path, JSON.stringify(existing));

    await new RecordingModelClient(new ScriptedClient([judged]), path).complete(call("q1", "judge"));

    const file = CassetteSchema.parse(JSON.parse(await readFile(path, "utf8")));
    expect(file.note).toBe("hand-written");
    expect(file.responses.map((entry) => entry.draftId)).toEqual(["q0", "q1"]);
  });

  it("re-throws the inner client's errors and records nothing for them", async () => {
    const path = join(dir, "cassette.json");
    const recorder = new RecordingModelClient(
      new ScriptedClient([new ModelOverloadedError("busy"), corrected]),
      path,
    );

    const error = await recorder.complete(call("q1")).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    await recorder.complete(call("q1"));

    expect(error?.name).toBe(ErrorNames.ModelOverloaded);
    const file = CassetteSchema.parse(JSON.parse(await readFile(path, "utf8")));
    expect(file.responses).toHaveLength(1);
  });

  it("loses no entry when calls for different drafts run concurrently, and leaves no temp file", async () => {
    const path = join(dir, "cassette.json");
    const answers = Array.from({ length: 8 }, () => judged);
    const recorder = new RecordingModelClient(new ScriptedClient(answers), path);

    await Promise.all(answers.map((_, i) => recorder.complete(call(`d${i}`, "judge"))));

    const file = CassetteSchema.parse(JSON.parse(await readFile(path, "utf8")));
    expect(file.responses.map((entry) => entry.draftId).sort()).toEqual(
      answers.map((_, i) => `d${i}`).sort(),
    );
    expect(await readdir(dir)).toEqual(["cassette.json"]);
  });

  it("refuses to rewrite a cassette in another encoding (Latin-1): the file is left as it was, not saved with U+FFFD", async () => {
    const path = join(dir, "cassette.json");
    const bytes = Buffer.from(
      JSON.stringify({
        version: 1,
        note: "Zoë's answers",
        responses: [{ draftId: "q0", purpose: "correct", raw: "café" }],
      }),
      "latin1",
    );
    await writeFile(path, bytes);

    const error = await new RecordingModelClient(new ScriptedClient([judged]), path)
      .complete(call("q1", "judge"))
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );

    expect(error?.name).toBe(ErrorNames.ModelNotConfigured);
    expect(error?.message).toMatch(/cassette\.json is not UTF-8 text \(byte 0xEB at offset \d+: Latin-1/);
    expect(await readFile(path)).toEqual(bytes);
  });

  it("appends to a cassette in UTF-16 with a byte-order mark, its text kept exactly", async () => {
    const path = join(dir, "cassette.json");
    const existing = {
      version: 1,
      note: "Zoë's answers",
      responses: [{ draftId: "q0", purpose: "correct", raw: "café" }],
    };
    await writeFile(
      path,
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(existing), "utf16le")]),
    );

    await new RecordingModelClient(new ScriptedClient([judged]), path).complete(call("q1", "judge"));

    const file = CassetteSchema.parse(JSON.parse(await readFile(path, "utf8")));
    expect(file.note).toBe("Zoë's answers");
    expect(file.responses[0]).toMatchObject({ draftId: "q0", raw: "café" });
    expect(file.responses.map((entry) => entry.draftId)).toEqual(["q0", "q1"]);
  });

  it("refuses to overwrite a file that is not a cassette", async () => {
    const path = join(dir, "cassette.json");
    await writeFile(path, JSON.stringify({ version: 1, responses: [{ draftId: "q0" }] }));

    const error = await new RecordingModelClient(new ScriptedClient([judged]), path)
      .complete(call("q1", "judge"))
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );

    expect(error?.message).toMatch(/responses\[0\]/);
    expect(JSON.parse(await readFile(path, "utf8"))).toEqual({ version: 1, responses: [{ draftId: "q0" }] });
  });
});
