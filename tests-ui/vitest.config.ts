import { defineConfig } from "vitest/config";

// The viewer's tests: a real server, and a real browser (headless Chromium). Apart from `npm test`
// (whose config includes only tests/), run by `npm run test:ui`.
export default defineConfig({
  test: {
    include: ["tests-ui/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    // expect.poll gives up after 1 s by default; a page's fetch on a CI runner shared with other jobs
    // can take longer than that without anything being wrong.
    expect: { poll: { timeout: 20_000 } },
    env: { POWERTOOLS_LOG_LEVEL: "SILENT", POWERTOOLS_METRICS_DISABLED: "true" },
  },
});
