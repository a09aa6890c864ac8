/**
 * The files the compiled command line reads beside its code at run time (through
 * `new URL(…, import.meta.url)`), which `npm run build` copies into dist/ next to the modules that
 * read them. tests/build-assets.test.ts fails when a module reads a file this list leaves out.
 */
export const BUILD_ASSETS = [
  "contracts/state-machine.asl.json",
  "contracts/batch-state-machine.asl.json",
  "ui/assets",
  "shared/packs/code/sandbox-harness.guest.js",
  "shared/plan/data",
] as const;
