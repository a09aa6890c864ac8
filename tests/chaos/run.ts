/**
 * `npm run test:chaos [-- --seed N]`: the fault-injection suite. Kills the real command line with
 * SIGKILL mid-run, runs two commands and a poller on one data dir, loses store writes and fails
 * model calls, then audits every run through the store: each draft ends exactly once, nothing is
 * lost, and each run's tokens are its attempts' plus its judge rounds'. Prints a table, ends with
 * `runs N, terminal N, duplicated 0, lost 0, token mismatches 0`, and
 * exits 1 when any figure is wrong. It writes docs/RELIABILITY.md only when asked (`--write-docs`),
 * so running the suite never dirties the checkout; `--only <word>` runs the matching scenarios and
 * never writes the doc.
 */
import { validateStep } from "../../shared/loop/steps/validate.js";
import "../../cli/quiet.js";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import pLimit from "p-limit";
import type { StoppedStatus } from "../../contracts/state-names.js";
import { createFinalizeHandler } from "../../functions/finalize.js";
import type { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { FAILURE_REASONS } from "../../functions/lib/finalizer.js";
import { LOCAL_BUCKET, LocalRuntime } from "../../local/runtime.js";
import { limitModel } from "../../shared/model/limited.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import { makeRun } from "../stores/fixtures.js";
import { synthesizedAsl } from "../workflow/harness.js";
import { type Audit, audit } from "./audit.js";
import { buildCorpus, type Corpus, seededRandom } from "./corpus.js";
import {
  FaultLog,
  FlakyModel,
  firstStatusUpdatesLost,
  firstWriteOfEachStepLost,
  SteadyModel,
} from "./faults.js";

const ROOT = resolve(import.meta.dirname, "..", "..");
const BIN = join(ROOT, "bin", "redraft.js");
const seedArg = process.argv.indexOf("--seed");
const SEED = seedArg > 0 ? Number(process.argv[seedArg + 1]) : Date.now() % 2 ** 31;
const random = seededRandom(SEED);
const onlyArg = process.argv.indexOf("--only");
/** `--only <word>` runs the scenarios whose function name holds the word (while debugging one). */
const ONLY = onlyArg > 0 ? process.argv[onlyArg + 1] : undefined;
const WRITE_DOCS = process.argv.includes("--write-docs");

interface Row extends Omit<Audit, "problems" | "outcomes" | "interruptedRuns"> {
  scenario: string;
  notes: string;
  problems: string[];
}

const say = (line: string) => process.stdout.write(`${line}\n`);

interface Spawned {
  child: ChildProcess;
  /** Result lines printed so far (`--json`). */
  lines: Record<string, unknown>[];
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/** Starts `node bin/redraft.js …`, collecting its JSON result lines; `onLine` sees each one. */
function redraft(args: string[], onLine?: (line: Record<string, unknown>) => void): Spawned {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const lines: Record<string, unknown>[] = [];
  let buffer = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    const parts = buffer.split("\n");
    buffer = parts.pop() ?? "";
    for (const part of parts) {
      if (!part.startsWith("{")) continue;
      const line = JSON.parse(part) as Record<string, unknown>;
      lines.push(line);
      onLine?.(line);
    }
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((ok) =>
    child.on("close", (code, signal) => ok({ code, signal, stderr })),
  );
  return { child, lines, done };
}

/** Audits a data dir after its processes have ended (opening it also finishes any interrupted run). */
async function auditDir(dataDir: string, ids: readonly string[]): Promise<Audit> {
  const runtime = await LocalRuntime.open({ dataDir, asl: await synthesizedAsl(), onWait: () => {} });
  try {
    return await audit(runtime.runs, runtime.blobs, ids);
  } finally {
    await runtime.close();
  }
}

const outcomesText = (outcomes: Record<string, number>) =>
  Object.entries(outcomes)
    .sort()
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");

/**
 * One row of the table. `killed`: the scenario killed processes, so interrupted runs are expected;
 * anywhere else a run finished as interrupted had a live process and is a problem.
 */
function row(scenario: string, a: Audit, notes: string[], problems: string[] = [], killed = false): Row {
  const { problems: found, outcomes, interruptedRuns, ...figures } = a;
  if (!killed) problems.push(...interruptedRuns);
  return {
    scenario,
    ...figures,
    notes: [...notes, `outcomes: ${outcomesText(outcomes)}`].join("; "),
    problems: [...problems, ...found],
  };
}

/** Each draft printed exactly once by a finished command. */
function printedOnce(lines: Record<string, unknown>[], ids: readonly string[], who: string): string[] {
  const seen = new Map<string, number>();
  for (const l of lines) seen.set(String(l.draftId), (seen.get(String(l.draftId)) ?? 0) + 1);
  return ids
    .filter((id) => seen.get(id) !== 1)
    .map((id) => `${who}: draft ${id} printed ${seen.get(id) ?? 0} times`);
}

/** kill -9 at three seeded moments of a 300-draft run, then the same command to its end. */
async function killScenario(work: string): Promise<Row> {
  const corpus = await buildCorpus(ROOT, join(work, "kill"), 300);
  const dataDir = join(work, "kill", "data");
  const args = ["--data-dir", dataDir, "--llm", `replay:${corpus.cassette}`, "run", corpus.dir, "--json"];
  const moments: string[] = [];
  const problems: string[] = [];
  for (let k = 0; k < 3; k++) {
    // A moment: after this many drafts newly finished in this process, plus a few ms.
    const after = 1 + Math.floor(random() * 70);
    const extraMs = Math.floor(random() * 40);
    let fresh = 0;
    const proc = redraft(args, (line) => {
      if (line.duplicate === true || ++fresh !== after) return;
      setTimeout(() => proc.child.kill("SIGKILL"), extraMs);
    });
    const { code, signal, stderr } = await proc.done;
    moments.push(`${after}+${extraMs}ms`);
    if (signal !== "SIGKILL")
      problems.push(`kill ${k + 1}: the run ended (exit ${code}) before the kill: ${stderr}`);
  }
  const last = redraft(args);
  const { code, stderr } = await last.done;
  if (code !== 0) problems.push(`the last run exited ${code}: ${stderr.trim()}`);
  problems.push(...printedOnce(last.lines, corpus.ids, "the last run"));
  const reprinted = last.lines.filter((l) => l.duplicate === true).length;
  const a = await auditDir(dataDir, corpus.ids);
  // Killed runs end failed/interrupted; any other failure here is a fault of the runtime.
  for (const outcome of Object.keys(a.outcomes))
    if (outcome.startsWith("failed") && outcome !== "failed/interrupted")
      problems.push(`unexpected outcome ${outcome}`);
  return row(
    "kill -9 ×3, then run again",
    a,
    [`killed after ${moments.join(", ")} new results`, `last run reprinted ${reprinted} as duplicate`],
    problems,
    true,
  );
}

/** Two `run`s on overlapping files and a `runs` poller, on one data dir. */
async function concurrentScenario(work: string): Promise<Row> {
  const corpus = await buildCorpus(ROOT, join(work, "conc"), 200);
  const dataDir = join(work, "conc", "data");
  // Files 0–129 in one folder, 70–199 in the other: 60 drafts are in both.
  const halves = [corpus.files.slice(0, 130), corpus.files.slice(70)];
  const dirs = await Promise.all(
    halves.map(async (files, i) => {
      const dir = join(work, "conc", `part${i}`);
      await mkdir(dir, { recursive: true });
      await Promise.all(files.map((f) => copyFile(f, join(dir, basename(f)))));
      return dir;
    }),
  );
  const runs = dirs.map((dir) =>
    redraft([
      "--data-dir",
      dataDir,
      "--llm",
      `replay:${corpus.cassette}`,
      "run",
      dir,
      "--json",
      "--concurrency",
      "4",
    ]),
  );
  const ended = Promise.all(runs.map((r) => r.done));
  let running = true;
  void ended.then(() => {
    running = false;
  });
  let polls = 0;
  const problems: string[] = [];
  while (running) {
    const poll = redraft(["--data-dir", dataDir, "runs", "--json"]);
    const { code, signal, stderr } = await poll.done;
    polls++;
    if (code !== 0)
      problems.push(
        `runs poll ${polls} exited ${code}${signal ? ` (${signal})` : ""} after ${poll.lines.length} run line(s): ${stderr.trim() || "(nothing on stderr)"}`,
      );
  }
  const results = await ended;
  results.forEach(({ code, stderr }, i) => {
    if (code !== 0) problems.push(`run ${i + 1} exited ${code}: ${stderr.trim()}`);
  });
  const idsOf = (files: string[]) => files.map((f) => corpus.ids[corpus.files.indexOf(f)] as string);
  for (const [i, r] of runs.entries())
    problems.push(...printedOnce(r.lines, idsOf(halves[i] ?? []), `run ${i + 1}`));
  const reprinted = runs.reduce((n, r) => n + r.lines.filter((l) => l.duplicate === true).length, 0);
  const a = await auditDir(dataDir, corpus.ids);
  return row(
    "2 runs on overlapping files + runs poller",
    a,
    [`60 drafts in both`, `${reprinted} reprinted as duplicate`, `${polls} polls`],
    problems,
  );
}

/** Opens an in-process runtime over `dataDir`, with `corpus` uploaded under drafts/. */
async function inProcess(dataDir: string, corpus: Corpus, model: ReturnType<typeof limitModel>) {
  const runtime = await LocalRuntime.open({ dataDir, asl: await synthesizedAsl(), model, retryDelayMs: 0 });
  const keys = corpus.files.map((f) => `drafts/${basename(f)}`);
  await Promise.all(
    keys.map(async (k, i) => runtime.blobs.putIfAbsent(k, await readFile(corpus.files[i] as string, "utf8"))),
  );
  const runAll = async () => {
    const drive = pLimit(8);
    await Promise.all(
      keys.map((key) => drive(() => runtime.execute({ draftRef: { bucket: LOCAL_BUCKET, key } }))),
    );
  };
  return { runtime, runAll };
}

/** The first store write of each step lost (applied, then an error), and the first status update of each state. */
async function storeScenario(work: string): Promise<Row> {
  const corpus = await buildCorpus(ROOT, join(work, "store"), 100);
  const steady = new SteadyModel(ReplayModelClient.fromCassette({ version: 1, responses: corpus.responses }));
  const model = limitModel(steady, { backoff: false });
  const { runtime, runAll } = await inProcess(join(work, "store", "data"), corpus, model);
  const log = new FaultLog();
  const restoreDeps = firstWriteOfEachStepLost(runtime, log);
  const restoreClient = firstStatusUpdatesLost(log);
  try {
    await runAll();
  } finally {
    restoreClient();
    restoreDeps();
  }
  const a = await audit(runtime.runs, runtime.blobs, corpus.ids);
  await runtime.close();
  const faults = Object.entries(log.counts)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  return row("store: first write of each step fails", a, [
    `${log.total} faults (${faults})`,
    `${steady.repeats} model calls repeated by retried steps`,
  ]);
}

/** 30 % of model calls answered 429, timeout or overloaded. */
async function modelScenario(work: string): Promise<Row> {
  const corpus = await buildCorpus(ROOT, join(work, "model"), 150);
  const flaky = new FlakyModel(
    ReplayModelClient.fromCassette({ version: 1, responses: corpus.responses }),
    0.3,
    random,
  );
  const model = limitModel(flaky, { concurrency: 4, baseDelayMs: 1, maxDelayMs: 10 });
  const { runtime, runAll } = await inProcess(join(work, "model", "data"), corpus, model);
  await runAll();
  const a = await audit(runtime.runs, runtime.blobs, corpus.ids);
  await runtime.close();
  const c = flaky.counts;
  return row("model: 30 % 429 / timeout / overloaded", a, [
    `${c.rateLimited} × 429, ${c.timeout} timeouts, ${c.overloaded} overloads, ${c.answered} answers`,
  ]);
}

/**
 * The cloud finalizer (λ finalize) fed the `Step Functions Execution Status Change` events AWS
 * documents, TIMED_OUT, ABORTED and FAILED, each delivered twice (EventBridge is at least once),
 * for runs in each non-terminal status, runs that already have an outcome, and an execution that
 * died before Validate registered its run; over the local store (DynamoRunStore on dynalite).
 * A run Validate really registered (its content claimed) is resubmitted after finalizing: the
 * resubmission must run, not be refused as a duplicate.
 */
async function finalizerScenario(work: string): Promise<Row> {
  const runtime = await LocalRuntime.open({
    dataDir: join(work, "finalizer", "data"),
    asl: await synthesizedAsl(),
    onWait: () => {},
    // The finalizer is the cloud's: its conditional writes are DynamoDB's, on dynalite.
    store: "dynalite",
  });
  const problems: string[] = [];
  const announced: string[] = [];
  const handler = createFinalizeHandler(() => ({
    runs: runtime.runs as DynamoRunStore,
    announce: async (_type, detail) => {
      announced.push(String(detail.runId));
    },
    now: () => new Date().toISOString(),
  }));
  const event = (name: string, status: StoppedStatus) => ({
    source: "aws.states",
    "detail-type": "Step Functions Execution Status Change",
    detail: {
      executionArn: `arn:aws:states:us-east-1:123456789012:execution:redraft-local:${name}`,
      stateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:redraft-local",
      name,
      status,
      startDate: Date.now() - 3_600_000,
      stopDate: Date.now(),
      input: null,
      output: null,
      error: status === "FAILED" ? "States.Runtime" : null,
      cause: null,
    },
  });
  const expected = new Map<string, { status: string; reason?: string }>();
  const statuses = ["TIMED_OUT", "ABORTED", "FAILED"] as const;
  try {
    for (const status of statuses) {
      const reason = FAILURE_REASONS[status];
      for (const active of ["draft", "correcting"] as const) {
        const runId = `fin-${status}-${active}`;
        await runtime.runs.createRun(makeRun(runId, { status: active, draftId: runId }));
        expected.set(runId, { status: "failed", reason });
      }
      for (const final of ["validated", "needs_manual_review", "rejected"] as const) {
        const runId = `fin-${status}-${final}`;
        await runtime.runs.createRun(makeRun(runId, { status: final, draftId: runId }));
        expected.set(runId, { status: final });
      }
      expected.set(`fin-${status}-unregistered`, { status: "failed", reason });
    }
    // A run Validate registered for real, its content claimed: finalized, then resubmitted.
    const draft = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-seed004.json"), "utf8"));
    const claimed = await validateStep({ runId: "fin-claimed", draft, submissionId: "chaos" }, runtime.deps);
    if (claimed.decision === "rejected" || claimed.decision === "duplicate")
      problems.push(`the claimed run was ${claimed.decision} before any finalizing`);
    expected.set("fin-claimed", { status: "failed", reason: FAILURE_REASONS.TIMED_OUT });

    for (const runId of expected.keys()) {
      const status = statuses.find((s) => runId.includes(s)) ?? "TIMED_OUT";
      for (let delivery = 0; delivery < 2; delivery++) await handler(event(runId, status));
    }
    const again = await validateStep(
      { runId: "fin-resubmitted", draft, submissionId: "chaos" },
      runtime.deps,
    );
    if (again.decision === "duplicate" || again.decision === "rejected")
      problems.push(`a resubmission after the finalizer was ${again.decision}: the claim was not released`);

    let terminal = 0;
    const outcomes: Record<string, number> = {};
    for (const [runId, want] of expected) {
      const run = await runtime.runs.getRun(runId);
      const got = run ? `${run.status}${run.reason ? `/${run.reason}` : ""}` : "missing";
      outcomes[got] = (outcomes[got] ?? 0) + 1;
      if (run && !["draft", "correcting"].includes(run.status)) terminal++;
      if (!run || run.status !== want.status || (want.reason && run.reason !== want.reason))
        problems.push(`${runId}: ${got}, expected ${want.status}${want.reason ? `/${want.reason}` : ""}`);
      const wasFinal = want.reason === undefined;
      if (wasFinal && announced.includes(runId))
        problems.push(`${runId}: announced though it had an outcome`);
      if (!wasFinal && !announced.includes(runId)) problems.push(`${runId}: its failure was never announced`);
    }
    return row(
      "cloud finalizer: TIMED_OUT / ABORTED / FAILED events, each delivered twice",
      {
        runs: expected.size,
        terminal,
        duplicated: 0,
        lost: 0,
        tokenMismatches: 0,
        interrupted: 0,
        interruptedRuns: [],
        outcomes,
        problems: [],
      },
      [
        `${expected.size * 2} events for runs in draft, correcting, validated, needs_manual_review, rejected and unregistered`,
        `${announced.length} Draft Failed announcements`,
        "a finalized run's content resubmitted runs again",
      ],
      problems,
    );
  } finally {
    await runtime.close();
  }
}

function table(rows: Row[]): string[] {
  const head = [
    "scenario",
    "runs",
    "terminal",
    "duplicated",
    "lost",
    "token mismatches",
    "interrupted",
    "notes",
  ];
  const body = rows.map((r) => [
    r.scenario,
    String(r.runs),
    String(r.terminal),
    String(r.duplicated),
    String(r.lost),
    String(r.tokenMismatches),
    String(r.interrupted),
    r.notes,
  ]);
  return [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...body.map((c) => `| ${c.join(" | ")} |`),
  ];
}

async function main(): Promise<number> {
  const started = Date.now();
  const work = await mkdtemp(join(tmpdir(), "redraft-chaos-"));
  say(`redraft chaos suite, seed ${SEED} (again with: npm run test:chaos -- --seed ${SEED})`);
  const rows: Row[] = [];
  try {
    await synthesizedAsl();
    for (const scenario of [
      killScenario,
      concurrentScenario,
      storeScenario,
      modelScenario,
      finalizerScenario,
    ]) {
      if (ONLY && !scenario.name.includes(ONLY)) continue;
      const t = Date.now();
      const r = await scenario(work);
      rows.push(r);
      say(
        `  ${r.scenario}: ${((Date.now() - t) / 1000).toFixed(1)} s${r.problems.length ? `, ${r.problems.length} problem(s)` : ""}`,
      );
      for (const p of r.problems.slice(0, 10)) say(`    ${p}`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const sum = (f: (r: Row) => number) => rows.reduce((n, r) => n + f(r), 0);
  const total = {
    runs: sum((r) => r.runs),
    terminal: sum((r) => r.terminal),
    duplicated: sum((r) => r.duplicated),
    lost: sum((r) => r.lost),
    mismatches: sum((r) => r.tokenMismatches),
    problems: sum((r) => r.problems.length),
  };
  const lastLine = `runs ${total.runs}, terminal ${total.terminal}, duplicated ${total.duplicated}, lost ${total.lost}, token mismatches ${total.mismatches}`;
  const lines = table(rows);
  say("");
  for (const l of lines) say(l);
  // CI keeps only the last line of stdout: a problem that no count on it shows (a run killed too
  // late, an unexpected outcome) goes to stderr too, so a failing run says why where it is read.
  for (const r of rows)
    for (const p of r.problems) process.stderr.write(`test:chaos problem: ${r.scenario}: ${p}\n`);
  say(lastLine);

  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
    cwd: ROOT,
    encoding: "utf8",
  }).trim();
  const cpu = cpus();
  const doc = [
    "# Reliability: the fault-injection suite",
    "",
    "Generated by `npm run test:chaos -- --write-docs` (tests/chaos/run.ts); do not edit by hand.",
    "",
    `- command: \`npm run test:chaos -- --seed ${SEED}\``,
    `- date: ${new Date().toISOString()}`,
    `- commit: ${commit}`,
    `- machine: ${cpu[0]?.model ?? "unknown cpu"}, ${cpu.length} cores, node ${process.version}`,
    `- took: ${((Date.now() - started) / 1000).toFixed(0)} s`,
    "",
    "Each scenario audits every run through the store: a run is terminal when its status is final;",
    "a draft is duplicated when it ran to an end more than once (a run finished as",
    "failed/interrupted after its process was killed does not count), lost when no run of it ran to",
    "an end; a run's tokens must equal its recorded attempts' tokens plus its judge rounds' usage.",
    "",
    ...lines,
    "",
    ...(total.problems > 0
      ? [
          `Problems found (${total.problems}):`,
          "",
          ...rows.flatMap((r) => r.problems.map((p) => `- ${r.scenario}: ${p}`)),
          "",
        ]
      : []),
    "```",
    lastLine,
    "```",
    "",
  ].join("\n");
  // Only a run of every scenario is the suite's record.
  if (WRITE_DOCS && ONLY === undefined) await writeFile(join(ROOT, "docs", "RELIABILITY.md"), doc);
  const ok =
    total.duplicated === 0 &&
    total.lost === 0 &&
    total.mismatches === 0 &&
    total.terminal === total.runs &&
    total.problems === 0;
  return ok ? 0 : 1;
}

process.exitCode = await main();
