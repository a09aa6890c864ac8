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
 * Beside the ratios, where the time of `redraft runs` goes: the same steps the command takes, timed
 * one after the other in a fresh process on the compiled dist/ (importing the command line, then
 * the runtime with the AWS SDK; opening the data folder, which starts dynalite on its LevelDB;
 * listing; drawing; closing), medians over the same number of processes.
 *
 * `--smoke`: 10 runs in the data dir, 1 process each. `--write-docs` rewrites this bench's section
 * of docs/BENCHMARKS.md with the output (never with `--smoke`).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { BENCHMARKS_MD, sectionRecorder, writeSections } from "./lib/docs.js";
import { machine, median, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const { date, load, commit, output, say } = sectionRecorder();
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

/**
 * `redraft runs`, step by step, on the compiled modules: the steps cli/main.ts takes for it, each
 * timed (ms) and printed as one JSON line. The first step starts the clock at the process's start.
 */
const PHASES = `
const url = (path) => ${JSON.stringify(pathToFileURL(resolve("dist")).href)} + "/" + path;
const times = {};
let last = performance.timeOrigin;
const mark = (name) => { const now = performance.timeOrigin + performance.now(); times[name] = now - last; last = now; };
mark("start Node");
await import(url("cli/main.js"));
mark("import the command line (commander, zod)");
await Promise.all([import(url("cli/model.js")), import(url("shared/model/pricing.js"))]);
const { LocalRuntime } = await import(url("local/runtime.js"));
mark("import the runtime (AWS SDK client, document client)");
const runtime = await LocalRuntime.open({ dataDir: process.argv[1], readOnly: true });
mark("open the data folder (dynalite on LevelDB, lock, recovery)");
const runs = await runtime.runs.listRuns({ limit: 50 });
mark("list 50 runs");
const { runsTable } = await import(url("cli/format.js"));
runsTable(runs);
mark("draw the table");
await runtime.close();
mark("close (dynalite, lock)");
console.log(JSON.stringify(times));
`;

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
  say("redraft bench:startup");
  say(machine());
  say(`bin/redraft.js runs ${binPath()}`);
  const made = ensureDataDir();
  const listed = run([BIN, "runs", "--data-dir", DATA_DIR, "--json", "--limit", String(RUNS_IN_DIR + 1)])
    .stdout.trim()
    .split("\n").length;
  say(
    `data dir: ${RUNS_IN_DIR} runs${made > 0 ? ` (made now by redraft run in ${made.toFixed(1)} s)` : " (reused)"}; ` +
      `redraft runs --json --limit ${RUNS_IN_DIR + 1} lists ${listed} (redraft runs itself shows its default page)`,
  );
  say(`wall time per process, median of ${N} processes each, measured interleaved\n`);
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
  const phases: Record<string, number>[] = [];
  for (let i = 0; i < N; i++) {
    cases.forEach(([, args], c) => {
      times[c]?.push(run(args).ms);
    });
    if (existsSync(DIST_MAIN))
      phases.push(
        JSON.parse(run(["--input-type=module", "-e", PHASES, DATA_DIR]).stdout) as Record<string, number>,
      );
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
  say(table(["command", "median wall", "min wall", "/ node -e 0", "goal"], rows));
  const base0 = median(times[0] ?? []);
  const runsWall = median(times[2] ?? []);
  if (phases.length > 0) {
    const names = Object.keys(phases[0] ?? {});
    const total = median(phases.map((p) => Object.values(p).reduce((a, b) => a + b, 0)));
    say("");
    say(
      `where redraft runs spends its time: its steps on dist/, one after the other, median of ${phases.length} processes`,
    );
    say(
      table(
        ["step", "median", "/ node -e 0"],
        [
          ...names.map((name) => {
            const t = median(phases.map((p) => p[name] ?? 0));
            return [name, `${t.toFixed(0)} ms`, `${(t / base0).toFixed(1)}×`];
          }),
          ["all steps", `${total.toFixed(0)} ms`, `${(total / base0).toFixed(1)}×`],
        ],
      ),
    );
  }
  if (runsWall / base0 > GOAL_RATIO) {
    say("");
    say(
      `redraft runs: NOT met — ${(runsWall / base0).toFixed(1)}× against ≤ ${GOAL_RATIO}×: ${(runsWall - GOAL_RATIO * base0).toFixed(0)} ms too many ` +
        `at this machine's ${base0.toFixed(0)} ms for node -e 0. The steps above say where: loading and compiling the AWS SDK, dynalite ` +
        "and zod (Node 20 keeps no compiled code between processes) and the first run of each code path, not the listing's own work.",
    );
  }
  if (WRITE_DOCS) {
    writeSections([
      { bench: "startup", command: "npm run bench:startup", output: output.join("\n"), date, load, commit },
    ]);
    console.error(`wrote the startup section of ${BENCHMARKS_MD}`);
  }
}

main();
