import { App, Duration, Lazy, Stack, Token } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import {
  FinalizeEnvSchema,
  InvalidEnvironmentError,
  LoopEnvSchema,
  lambdaEnvironment,
  RoundsTimingEnvSchema,
} from "../../contracts/env.js";
import { loadConfig } from "../../infra/config.js";
import { redraftFunction } from "../../infra/constructs/functions.js";

/**
 * The stack builds each function's environment against the schemas its handler reads it with
 * (contracts/env.ts): one key list for both sides, checked when the stack is synthesized.
 */
const finalizeEnv = { TABLE_NAME: "runs", EVENT_BUS_NAME: "bus", RETENTION_DAYS: "30" };

function thrown(fn: () => unknown): InvalidEnvironmentError {
  try {
    fn();
  } catch (error) {
    if (error instanceof InvalidEnvironmentError) return error;
    throw error;
  }
  throw new Error("expected an InvalidEnvironmentError");
}

describe("lambdaEnvironment", () => {
  it("passes an environment its handler's schema reads, with the platform's own variables beside it", () => {
    const env = { ...finalizeEnv, POWERTOOLS_SERVICE_NAME: "redraft", NODE_OPTIONS: "--enable-source-maps" };
    expect(lambdaEnvironment([FinalizeEnvSchema], env)).toEqual(env);
  });

  it("refuses a key no schema of the handler reads (a typo), naming it", () => {
    const error = thrown(() => lambdaEnvironment([FinalizeEnvSchema], { ...finalizeEnv, EVENT_BUS: "bus" }));
    expect(error.variables).toEqual(["EVENT_BUS"]);
  });

  it("refuses an environment missing a required variable or with a malformed one", () => {
    const { EVENT_BUS_NAME: _, ...missing } = finalizeEnv;
    expect(thrown(() => lambdaEnvironment([FinalizeEnvSchema], missing)).variables).toEqual([
      "EVENT_BUS_NAME",
    ]);
    expect(
      thrown(() => lambdaEnvironment([FinalizeEnvSchema], { ...finalizeEnv, RETENTION_DAYS: "-1" }))
        .variables,
    ).toEqual(["RETENTION_DAYS"]);
  });

  it("checks every schema of a handler that reads several (λ rounds: the loop's and its timing)", () => {
    const loop = { TABLE_NAME: "runs", BUCKET_NAME: "bucket" };
    expect(() => lambdaEnvironment([LoopEnvSchema, RoundsTimingEnvSchema], loop)).toThrow(
      InvalidEnvironmentError,
    );
    const timing = {
      BATCH_DEADLINE_MINUTES: "1440",
      BATCH_ROUND_ESTIMATE_MINUTES: "60",
      BATCH_FALLBACK_RESERVE_MINUTES: "30",
      BATCH_POLL_FIRST_SECONDS: "60",
      BATCH_POLL_MAX_SECONDS: "600",
      BATCH_MODEL_RETRIES: "2",
    };
    expect(lambdaEnvironment([LoopEnvSchema, RoundsTimingEnvSchema], { ...loop, ...timing })).toEqual({
      ...loop,
      ...timing,
    });
  });

  it("lets a value the deployment resolves later stand in, and still checks the concrete ones", () => {
    // A CDK token: the table's name before the deployment resolves it.
    const env = { ...finalizeEnv, TABLE_NAME: Lazy.string({ produce: () => "runs" }) };
    expect(Token.isUnresolved(env.TABLE_NAME)).toBe(true);
    expect(lambdaEnvironment([FinalizeEnvSchema], env, Token.isUnresolved)).toEqual(env);
    expect(() =>
      lambdaEnvironment([FinalizeEnvSchema], { ...env, RETENTION_DAYS: "soon" }, Token.isUnresolved),
    ).toThrow(InvalidEnvironmentError);
  });
});

describe("redraftFunction checks the environment at synth", () => {
  const build = (environment: Record<string, string>) => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new Stack(app, "One");
    return redraftFunction(stack, "finalize", {
      description: "probe",
      timeout: Duration.seconds(10),
      environment,
      envSchemas: [FinalizeEnvSchema],
      config: loadConfig("dev"),
      modelSdk: "none",
    });
  };

  it("builds a function whose environment its schema reads", () => {
    expect(build(finalizeEnv).node.id).toBe("finalize");
  });

  it("fails the synth on a variable the handler does not read", () => {
    expect(() => build({ ...finalizeEnv, TABLENAME: "runs" })).toThrow(/TABLENAME: read by no schema/);
  });
});
