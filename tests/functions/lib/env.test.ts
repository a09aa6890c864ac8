import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { InvalidEnvironmentError, LoopEnvSchema, readEnv } from "../../../contracts/env.js";

/** What a call threw (or rejected with), so the error's fields can be asserted. */
async function failureOf(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("readEnv", () => {
  it("fails at cold start with a message naming each missing or bad variable", () => {
    expect(() => readEnv(LoopEnvSchema, {})).toThrow(/TABLE_NAME.*BUCKET_NAME|BUCKET_NAME.*TABLE_NAME/);
    expect(() =>
      readEnv(LoopEnvSchema, { TABLE_NAME: "t", BUCKET_NAME: "b", MODEL_PROVIDER: "anthropic" }),
    ).toThrow(/ANTHROPIC_SECRET_ARN/);
    expect(() =>
      readEnv(LoopEnvSchema, { TABLE_NAME: "t", BUCKET_NAME: "b", DEPLOYMENT_CONFIG: "{nope" }),
    ).toThrow(/DEPLOYMENT_CONFIG/);
    expect(
      readEnv(LoopEnvSchema, {
        TABLE_NAME: "t",
        BUCKET_NAME: "b",
        DEPLOYMENT_CONFIG: '{"loop":{"maxAttempts":3}}',
      }).DEPLOYMENT_CONFIG,
    ).toEqual({ loop: { maxAttempts: 3 } });
  });

  it("throws a named error that lists every bad variable once", async () => {
    const error = await failureOf(() =>
      readEnv(LoopEnvSchema, { BUCKET_NAME: "", MODEL_TIMEOUT_MS: "soon", MAX_DRAFT_DEPTH: "-3" }),
    );
    expect(error).toBeInstanceOf(InvalidEnvironmentError);
    expect((error as Error).name).toBe("InvalidEnvironmentError");
    expect([...(error as InvalidEnvironmentError).variables].sort()).toEqual([
      "BUCKET_NAME",
      "MAX_DRAFT_DEPTH",
      "MODEL_TIMEOUT_MS",
      "TABLE_NAME",
    ]);
    expect((error as Error).message).toMatch(/^invalid Lambda environment: /);
  });

  it("applies the schema's defaults and coercions", () => {
    const env = readEnv(LoopEnvSchema, { TABLE_NAME: "t", BUCKET_NAME: "b", RETENTION_DAYS: "30" });
    expect(env.MODEL_PROVIDER).toBe("none");
    expect(env.RETENTION_DAYS).toBe(30);
    expect(env.DEPLOYMENT_CONFIG).toEqual({});
  });

  it("parses the process environment once per schema, and a given source every time", () => {
    let parses = 0;
    const schema = z.object({
      REDRAFT_TEST_VALUE: z.string().transform((v) => {
        parses += 1;
        return v;
      }),
    });
    vi.stubEnv("REDRAFT_TEST_VALUE", "first");
    expect(readEnv(schema).REDRAFT_TEST_VALUE).toBe("first");
    vi.stubEnv("REDRAFT_TEST_VALUE", "second");
    // A container's environment does not change: the first parse is the one kept.
    expect(readEnv(schema).REDRAFT_TEST_VALUE).toBe("first");
    expect(parses).toBe(1);
    expect(readEnv(schema, { REDRAFT_TEST_VALUE: "given" }).REDRAFT_TEST_VALUE).toBe("given");
    expect(readEnv(schema, { REDRAFT_TEST_VALUE: "given" }).REDRAFT_TEST_VALUE).toBe("given");
    expect(parses).toBe(3);
  });

  it("keeps no failure: an environment fixed afterwards parses", () => {
    const schema = z.object({ REDRAFT_TEST_MISSING: z.string().min(1) });
    vi.stubEnv("REDRAFT_TEST_MISSING", undefined);
    expect(() => readEnv(schema)).toThrow(InvalidEnvironmentError);
    vi.stubEnv("REDRAFT_TEST_MISSING", "here");
    expect(readEnv(schema).REDRAFT_TEST_MISSING).toBe("here");
  });

  it("refuses hostile values without echoing more than the schema's message", async () => {
    const huge = "x".repeat(1_000_000);
    const error = await failureOf(() =>
      readEnv(LoopEnvSchema, { TABLE_NAME: "t", BUCKET_NAME: "b", MODEL_PROVIDER: huge }),
    );
    expect((error as InvalidEnvironmentError).variables).toEqual(["MODEL_PROVIDER"]);
    expect((error as Error).message.length).toBeLessThan(1_000);
  });
});

describe("the handlers read their environment through readEnv", () => {
  // Each handler keeps what it built from its environment for the container's life (here, the
  // worker's: vitest.config.ts shares modules between files), so each is imported afresh.
  beforeEach(() => {
    vi.resetModules();
    for (const name of [
      "TABLE_NAME",
      "BUCKET_NAME",
      "EVENT_BUS_NAME",
      "STATE_MACHINE_ARN",
      "BATCH_STATE_MACHINE_ARN",
      "BATCH_DEADLINE_MINUTES",
      "BATCH_ROUND_ESTIMATE_MINUTES",
      "BATCH_FALLBACK_RESERVE_MINUTES",
      "BATCH_POLL_FIRST_SECONDS",
      "BATCH_POLL_MAX_SECONDS",
      "BATCH_MODEL_RETRIES",
    ]) {
      vi.stubEnv(name, undefined);
    }
  });

  /** The variables a handler's failure names, once it is known to be the environment's error. */
  const badVariables = (error: unknown): string[] => {
    expect((error as Error).name).toBe("InvalidEnvironmentError");
    return [...(error as InvalidEnvironmentError).variables].sort();
  };

  it("λ start names the missing state machine", async () => {
    const { handler } = await import("../../../functions/start.js");
    expect(badVariables(await failureOf(() => handler({})))).toEqual(["STATE_MACHINE_ARN"]);
  });

  it("λ validate names the missing table and bucket", async () => {
    const { handler } = await import("../../../functions/validate.js");
    expect(badVariables(await failureOf(() => handler({ runId: "r", input: {} })))).toEqual([
      "BUCKET_NAME",
      "TABLE_NAME",
    ]);
  });

  it("λ finalize names the missing table and bus", async () => {
    const { handler } = await import("../../../functions/finalize.js");
    const event = {
      source: "aws.states",
      "detail-type": "Step Functions Execution Status Change",
      detail: { executionArn: "arn:x", stateMachineArn: "arn:y", name: "r", status: "FAILED" },
    };
    expect(badVariables(await failureOf(() => handler(event)))).toEqual(["EVENT_BUS_NAME", "TABLE_NAME"]);
  });

  it("λ rounds names every missing deadline setting", async () => {
    vi.stubEnv("TABLE_NAME", "t");
    vi.stubEnv("BUCKET_NAME", "b");
    const { handler } = await import("../../../functions/rounds.js");
    expect(badVariables(await failureOf(() => handler({ step: "submit" })))).toEqual([
      "BATCH_DEADLINE_MINUTES",
      "BATCH_FALLBACK_RESERVE_MINUTES",
      "BATCH_MODEL_RETRIES",
      "BATCH_POLL_FIRST_SECONDS",
      "BATCH_POLL_MAX_SECONDS",
      "BATCH_ROUND_ESTIMATE_MINUTES",
    ]);
  });
});
