/**
 * `npm run bench:viewer [-- --smoke] [-- --write-docs]`: the viewer (`redraft ui`) serving large run
 * pages (issue 34: it held a small request 15 s and grew to 1 GiB while serving 20 of them).
 *
 * A data folder holds one run waiting for review whose draft is 8 MB (a JSON record with a long
 * list, its best draft stored where the run page reads it). The viewer runs in a process of its own,
 * started as a person starts it (bin/redraft.js ui); this process asks for the run's page 20 times
 * at once, and 300 ms later for the first page of the runs list (a small request), and reports when
 * each was answered and the viewer's peak RSS (VmHWM) before and after. The goals: the small request
 * answered before half of the large pages, and the viewer's peak under 512 MiB.
 *
 * `--smoke`: a 1 MB draft and 4 pages, for CI to see it run (pages that small are done before the small
 * request is sent: the ordering goal means nothing there). `--write-docs` rewrites this bench's section of
 * docs/BENCHMARKS.md with the output verbatim.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { LocalRuntime } from "../local/runtime.js";
import { loadAsl } from "../local/state-machine.js";
import { newRunRecord } from "../shared/store/types.js";
import { commitId, writeSections } from "./lib/docs.js";
import { machine } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const DRAFT_BYTES = SMOKE ? 1024 * 1024 : 8 * 1024 * 1024;
const PAGES = SMOKE ? 4 : 20;
const GOAL_PEAK_MIB = 512;
const RUN_ID = "large-run-1";

const output: string[] = [];
const say = (line: string) => {
  output.push(line);
  console.log(line);
};

/** The data folder: one run awaiting review, its 8 MB draft as its best draft. */
async function largeRun(dir: string): Promise<number> {
  const runtime = await LocalRuntime.open({ dataDir: dir, asl: await loadAsl(), retryDelayMs: 0 });
  try {
    const authors: { name: string }[] = [];
    for (let size = 0; size < DRAFT_BYTES; size += 40)
      authors.push({ name: `author ${authors.length} of a long list` });
    const text = JSON.stringify({ id: "large-draft", kind: "json", context: {}, content: { authors } });
    const run = newRunRecord(RUN_ID, "large-draft", "json", new Date().toISOString());
    Object.assign(run, {
      status: "needs_manual_review",
      reason: "max_attempts",
      finalRef: `runs/${RUN_ID}/final.json`,
    });
    await runtime.runs.createRun(run);
    await runtime.blobs.put(`runs/${RUN_ID}/final.json`, text);
    return Buffer.byteLength(text);
  } finally {
    await runtime.close();
  }
}

const peakMiB = (child: ChildProcess) =>
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

async function main(): Promise<void> {
  const date = new Date();
  const load = loadavg();
  say("redraft bench:viewer");
  say(machine());
  const dir = mkdtempSync(join(tmpdir(), "redraft-bench-viewer-"));
  const child = spawn(
    process.execPath,
    ["bin/redraft.js", "ui", "--port", "0", "--data-dir", dir, "--llm", "none"],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  try {
    const bytes = await largeRun(dir);
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout?.on("data", (chunk) => {
        out += chunk;
        const line = /^(http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(out);
        if (line?.[1]) resolve(line[1]);
      });
      child.once("exit", (code) => reject(new Error(`redraft ui exited with ${code}`)));
    });
    const before = peakMiB(child);
    const t0 = Date.now();
    const pages = Array.from({ length: PAGES }, async () => {
      const res = await fetch(`${url}api/runs/${RUN_ID}`);
      const body = await res.arrayBuffer();
      if (res.status !== 200 || body.byteLength < bytes)
        throw new Error(`run page: ${res.status}, ${body.byteLength} B`);
      return Date.now() - t0;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const small = await fetch(`${url}api/runs?limit=1`).then(async (res) => {
      await res.text();
      return Date.now() - t0;
    });
    const done = await Promise.all(pages);
    const peak = peakMiB(child);
    const first = done.filter((t) => t < small).length;
    say(
      `one run page: ${(bytes / 2 ** 20).toFixed(1)} MiB of draft; ${PAGES} pages asked at once, a small request (GET /api/runs?limit=1) 300 ms later`,
    );
    say(`small request answered at ${small} ms, after ${first} of the ${PAGES} large pages`);
    say(`large pages answered from ${Math.min(...done)} to ${Math.max(...done)} ms`);
    say(`viewer peak RSS: ${before.toFixed(0)} MiB before, ${peak.toFixed(0)} MiB after`);
    const misses = [
      ...(first >= PAGES / 2 ? [`the small request came after ${first} of ${PAGES} large pages`] : []),
      ...(peak > GOAL_PEAK_MIB ? [`peak RSS ${peak.toFixed(0)} MiB > ${GOAL_PEAK_MIB} MiB`] : []),
    ];
    say(`goals: the small request before half of the large pages; peak RSS <= ${GOAL_PEAK_MIB} MiB`);
    say(misses.length === 0 ? "every goal met" : `not met: ${misses.join("; ")}`);
  } finally {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
  if (WRITE_DOCS)
    writeSections([
      {
        bench: "viewer",
        command: "npm run bench:viewer",
        output: output.join("\n"),
        date,
        load,
        commit: commitId(),
      },
    ]);
}

await main();
