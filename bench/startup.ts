/**
 * `npm run bench:startup`: how long the command line takes to answer, as a multiple of an empty node.
 *
 * Measures whatever `bin/redraft.js` runs (TypeScript through tsx, or compiled JavaScript): the wall
 * time of `redraft --help` and of `redraft runs` on a data dir holding `--runs-in-dir` runs (1,000 by
 * default), each divided by the wall time of `node -e 0`, medians of `--n` processes each (11 by
 * default), measured interleaved in one run so that the machine's load weighs on all three alike.
 *
 * The data dir is made once (`redraft run` over distinct clean questions, no model) under
 * `.cache/bench-startup/` and reused while it holds the expected number of runs.
 *
 * `--smoke`: 10 runs in the data dir, 1 process each.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { machine, median, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const RUNS_IN_DIR = arg("runs-in-dir", SMOKE ? 10 : 1000);
const N = arg("n", SMOKE ? 1 : 11);
const GOAL_RATIO = 8;
const BIN = resolve("bin/redraft.js");
const ROOT = resolve(".cache/bench-startup");
const DATA_DIR = join(ROOT, `data-${RUNS_IN_DIR}`);
const READY = join(DATA_DIR, "bench-ready.json");
const DIST_MAIN = resolve("dist/cli/main.js");
/** What bin/redraft.js does once it has chosen dist/: import the compiled main and run it. */
const COMPILED = `const { main } = await import(${JSON.stringify(pathToFileURL(DIST_MAIN).href)}); process.exitCode = await main(process.argv);`;

/** The environment of every measured process: no model key, no colour, nothing inherited that changes paths. */
const ENV = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1" };

function run(args: readonly string[]): { ms: number; stdout: string } {
  const started = performance.now();
  const child = spawnSync(process.execPath, args, {
    env: ENV,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - started;
  if (child.status !== 0)
    throw new Error(`node ${args.join(" ")} exited ${child.status}: ${child.stderr.trim()}`);
  return { ms, stdout: child.stdout };
}

/** A data dir with exactly RUNS_IN_DIR finished runs, made through the command line itself. */
function ensureDataDir(): number {
  if (existsSync(READY)) return 0;
  rmSync(DATA_DIR, { recursive: true, force: true });
  const inputs = join(ROOT, `drafts-${RUNS_IN_DIR}`);
  rmSync(inputs, { recursive: true, force: true });
  mkdirSync(inputs, { recursive: true });
  const clean = JSON.parse(readFileSync("examples/drafts/mcq-clean.json", "utf8")) as {
    content: { vignette: string };
  };
  const lines: string[] = [];
  for (let i = 0; i < RUNS_IN_DIR; i++) {
    // Distinct content, so the data dir's dedupe runs every one of them.
    const content = { ...clean.content, vignette: `${clean.content.vignette} Case ${i + 1}.` };
    lines.push(JSON.stringify({ ...clean, id: `startup-${i}`, content }));
  }
  writeFileSync(join(inputs, "drafts.jsonl"), `${lines.join("\n")}\n`);
  const started = performance.now();
  run([BIN, "run", inputs, "--data-dir", DATA_DIR, "--llm", "none", "--json", "--concurrency", "8"]);
  const seconds = (performance.now() - started) / 1000;
  writeFileSync(READY, JSON.stringify({ runs: RUNS_IN_DIR }));
  return seconds;
}

/**
 * Which code `bin/redraft.js` will run, read as it reads it: dist/ when dist/build.json lists sources
 * none of which changed since the build started, else the TypeScript sources through tsx.
 */
function binPath(): string {
  let build: { startedAt: number; sources: string[] };
  try {
    build = JSON.parse(readFileSync("dist/build.json", "utf8")) as typeof build;
  } catch {
    return "the TypeScript sources through tsx (no dist/build.json)";
  }
  const stale = build.sources.filter((source) => {
    try {
      return statSync(source).mtimeMs >= build.startedAt;
    } catch {
      return true;
    }
  });
  return stale.length === 0
    ? "the compiled dist/"
    : `the TypeScript sources through tsx: dist/ is stale, ${stale.length} of its sources changed since the build (${stale.slice(0, 3).join(", ")}${stale.length > 3 ? ", …" : ""})`;
}

function main(): void {
  console.log("redraft bench:startup");
  console.log(machine());
  console.log(`bin/redraft.js runs ${binPath()}`);
  const made = ensureDataDir();
  const listed = run([BIN, "runs", "--data-dir", DATA_DIR, "--json", "--limit", String(RUNS_IN_DIR + 1)])
    .stdout.trim()
    .split("\n").length;
  console.log(
    `data dir: ${RUNS_IN_DIR} runs${made > 0 ? ` (made now by redraft run in ${made.toFixed(1)} s)` : " (reused)"}; ` +
      `redraft runs --json --limit ${RUNS_IN_DIR + 1} lists ${listed} (redraft runs itself shows its default page)`,
  );
  console.log(`wall time per process, median of ${N} processes each, measured interleaved\n`);
  const cases: [string, string[]][] = [
    ["node -e 0", ["-e", "0"]],
    ["redraft --help", [BIN, "--help"]],
    [`redraft runs (${RUNS_IN_DIR} runs)`, [BIN, "runs", "--data-dir", DATA_DIR]],
  ];
  if (existsSync(DIST_MAIN)) {
    // The compiled command line whether or not bin/redraft.js would choose it now: what a fresh build gives.
    const compiled = (...args: string[]) => ["--input-type=module", "-e", COMPILED, "redraft", ...args];
    cases.push(
      ["dist/ directly: --help", compiled("--help")],
      [`dist/ directly: runs (${RUNS_IN_DIR} runs)`, compiled("runs", "--data-dir", DATA_DIR)],
    );
  }
  const times = cases.map(() => [] as number[]);
  for (let i = 0; i < N; i++) {
    cases.forEach(([, args], c) => {
      times[c]?.push(run(args).ms);
    });
  }
  const base = median(times[0] ?? []);
  const rows = cases.map(([name], c) => {
    const t = median(times[c] ?? []);
    const ratio = t / base;
    return [
      name,
      `${t.toFixed(0)} ms`,
      `${Math.min(...(times[c] ?? [])).toFixed(0)} ms`,
      c === 0 ? "1.0×" : `${ratio.toFixed(1)}×`,
      c === 0 ? "" : ratio <= GOAL_RATIO ? `≤ ${GOAL_RATIO}×: met` : `≤ ${GOAL_RATIO}×: NOT met`,
    ];
  });
  console.log(table(["command", "median wall", "min wall", "/ node -e 0", "goal"], rows));
}

main();
