import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { DEFAULT_BEDROCK_MODEL } from "../../shared/model/pricing.js";
import { FakeMessagesServer, toolUseMessage } from "../model/fake-messages-server.js";

const PROFILE_ARN = "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/p0r1o2f3";
let server: FakeMessagesServer;

beforeAll(async () => {
  server = await FakeMessagesServer.start();
  // What the stack gives λ correct and λ judge on Bedrock (infra/constructs/functions.ts).
  vi.stubEnv("TABLE_NAME", "redraft-test");
  vi.stubEnv("BUCKET_NAME", "redraft-test");
  vi.stubEnv("MODEL_PROVIDER", "bedrock");
  vi.stubEnv("MODEL_ID", DEFAULT_BEDROCK_MODEL);
  vi.stubEnv("MODEL_INFERENCE_PROFILE_ARN", PROFILE_ARN);
  vi.stubEnv("MODEL_MAX_RETRIES", "0");
  vi.stubEnv("AWS_REGION", "eu-west-1");
  vi.stubEnv("ANTHROPIC_BEDROCK_BASE_URL", server.baseURL);
  vi.stubEnv("AWS_ACCESS_KEY_ID", "AKIDFAKEFORTESTS");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests");
  vi.stubEnv("AWS_SESSION_TOKEN", undefined);
  vi.stubEnv("AWS_PROFILE", undefined);
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await server.stop();
});

it("the Lambda's model client invokes MODEL_INFERENCE_PROFILE_ARN and reports MODEL_ID", async () => {
  server.reply({ status: 200, body: toolUseMessage(PROFILE_ARN, "answer", { ok: true }) });
  // The suite shares modules between files (vitest.config.ts: isolate false) and depsFromEnv caches
  // the deps it built from another file's environment: this file's environment needs a fresh module.
  vi.resetModules();
  const { depsFromEnv } = await import("../../functions/lib/deps.js");
  const deps = await depsFromEnv({ model: true });
  expect(deps.model?.model).toBe(DEFAULT_BEDROCK_MODEL);

  const response = await deps.model?.complete({
    runId: "run-1",
    draftId: "d-1",
    purpose: "correct",
    system: [{ text: "Fix the draft." }],
    user: "{}",
    tool: { name: "answer", description: "The answer.", inputSchema: { type: "object", properties: {} } },
    maxTokens: 64,
  });

  expect(server.received[0]?.path).toBe(`/model/${PROFILE_ARN}/invoke`);
  expect(response?.model).toBe(DEFAULT_BEDROCK_MODEL);
});
