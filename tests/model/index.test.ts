import { describe, expect, it } from "vitest";
import { ErrorNames } from "../../shared/errors.js";
import {
  AnthropicModelClient,
  BedrockModelClient,
  createModelClient,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_BEDROCK_MODEL,
} from "../../shared/model/index.js";

describe("createModelClient", () => {
  it("builds the Anthropic client, with the default Sonnet unless a model is given", () => {
    const byDefault = createModelClient({ provider: "anthropic", apiKey: "sk-ant-test" });
    const chosen = createModelClient({
      provider: "anthropic",
      apiKey: "sk-ant-test",
      model: "claude-haiku-4-5",
    });

    expect(byDefault).toBeInstanceOf(AnthropicModelClient);
    expect(byDefault).toMatchObject({ provider: "anthropic", model: DEFAULT_ANTHROPIC_MODEL });
    expect(chosen?.model).toBe("claude-haiku-4-5");
  });

  it("refuses an empty API key", () => {
    expect(() => createModelClient({ provider: "anthropic", apiKey: " " })).toThrow(
      expect.objectContaining({ name: ErrorNames.ModelNotConfigured }),
    );
  });

  it("builds the Bedrock client for a region", () => {
    const client = createModelClient({ provider: "bedrock", region: "eu-central-1" });

    expect(client).toBeInstanceOf(BedrockModelClient);
    expect(client).toMatchObject({ provider: "bedrock", model: DEFAULT_BEDROCK_MODEL });
  });

  it("gives no client for provider none", () => {
    expect(createModelClient({ provider: "none" })).toBeUndefined();
  });
});
