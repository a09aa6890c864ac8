/**
 * `npm run bench:startup`: how long the command line takes to answer, as a multiple of an empty node.
 *
 * Measures whatever `bin/redraft.js` runs (TypeScript through tsx, or compiled JavaScript): the wall
 * time of `redraft --help`, `redraft runs` (its default page), `redraft show <run>`, `redraft batches`,
 * `redraft export <run>` (the read-only commands, held within 1.5× of each other) and a full
 * listing `redraft runs --json --limit <all>`, on data dirs holding 1,000 and 10,000 runs (`--sizes`),
 * each divided by the wall time of `node -e 0`, medians of `--n` processes each (7 by default),
 * measured interleaved so that the machine's load weighs on all alike. Each size is measured on the
 * SQLite store (the default) and, up to 1,000 runs, on the dynalite store it replaced
 * (`REDRAFT_LOCAL_STORE=dynalite`; its 10,000-run folder takes many minutes to make): before and
 * after, side by side.
 *
 * The data dirs are made once (`redraft run` over distinct clean questions, no model) under
 * `.cache/bench-startup/` and reused while they hold the expected number of runs.
 *
 * Beside the ratios, where the time of `redraft runs` goes on the SQLite store: the steps the
 * command takes, timed one after the other in a fresh process on the compiled dist/.
 *
 * `--smoke`: 10 runs in the data dir, 1 process each, SQLite only. `--write-docs` rewrites this
 * bench's section of docs/BENCHMARKS.md with the output (never with `--smoke`).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { BENCHMARKS_MD, sectionRecorder, writeSections } from "./lib/docs.js";
import { fmtInt, machine, median, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const { date, load, commit, output, say } = sectionRecorder();
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const SIZES = SMOKE
  ? [10]
  : (process.argv.includes("--sizes")
      ? String(process.argv[process.argv.indexOf("--sizes") + 1])
      : "1000,10000"
    )
      .split(",")
      .map(Number);
const N = arg("n", SMOKE ? 1 : 7);
/** The stores measured at a size: dynalite (the before) only where its folder is made in minutes. */
const storesAt = (runs: number): string[] => (SMOKE || runs > 1000 ? ["sqlite"] : ["sqlite", "dynalite"]);
const GOAL_RATIO = 8;
const BIN = resolve("bin/redraft.js");
const ROOT = resolve(".cache/bench-startup");
const DIST_MAIN = resolve("dist/cli/main.js");

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
mark("import the runtime");
const runtime = await LocalRuntime.open({ dataDir: process.argv[1], readOnly: true });
mark("open the data folder (SQLite, recovery)");
const runs = await runtime.listPage({ limit: 50 });
mark("list 50 runs");
const { runsTable } = await import(url("cli/format.js"));
runsTable(runs, undefined, await runtime.runIds());
mark("draw the table (with every run id, for short ids)");
await runtime.close();
mark("close");
console.log(JSON.stringify(times));
`;

/** The environment of every measured process: no model key, no colour, nothing inherited that changes paths. */
const ENV = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1" };

function run(args: readonly string[], store = "sqlite"): { ms: number; stdout: string } {
  const started = performance.now();
  const child = spawnSync(process.execPath, args, {
    env: { ...ENV, REDRAFT_LOCAL_STORE: store },
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - started;
  if (child.status !== 0)
    throw new Error(`node ${args.join(" ")} exited ${child.status}: ${child.stderr.trim()}`);
  return { ms, stdout: child.stdout };
}

/** A data dir with exactly `runs` finished runs on `store`, made through the command line itself. */
function ensureDataDir(runs: number, store: string): { dataDir: string; made: number } {
  const dataDir = join(ROOT, `data-${store}-${runs}`);
  const ready = join(dataDir, "bench-ready.json");
  if (existsSync(ready)) return { dataDir, made: 0 };
  rmSync(dataDir, { recursive: true, force: true });
  const inputs = join(ROOT, `drafts-${runs}`);
  rmSync(inputs, { recursive: true, force: true });
  mkdirSync(inputs, { recursive: true });
  const clean = JSON.parse(readFileSync("examples/drafts/mcq-clean.json", "utf8")) as {
    content: { vignette: string };
  };
  const lines: string[] = [];
  for (let i = 0; i < runs; i++) {
    // Distinct content, so the data dir's dedupe runs every one of them.
    const content = { ...clean.content, vignette: `${clean.content.vignette} Case ${i + 1}.` };
    lines.push(JSON.stringify({ ...clean, id: `startup-${i}`, content }));
  }
  writeFileSync(join(inputs, "drafts.jsonl"), `${lines.join("\n")}\n`);
  const started = performance.now();
  run([BIN, "run", inputs, "--data-dir", dataDir, "--llm", "none", "--json", "--concurrency", "8"], store);
  const seconds = (performance.now() - started) / 1000;
  writeFileSync(ready, JSON.stringify({ runs }));
  return { dataDir, made: seconds };
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

/** The read-only listings and readers, held within READ_ONLY_SPREAD of each other's start-up. */
const READ_ONLY: readonly string[] = [
  "redraft runs",
  "redraft show <run>",
  "redraft batches",
  "redraft export <run>",
];
const READ_ONLY_SPREAD = 1.5;

function main(): void {
  say("redraft bench:startup");
  say(machine());
  say(`bin/redraft.js runs ${binPath()}`);
  say(
    `wall time per process, median of ${N} processes each, measured interleaved; goal ≤ ${GOAL_RATIO}× node -e 0\n`,
  );
  const rows: string[][] = [];
  const verdicts: string[] = [];
  const spreads: string[] = [];
  let phaseDir: string | undefined;
  for (const size of SIZES) {
    const cases: { name: string; store: string; args: string[] }[] = [
      { name: "node -e 0", store: "sqlite", args: ["-e", "0"] },
      { name: "redraft --help", store: "sqlite", args: [BIN, "--help"] },
    ];
    for (const store of storesAt(size)) {
      const { dataDir, made } = ensureDataDir(size, store);
      phaseDir ??= store === "sqlite" ? dataDir : undefined;
      const listing = run([BIN, "runs", "--data-dir", dataDir, "--json", "--limit", String(size + 1)], store);
      const listed = listing.stdout.trim().split("\n");
      if (listed.length !== size)
        throw new Error(`${dataDir}: runs --json listed ${listed.length}, not ${size}`);
      const oneRun = (JSON.parse(listed[Math.floor(size / 2)] ?? "{}") as { runId: string }).runId;
      say(
        `${store}, ${size} runs: ${made > 0 ? `made now by redraft run in ${made.toFixed(1)} s` : "reused"}`,
      );
      cases.push(
        { name: "redraft runs", store, args: [BIN, "runs", "--data-dir", dataDir] },
        { name: "redraft show <run>", store, args: [BIN, "show", oneRun, "--data-dir", dataDir] },
        { name: "redraft batches", store, args: [BIN, "batches", "--data-dir", dataDir] },
        { name: "redraft export <run>", store, args: [BIN, "export", oneRun, "--data-dir", dataDir] },
        {
          name: `redraft runs --json (all ${size})`,
          store,
          args: [BIN, "runs", "--data-dir", dataDir, "--json", "--limit", String(size + 1)],
        },
      );
    }
    const times = cases.map(() => [] as number[]);
    for (let i = 0; i < N; i++)
      cases.forEach(({ args, store }, c) => {
        times[c]?.push(run(args, store).ms);
      });
    const base = median(times[0] ?? []);
    // The read-only commands load only what they read (issue 37): each within 1.5× of the others.
    const readOnly = cases
      .map(({ name, store }, c) => ({ name, store, t: median(times[c] ?? []) }))
      .filter(({ name, store }) => store === "sqlite" && READ_ONLY.includes(name));
    if (readOnly.length > 1) {
      const slowest = readOnly.reduce((a, b) => (b.t > a.t ? b : a));
      const fastest = readOnly.reduce((a, b) => (b.t < a.t ? b : a));
      const spread = slowest.t / fastest.t;
      spreads.push(
        `${fmtInt(size)} runs, ${readOnly.map((r) => r.name).join(", ")}: slowest (${slowest.name}) ${spread.toFixed(2)}× the fastest (${fastest.name}), goal ≤ ${READ_ONLY_SPREAD}×: ${spread <= READ_ONLY_SPREAD ? "met" : "NOT met"}`,
      );
    }
    cases.forEach(({ name, store }, c) => {
      const t = median(times[c] ?? []);
      const ratio = t / base;
      const goal = name === "redraft runs" || name.startsWith("redraft show") || name === "redraft --help";
      rows.push([
        fmtInt(size),
        c < 2 ? "" : store,
        name,
        `${t.toFixed(0)} ms`,
        c === 0 ? "1.0×" : `${ratio.toFixed(1)}×`,
        c > 0 && goal ? (ratio <= GOAL_RATIO ? "met" : "NOT met") : "",
      ]);
      if (goal && store === "sqlite" && c > 1)
        verdicts.push(
          `${fmtInt(size)} runs, ${name}: ${ratio.toFixed(1)}× node -e 0: ${ratio <= GOAL_RATIO ? "met" : "NOT met"}`,
        );
    });
  }
  say("");
  say(table(["runs", "store", "command", "median wall", "/ node -e 0", `≤ ${GOAL_RATIO}×`], rows));
  if (verdicts.length > 0) {
    say("");
    for (const v of verdicts) say(`goal ${v}`);
  }
  for (const s of spreads) say(`goal ${s}`);
  if (phaseDir && existsSync(DIST_MAIN)) {
    const phases: Record<string, number>[] = [];
    for (let i = 0; i < N; i++)
      phases.push(
        JSON.parse(run(["--input-type=module", "-e", PHASES, phaseDir]).stdout) as Record<string, number>,
      );
    const names = Object.keys(phases[0] ?? {});
    const total = median(phases.map((p) => Object.values(p).reduce((a, b) => a + b, 0)));
    say("");
    say(
      `where redraft runs spends its time on ${phaseDir.split("/").at(-1)}: its steps on dist/, one after the other, median of ${phases.length} processes`,
    );
    say(
      table(
        ["step", "median"],
        [
          ...names.map((name) => [name, `${median(phases.map((p) => p[name] ?? 0)).toFixed(0)} ms`]),
          ["all steps", `${total.toFixed(0)} ms`],
        ],
      ),
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
