import { defineConfig } from "vitest/config";

// `npm run test:package`: apart from `npm test`, because it builds, packs and installs (minutes).
export default defineConfig({
  test: {
    include: ["tests/package/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 600_000,
  },
});
