/**
 * Micro-benchmark of validation throughput (not a test): drafts validated per second on one core.
 *
 *   npm run bench:validate                 # 7 timed rounds of >= 1 s per case, after a 1 s warm-up
 *   npm run bench:validate -- --rounds 3 --seconds 0.5 --only json
 *
 * Cases
 *   mcq  validateDraft(object)   the public API with a prebuilt registry: zod parse of the Draft, repair, 12 rules
 *   mcq  validateDraft(text)     the same from JSON text, as a draft arrives from S3 or an event
 *   mcq  inspectWithPack         the engine alone on pre-parsed drafts (no Draft parse, no async)
 *   json validateDraft(object)   a ~200-property JSON Schema shared by identity across drafts
 *   json validateDraft(text)     every draft carries its own parsed copy of the schema (compiled-schema cache by content)
 *   json inspectWithPack         the engine alone: repair + Ajv + findings + score units
 *   json part: …                 parts of json validateDraft(object)'s work (parseDraft, one Ajv pass), and
 *                                JSON.parse of the drafts' whole text: Node's own parser as a yardstick
 *                                of the machine (redraft parses the schema once, not per draft)
 *   json real validateDraft(object)  three large real-world-style schemas (tests/fixtures/json-schema: an
 *                                OpenAPI order, a draft-07 CI workflow, a FHIR-like bundle), their
 *                                valid, repairable and broken records in turn
 *
 * After the table, "hostile beside benign": the json corpus through one `redraft run` process (`--llm
 * none`) alone, then with hostile drafts among it (four patterns RE2 cannot read that backtrack for
 * seconds to minutes, stopped past their budget and rejected too_slow, and six more like them so that ten
 * are in the run at once; uniqueItems over 16,000 untyped items; a schema of 32 levels each applying the
 * next twice, refused too_slow before it compiles), medians of 5 interleaved runs (`--runs <n>`; `--only pool` runs the pool-pressure case alone): how much later the last benign draft ends (issue 22: within 2×).
 *
 * `--write-docs` rewrites this bench's section of docs/BENCHMARKS.md with the output (never with
 * `--smoke`); `npm run bench:all -- --write-docs` does the same for every bench.
 *
 * The corpora are seeded (mulberry32), so every run validates the same drafts. Each case runs in a
 * child process of its own (one thread each, one after the other), so that the JIT and GC state one
 * case leaves behind cannot slow the next (`--same-process` turns that off). The machine is shared,
 * so read medians, not single rounds.
 */
import { fork, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import type { Draft } from "../shared/draft.js";
import { type Inspection, inspectWithPack } from "../shared/engine.js";
import { compileJsonSchema } from "../shared/packs/json/compile.js";
import { errorsStayLocal } from "../shared/packs/json/locality.js";
import { TOO_SLOW } from "../shared/packs/json/regex-guard.js";
import { PackRegistry } from "../shared/registry.js";
import { parseDraft, validateDraft } from "../shared/validate.js";
import { BENCHMARKS_MD, commitId, writeSections } from "./lib/docs.js";
import {
  cleanRecord,
  countSchemaProperties,
  deepClone,
  fillEmptyOptionals,
  JSON_MODEL_FAULT_IDS,
  JSON_MODEL_FAULTS,
  JSON_REPAIRABLE_FAULTS,
  type JsonObject,
  jsonDraft,
  studySchema,
} from "./lib/json-corpus.js";
import { cleanQuestion, injectMcqFaults, MCQ_FAULT_IDS, mcqDraft, padWhitespace } from "./lib/mcq-corpus.js";
import { Rng } from "./lib/rng.js";
import { fmtInt, machine, median, table } from "./lib/stats.js";

/** The command as a person starts it (it runs the compiled dist/ when that is fresh, else the sources). */
const BIN = resolve("bin/redraft.js");

// ---- options -------------------------------------------------------------------------------------

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
/** `--smoke`: one short round per case, so CI proves the bench still runs; its figures mean nothing. */
const SMOKE = process.argv.includes("--smoke");
const ROUNDS = Number(arg("rounds", SMOKE ? "1" : "7"));
const ROUND_SECONDS = Number(arg("seconds", SMOKE ? "0.05" : "1"));
const WARMUP_SECONDS = Number(arg("warmup", SMOKE ? "0" : "1"));
const ONLY = arg("only", "");
/** `--only pool`: the pool-pressure case alone (ten hostile pattern drafts beside benign ones), no table. */
const POOL_ONLY = ONLY === "pool";
/** Interleaved `redraft run`s (alone, then beside the hostile drafts) whose medians a hostile case reports. */
const RUNS = Number(arg("runs", SMOKE ? "1" : "5"));
/** Set in the child process that runs one case. */
const CASE = arg("case", "");
const SAME_PROCESS = process.argv.includes("--same-process");
const SEED = Number(arg("seed", "20260219"));
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
/** Drafts per second per core the bench holds itself to: mcq's speed goal, and json's (200 fields, 10k/s). */
const TARGETS = { mcq: 20_000, json: 10_000 } as const;

// ---- corpora -------------------------------------------------------------------------------------

const rng = new Rng(SEED);

/** 1,000 questions: 40 % clean, 45 % with 1–3 rule faults, 10 % with whitespace to trim, 5 % missing metadata. */
function mcqCorpus(n = 1000): Draft[] {
  const drafts: Draft[] = [];
  for (let i = 0; i < n; i++) {
    let q = cleanQuestion(rng);
    const roll = rng.next();
    let metadata: Record<string, unknown> | undefined;
    if (roll < 0.4) {
      // clean
    } else if (roll < 0.85) q = injectMcqFaults(q, rng.sample(MCQ_FAULT_IDS, rng.int(1, 3)), rng);
    else if (roll < 0.95) q = padWhitespace(q);
    else metadata = { course_id: "course-uuid-1" };
    drafts.push(mcqDraft(`mcq-${i}`, q, metadata));
  }
  return drafts;
}

/** 300 records: a third clean, a third with empty optional pattern fields only (repair fixes them), a third with 1–3 model faults as well. */
function jsonCorpus(schema: JsonObject, n = 300): Draft[] {
  const drafts: Draft[] = [];
  for (let i = 0; i < n; i++) {
    const record = cleanRecord(rng, i, "typical");
    const kind = i % 3;
    if (kind >= 1) fillEmptyOptionals(record, rng, 0.3);
    if (kind >= 1 && rng.chance(0.3)) JSON_REPAIRABLE_FAULTS.bad_optional_enum?.(record, rng);
    if (kind === 2) {
      for (const f of rng.sample(JSON_MODEL_FAULT_IDS, rng.int(1, 3))) JSON_MODEL_FAULTS[f]?.(record, rng);
    }
    drafts.push(jsonDraft(`json-${i}`, record, schema));
  }
  return drafts;
}

/** The real-world-style schemas' records, each draft sharing its schema object with the others of its schema. */
function realCorpus(): { drafts: Draft[]; describe: string } {
  const names = ["order-api", "ci-workflow", "clinical-bundle"];
  const drafts: Draft[] = [];
  const parts: string[] = [];
  for (const name of names) {
    const read = (file: string) => JSON.parse(readFileSync(`tests/fixtures/json-schema/${file}`, "utf8"));
    const schema = read(`${name}.schema.json`);
    const instances: { content: Record<string, unknown> }[] = read(`${name}.instances.json`);
    instances.forEach((instance, i) => {
      drafts.push({
        id: `${name}-${i}`,
        kind: "json",
        content: instance.content,
        context: { schema },
      } as Draft);
    });
    parts.push(`${name} ${fmtInt(JSON.stringify(schema).length)} B x ${instances.length}`);
  }
  return { drafts, describe: parts.join(", ") };
}

// ---- timing ----------------------------------------------------------------------------------------

interface Case {
  name: string;
  kind: keyof typeof TARGETS;
  /** Validates drafts[i]; returns something so the work cannot be optimised away. */
  run: (i: number) => Promise<unknown> | unknown;
  size: number;
  async: boolean;
  /** A part of `json validateDraft(object)`'s work, measured to say where its time goes: no target of its own. */
  part?: true;
}

let sink = 0;
/** The share of the json corpus that repair changes. */
let repairedShare = 0;
/**
 * Whether the study schema keeps Ajv's errors local (shared/packs/json/locality.ts): then a repaired
 * draft's errors follow from the first pass; otherwise it is checked by Ajv a second time.
 */
let secondPass = true;
function consume(result: unknown): void {
  const r = result as { counts?: { error: number }; report?: { counts: { error: number } } };
  sink += (r.counts ?? r.report?.counts)?.error ?? 0;
}

/** Drafts per second of wall time, and per second of this process's CPU time (user + system). */
interface Rate {
  wall: number;
  cpu: number;
}

/** Runs the case for at least `seconds`, in batches, and returns its rates. */
async function timed(c: Case, seconds: number): Promise<Rate> {
  let done = 0;
  let i = 0;
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  const deadline = start + seconds * 1000;
  let now = start;
  while (now < deadline) {
    for (let k = 0; k < 50; k++) {
      consume(c.async ? await c.run(i) : c.run(i));
      i = (i + 1) % c.size;
    }
    done += 50;
    now = performance.now();
  }
  const cpu = process.cpuUsage(cpuStart);
  return { wall: done / ((now - start) / 1000), cpu: done / ((cpu.user + cpu.system) / 1e6) };
}

async function measure(c: Case): Promise<Rate[]> {
  await timed(c, WARMUP_SECONDS);
  const rates: Rate[] = [];
  for (let r = 0; r < ROUNDS; r++) rates.push(await timed(c, ROUND_SECONDS));
  return rates;
}

// ---- main ------------------------------------------------------------------------------------------

interface Setup {
  cases: Case[];
  header: string[];
}

function setup(): Setup {
  const registry = new PackRegistry();
  const mcqPack = registry.get("mcq");
  const jsonPack = registry.get("json");
  const schema = studySchema();
  const mcq = mcqCorpus();
  const json = jsonCorpus(schema);
  const mcqText = mcq.map((d) => JSON.stringify(d));
  const jsonText = json.map((d) => JSON.stringify(d));
  // The engine path starts from drafts already parsed: deep copies, so nothing is shared with the API cases.
  const mcqParsed = mcq.map((d) => deepClone(d));
  const jsonParsed = json.map((d) => ({ ...deepClone(d), context: { ...d.context, schema } }));

  const describe = (drafts: Draft[], pack: typeof mcqPack) => {
    const inspections: Inspection[] = drafts.map((d) => inspectWithPack(pack, d));
    const withErrors = inspections.filter((x) => x.report.counts.error > 0).length;
    const repaired = inspections.filter((x) => x.report.repairs.length > 0).length;
    const bytes = drafts.reduce((s, d) => s + JSON.stringify(d.content).length, 0) / drafts.length;
    return `${drafts.length} drafts, ${withErrors} with errors, ${repaired} repaired, mean content ${fmtInt(bytes)} B`;
  };
  const real = realCorpus();
  const lookup = compileJsonSchema(schema);
  if (!lookup.ok) throw new Error("the study schema does not compile");
  const compiled = lookup.schema;
  // A draft that repair changed is checked twice (before and after repair) unless the schema keeps
  // errors local; the others once.
  repairedShare =
    json.filter((d) => inspectWithPack(jsonPack, d).report.repairs.length > 0).length / json.length;
  secondPass = !errorsStayLocal(schema);
  const first = json[0] as Draft;
  const units =
    jsonPack.pack.scoreUnits?.({ draft: first, content: first.content, settings: jsonPack.settings }) ?? 0;
  const header = CASE
    ? []
    : [
        "redraft bench:validate",
        `${machine()}, load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(" ")}`,
        `${ROUNDS} rounds of >= ${ROUND_SECONDS} s per case after ${WARMUP_SECONDS} s warm-up, one thread, ${SAME_PROCESS ? "all cases in one process" : "one process per case"}, seed ${SEED}`,
        `mcq corpus:  ${describe(mcq, mcqPack)}`,
        `json corpus: ${describe(json, jsonPack)}`,
        `json real:   ${describe(real.drafts, jsonPack)} (${real.describe})`,
        `json schema: ${countSchemaProperties(schema)} property definitions, ${fmtInt(JSON.stringify(schema).length)} B; a typical record checks ${units} units; drafts as text ${fmtInt(jsonText.reduce((s, t) => s + t.length, 0) / jsonText.length)} B`,
      ];

  const cases: Case[] = [
    {
      name: "mcq  validateDraft(object)",
      kind: "mcq",
      size: mcq.length,
      async: true,
      run: (i) => validateDraft(mcq[i], { registry }),
    },
    {
      name: "mcq  validateDraft(text)",
      kind: "mcq",
      size: mcq.length,
      async: true,
      run: (i) => validateDraft(mcqText[i], { registry }),
    },
    {
      name: "mcq  inspectWithPack",
      kind: "mcq",
      size: mcq.length,
      async: false,
      run: (i) => inspectWithPack(mcqPack, mcqParsed[i] as Draft),
    },
    {
      name: "json validateDraft(object)",
      kind: "json",
      size: json.length,
      async: true,
      run: (i) => validateDraft(json[i], { registry }),
    },
    {
      name: "json validateDraft(text)",
      kind: "json",
      size: json.length,
      async: true,
      run: (i) => validateDraft(jsonText[i], { registry }),
    },
    {
      name: "json real validateDraft(object)",
      kind: "json",
      size: real.drafts.length,
      async: true,
      run: (i) => validateDraft(real.drafts[i], { registry }),
    },
    {
      name: "json inspectWithPack",
      kind: "json",
      size: json.length,
      async: false,
      run: (i) => inspectWithPack(jsonPack, jsonParsed[i] as Draft),
    },
    {
      name: "json part: parseDraft(object)",
      kind: "json",
      size: json.length,
      async: false,
      part: true,
      run: (i) => parseDraft(json[i]),
    },
    {
      // Not a part of redraft's path (which parses the schema once, not per draft): Node's own JSON
      // parser on the same texts, a yardstick of the machine for reading the figures above.
      name: "json part: JSON.parse(text)",
      kind: "json",
      size: json.length,
      async: false,
      part: true,
      run: (i) => JSON.parse(jsonText[i] as string),
    },
    {
      name: "json part: one Ajv pass",
      kind: "json",
      size: json.length,
      async: false,
      part: true,
      run: (i) => compiled.isValid((json[i] as Draft).content),
    },
  ];
  return { cases: cases.filter((c) => (CASE ? c.name === CASE : !ONLY || c.name.includes(ONLY))), header };
}

/** Runs one case in a fresh child process and returns its rates. */
function inChild(name: string): Promise<Rate[]> {
  return new Promise((resolve, reject) => {
    const args = process.argv.slice(2).filter((a, i, all) => a !== "--only" && all[i - 1] !== "--only");
    const child = fork(process.argv[1] as string, [...args, "--case", name], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    let rates: Rate[] | undefined;
    child.on("message", (m) => {
      rates = (m as { rates: Rate[] }).rates;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      rates ? resolve(rates) : reject(new Error(`case "${name}" exited with ${code}`)),
    );
  });
}

async function main(): Promise<void> {
  if (POOL_ONLY) {
    const lines = await hostileBesideBenign(
      poolCorpus(SMOKE ? 20 : 100),
      "whose patterns go to the pattern pool too",
    );
    console.log(lines.join("\n"));
    return;
  }
  const { cases, header } = setup();
  if (CASE) {
    const c = cases[0];
    if (!c) throw new Error(`no case named "${CASE}"`);
    process.send?.({ rates: await measure(c) });
    return;
  }
  const date = new Date();
  const load = loadavg();
  const commit = commitId();
  const output: string[] = [header.join("\n"), ""];
  console.log(output.join("\n"));
  const rows: string[][] = [];
  /** CPU µs per draft of each case, for the breakdown below the table. */
  const perDraftCpu = new Map<string, number>();
  for (const c of cases) {
    const measured = SAME_PROCESS ? await measure(c) : await inChild(c.name);
    const rates = measured.map((r) => r.wall);
    const med = median(rates);
    const perCpu = median(measured.map((r) => r.cpu));
    const target = TARGETS[c.kind];
    perDraftCpu.set(c.name, 1e6 / perCpu);
    const verdict = c.part
      ? "(a part, no target)"
      : perCpu >= target
        ? "met"
        : `${((1 - perCpu / target) * 100).toFixed(0)}% short (x${(target / perCpu).toFixed(1)} needed)`;
    rows.push([
      c.name,
      fmtInt(med),
      fmtInt(Math.min(...rates)),
      fmtInt(Math.max(...rates)),
      `${(1e6 / med).toFixed(1)} µs`,
      fmtInt(perCpu),
      c.part ? verdict : `${fmtInt(target)}/s ${verdict}`,
    ]);
    process.stderr.write(`  ${c.name}: ${fmtInt(med)}/s, ${fmtInt(perCpu)}/CPU-s\n`);
  }
  const result = [
    table(["case", "median/s", "min/s", "max/s", "per draft", "median/CPU-s", "target (per CPU-s)"], rows),
    "",
    "median/s, min/s, max/s: drafts per second of wall time over the rounds; per draft: at the wall-time median.",
    "median/CPU-s: drafts per second of this process's own CPU time (user + system), what one core does when",
    "the machine is shared (the GC's helper threads count too, so it errs low): the target is judged on it.",
    ...whereJsonTimeGoes(perDraftCpu),
    "",
    ...(await hostileBesideBenign()),
    "",
    ...(await hostileBesideBenign(poolCorpus(SMOKE ? 20 : 100), "whose patterns go to the pattern pool too")),
  ].join("\n");
  console.log(result);
  output.push(result);
  if (sink < 0) console.log(sink);
  if (WRITE_DOCS) {
    writeSections([
      { bench: "validate", command: "npm run bench:validate", output: output.join("\n"), date, load, commit },
    ]);
    process.stderr.write(`wrote the validate section of ${BENCHMARKS_MD}\n`);
  }
}

/**
 * Benign drafts whose patterns RE2 cannot read (a lookahead, a lookbehind), so every one of their tests
 * goes to the pattern pool the hostile drafts crowd (issue 34: the pool's fairness between drafts).
 */
function poolCorpus(n: number): Draft[] {
  const patterns = ["^(?=[a-z])[a-z]+$", "(?<=-)[0-9]+$", "^(?!x)[a-z]{2,}$"];
  return Array.from({ length: n }, (_, i) => ({
    id: `pool-${i}`,
    kind: "json",
    context: {
      schema: {
        type: "object",
        properties: Object.fromEntries(patterns.map((pattern, k) => [`f${k}`, { type: "string", pattern }])),
      },
    },
    content: {
      f0: i % 5 === 0 ? "Bad" : `name${"abc"[i % 3]}`.replace(/[0-9]/g, ""),
      f1: `id-${i}`,
      f2: "ok",
    },
  })) as unknown as Draft[];
}

/** Hostile json drafts: what each one does to the drafts validated beside it. */
function hostileDrafts(): { id: string; draft: Draft }[] {
  const withPattern = (pattern: string, text: string) => ({
    kind: "json",
    context: { schema: { type: "object", properties: { v: { type: "string", pattern } } } },
    content: { v: text },
  });
  const shapes: [string, string][] = [
    ["^(?=a)(a{1,30}){1,30}$", `${"a".repeat(30)}!`],
    ["^(?=1)(\\w|\\d)+$", `${"1".repeat(32)}!`],
    ["^(?=a)(a|a)*$", `${"a".repeat(32)}!`],
    ["(?=\\d)\\d*\\d*\\d*x", "1".repeat(3000)],
  ];
  // Pool pressure (issue 34): six more drafts whose lookaround patterns run out their budget, so that
  // ten such drafts are in the run at once, more than the pattern workers.
  const crowd: [string, string][] = Array.from({ length: 6 }, (_, i) => [
    `^(?=1)(\\w|\\d)+$|^z{${i}}$`,
    `${"1".repeat(32)}!`,
  ]);
  // Issue 34's deep schema: a chain of 32 definitions, each applying the one below twice.
  const $defs: Record<string, unknown> = { l0: { type: "object", properties: { a: { type: "string" } } } };
  for (let i = 1; i <= 32; i++) {
    const below = { $ref: `#/$defs/l${i - 1}` };
    $defs[`l${i}`] = { anyOf: [below, below], unevaluatedProperties: false };
  }
  return [
    ...[...shapes, ...crowd].map(([pattern, text], i) => ({
      id: `pattern ${pattern}`,
      draft: { id: `hostile-${i}`, ...withPattern(pattern, text) } as Draft,
    })),
    {
      id: "anyOf twice at each of 32 levels, unevaluatedProperties",
      draft: {
        id: "hostile-deep",
        kind: "json",
        context: { schema: { $defs, $ref: "#/$defs/l32" } },
        content: { a: "x" },
      } as unknown as Draft,
    },
    {
      // Issue 34, per level of the data: small when unfolded (recursion counts once), 2^40 on this content.
      id: "a recursive definition both anyOf branches apply again, content 40 levels deep",
      draft: {
        id: "hostile-forking",
        kind: "json",
        context: { schema: forkingSchema() },
        content: Array.from({ length: 40 }).reduce((inner: unknown) => ({ c: inner }), {}),
      } as unknown as Draft,
    },
    {
      id: "uniqueItems, 16,000 untyped items",
      draft: {
        id: "hostile-unique",
        kind: "json",
        context: { schema: { type: "array", uniqueItems: true } },
        content: Array.from({ length: 16_000 }, (_, i) => ({ n: i, tags: [i % 7, { k: "x" }] })),
      } as unknown as Draft,
    },
  ];
}

/** `n` is an object whose `c` is an `n` again, applied by both branches of an `anyOf`. */
function forkingSchema(): Record<string, unknown> {
  const branch = { type: "object", properties: { c: { $ref: "#/$defs/n" } } };
  return {
    $defs: { n: { anyOf: [branch, { ...branch, required: ["c"] }], unevaluatedProperties: false } },
    $ref: "#/$defs/n",
  };
}

/** One `redraft run` of `file` as a process: when each draft's result line came, in ms from the spawn. */
function timedRun(
  file: string,
  dataDir: string,
): Promise<{ at: Map<string, number>; lines: Record<string, unknown>[] }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(
      process.execPath,
      [BIN, "run", file, "--json", "--llm", "none", "--data-dir", dataDir],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ANTHROPIC_API_KEY: "" } },
    );
    const at = new Map<string, number>();
    const lines: Record<string, unknown>[] = [];
    let stderr = "";
    createInterface({ input: child.stdout }).on("line", (line) => {
      const result = JSON.parse(line) as Record<string, unknown>;
      at.set(String(result.draftId), performance.now() - start);
      lines.push(result);
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 || lines.length > 0
        ? resolve({ at, lines })
        : reject(new Error(`redraft run exited with ${code}: ${stderr.slice(0, 500)}`)),
    );
  });
}

/**
 * Issue 22's bound, as a person meets it: the json corpus through one `redraft run` (a process, `--llm
 * none`, its default four drafts in flight) alone, and with the hostile drafts spread among it. Each
 * benign set is timed to its last result line; interleaved runs, medians.
 */
async function hostileBesideBenign(
  benign: Draft[] = jsonCorpus(studySchema(), SMOKE ? 20 : 300),
  which = "",
): Promise<string[]> {
  const hostile = hostileDrafts();
  const runs = RUNS;
  const work = mkdtempSync(join(tmpdir(), "redraft-bench-hostile-"));
  try {
    const benignFile = join(work, "benign.jsonl");
    const mixedFile = join(work, "mixed.jsonl");
    const every = Math.floor(benign.length / hostile.length);
    const mixed = benign.flatMap((d, i) => {
      const h = i % every === 0 ? hostile[i / every] : undefined;
      return h ? [h.draft, d] : [d];
    });
    writeFileSync(benignFile, benign.map((d) => JSON.stringify(d)).join("\n"));
    writeFileSync(mixedFile, mixed.map((d) => JSON.stringify(d)).join("\n"));
    const benignIds = benign.map((d) => d.id);
    const lastBenign = (at: Map<string, number>) =>
      Math.max(...benignIds.map((id) => at.get(id) ?? Number.NaN));
    const alone: number[] = [];
    const beside: number[] = [];
    let ended: Record<string, unknown>[] = [];
    for (let r = 0; r < runs; r++) {
      alone.push(lastBenign((await timedRun(benignFile, join(work, `alone-${r}`))).at));
      const run = await timedRun(mixedFile, join(work, `mixed-${r}`));
      beside.push(lastBenign(run.at));
      ended = run.lines;
    }
    const a = median(alone);
    const b = median(beside);
    const byId = new Map(ended.map((line) => [String(line.draftId), line]));
    return [
      `hostile beside benign: ${benign.length} json drafts ${which ? `${which} ` : ""}in one \`redraft run <file> --json --llm none\` (bin/redraft.js as a process),`,
      `alone and with ${hostile.length} hostile drafts among them; time to the last benign result line, median of ${runs} interleaved runs`,
      `  alone: ${fmtInt(a)} ms; with the hostile drafts: ${fmtInt(b)} ms (x${(b / a).toFixed(2)}); goal: within x2: ${b <= 2 * a ? "met" : "NOT met"}`,
      ...hostile.map(({ id, draft }) => {
        const line = byId.get(draft.id);
        const slow = String(line?.message ?? "").includes(`${TOO_SLOW}:`) ? `, ${TOO_SLOW}` : "";
        return `  ${id}: ${line?.status}${line?.reason ? ` (${line.reason}${slow})` : ""}`;
      }),
    ];
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Why json validateDraft(object) is where it is: its CPU per draft split into the parse (size and
 * depth bound, zod), Ajv (one pass, twice for a draft that repair changed unless the schema keeps
 * errors local) and the rest (repair walk, findings, score units, the report).
 */
function whereJsonTimeGoes(perDraftCpu: Map<string, number>): string[] {
  const total = perDraftCpu.get("json validateDraft(object)");
  const parse = perDraftCpu.get("json part: parseDraft(object)");
  const ajv = perDraftCpu.get("json part: one Ajv pass");
  if (total === undefined || parse === undefined || ajv === undefined) return [];
  const passes = 1 + (secondPass ? repairedShare : 0);
  const why = secondPass
    ? "because a draft that repair changed is checked again"
    : `the ${(repairedShare * 100).toFixed(0)} % that repair changed are not checked again, as the schema keeps errors local: theirs are the first pass's minus the removed places`;
  const rest = Math.max(0, total - parse - ajv * passes);
  const pct = (us: number) => `${((us / total) * 100).toFixed(0)} %`;
  const text =
    `where json validateDraft(object)'s ${total.toFixed(0)} µs of CPU per draft go: parseDraft ${parse.toFixed(0)} µs (${pct(parse)}: the ` +
    `size and depth bound walks the draft, its ${fmtInt(JSON.stringify(studySchema()).length)} B schema counted by the bound measured the first time, then zod), ` +
    `Ajv ${(ajv * passes).toFixed(0)} µs (${pct(ajv * passes)}: ${ajv.toFixed(0)} µs a pass, ${passes.toFixed(2)} passes a draft, ${why}), ` +
    `the rest ${rest.toFixed(0)} µs (${pct(rest)}: the repair walk, findings, score units, the report). ` +
    "The 10,000/s target leaves 100 µs for all of it.";
  return ["", ...wrap(text, 110)];
}

/**
 * `text` broken at spaces into lines of at most `width` characters (a longer word stays whole); a
 * figure's `%` stays on its figure's line.
 */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.replace(/ %/g, "\u00a0%").split(" ")) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l) => l.replace(/\u00a0/g, " "));
}

await main();
