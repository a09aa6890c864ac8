/**
 * What the planner needs of each environment in infra/config.ts, taken from the config itself and
 * the functions construct, so that `redraft plan` (which does not load aws-cdk-lib) reads the same
 * settings the stack deploys with.
 */
import { ENV_NAMES, loadConfig } from "../../infra/config.js";
import {
  FUNCTION_ARCHITECTURE,
  FUNCTION_MEMORY_MB,
  modelConcurrencyShares,
} from "../../infra/constructs/functions.js";
import { DEFAULT_MODEL_CONCURRENCY } from "../../shared/model/limited.js";
import type { EnvSnapshot } from "../../shared/plan/counts.js";

export function environmentSnapshots(): Record<string, EnvSnapshot> {
  return Object.fromEntries(
    ENV_NAMES.map((name) => {
      const c = loadConfig(name);
      const modelConcurrency = c.deployment.modelConcurrency ?? DEFAULT_MODEL_CONCURRENCY;
      const snapshot: EnvSnapshot = {
        envName: c.envName,
        modelProvider: c.model.provider,
        modelId: c.model.id,
        lambdaMemoryMb: FUNCTION_MEMORY_MB,
        lambdaArchitecture: FUNCTION_ARCHITECTURE.name === "arm64" ? "arm64" : "x86_64",
        modelConcurrency,
        reservedConcurrency: modelConcurrencyShares(modelConcurrency),
        maxAttempts: c.deployment.loop?.maxAttempts ?? 2,
        maxLogicAttempts: c.deployment.loop?.maxLogicAttempts ?? 1,
        batchConcurrency: c.batchConcurrency,
        batchRoundEstimateMinutes: c.batchPricing.roundEstimateMinutes,
        logLevel: c.logLevel,
        stateMachineLogLevel: c.stateMachineLogs.level,
        includeExecutionData: c.stateMachineLogs.includeExecutionData,
        executionTimeoutMinutes: c.executionTimeoutMinutes,
      };
      return [name, snapshot];
    }),
  );
}
