#!/usr/bin/env node
// Runs the TypeScript command line through tsx, so `npx redraft …` works straight after `npm ci`.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../cli/main.ts");
process.exitCode = await main(process.argv);
