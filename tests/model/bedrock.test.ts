import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { ErrorNames } from "../../shared/errors.js";
import { BedrockModelClient } from "../../shared/model/bedrock.js";
import { costUsd, DEFAULT_BEDROCK_MODEL, isPriced } from "../../shared/model/pricing.js";
import type { ModelRequest } from "../../shared/model/types.js";
import { FakeMessagesServer, toolUseMessage } from "./fake-messages-server.js";

const request: ModelRequest = {
  runId: "run-1",
  draftId: "rec-7",
  purpose: "judge",
  system: [{ text: "You judge extracted records.", cache: true }, { text: "Persona: a careful reviewer." }],
  user: "Record: ...",
  tool: {
    name: "report_findings",
    description: "Report the findings.",
    inputSchema: { type: "object", properties: { findings: { type: "array" } } },
  },
  maxTokens: 1024,
};

const findings = { findings: [] };
const LEGACY_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

let server: FakeMessagesServer;

beforeAll(async () => {
  server = await FakeMessagesServer.start();
});
beforeEach(() => {
  // Fake IAM credentials, found by the SDK's default provider chain like a Lambda role's.
  vi.stubEnv("AWS_ACCESS_KEY_ID", "AKIDFAKEFORTESTS");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests");
  vi.stubEnv("AWS_SESSION_TOKEN", undefined);
  vi.stubEnv("AWS_PROFILE", undefined);
  vi.stubEnv("AWS_BEARER_TOKEN_BEDROCK", "must-not-be-used");
});
afterEach(() => {
  vi.unstubAllEnvs();
  server.reset();
});
afterAll(() => server.stop());

function client(model?: string) {
  return new BedrockModelClient({
    awsRegion: "eu-west-1",
    baseURL: server.baseURL,
    maxRetries: 0,
    ...(model !== undefined ? { model } : {}),
  });
}

describe("BedrockModelClient against a local InvokeModel endpoint", () => {
  it("invokes the model by id, SigV4-signed with the environment's IAM credentials", async () => {
    server.reply({ status: 200, body: toolUseMessage("claude-sonnet-5-5", "report_findings", findings) });

    const response = await client().complete(request);

    const [received] = server.received;
    expect(received?.method).toBe("POST");
    expect(received?.path).toBe(`/model/${DEFAULT_BEDROCK_MODEL}/invoke`);
    expect(received?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDFAKEFORTESTS\/\d{8}\/eu-west-1\/bedrock\/aws4_request/,
    );
    expect(received?.body).not.toHaveProperty("model");
    expect(received?.body).toMatchObject({
      anthropic_version: "2026-10-21",
      system: [
        { type: "text", text: "You judge extracted records.", cache_control: { type: "ephemeral" } },
        { type: "text", text: "Persona: a careful reviewer." },
      ],
      messages: [{ role: "user", content: "Record: ..." }],
      tool_choice: { type: "auto" },
    });
    expect(response).toMatchObject({ output: findings, model: "claude-sonnet-5-5" });
  });

  it("sends the Bedrock API version that ARN-versioned (pre-4.7) model ids accept, and forces the tool", async () => {
    server.reply({
      status: 200,
      body: toolUseMessage("claude-sonnet-4-5-20250929", "report_findings", findings),
    });

    await client(LEGACY_ID).complete(request);

    const [received] = server.received;
    expect(received?.path).toBe(`/model/${LEGACY_ID}/invoke`);
    expect(received?.body).toMatchObject({
      anthropic_version: "bedrock-2023-05-31",
      tool_choice: { type: "tool", name: "report_findings" },
    });
  });

  it("reports the requested id when Bedrock answers with a model name the price table does not know", async () => {
    server.reply({ status: 200, body: toolUseMessage("bedrock-internal-name", "report_findings", findings) });

    const response = await client(LEGACY_ID).complete(request);

    expect(response.model).toBe(LEGACY_ID);
  });

  it("maps ThrottlingException (429) to ModelRateLimitedError", async () => {
    server.reply({
      status: 429,
      body: { message: "Too many requests, please wait before trying again." },
      headers: { "x-amzn-errortype": "ThrottlingException" },
    });

    const error = await client()
      .complete(request)
      .catch((e: unknown) => e);

    expect((error as Error).name).toBe(ErrorNames.ModelRateLimited);
  });

  it("maps ServiceUnavailableException (503) to ModelOverloadedError", async () => {
    server.reply({
      status: 503,
      body: { message: "Bedrock is unable to process your request." },
      headers: { "x-amzn-errortype": "ServiceUnavailableException" },
    });

    const error = await client()
      .complete(request)
      .catch((e: unknown) => e);

    expect((error as Error).name).toBe(ErrorNames.ModelOverloaded);
  });

  it("maps ModelTimeoutException (408) and the client timeout to ModelTimeoutError", async () => {
    server.reply({ status: 408, body: { message: "Model has timed out in processing the request." } });
    const modelTimeout = await client()
      .complete(request)
      .catch((e: unknown) => e);

    server.reply({
      status: 200,
      body: toolUseMessage("claude-sonnet-5-5", "report_findings", findings),
      delayMs: 2_000,
    });
    const clientTimeout = await new BedrockModelClient({
      baseURL: server.baseURL,
      timeoutMs: 100,
      maxRetries: 0,
    })
      .complete(request)
      .catch((e: unknown) => e);

    expect((modelTimeout as Error).name).toBe(ErrorNames.ModelTimeout);
    expect((clientTimeout as Error).name).toBe(ErrorNames.ModelTimeout);
  });

  it("maps AccessDeniedException (403) to ModelRequestFailedError", async () => {
    server.reply({
      status: 403,
      body: { message: "You don't have access to the model with the specified model ID." },
    });

    const error = await client()
      .complete(request)
      .catch((e: unknown) => e);

    expect((error as Error).name).toBe(ErrorNames.ModelRequestFailed);
    expect((error as Error).message).toContain("status 403");
  });
});

describe("BedrockModelClient through an application inference profile (issue 33)", () => {
  const PROFILE_ARN = "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3d4e5f6";
  const profiled = () =>
    new BedrockModelClient({
      awsRegion: "eu-west-1",
      baseURL: server.baseURL,
      maxRetries: 0,
      inferenceProfileArn: PROFILE_ARN,
    });

  it("invokes the profile's ARN on the path AnthropicBedrock uses for it, while the response and its cost keep the model id", async () => {
    // Bedrock may name the profile, or a name of its own, as the answer's model: neither is priced.
    server.reply({ status: 200, body: toolUseMessage(PROFILE_ARN, "report_findings", findings) });
    const response = await profiled().complete(request);

    server.reply({ status: 200, body: toolUseMessage(PROFILE_ARN, "report_findings", findings) });
    const { AnthropicBedrock } = await import("@anthropic-ai/bedrock-sdk");
    const reference = new AnthropicBedrock({
      awsRegion: "eu-west-1",
      baseURL: server.baseURL,
      maxRetries: 0,
    });
    await reference.messages.create({
      model: PROFILE_ARN,
      max_tokens: 16,
      messages: [{ role: "user", content: "hi" }],
    });

    const [ours, theirs] = server.received;
    // The ARN is one path segment: its `/` encoded, its `:` kept, exactly as AnthropicBedrock sends it.
    expect(ours?.rawPath).toBe(
      "/model/arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile%2Fa1b2c3d4e5f6/invoke",
    );
    expect(ours?.rawPath).toBe(theirs?.rawPath);
    expect(ours?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDFAKEFORTESTS\/\d{8}\/eu-west-1\/bedrock\//,
    );
    expect(ours?.body).not.toHaveProperty("model");
    // Built for the model id: Sonnet 5.5 is asked with `auto` (it rejects a forced tool choice).
    expect(ours?.body).toMatchObject({ anthropic_version: "2026-10-21", tool_choice: { type: "auto" } });

    expect(response.model).toBe(DEFAULT_BEDROCK_MODEL);
    expect(isPriced(PROFILE_ARN)).toBe(false);
    const cost = costUsd(response.model, response.usage);
    expect(cost).toBeGreaterThan(0);
    expect(cost).toBe(
      costUsd(DEFAULT_BEDROCK_MODEL, { input: 1200, output: 800, cacheRead: 0, cacheWrite: 0 }),
    );
  });

  it("a request naming another model (a ladder's rung) invokes that model itself, not the profile", async () => {
    server.reply({
      status: 200,
      body: toolUseMessage("claude-sonnet-4-5-20250929", "report_findings", findings),
    });

    const response = await profiled().complete({ ...request, model: LEGACY_ID });

    expect(server.received[0]?.path).toBe(`/model/${LEGACY_ID}/invoke`);
    expect(response.model).toBe("claude-sonnet-4-5-20250929");
  });
});
