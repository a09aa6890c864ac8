import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openSession } from "../../cli/session.js";

const dirs: string[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function session(llm: string, judgeModel: string) {
  const dir = await mkdtemp(join(tmpdir(), "redraft-judge-client-"));
  dirs.push(dir);
  const config = join(dir, "config.json");
  await writeFile(config, JSON.stringify({ packs: { mcq: { judge: { model: judgeModel } } } }));
  const cassette = join(dir, "cassette.json");
  await writeFile(cassette, JSON.stringify({ version: 1, responses: [] }));
  const { runtime } = await openSession(
    { dataDir: join(dir, "data"), llm: llm === "replay" ? `replay:${cassette}` : llm, config },
    { readOnly: true },
  );
  const judge = runtime.deps.judgeModel;
  await runtime.close();
  return judge;
}

describe("the command line's judge of another provider", () => {
  it("a config naming bedrock:<id> beside a Claude corrector gets a Bedrock client for the judge", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-test-not-used");
    vi.stubEnv("AWS_REGION", "eu-west-1");
    expect((await session("anthropic", "bedrock:anthropic.claude-haiku-4-5"))?.provider).toBe("bedrock");
    // The same provider needs no second client: the request names the model.
    expect(await session("anthropic", "anthropic:claude-haiku-4-5")).toBeUndefined();
    expect(await session("anthropic", "claude-haiku-4-5")).toBeUndefined();
  });

  it("a replayed corrector never brings a live judge with it", async () => {
    expect(await session("replay", "bedrock:anthropic.claude-haiku-4-5")).toBeUndefined();
  });
});
