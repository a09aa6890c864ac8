/**
 * `npm run bench:all [-- --smoke] [-- --write-docs]`: every benchmark, one after the other, each in its
 * own process (so one bench's JIT and heap cannot colour the next).
 *
 * - full mode by default; `--smoke` runs each bench's smoke mode (seconds, tiny) and never writes docs;
 * - `--write-docs` rewrites each bench's section of docs/BENCHMARKS.md with its output verbatim, the
 *   command, the date, the commit and the machine line;
 * - `--only a,b` runs only those benches, by section (`batch-pricing` is `bench:batch -- --pricing batch`);
 *   their sections alone are rewritten.
 *
 * A bench that exits non-zero fails the whole run and no section is written.
 */
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { BENCHMARKS_MD, commitId, type SectionInput, writeSections } from "./lib/docs.js";

/**
 * Every bench, in the order of docs/BENCHMARKS.md: the section it writes, and the script and arguments
 * that write it when they are not `bench/<section>.ts` alone.
 */
const BENCHES: readonly { section: string; script?: string; args?: readonly string[] }[] = [
  { section: "validate" },
  { section: "policy" },
  { section: "local" },
  { section: "startup" },
  { section: "scale" },
  { section: "coldstart" },
  { section: "batch" },
  { section: "batch-pricing", script: "batch", args: ["--pricing", "batch"] },
  { section: "suite" },
  { section: "sandbox" },
  { section: "grounding" },
  { section: "viewer" },
];

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const onlyAt = process.argv.indexOf("--only");
const only = onlyAt >= 0 ? new Set((process.argv[onlyAt + 1] ?? "").split(",")) : undefined;
if (process.argv.includes("--write-docs") && SMOKE)
  console.error("--smoke never writes docs: ignoring --write-docs");

const sections: SectionInput[] = [];
for (const { section, script = section, args = [] } of BENCHES) {
  if (only && !only.has(section)) continue;
  const scriptArgs = [...args, ...(SMOKE ? ["--smoke"] : [])];
  const command = `npm run bench:${script}${args.length > 0 ? ` -- ${args.join(" ")}` : ""}`;
  console.error(`\n=== ${command}${SMOKE ? (args.length > 0 ? " --smoke" : " -- --smoke") : ""}`);
  const date = new Date();
  const load = loadavg();
  const commit = commitId();
  const child = spawnSync(process.execPath, ["--import", "tsx", `bench/${script}.ts`, ...scriptArgs], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 64 * 1024 * 1024,
  });
  process.stdout.write(child.stdout ?? "");
  if (child.status !== 0) {
    console.error(`${command} failed (exit ${child.status ?? child.signal}): nothing written`);
    process.exit(1);
  }
  sections.push({ bench: section, command, output: child.stdout, date, load, commit });
}
if (WRITE_DOCS) {
  writeSections(sections);
  console.error(`\nwrote ${sections.length} sections of ${BENCHMARKS_MD}`);
}
