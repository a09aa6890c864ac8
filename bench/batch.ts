/**
 * `npm run bench:batch`: a generated manifest of 10,000 drafts through the batch state machine on
 * the local runtime (contracts/batch-state-machine.asl.json, its Distributed Map stood in for by
 * local/batch.ts, each item a child execution of the per-draft state machine with the real
 * handlers, dynalite and a folder), answered by a replayed model.
 *
 * Mixed kinds, a third needing corrections: in every six drafts, two clean exam questions, two json
 * records repaired without a model, one exam question (seed 004) corrected in two attempts and one
 * code draft corrected in two. Prints drafts/s, the peak RSS of this process, the batch record,
 * and checks every item was recorded exactly once (one run per line, counts = the runs' statuses).
 *
 * It also prices the workflow per 10,000 drafts from the state transitions it measured: Standard
 * per-draft executions (what redraft deploys), and Express instead, with what Express gives up.
 *
 * `--smoke`: 2,000 drafts through the command line itself (`redraft batch --json --llm none`), checking
 * one line per item and a summary equal to the lines.
 *
 * `--pricing batch`: the same corpus on demand and batch-priced on one cassette, every item's status,
 * reason and attempts compared, cost and rounds side by side; fails above 0.55 of the on-demand cost
 * (`--smoke`: 600 drafts).
 *
 * `--write-docs` rewrites this bench's section of docs/BENCHMARKS.md with the output verbatim: `batch`,
 * or `batch-pricing` with `--pricing batch` (never with `--smoke`).
 */
import "../cli/quiet.js";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pLimit from "p-limit";
import { LocalBatchRunner } from "../local/batch.js";
import { LocalRuntime } from "../local/runtime.js";
import { loadAsl, loadBatchAsl } from "../local/state-machine.js";
import { childRunId } from "../shared/batch/record.js";
import { ReplayModelClient } from "../shared/model/replay.js";
import { BATCHES_PREFIX } from "../shared/store/bucket-layout.js";
import { BENCHMARKS_MD, sectionRecorder, writeSections } from "./lib/docs.js";
import { fmtInt, machine, median, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
/** `--pricing batch`: the same corpus on demand and batch-priced, outcomes compared, cost and rounds against each other. */
const PRICING = process.argv.includes("--pricing")
  ? process.argv[process.argv.indexOf("--pricing") + 1]
  : undefined;
if (PRICING !== undefined && PRICING !== "batch") {
  console.error(
    `bench:batch: --pricing takes batch (on demand is what the bench runs without it), not ${PRICING}`,
  );
  process.exit(2);
}
const COUNT = SMOKE ? 2_000 : 10_000;
/** Where the bench uploads its manifest, as `redraft batch` would. */
const MANIFEST_KEY = `${BATCHES_PREFIX}bench.jsonl`;

const { date, load, commit, output, say } = sectionRecorder();

/** This bench's section of docs/BENCHMARKS.md, with what it printed. */
function writeDocs(bench: "batch" | "batch-pricing", command: string): void {
  if (!WRITE_DOCS) return;
  writeSections([{ bench, command, output: output.join("\n"), date, load, commit }]);
  console.error(`wrote the ${bench} section of ${BENCHMARKS_MD}`);
}

const read = async (name: string) =>
  JSON.parse(await readFile(join("examples", "drafts", name), "utf8")) as Record<string, unknown>;
const [clean, repaired, seed, code] = await Promise.all(
  ["mcq-clean.json", "json-repaired.json", "mcq-seed004.json", "code-add.json"].map(read),
);
const cassette = JSON.parse(await readFile("examples/example.cassette.json", "utf8")) as {
  responses: { draftId: string }[];
};
const answersOf = (id: string) => cassette.responses.filter((r) => r.draftId === id);

const lines: string[] = [];
const responses: unknown[] = [];
const pattern = [clean, repaired, seed, clean, repaired, code];
for (let i = 0; i < COUNT; i++) {
  const base = pattern[i % pattern.length] as Record<string, unknown>;
  const id = `${base.id}-${i}`;
  lines.push(JSON.stringify({ ...base, id }));
  for (const answer of answersOf(String(base.id))) responses.push({ ...answer, draftId: id });
}
const needCorrection = lines.filter((_, i) => i % 6 === 2 || i % 6 === 5).length;

function fail(message: string): never {
  console.error(`bench:batch: ${message}`);
  process.exit(1);
}

if (PRICING === "batch") {
  const count = SMOKE ? 600 : COUNT;
  const dataDir = await mkdtemp(join(tmpdir(), "redraft-bench-pricing-"));
  // The example cassette's answers name the model each stands for (Sonnet, Haiku…): real prices.
  const runtime = await LocalRuntime.open({
    dataDir,
    asl: await loadAsl(),
    model: ReplayModelClient.fromCassette({ version: 1, responses }),
    retryDelayMs: 0,
  });
  try {
    await runtime.blobs.put(MANIFEST_KEY, lines.slice(0, count).join("\n"));
    const runner = new LocalBatchRunner(runtime, await loadBatchAsl());
    const timed = async (id: string, pricing: "on_demand" | "batch") => {
      const started = performance.now();
      const outcome = await runner.run(id, MANIFEST_KEY, { pricing });
      if (outcome.record?.status !== "completed")
        fail(`${pricing}: the batch ended ${outcome.record?.status}`);
      return { record: outcome.record, seconds: (performance.now() - started) / 1000 };
    };
    const onDemand = await timed("b-on-demand", "on_demand");
    const batch = await timed("b-batch", "batch");
    // Identical outcomes, item by item: status, reason, attempts.
    const limit = pLimit(16);
    let differ = 0;
    await Promise.all(
      Array.from({ length: count }, (_, i) =>
        limit(async () => {
          const [a, b] = await Promise.all([
            runtime.runs.getRun(childRunId("b-on-demand", i + 1)),
            runtime.runs.getRun(childRunId("b-batch", i + 1)),
          ]);
          const key = (r: typeof a) => `${r?.status}|${r?.reason}|${r?.attempts}|${r?.logicAttempts}`;
          if (key(a) !== key(b)) differ += 1;
        }),
      ),
    );
    if (differ > 0) fail(`${differ} items ended differently batch-priced`);
    const ratio = (batch.record?.costUsd ?? 0) / (onDemand.record?.costUsd ?? 1);
    say(
      `bench:batch --pricing batch — ${fmtInt(count)} drafts (${fmtInt(lines.slice(0, count).filter((_, i) => i % 6 === 2 || i % 6 === 5).length)} corrected by a replayed model), on demand and batch-priced on one cassette`,
    );
    say(machine());
    say(
      table(
        ["pricing", "cost", "rounds", "tokens", "wall time (local, latency 0)"],
        [
          [
            "on demand",
            `$${(onDemand.record?.costUsd ?? 0).toFixed(4)}`,
            "—",
            fmtInt(onDemand.record?.tokens?.total ?? 0),
            `${onDemand.seconds.toFixed(1)} s`,
          ],
          [
            "batch",
            `$${(batch.record?.costUsd ?? 0).toFixed(4)}`,
            String(batch.record?.rounds?.length ?? 0),
            fmtInt(batch.record?.tokens?.total ?? 0),
            `${batch.seconds.toFixed(1)} s`,
          ],
        ],
      ),
    );
    // Where the batch-priced tokens went: each round's requests and answers, and the price classes.
    const rounds = batch.record?.rounds ?? [];
    say(
      `rounds: ${rounds
        .map(
          (r) =>
            `${r.round}: ${fmtInt(r.requests)} requests in ${r.jobs.length} batch${r.jobs.length === 1 ? "" : "es"}, ${fmtInt(r.succeeded ?? 0)} answered`,
        )
        .join("; ")}`,
    );
    const classes = batch.record?.priceClasses;
    if (classes)
      say(
        `price classes of the batch-priced run: batch ${fmtInt(classes.batch.tokens.total)} tokens ($${classes.batch.costUsd.toFixed(4)}, cache read ${fmtInt(classes.batch.tokens.cacheRead)}, cache write ${fmtInt(classes.batch.tokens.cacheWrite)}); on demand ${fmtInt(classes.on_demand.tokens.total)} tokens ($${classes.on_demand.costUsd.toFixed(4)})`,
      );
    say(
      `identical outcomes: ${fmtInt(count)} of ${fmtInt(count)} items (status, reason, attempts); batch / on-demand cost = ${ratio.toFixed(3)} (goal ≤ 0.55)`,
    );
    if (ratio > 0.55) fail(`the batch-priced cost is ${ratio.toFixed(3)} of on demand`);
    writeDocs("batch-pricing", "npm run bench:batch -- --pricing batch");
  } finally {
    await runtime.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  process.exit(0);
}

if (SMOKE) {
  // Through the command line, as a person would run it.
  const dir = await mkdtemp(join(tmpdir(), "redraft-bench-batch-"));
  try {
    const manifest = join(dir, "manifest.jsonl");
    await writeFile(manifest, lines.join("\n"));
    const started = performance.now();
    const child = spawnSync(
      process.execPath,
      ["bin/redraft.js", "batch", manifest, "--json", "--llm", "none", "--data-dir", join(dir, "data")],
      { encoding: "utf8", maxBuffer: 256 * 1024 * 1024, env: { ...process.env, CI: "true" } },
    );
    const seconds = (performance.now() - started) / 1000;
    if (child.status !== 0) fail(`redraft batch exited ${child.status}: ${child.stderr}`);
    const out = child.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const summary = out.at(-1) as { items: number; counts: Record<string, number> };
    const items = out.slice(0, -1);
    if (items.length !== COUNT) fail(`${items.length} item lines for ${COUNT} drafts`);
    if (new Set(items.map((i) => i.line)).size !== COUNT) fail("an item line is missing or repeated");
    const counted = Object.values(summary.counts).reduce((a, b) => a + b, 0);
    if (summary.items !== COUNT || counted !== COUNT) fail(`summary counts ${counted} of ${COUNT}`);
    for (const [status, n] of Object.entries(summary.counts))
      if (items.filter((i) => i.status === status).length !== n) fail(`summary says ${n} ${status}`);
    console.log(
      `bench:batch --smoke — redraft batch --json --llm none, ${COUNT} drafts: ${fmtInt(COUNT / seconds)} drafts/s, one line per item, summary ${JSON.stringify(summary.counts)}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  process.exit(0);
}

const dataDir = await mkdtemp(join(tmpdir(), "redraft-bench-batch-"));
const runtime = await LocalRuntime.open({
  dataDir,
  asl: await loadAsl(),
  model: ReplayModelClient.fromCassette({ version: 1, responses }),
  retryDelayMs: 0,
});
try {
  await runtime.blobs.put(MANIFEST_KEY, lines.join("\n"));
  const runner = new LocalBatchRunner(runtime, await loadBatchAsl());
  const started = performance.now();
  const outcome = await runner.run("b-bench", MANIFEST_KEY);
  const seconds = (performance.now() - started) / 1000;
  // The batch's own peak: before the checks below read every run back.
  const peakMb = process.resourceUsage().maxRSS / 1024;
  const record = outcome.record;
  if (record?.status !== "completed")
    fail(`the batch ended ${record?.status}: ${JSON.stringify(record?.error)}`);

  // Every item recorded exactly once: one run per line, and the record's counts are the runs'.
  const limit = pLimit(16);
  const runs = await Promise.all(
    lines.map((_, i) => limit(() => runtime.runs.getRun(childRunId("b-bench", i + 1)))),
  );
  if (runs.some((r) => !r)) fail("an item has no run");
  const counts: Record<string, number> = {};
  for (const run of runs) if (run) counts[run.status] = (counts[run.status] ?? 0) + 1;
  if (
    JSON.stringify(Object.entries(counts).sort()) !==
    JSON.stringify(Object.entries(record.counts ?? {}).sort())
  )
    fail(`record counts ${JSON.stringify(record.counts)} ≠ runs ${JSON.stringify(counts)}`);
  const all = await runtime.runs.listRuns({ limit: COUNT * 2 });
  if (all.length !== COUNT) fail(`${all.length} runs for ${COUNT} items`);

  // Transitions per draft, from the children's own histories, by how many corrections they made.
  const transitions: number[] = [];
  for (let i = 1; i <= COUNT; i += 97) {
    const history = await runtime.history(childRunId("b-bench", i));
    if (history) transitions.push(history.history.filter((h) => h.type === "StateEntered").length);
  }
  const perDraft = transitions.reduce((a, b) => a + b, 0) / transitions.length;

  say(
    `bench:batch — ${fmtInt(COUNT)} drafts in one manifest (${fmtInt(needCorrection)} corrected by a replayed model, the rest clean or repaired), batch concurrency ${"4 (dev's batchConcurrency)"}`,
  );
  say(machine());
  say(
    table(
      ["measure", "value"],
      [
        ["drafts/s", fmtInt(COUNT / seconds)],
        ["wall time", `${seconds.toFixed(1)} s`],
        ["peak RSS of the process while the batch ran", `${fmtInt(peakMb)} MB (goal ≤ 500)`],
        ["runs recorded / items", `${fmtInt(all.length)} / ${fmtInt(COUNT)} (exactly once)`],
        [
          "state transitions per draft (sampled, median)",
          `${median(transitions)} (mean ${perDraft.toFixed(1)})`,
        ],
      ],
    ),
  );
  say("\nbatch record:");
  say(
    JSON.stringify({
      status: record.status,
      items: record.items,
      counts: record.counts,
      reasons: record.reasons,
      tokens: record.tokens,
      costUsd: record.costUsd,
    }),
  );

  // Step Functions list prices (us-east-1): Standard $0.025 per 1,000 state transitions; Express
  // $1.00 per million requests plus $0.00001667 per GB-second, billed in 64 MB and 100 ms steps.
  const STANDARD_PER_TRANSITION = 0.025 / 1000;
  const EXPRESS_PER_REQUEST = 1 / 1_000_000;
  const EXPRESS_PER_GB_SECOND = 0.00001667;
  const perTenThousand = 10_000;
  // The batch's own share per item: the Map's child workflow (RunDraft, 2 transitions) and the
  // item's entry in the Map Run; the batch's fixed states (7) are negligible per 10,000.
  const mapPerItem = 2;
  const standard = perTenThousand * (perDraft + mapPerItem) * STANDARD_PER_TRANSITION;
  const expressFor = (seconds: number) =>
    perTenThousand *
      (EXPRESS_PER_REQUEST + ((0.0625 * Math.ceil(seconds * 10)) / 10) * EXPRESS_PER_GB_SECOND) +
    perTenThousand * mapPerItem * STANDARD_PER_TRANSITION;
  say(
    "\nStep Functions cost per 10,000 drafts (list prices, us-east-1; Lambda and model tokens not included):",
  );
  say(
    table(
      ["per-draft workflow", "cost / 10,000 drafts", "what it gives"],
      [
        [
          "Standard (deployed)",
          `$${standard.toFixed(2)}`,
          `${perDraft.toFixed(1)} transitions/draft + ${mapPerItem} for the Map's item; 90-day console history; .sync:2 waits; up to 1 year`,
        ],
        [
          "Express, drafts ending in 10 s",
          `$${expressFor(10).toFixed(2)}`,
          "no console history (CloudWatch Logs only); at-least-once; 5-minute limit",
        ],
        [
          "Express, drafts ending in 60 s",
          `$${expressFor(60).toFixed(2)}`,
          "same; a loop's worst case (infra/worst-case.ts: 298 min in dev) does not fit in 5 minutes",
        ],
      ],
    ),
  );
  writeDocs("batch", "npm run bench:batch");
} finally {
  await runtime.close();
  await rm(dataDir, { recursive: true, force: true });
}
