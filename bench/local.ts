/**
 * `npm run bench:local`: the orchestration overhead of the embedded default.
 *
 * The same drafts, answered by the same replayed model answers, go (a) through `correctDraft`
 * in-process (the core steps composed directly, memory stores) and (b) through the synthesized
 * state machine in aws-local-stepfunctions with the real handlers, dynalite and a folder — what
 * `redraft run` does. One draft at a time (concurrency 1), so the ratio is per-draft overhead on
 * one core, not a throughput race. Each round uses a fresh data folder; the median of 5 rounds is
 * reported. Also counts the state transitions per correction attempt.
 *
 * Drafts: seed 004's exam question, corrected in 2 attempts ([3, 1, 0]), plus a clean draft and a
 * repaired-without-model json draft, in equal parts.
 */
import "../cli/quiet.js";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { correctDraft } from "../local/in-process.js";
import { LocalRuntime } from "../local/runtime.js";
import { loadAsl } from "../local/state-machine.js";
import { ReplayModelClient } from "../shared/model/replay.js";
import { PackRegistry } from "../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../shared/store/memory.js";
import { fmtInt, machine, median, table } from "./lib/stats.js";

/** `--smoke`: a handful of drafts and one round, so CI proves the bench still runs. */
const SMOKE = process.argv.includes("--smoke");
const PER_KIND = SMOKE ? 3 : 40;
const ROUNDS = SMOKE ? 1 : 5;

const read = async (name: string) =>
  JSON.parse(await readFile(join("examples", "drafts", name), "utf8")) as Record<string, unknown>;
const seed = await read("mcq-seed004.json");
const clean = await read("mcq-clean.json");
const repaired = await read("json-repaired.json");
const cassette = JSON.parse(await readFile("examples/example.cassette.json", "utf8")) as {
  responses: { draftId: string }[];
};
const seedAnswers = cassette.responses.filter((r) => r.draftId === "mcq-seed004");

const drafts: Record<string, unknown>[] = [];
const responses: unknown[] = [];
for (let i = 0; i < PER_KIND; i++) {
  drafts.push(
    { ...seed, id: `seed-${i}` },
    { ...clean, id: `clean-${i}` },
    { ...repaired, id: `repaired-${i}` },
  );
  for (const a of seedAnswers) responses.push({ ...a, draftId: `seed-${i}` });
}
const model = () => ReplayModelClient.fromCassette({ version: 1, responses });

async function inProcess(): Promise<number> {
  const deps = {
    registry: new PackRegistry(),
    runs: new MemoryRunStore(),
    blobs: new MemoryBlobStore(),
    model: model(),
    retryDelayMs: 0,
  };
  const start = performance.now();
  for (const d of drafts) await correctDraft(d, deps);
  return drafts.length / ((performance.now() - start) / 1000);
}

/** The same in-process loop over the local runtime's own stores (dynalite + folder): isolates the orchestration. */
async function inProcessSameStores(): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), "redraft-bench-"));
  const runtime = await LocalRuntime.open({ dataDir, asl, model: model(), retryDelayMs: 0 });
  try {
    const deps = { ...runtime.deps, retryDelayMs: 0 };
    const start = performance.now();
    for (const d of drafts) await correctDraft(d, deps);
    return drafts.length / ((performance.now() - start) / 1000);
  } finally {
    await runtime.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const asl = await loadAsl();
let transitions = { perAttempt: 0, fixed: 0 };

async function stateMachine(): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), "redraft-bench-"));
  const runtime = await LocalRuntime.open({ dataDir, asl, model: model(), retryDelayMs: 0 });
  try {
    const start = performance.now();
    const entered: number[] = [];
    for (const d of drafts) {
      const run = await runtime.execute({ draft: d });
      if (String(d.id).startsWith("seed-"))
        entered.push(run.history.filter((h) => h.type === "StateEntered").length);
    }
    const rate = drafts.length / ((performance.now() - start) / 1000);
    // Seed drafts: 2 attempts each. A warnings-only draft would enter the fixed states only.
    const withTwo = median(entered);
    const clean0 = (await runtime.execute({ draft: { ...clean, id: "probe" } })).history.filter(
      (h) => h.type === "StateEntered",
    ).length;
    transitions = { perAttempt: (withTwo - clean0) / 2, fixed: clean0 };
    return rate;
  } finally {
    await runtime.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

// Warm up both paths (module loading, the QuickJS and Ajv caches, dynalite's first table).
await inProcess();
await inProcessSameStores();
await stateMachine();
const a: number[] = [];
const c: number[] = [];
const b: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  a.push(await inProcess());
  c.push(await inProcessSameStores());
  b.push(await stateMachine());
}
const ratio = median(c) / median(b);
const total = median(a) / median(b);
console.log(
  `bench:local — ${drafts.length} drafts per round (${PER_KIND} corrected in 2 attempts, ${PER_KIND} clean, ${PER_KIND} repaired), ${ROUNDS} rounds, one at a time`,
);
console.log(machine());
console.log(
  table(
    ["path", "median drafts/s", "min", "max"],
    [
      [
        "correctDraft in-process (memory stores)",
        fmtInt(median(a)),
        fmtInt(Math.min(...a)),
        fmtInt(Math.max(...a)),
      ],
      [
        "correctDraft in-process (dynalite + folder)",
        fmtInt(median(c)),
        fmtInt(Math.min(...c)),
        fmtInt(Math.max(...c)),
      ],
      [
        "local state machine (ASL + handlers + dynalite + folder)",
        fmtInt(median(b)),
        fmtInt(Math.min(...b)),
        fmtInt(Math.max(...b)),
      ],
    ],
  ),
);
const verdict = (r: number) => (r <= 1.5 ? "met" : `not met, ${((r / 1.5 - 1) * 100).toFixed(0)}% over`);
console.log(`orchestration overhead, same stores: ${ratio.toFixed(2)}× (target ≤ 1.5×) — ${verdict(ratio)}`);
console.log(`state machine + local stores vs in-memory core: ${total.toFixed(2)}× — ${verdict(total)}`);
console.log(
  `state transitions: ${transitions.perAttempt} per correction attempt, ${transitions.fixed} for a draft validated at once`,
);
const msPerDraft = (rate: number) => `${(1000 / rate).toFixed(2)} ms`;
console.log(
  `per draft: ${msPerDraft(median(a))} in-process on memory stores, ${msPerDraft(median(c))} in-process on dynalite + folder, ` +
    `${msPerDraft(median(b))} through the state machine: the orchestration is the difference of the last two, ` +
    "the local stores (every DynamoDB call goes through the AWS SDK and HTTP on loopback to dynalite) the rest",
);
