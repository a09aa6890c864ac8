/**
 * `npm run plan:counts`: executes the committed state machine over the example corpus
 * (scripts/plan/measure.ts) and writes what each outcome path costs, with the environments'
 * settings, to shared/plan/data/counts.json, the file `redraft plan` reads. Run it after changing
 * the state machine, the handlers, the stores or infra/config.ts; tests/plan/counts.test.ts fails
 * until the committed file is what this writes.
 */
import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { COUNTS_FILE, countsFileText } from "./plan/counts-file.js";

process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
await writeFile(COUNTS_FILE, await countsFileText());
// In the repository's own format, so that `npm run lint` passes on the generated file.
execFileSync("npx", ["biome", "format", "--write", fileURLToPath(COUNTS_FILE)], { stdio: "ignore" });
process.stderr.write(`wrote ${COUNTS_FILE.pathname}\n`);
