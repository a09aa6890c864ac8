/**
 * `npm run bench:scale [-- --smoke] [-- --sizes 1000,10000] [-- --compare <checkout>] [-- --write-docs]`:
 * `redraft run <folder> --llm none --json` as a whole process (bin/redraft.js, as a person starts it)
 * at 1,000, 10,000 and 100,000 drafts, each into a fresh data folder, against its goals:
 * peak RSS ≤ 300 MiB at 100,000 drafts, ≥ 200 drafts/s at 1,000 and 10,000, ≤ 8 KB of disk per draft
 * beyond the draft's own bytes.
 *
 * The drafts are distinct clean questions, JSON records that repair fixes and questions with errors
 * (review without a model), kinds in turn, in JSONL files of 1,000 lines. Per size it prints the wall
 * time and drafts/s, the process's CPU time per draft, its peak RSS (`/usr/bin/time -v`'s maximum
 * resident set size, or the kernel's VmHWM read from /proc just before the process ends where that
 * tool is missing), and the data folder's size on disk (`du -sk`, allocated blocks) per draft minus
 * the drafts' own bytes. Every draft must come back with a result line, or the bench fails.
 *
 * The default run measures all three sizes into one section of docs/BENCHMARKS.md. 1,000 and 10,000
 * drafts run twice, interleaved: on the SQLite store (the default) and on the store it replaced
 * (`REDRAFT_LOCAL_STORE=dynalite`: dynalite, a folder of blob files and one file per execution), so
 * the before and the after are measured side by side under the same load; 100,000 runs on SQLite
 * alone (dynalite's round would take hours and gigabytes), and the output says so. `--sizes` and
 * `--stores sqlite,dynalite` choose instead. `--compare <checkout>` adds another checkout's
 * bin/redraft.js (its dist/ built). `--smoke`: 60 drafts, no goals checked.
 */
import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BENCHMARKS_MD, sectionRecorder, writeSections } from "./lib/docs.js";
import { fmtInt, machine, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SIZES = SMOKE ? [60] : (option("sizes") ?? "1000,10000,100000").split(",").map(Number);
const COMPARE = option("compare");
/** Per size, which stores run: the default runs dynalite up to this many drafts only (see above). */
const DYNALITE_UP_TO = 10_000;
const STORES = option("stores")?.split(",");
const storesFor = (n: number): string[] =>
  STORES ?? (n > DYNALITE_UP_TO ? ["sqlite"] : ["sqlite", "dynalite"]);
/** The sizes the goals name: drafts/s at the first two, peak RSS at the last. */
const RATE_SIZES = [1000, 10_000];
const RSS_SIZE = 100_000;
const GOAL_RSS_MIB = 300;
const GOAL_RATE = 200;
const GOAL_DISK_BYTES = 8 * 1024;
const LINES_PER_FILE = 1000;
const TIME = "/usr/bin/time";

const { date, load, commit, output, say } = sectionRecorder();

type Draft = Record<string, unknown> & { id: string; content: Record<string, unknown> };
const read = async (name: string) =>
  JSON.parse(await readFile(join("examples", "drafts", name), "utf8")) as Draft;
const [clean, repaired, seed] = await Promise.all([
  read("mcq-clean.json"),
  read("json-repaired.json"),
  read("mcq-seed004.json"),
]);
const KINDS = [
  (i: number): Draft => ({
    ...clean,
    id: `clean-${i}`,
    content: { ...clean.content, vignette: `${clean.content.vignette} Case ${i}.` },
  }),
  (i: number): Draft => ({
    ...repaired,
    id: `repaired-${i}`,
    content: { ...repaired.content, title: `${repaired.content.title} (${i})` },
  }),
  (i: number): Draft => ({
    ...seed,
    id: `review-${i}`,
    content: { ...seed.content, vignette: `${seed.content.vignette} Case ${i}.` },
  }),
];

/** Writes `n` distinct drafts as JSONL files under `folder`; returns their bytes. */
async function writeDrafts(folder: string, n: number): Promise<number> {
  await mkdir(folder, { recursive: true });
  let bytes = 0;
  for (let start = 0; start < n; start += LINES_PER_FILE) {
    const lines: string[] = [];
    for (let i = start; i < Math.min(n, start + LINES_PER_FILE); i++)
      lines.push(JSON.stringify((KINDS[i % KINDS.length] as (i: number) => Draft)(i)));
    const text = `${lines.join("\n")}\n`;
    bytes += Buffer.byteLength(text);
    await writeFile(join(folder, `part-${String(start / LINES_PER_FILE).padStart(4, "0")}.jsonl`), text);
  }
  return bytes;
}

interface Round {
  seconds: number;
  cpuSeconds: number;
  peakMiB: number;
  diskBytes: number;
  lines: number;
  statuses: Record<string, number>;
}

const ENV = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1" };

/** `du -sk`: the folder's allocated size in bytes. */
function diskBytes(folder: string): number {
  const du = spawnSync("du", ["-sk", folder], { encoding: "utf8" });
  return Number(du.stdout.split(/\s/)[0]) * 1024;
}

/** One `redraft run` process of the checkout `root` over `inputs`, measured. */
async function runOnce(root: string, inputs: string, work: string, n: number, store: string): Promise<Round> {
  const dataDir = join(work, "data");
  const results = join(work, "results.jsonl");
  const timeFile = join(work, "time.txt");
  const bin = join(root, "bin", "redraft.js");
  const args = [bin, "run", inputs, "--data-dir", dataDir, "--llm", "none", "--json", "--no-progress"];
  const viaTime = existsSync(TIME);
  const started = performance.now();
  const out = openSync(results, "w");
  const child = viaTime
    ? spawn(TIME, ["-v", "-o", timeFile, process.execPath, ...args], {
        env: { ...ENV, REDRAFT_LOCAL_STORE: store },
        stdio: ["ignore", out, "pipe"],
      })
    : spawn(process.execPath, args, {
        env: { ...ENV, REDRAFT_LOCAL_STORE: store },
        stdio: ["ignore", out, "pipe"],
      });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  // Without /usr/bin/time: the kernel's high-water mark, read while the process still exists.
  let hwmKiB = 0;
  const poll = viaTime
    ? undefined
    : setInterval(() => {
        const status = spawnSync("cat", [`/proc/${child.pid}/status`], { encoding: "utf8" }).stdout;
        const kib = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
        hwmKiB = Math.max(hwmKiB, kib);
      }, 200);
  const code = await new Promise<number | null>((done) => child.on("close", done));
  if (poll) clearInterval(poll);
  closeSync(out);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`${bin} run exited ${code}: ${stderr.trim()}`);
  let peakMiB = hwmKiB / 1024;
  let cpuSeconds = Number.NaN;
  if (viaTime) {
    const text = await readFile(timeFile, "utf8");
    peakMiB = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(text)?.[1] ?? 0) / 1024;
    cpuSeconds =
      Number(/User time \(seconds\): ([\d.]+)/.exec(text)?.[1] ?? 0) +
      Number(/System time \(seconds\): ([\d.]+)/.exec(text)?.[1] ?? 0);
  }
  const statuses: Record<string, number> = {};
  let lines = 0;
  for (const line of (await readFile(results, "utf8")).split("\n")) {
    if (line.trim() === "") continue;
    lines += 1;
    const { status } = JSON.parse(line) as { status: string };
    statuses[status] = (statuses[status] ?? 0) + 1;
  }
  if (lines !== n) throw new Error(`${bin} run printed ${lines} results for ${n} drafts`);
  return { seconds, cpuSeconds, peakMiB, diskBytes: diskBytes(dataDir), lines, statuses };
}

async function main(): Promise<void> {
  const checkouts: [string, string][] = [["this checkout", resolve(".")]];
  if (COMPARE) checkouts.push([`--compare ${COMPARE}`, resolve(COMPARE)]);
  const rounds = (n: number) =>
    checkouts.flatMap(([name, root]) => storesFor(n).map((store) => ({ name, root, store })));
  say("redraft bench:scale — `redraft run <folder> --llm none --json` as one process per size");
  say(machine());
  say(
    `issue 23's goals: peak RSS ≤ ${GOAL_RSS_MIB} MiB at 100,000 drafts; ≥ ${GOAL_RATE} drafts/s at 1,000 and 10,000; ≤ ${GOAL_DISK_BYTES / 1024} KB of disk per draft beyond its own bytes`,
  );
  say(
    `peak RSS from ${existsSync(TIME) ? "/usr/bin/time -v" : "/proc/<pid>/status VmHWM"}; disk from du -sk of the data folder after the run`,
  );
  const sqliteOnly = SIZES.filter((n) => !storesFor(n).includes("dynalite"));
  if (!STORES && sqliteOnly.length > 0)
    say(
      `dynalite, the store SQLite replaced, runs up to ${fmtInt(DYNALITE_UP_TO)} drafts only: at ${sqliteOnly.map(fmtInt).join(", ")} its round would take hours and gigabytes, so SQLite runs alone there`,
    );
  say("");
  const rows: string[][] = [];
  const verdicts: string[] = [];
  for (const n of SIZES) {
    const work = await mkdtemp(join(tmpdir(), "redraft-bench-scale-"));
    try {
      const inputs = join(work, "drafts");
      const bytes = await writeDrafts(inputs, n);
      for (const { name, root, store } of rounds(n)) {
        const round = join(work, `${name}-${store}`.replace(/[^a-z0-9]+/gi, "_"));
        await mkdir(round);
        const r = await runOnce(root, inputs, round, n, store);
        const perDraft = (r.diskBytes - bytes) / n;
        const rate = n / r.seconds;
        rows.push([
          name,
          store,
          fmtInt(n),
          `${r.seconds.toFixed(1)} s`,
          `${rate.toFixed(1)}/s`,
          Number.isNaN(r.cpuSeconds) ? "?" : `${((r.cpuSeconds * 1000) / n).toFixed(1)} ms`,
          `${r.peakMiB.toFixed(0)} MiB`,
          `${(perDraft / 1024).toFixed(1)} KB`,
          Object.entries(r.statuses)
            .map(([s, c]) => `${s} ${c}`)
            .join(", "),
        ]);
        if (!SMOKE && name === "this checkout" && store === "sqlite") {
          // Every size against every goal: the rate is asked at 1,000 and 10,000 and peak RSS at
          // 100,000, but a smaller run that breaks either bound says so too.
          const met = (ok: boolean) => (ok ? "met" : "NOT met");
          verdicts.push(
            `${fmtInt(n)}: ${rate.toFixed(1)} drafts/s (≥ ${GOAL_RATE}${RATE_SIZES.includes(n) ? "" : ", asked at 1,000 and 10,000"}): ${met(rate >= GOAL_RATE)}`,
            `${fmtInt(n)}: peak RSS ${r.peakMiB.toFixed(0)} MiB (≤ ${GOAL_RSS_MIB}${n === RSS_SIZE ? "" : ", asked at 100,000"}): ${met(r.peakMiB <= GOAL_RSS_MIB)}`,
            `${fmtInt(n)}: ${(perDraft / 1024).toFixed(1)} KB per draft (≤ ${GOAL_DISK_BYTES / 1024}): ${met(perDraft <= GOAL_DISK_BYTES)}`,
          );
        }
        await rm(round, { recursive: true, force: true });
      }
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  say(
    table(
      ["checkout", "store", "drafts", "wall", "drafts/s", "CPU/draft", "peak RSS", "disk/draft", "statuses"],
      rows,
    ),
  );
  if (verdicts.length > 0) {
    say("");
    for (const v of verdicts) say(`goal ${v}`);
    const unmeasured = [...RATE_SIZES, RSS_SIZE].filter((n) => !SIZES.includes(n));
    if (unmeasured.length > 0)
      say(`goal sizes not measured in this run (--sizes): ${unmeasured.map(fmtInt).join(", ")}`);
  }
  if (WRITE_DOCS) {
    writeSections([
      { bench: "scale", command: "npm run bench:scale", output: output.join("\n"), date, load, commit },
    ]);
    console.error(`wrote the scale section of ${BENCHMARKS_MD}`);
  }
}

await main();
