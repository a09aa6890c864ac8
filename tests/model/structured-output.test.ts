import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { correctDraft } from "../../local/in-process.js";
import type { Draft } from "../../shared/draft.js";
import { patchScope } from "../../shared/loop/patch.js";
import { buildCorrectionPrompt } from "../../shared/loop/prompt.js";
import { parseCorrectionAnswer } from "../../shared/loop/response.js";
import { AnthropicModelClient } from "../../shared/model/anthropic.js";
import { RecordingModelClient } from "../../shared/model/recorder.js";
import { parseCassette } from "../../shared/model/replay.js";
import { toStrictSchema } from "../../shared/model/structured.js";
import type { ModelRequest } from "../../shared/model/types.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";
import { DRAFT_WITH_ERRORS } from "../fixtures/seed004.js";
import { makeDeps } from "../loop/harness.js";
import { FakeMessagesServer, toolUseMessage } from "./fake-messages-server.js";

let server: FakeMessagesServer;
beforeAll(async () => {
  server = await FakeMessagesServer.start();
});
afterEach(() => server.reset());
afterAll(() => server.stop());

const client = (model: string) =>
  new AnthropicModelClient({ apiKey: "sk-ant-test", baseURL: server.baseURL, model, maxRetries: 0 });

/** The correction request redraft sends for a draft: its prompt, field-level when the violations allow it. */
async function requestFor(draft: Draft): Promise<ModelRequest> {
  const registry = new PackRegistry();
  const resolved = registry.get(draft.kind);
  const violations = (await validateDraft(draft)).violations.filter((v) => v.severity === "error");
  const scope = patchScope(draft.kind, draft.content, violations);
  const prompt = buildCorrectionPrompt({
    resolved,
    draft,
    violations,
    attempt: 1,
    maxAttempts: 2,
    hints: [],
    ...(scope && { scope }),
  });
  return { runId: "r", draftId: draft.id, purpose: "correct", ...prompt, maxTokens: 1024 };
}

const textMessage = (model: string, text: string) => ({
  id: "msg_01",
  type: "message",
  role: "assistant",
  model,
  content: [{ type: "text", text }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 500, output_tokens: 40 },
});

const PATCH = {
  patch: [{ path: "/rationale", value: "Antibiotics do not treat MI; the others are standard care." }],
};

/** A json draft whose schema leaves its object open (no additionalProperties: false): outside the subset. */
const OPEN_SCHEMA_DRAFT: Draft = {
  id: "open",
  kind: "json",
  context: { schema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] } },
  content: { n: "1" },
};

describe("constrained output where the provider offers it (the SDK's request shape)", () => {
  it("uses a strict tool with a forced choice when the model accepts one and the schema fits", async () => {
    const request = await requestFor(DRAFT_WITH_ERRORS);
    server.reply({ status: 200, body: toolUseMessage("claude-haiku-4-5", "submit_correction", PATCH) });
    const response = await client("claude-haiku-4-5").complete(request);
    const body = server.received[0]?.body as Record<string, unknown>;
    const tool = (body.tools as Record<string, unknown>[])[0];
    expect(tool).toMatchObject({
      name: "submit_correction",
      strict: true,
      input_schema: { additionalProperties: false },
    });
    expect(body.tool_choice).toMatchObject({ type: "tool", name: "submit_correction" });
    expect(body.output_config).toBeUndefined();
    expect(response.outputMode).toBe("strict_tool");
    expect(parseCorrectionAnswer(response)).toMatchObject({
      ok: true,
      answer: { patch: [{ op: "set", path: "/rationale" }] },
    });
  });

  it("uses output_config.format for a model that rejects a forced tool choice, and reads the JSON text it answers", async () => {
    const request = await requestFor(DRAFT_WITH_ERRORS);
    server.reply({ status: 200, body: textMessage("claude-sonnet-5-5", JSON.stringify(PATCH)) });
    const response = await client("claude-sonnet-5-5").complete(request);
    const body = server.received[0]?.body as Record<string, unknown>;
    expect(body.tools).toBeUndefined();
    expect(body.tool_choice).toBeUndefined();
    expect(body.output_config).toMatchObject({
      format: { type: "json_schema", schema: { type: "object", additionalProperties: false } },
    });
    expect(response.outputMode).toBe("json_schema");
    expect(parseCorrectionAnswer(response).ok).toBe(true);
  });

  it("moves bounds the subset lacks into descriptions (Ajv still checks them) and keeps the rest", () => {
    const strict = toStrictSchema({
      type: "object",
      properties: { stem: { type: "string", minLength: 1 }, n: { type: "integer", maximum: 9 } },
      required: ["stem"],
      additionalProperties: false,
    });
    expect(strict).toEqual({
      type: "object",
      properties: {
        stem: { type: "string", description: "{minLength: 1}" },
        n: { type: "integer", description: "{maximum: 9}" },
      },
      required: ["stem"],
      additionalProperties: false,
    });
  });

  it("falls back to plain tool use when the schema does not fit (an open object, an untyped value)", async () => {
    const request = await requestFor(OPEN_SCHEMA_DRAFT);
    // The patch's value is typed from the schema (a number): make the tool's whole schema open instead.
    const open: ModelRequest = {
      ...request,
      tool: {
        ...request.tool,
        inputSchema: { type: "object", properties: { content: OPEN_SCHEMA_DRAFT.context?.schema } },
      },
    };
    server.reply({
      status: 200,
      body: toolUseMessage("claude-haiku-4-5", "submit_correction", {
        content: { n: 1 },
        analysis: "a",
        fixDescription: "f",
      }),
    });
    const response = await client("claude-haiku-4-5").complete(open);
    const tool = (server.received[0]?.body.tools as Record<string, unknown>[] | undefined)?.[0];
    expect(tool?.strict).toBeUndefined();
    expect(tool?.input_schema).toEqual({
      type: "object",
      properties: { content: OPEN_SCHEMA_DRAFT.context?.schema },
    });
    expect(response.outputMode).toBe("tool");
    expect(
      toStrictSchema({ type: "object", properties: { v: {} }, additionalProperties: false }),
    ).toBeUndefined();
    expect(
      toStrictSchema({
        type: "object",
        properties: { v: { oneOf: [{ type: "string" }] } },
        additionalProperties: false,
      }),
    ).toBeUndefined();
  });

  it("falls back for a model without structured outputs", async () => {
    const request = await requestFor(DRAFT_WITH_ERRORS);
    server.reply({ status: 200, body: toolUseMessage("claude-sonnet-4-0", "submit_correction", PATCH) });
    const response = await client("claude-sonnet-4-0").complete(request);
    const tool = (server.received[0]?.body.tools as Record<string, unknown>[] | undefined)?.[0];
    expect(tool?.strict).toBeUndefined();
    expect(response.outputMode).toBe("tool");
  });

  it("records the path per attempt, and a cassette recorded from the constrained answer replays to the same draft", async () => {
    const dir = await mkdtemp(join(tmpdir(), "redraft-structured-"));
    try {
      const path = join(dir, "constrained.cassette.json");
      server.reply({ status: 200, body: textMessage("claude-sonnet-5-5", JSON.stringify(PATCH)) });
      const { deps } = makeDeps(undefined);
      const recorded = await correctDraft(
        { ...DRAFT_WITH_ERRORS, options: { maxAttempts: 1 } },
        { ...deps, model: new RecordingModelClient(client("claude-sonnet-5-5"), path) },
      );
      expect(recorded.attemptsDetail[0]?.outputMode).toBe("json_schema");
      expect(recorded.attemptsDetail[0]?.patch).toEqual([{ op: "set", ...PATCH.patch[0] }]);
      const cassette = parseCassette(JSON.parse(await readFile(path, "utf8")), "recorded");
      expect(cassette.responses).toHaveLength(1);
      const replayed = await correctDraft(
        { ...DRAFT_WITH_ERRORS, options: { maxAttempts: 1 } },
        makeDeps(cassette.responses).deps,
      );
      expect(replayed.finalDraft?.content).toEqual(recorded.finalDraft?.content);
      expect(replayed.attemptsDetail[0]?.patch).toEqual(recorded.attemptsDetail[0]?.patch);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
