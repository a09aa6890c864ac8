import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    // The packed tarball's test builds, packs and installs: `npm run test:package` runs it.
    exclude: [...configDefaults.exclude, "tests/package/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two worker processes, one per core (vitest's default on two cores is one), each kept for the
    // whole run: without per-file isolation a worker imports aws-cdk-lib, the AWS SDK, dynalite and
    // the runtime once instead of once per file (about a third of the suite's time went there), and
    // tests/infra/synth.ts synthesizes each environment once per worker. The price is discipline:
    // a file restores what it changes (vi.restoreAllMocks runs after each file anyway), and
    // tests/setup/shared-worker.ts fails a file that leaves an AWS client mocked for the next.
    pool: "forks",
    maxWorkers: 2,
    isolate: false,
    setupFiles: ["tests/setup/shared-worker.ts"],
    globalSetup: ["tests/setup/temp-root.ts"],
    // The handlers log and emit metrics to stdout as Lambda wants; in tests that is noise.
    env: { POWERTOOLS_LOG_LEVEL: "SILENT", POWERTOOLS_METRICS_DISABLED: "true" },
  },
});
