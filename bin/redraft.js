#!/usr/bin/env node
// Runs the TypeScript command line through tsx, so `npx redraft …` works straight after `npm ci`.
import { register } from "tsx/esm/api";

// A reader that stops early (`redraft runs --json | head`) closes the pipe; that is no failure to report.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

register();
const { main } = await import("../cli/main.ts");
process.exitCode = await main(process.argv);
