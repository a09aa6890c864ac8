import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file in its own process, two at once: vitest's default on two cores is one worker.
    pool: "forks",
    maxWorkers: 2,
    // The handlers log and emit metrics to stdout as Lambda wants; in tests that is noise.
    env: { POWERTOOLS_LOG_LEVEL: "SILENT", POWERTOOLS_METRICS_DISABLED: "true" },
  },
});
