import { readFileSync } from "node:fs";
import { App, Duration, Stack } from "aws-cdk-lib";
import { Code, Function as LambdaFunction, Runtime } from "aws-cdk-lib/aws-lambda";
import { describe, expect, it } from "vitest";
import { ENV_NAMES, environments } from "../../infra/config.js";
import {
  FUNCTION_TIMEOUTS,
  MODEL_REQUEST,
  MODEL_STEP_MARGIN,
  modelConcurrencyShares,
} from "../../infra/constructs/functions.js";
import { ModelQueue } from "../../infra/constructs/model-queue.js";
import { backoffSeconds, stepWorstCase, worstCase } from "../../infra/worst-case.js";
import { ErrorNames } from "../../shared/errors.js";
import { DEFAULT_RUN_DEADLINE_HOURS } from "../../shared/loop-settings.js";
import { getAsl } from "./asl.js";
import { logicalId, synthesize } from "./synth.js";

describe("timeouts that add up", () => {
  it.each(["correct", "judge"] as const)(
    "%s: the model request and the SDK's retries of it end before the Lambda does",
    (name) => {
      const requests = MODEL_REQUEST.timeout.toSeconds() * (MODEL_REQUEST.sdkRetries + 1);
      expect(requests + MODEL_STEP_MARGIN.toSeconds()).toBeLessThanOrEqual(
        FUNCTION_TIMEOUTS[name].toSeconds(),
      );
    },
  );

  it("hands the model steps the request timeout and retries the stack sizes them for", () => {
    const { stack, template } = synthesize("prod");
    const resources = template.toJSON().Resources;
    for (const fn of [stack.functions.correct, stack.functions.judge]) {
      const props = resources[logicalId(fn)].Properties;
      expect(props.Environment.Variables).toMatchObject({
        MODEL_TIMEOUT_MS: String(MODEL_REQUEST.timeout.toMilliseconds()),
        MODEL_MAX_RETRIES: String(MODEL_REQUEST.sdkRetries),
      });
      expect(props.Timeout).toBeGreaterThanOrEqual(
        MODEL_REQUEST.timeout.toSeconds() * (MODEL_REQUEST.sdkRetries + 1),
      );
    }
  });

  it("adds up a retrier's longest waits, each capped at its MaxDelay", () => {
    expect(
      backoffSeconds({
        interval: Duration.seconds(5),
        backoffRate: 2,
        maxAttempts: 6,
        maxDelay: Duration.seconds(120),
      }),
    ).toBe(5 + 10 + 20 + 40 + 80 + 120);
    expect(
      stepWorstCase(Duration.seconds(10), [
        { interval: Duration.seconds(1), backoffRate: 2, maxAttempts: 2 },
        { interval: Duration.seconds(3), backoffRate: 1, maxAttempts: 1 },
      ]),
    ).toEqual({ attemptSeconds: 10, attempts: 4, backoffSeconds: 1 + 2 + 3, totalSeconds: 46 });
  });

  it.each(ENV_NAMES)("%s: the state machine's timeout is at least a run's worst case", (env) => {
    const config = environments[env];
    const worst = worstCase(config);
    expect(worst.totalSeconds).toBeLessThanOrEqual(config.executionTimeoutMinutes * 60);
    // The machine deploys what the config says.
    const { stack, template } = synthesize(env);
    const asl = getAsl(template, { stateMachineLogicalId: logicalId(stack.workflow.stateMachine) });
    // …plus the longest the run's model work may wait for a slot (the model queue's deadline).
    expect(asl.TimeoutSeconds).toBe(
      config.executionTimeoutMinutes * 60 + (config.runDeadlineHours ?? DEFAULT_RUN_DEADLINE_HOURS) * 3600,
    );
    expect(worst.modelWaitSeconds).toBe((config.runDeadlineHours ?? DEFAULT_RUN_DEADLINE_HOURS) * 3600);
    expect(worst.totalSeconds + worst.modelWaitSeconds).toBeLessThanOrEqual(asl.TimeoutSeconds ?? 0);
  });

  it.each(ENV_NAMES)("%s: counts the retriers the committed ASL puts on its queued model states", (env) => {
    const { stack, template } = synthesize(env);
    const asl = getAsl(template, { stateMachineLogicalId: logicalId(stack.workflow.stateMachine) });
    const worst = worstCase(environments[env]);
    for (const [name, step] of [
      ["CorrectExecution", worst.correct],
      ["CorrectLogic", worst.correct],
      ["Judge", worst.judge],
    ] as const) {
      const state = asl.States[name] as unknown as {
        Resource: string;
        Retry: { ErrorEquals: string[]; MaxAttempts: number }[];
      };
      expect(state.Resource).toMatch(/sqs:sendMessage\.waitForTaskToken$/);
      // The re-queue after a 429 or an overload is bounded by the deadline, not by its MaxAttempts.
      const requeue = state.Retry.find((r) => r.ErrorEquals.includes(ErrorNames.ModelRateLimited));
      expect(requeue?.MaxAttempts).toBeGreaterThanOrEqual(worst.modelWaitSeconds / 60);
      const counted = state.Retry.filter((r) => r !== requeue).reduce((sum, r) => sum + r.MaxAttempts, 0);
      expect(step.attempts).toBe(1 + counted);
    }
  });

  it("is the table docs/deploying.md shows", () => {
    const readme = readFileSync(new URL("../../docs/deploying.md", import.meta.url), "utf8");
    const row = (label: string) =>
      readme
        .split("\n")
        .find((line) => line.startsWith(`| ${label} |`))
        ?.split("|")
        .slice(2, 5)
        .map((cell) => cell.trim());
    expect(row("a whole run, worst case")).toEqual(
      ENV_NAMES.map((env) => `${Math.ceil(worstCase(environments[env]).totalSeconds / 60)} min`),
    );
    expect(row("state-machine timeout")).toEqual(
      ENV_NAMES.map((env) => `${environments[env].executionTimeoutMinutes} min`),
    );
  });

  it("counts every correction the caps allow and one judge round more than the logic corrections", () => {
    const worst = worstCase(environments.prod);
    expect(worst).toMatchObject({ executionAttempts: 5, logicAttempts: 3, judgeRounds: 4 });
    expect(worst.correct.attemptSeconds).toBe(FUNCTION_TIMEOUTS.correct.toSeconds() + 30);
  });
});

describe("bounded model load in the cloud", () => {
  it("splits modelConcurrency between correct and judge, never exceeding it, each at SQS's floor of 2", () => {
    expect(modelConcurrencyShares(4)).toEqual({ correct: 2, judge: 2 });
    expect(modelConcurrencyShares(7)).toEqual({ correct: 5, judge: 2 });
    expect(modelConcurrencyShares(12)).toEqual({ correct: 9, judge: 3 });
    for (const total of [1, 2, 3, 2.5])
      expect(() => modelConcurrencyShares(total)).toThrow(
        /modelConcurrency must be at least 4 .*SQS event source/,
      );
  });

  it("refuses at synth a model queue that would feed a function fewer slots than SQS's floor", () => {
    const app = new App();
    const stack = new Stack(app, "Q");
    const fn = () =>
      new LambdaFunction(stack, `F${stack.node.children.length}`, {
        runtime: Runtime.NODEJS_22_X,
        handler: "index.handler",
        code: Code.fromInline("exports.handler = async () => {}"),
      });
    const functions = { correct: fn(), judge: fn() };
    expect(
      () => new ModelQueue(stack, "Low", { name: "q", functions, slots: { correct: 3, judge: 1 } }),
    ).toThrow(/model queue of λ judge has 1 slot\(s\).*at least 2/);
  });

  it.each(ENV_NAMES)(
    "%s: each model queue's maximumConcurrency is its function's reserved concurrency, at least 2",
    (env) => {
      const { stack, template } = synthesize(env);
      const resources = template.toJSON().Resources as Record<
        string,
        { Type: string; Properties: Record<string, unknown> }
      >;
      const reserved = (fn: typeof stack.functions.correct) =>
        resources[logicalId(fn)]?.Properties.ReservedConcurrentExecutions as number;
      const mappings = Object.values(resources).filter((r) => r.Type === "AWS::Lambda::EventSourceMapping");
      const scaled = mappings
        .map(
          (m) =>
            (m.Properties.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency,
        )
        .filter((n) => n !== undefined)
        .sort((a, b) => a - b);
      expect(scaled).toEqual(
        [reserved(stack.functions.correct), reserved(stack.functions.judge)].sort((a, b) => a - b),
      );
      for (const n of scaled) expect(n).toBeGreaterThanOrEqual(2);
    },
  );

  it.each(ENV_NAMES)("%s: correct and judge have reserved concurrency from modelConcurrency", (env) => {
    const { stack, template } = synthesize(env);
    const total = environments[env].deployment.modelConcurrency ?? 0;
    const shares = modelConcurrencyShares(total);
    const reserved = (fn: typeof stack.functions.correct) =>
      template.toJSON().Resources[logicalId(fn)].Properties.ReservedConcurrentExecutions;
    expect(reserved(stack.functions.correct)).toBe(shares.correct);
    expect(reserved(stack.functions.judge)).toBe(shares.judge);
    expect(shares.correct + shares.judge).toBe(total);
    for (const fn of [stack.functions.validate, stack.functions.revalidate, stack.functions.outcome]) {
      expect(reserved(fn)).toBeUndefined();
    }
  });
});
