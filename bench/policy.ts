/**
 * Policy benchmark (not a test): the same drafts, the same imperfect corrector, the same attempt budget,
 * corrected by a NAIVE retry loop and by redraft's loop (`correctDraft`).
 *
 *   npm run bench:policy
 *   npm run bench:policy -- --drafts 500 --seed 7 --p 0.6 --q 0.3 --r 0.25 --no-sweep
 *
 * CORPUS (seeded mulberry32, reproducible): `--drafts` drafts (default 500), alternating
 *   - mcq: a clean seed-004-like question with 1–4 distinct injected faults, each breaking one
 *     error-severity rule of the mcq pack (negation, absolute terms, rationale, homogeneity, answer
 *     key, duplicate options, option count, all/none of the above, stem asks no question);
 *   - json: a clean study record checked against a ~200-property JSON Schema with required fields
 *     and pattern-constrained OPTIONAL fields (orcid, issn, pmid, ROR, ISO 8601 durations — seed 001),
 *     with either only faults that deterministic repair can remove (35 %: empty optional pattern fields,
 *     an optional enum out of range, a forbidden extra property) or 1–3 faults only a correction fixes
 *     (required field missing / wrong pattern / wrong enum / wrong type / bad date / out of range),
 *     in 70 % of those cases with empty optional pattern fields as well.
 *   Each draft keeps its clean version as the "reference": what a correct answer contains (the facts
 *   of the source a real model would read).
 *
 * THE SIMULATED IMPERFECT CORRECTOR (`SimulatedCorrector`, a ModelClient)
 *   - It reads what each request asks for from the request's structured `subject` (the draft content
 *     the prompt carries, the flagged violations and the attempt number, the very values the prompt
 *     was built from), never by parsing the prompt's wording, which changes. It answers exactly what
 *     each loop sent, including redraft's repaired best-so-far draft after a rollback; a request
 *     without a subject aborts the benchmark instead of skewing it. The only side knowledge is the
 *     reference per draftId.
 *   - For each flagged violation it applies a correct fix (the reference value at the violation's
 *     path, or removing the value when the reference has none there) with probability p.
 *   - With probability q per answer it commits seed 001's failure: every absent optional pattern
 *     field of a json record is filled with "" with probability 1/2.
 *   - With probability r per answer it breaks one thing that was not flagged (injects a fresh fault of a
 *     kind not among the flagged rules; mcq faults exclude the option-count fault).
 *   - With probability m per answer it answers with text instead of the tool (an unusable answer).
 *   - Every draw is keyed by (seed, draftId, attempt number, purpose[, violation]), so both policies
 *     meet the same behaviour in the same situation: the same violation flagged at the same attempt is
 *     fixed (or not) for both.
 *   - Usage: input tokens = ceil(chars of system blocks + user prompt + tool schema / 4), output
 *     tokens = ceil(chars of the JSON answer / 4); no prompt caching is credited to either policy.
 *
 * THE TWO POLICIES (same prompt builder, same corrector, same budget of `--attempts` model calls, 3 by default)
 *   - naive: what common retry libraries do. Validate (rules + schema, no deterministic repair); while
 *     errors remain and attempts are left, send the LAST answer with its errors (same prompt builder,
 *     no hints), keep the new answer whatever its quality; an unusable answer keeps the last usable
 *     draft. No rollback, no early exit. The prompt does not grow with retries (kinder to naive than
 *     libraries that append the conversation).
 *   - redraft: `correctDraft` with in-memory stores, maxAttempts from a DeploymentConfig, default
 *     stuck (2 attempts without beating the best) and circuit-breaker (threshold = maxAttempts) rules.
 *
 * SCORING: both final drafts are judged by the same yardstick — the rules and the schema run on the
 * delivered content WITHOUT repair (redraft delivers its repaired best draft; naive its last answer).
 * "validated" = no error-severity violation left; score = the pack's proportional score.
 */

import { correctDraft } from "../local/in-process.js";
import type { Draft, ValidationReport, Violation } from "../shared/draft.js";
import { inspectWithPack, type ResolvedPack } from "../shared/engine.js";
import { buildCorrectionPrompt } from "../shared/loop/prompt.js";
import { parseCorrectionAnswer } from "../shared/loop/response.js";
import type { RunResult } from "../shared/loop/run.js";
import type { LoopDeps } from "../shared/loop/steps.js";
import { costUsd } from "../shared/model/pricing.js";
import {
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  totalTokens,
} from "../shared/model/types.js";
import type { DeploymentConfig } from "../shared/pack.js";
import { PackRegistry } from "../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../shared/store/memory.js";
import {
  cleanRecord,
  deepClone,
  fidelity,
  fillEmptyOptionals,
  getAt,
  JSON_MODEL_FAULT_IDS,
  JSON_MODEL_FAULTS,
  JSON_REPAIRABLE_FAULT_IDS,
  JSON_REPAIRABLE_FAULTS,
  type JsonObject,
  jsonDraft,
  setAt,
  studySchema,
} from "./lib/json-corpus.js";
import {
  cleanQuestion,
  injectMcqFaults,
  MCQ_FAULT_IDS,
  MCQ_FAULTS,
  mcqDraft,
  type Question,
} from "./lib/mcq-corpus.js";
import { keyedRng, keyedUniform, Rng } from "./lib/rng.js";
import { machine, table } from "./lib/stats.js";

// ---- options ---------------------------------------------------------------------------------------

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
/** `--smoke`: a tiny corpus and no sweep, so CI proves the bench still runs end to end in seconds. */
const SMOKE = process.argv.includes("--smoke");
const SEED = Number(arg("seed", "20260219"));
const DRAFTS = Number(arg("drafts", SMOKE ? "24" : "500"));
const MAX_ATTEMPTS = Number(arg("attempts", "3"));
const SWEEP = !SMOKE && !process.argv.includes("--no-sweep");
const MODEL_ID = "claude-sonnet-5-5";

interface Behaviour {
  /** Probability of fixing each flagged violation. */
  p: number;
  /** Probability per answer of filling absent optional pattern fields with "" (seed 001). */
  q: number;
  /** Probability per answer of breaking one unflagged thing. */
  r: number;
  /** Probability per answer of an unusable (non-tool, non-JSON) answer. */
  m: number;
}
const MAIN: Behaviour = {
  p: Number(arg("p", "0.6")),
  q: Number(arg("q", "0.3")),
  r: Number(arg("r", "0.25")),
  m: Number(arg("m", "0.03")),
};

// ---- corpus ----------------------------------------------------------------------------------------

interface Case {
  draft: Draft;
  reference: Question | JsonObject;
  faults: string[];
}

function buildCorpus(seed: number, n: number): Case[] {
  const rng = new Rng(seed);
  const schema = studySchema();
  const cases: Case[] = [];
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      const reference = cleanQuestion(rng);
      const faults = rng.sample(MCQ_FAULT_IDS, rng.int(1, 4));
      const content = injectMcqFaults(reference, faults, rng);
      cases.push({ draft: mcqDraft(`mcq-${i}`, content), reference, faults });
    } else {
      const reference = cleanRecord(rng, i, "typical");
      const content = deepClone(reference);
      const faults: string[] = [];
      const repairableOnly = rng.chance(0.35);
      if (repairableOnly) {
        for (const f of rng.sample(JSON_REPAIRABLE_FAULT_IDS, rng.int(1, 2))) {
          JSON_REPAIRABLE_FAULTS[f]?.(content, rng);
          faults.push(f);
        }
      } else {
        for (const f of rng.sample(JSON_MODEL_FAULT_IDS, rng.int(1, 3))) {
          JSON_MODEL_FAULTS[f]?.(content, rng);
          faults.push(f);
        }
        if (rng.chance(0.7)) {
          JSON_REPAIRABLE_FAULTS.empty_optional?.(content, rng);
          faults.push("empty_optional");
        }
      }
      cases.push({ draft: jsonDraft(`json-${i}`, content, schema), reference, faults });
    }
  }
  return cases;
}

// ---- the simulated corrector -----------------------------------------------------------------------

interface Flagged {
  ruleId: string;
  path: string;
}

/** What a model reads in the prompt: the attempt number, the draft content and the flagged violations. */
export function readRequest(request: ModelRequest): {
  attempt: number;
  content: unknown;
  flagged: Flagged[];
} {
  // The request's structured subject, never the prompt's wording: a reworded prompt cannot break the bench.
  const subject = request.subject;
  if (!subject) throw new Error(`the request for ${request.draftId} carries no correction subject`);
  const flagged = subject.violations.map((v) => ({ ruleId: v.ruleId, path: v.path ?? "" }));
  return { attempt: subject.attempt, content: subject.content, flagged };
}

const segmentsOf = (pointer: string): string[] =>
  pointer === ""
    ? []
    : pointer
        .slice(1)
        .split("/")
        .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));

function fixMcq(q: Question, v: Flagged, ref: Question): void {
  const [field, index, sub] = segmentsOf(v.path);
  const sameShape = Array.isArray(q.options) && q.options.length === ref.options.length;
  if (field === "options" && (index === undefined || !sameShape)) {
    // A whole-options problem (count, homogeneity, form): the options are rewritten.
    q.options = deepClone(ref.options);
    q.correct_answer = ref.correct_answer;
  } else if (field === "options" && index !== undefined && (sub === "text" || sub === "key")) {
    const option = q.options[Number(index)];
    const fixed = ref.options[Number(index)];
    if (option && fixed) option[sub] = fixed[sub];
  } else if (
    field === "stem" ||
    field === "rationale" ||
    field === "correct_answer" ||
    field === "vignette"
  ) {
    q[field] = ref[field];
  }
}

function fixJson(record: JsonObject, v: Flagged, ref: JsonObject): void {
  const path = segmentsOf(v.path);
  if (path.length === 0) return;
  if (v.ruleId === "schema:additionalProperties" || v.ruleId === "schema:unevaluatedProperties") {
    setAt(record, path, undefined);
    return;
  }
  const value = getAt(ref, path);
  setAt(record, path, value === undefined ? undefined : deepClone(value));
}

/** Breaks one thing the prompt did not flag. */
function breakMcq(q: Question, flagged: readonly Flagged[], rng: Rng): Question {
  const flaggedRules = new Set(flagged.map((f) => f.ruleId));
  const kinds = MCQ_FAULT_IDS.filter((id) => id !== "mcq_option_count" && !flaggedRules.has(id));
  if (kinds.length === 0 || !Array.isArray(q.options)) return q;
  return MCQ_FAULTS[rng.pick(kinds)]?.(q, rng) ?? q;
}

function breakJson(record: JsonObject, rng: Rng): void {
  JSON_MODEL_FAULTS[rng.pick(JSON_MODEL_FAULT_IDS)]?.(record, rng);
}

const tokens = (chars: number) => Math.ceil(chars / 4);

export class SimulatedCorrector implements ModelClient {
  readonly provider = "simulated";
  readonly model = MODEL_ID;
  calls = 0;

  constructor(
    private readonly references: ReadonlyMap<string, Question | JsonObject>,
    private readonly behaviour: Behaviour,
    private readonly seed: number,
  ) {}

  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.calls += 1;
    const { p, q, r, m } = this.behaviour;
    const { attempt, content, flagged } = readRequest(request);
    const reference = this.references.get(request.draftId);
    if (!reference) throw new Error(`no reference for ${request.draftId}`);
    const key = [this.seed, request.draftId, attempt] as const;
    const inputChars =
      request.system.reduce((s, b) => s + b.text.length, 0) +
      request.user.length +
      JSON.stringify(request.tool.inputSchema).length;
    const usage = (outputChars: number) => ({
      input: tokens(inputChars),
      output: tokens(outputChars),
      cacheRead: 0,
      cacheWrite: 0,
    });

    if (keyedUniform(...key, "unusable") < m) {
      const raw = "I have corrected the draft as requested; the main problems were in the flagged fields.";
      return { raw, usage: usage(raw.length), model: MODEL_ID, latencyMs: 0, stopReason: "end_turn" };
    }

    const isMcq = request.draftId.startsWith("mcq-");
    let next = deepClone(content) as Question | JsonObject;
    const seen = new Set<string>();
    let fixed = 0;
    for (const v of flagged) {
      const id = `${v.ruleId} ${v.path}`;
      if (seen.has(id)) continue;
      seen.add(id);
      if (keyedUniform(...key, "fix", id) >= p) continue;
      fixed += 1;
      if (isMcq) fixMcq(next as Question, v, reference as Question);
      else fixJson(next as JsonObject, v, reference as JsonObject);
    }
    if (keyedUniform(...key, "break") < r) {
      const rng = new Rng(keyedRng(...key, "break-which")() * 2 ** 32);
      if (isMcq) next = breakMcq(next as Question, flagged, rng);
      else breakJson(next as JsonObject, rng);
    }
    if (!isMcq && keyedUniform(...key, "empty") < q) {
      fillEmptyOptionals(next as JsonObject, new Rng(keyedRng(...key, "empty-which")() * 2 ** 32), 0.5);
    }
    const output = {
      content: next,
      analysis: `Attempt ${attempt}: ${flagged.length} violations flagged.`,
      fixDescription: `Fixed ${fixed} of them.`,
    };
    return {
      output,
      usage: usage(JSON.stringify(output).length),
      model: MODEL_ID,
      latencyMs: 0,
      stopReason: "tool_use",
    };
  }
}

// ---- the two policies ------------------------------------------------------------------------------

interface Outcome {
  kind: string;
  validated: boolean;
  score: number;
  /** Share of the reference's values present unchanged in the delivered content. */
  fidelity: number;
  attempts: number;
  tokens: number;
  costUsd: number;
  reason: string;
}

/** The pack without any deterministic repair: what a loop without repair validates with. */
function withoutRepair(resolved: ResolvedPack): ResolvedPack {
  const { repair: _repair, ...pack } = resolved.pack;
  const rules = resolved.rules.map(({ rule, severity }) => {
    const { repair: _r, ...bare } = rule;
    return { rule: bare, severity };
  });
  return { ...resolved, pack, rules };
}

const errorsOf = (report: ValidationReport): Violation[] =>
  report.violations.filter((v) => v.severity === "error");

class Yardstick {
  readonly registry: PackRegistry;
  readonly #bare = new Map<string, ResolvedPack>();
  constructor(registry: PackRegistry) {
    this.registry = registry;
    for (const kind of registry.kinds()) this.#bare.set(kind, withoutRepair(registry.get(kind)));
  }
  /** Rules and schema on the content as it is, with no repair. */
  check(draft: Draft): ValidationReport {
    const bare = this.#bare.get(draft.kind);
    if (!bare) throw new Error(`unknown kind ${draft.kind}`);
    return inspectWithPack(bare, draft).report;
  }
}

async function naive(c: Case, model: ModelClient, yardstick: Yardstick): Promise<Outcome> {
  const resolved = yardstick.registry.get(c.draft.kind);
  let current = c.draft;
  let report = yardstick.check(current);
  let attempts = 0;
  let used = 0;
  let cost = 0;
  while (report.counts.error > 0 && attempts < MAX_ATTEMPTS) {
    attempts += 1;
    const prompt = buildCorrectionPrompt({
      resolved,
      draft: current,
      violations: errorsOf(report),
      attempt: attempts,
      maxAttempts: MAX_ATTEMPTS,
      hints: [],
    });
    const response = await model.complete({
      runId: `naive-${c.draft.id}`,
      draftId: c.draft.id,
      purpose: "correct",
      system: prompt.system,
      user: prompt.user,
      tool: prompt.tool,
      maxTokens: 8192,
      subject: {
        phase: "execution",
        attempt: attempts,
        maxAttempts: MAX_ATTEMPTS,
        content: current.content,
        violations: errorsOf(report).map((v) => ({
          ruleId: v.ruleId,
          ...(v.path !== undefined && { path: v.path }),
        })),
      },
    });
    used += totalTokens(response.usage);
    cost += costUsd(response.model, response.usage);
    const parsed = parseCorrectionAnswer(response);
    if (!parsed.ok) continue;
    current = { ...current, content: parsed.answer.content as Draft["content"] };
    report = yardstick.check(current);
  }
  return {
    kind: c.draft.kind,
    validated: report.counts.error === 0,
    score: report.score,
    fidelity: fidelity(current.content, c.reference),
    attempts,
    tokens: used,
    costUsd: cost,
    reason: report.counts.error === 0 ? "validated" : "max_attempts",
  };
}

async function redraft(
  c: Case,
  model: ModelClient,
  registry: PackRegistry,
  yardstick: Yardstick,
): Promise<Outcome> {
  let t = Date.parse("2026-02-19T14:00:00Z");
  const tick = () => {
    t += 1000;
    return new Date(t);
  };
  const deps: LoopDeps = {
    registry,
    runs: new MemoryRunStore(),
    blobs: new MemoryBlobStore(),
    model,
    clock: tick,
    dedupeWindowMs: 0,
  };
  const result: RunResult = await correctDraft(c.draft, {
    ...deps,
    runId: `redraft-${c.draft.id}`,
    retryDelayMs: 0,
  });
  if (!result.finalDraft)
    throw new Error(`run of ${c.draft.id} ended ${result.status}: ${result.message ?? ""}`);
  const report = yardstick.check(result.finalDraft);
  const validated = report.counts.error === 0;
  if (validated !== (result.status === "validated")) {
    throw new Error(
      `${c.draft.id}: status ${result.status} but the yardstick counts ${report.counts.error} errors`,
    );
  }
  return {
    kind: c.draft.kind,
    validated,
    score: report.score,
    fidelity: fidelity(result.finalDraft.content, c.reference),
    attempts: result.attempts,
    tokens: result.tokens.total,
    costUsd: result.costUsd,
    reason: result.reason ?? "validated",
  };
}

// ---- report ----------------------------------------------------------------------------------------

interface Summary {
  n: number;
  validated: number;
  score: number;
  fidelity: number;
  attempts: number;
  tokens: number;
  costUsd: number;
}

function summarize(outcomes: readonly Outcome[]): Summary {
  const n = outcomes.length || 1;
  const sum = (f: (o: Outcome) => number) => outcomes.reduce((s, o) => s + f(o), 0);
  return {
    n: outcomes.length,
    validated: sum((o) => (o.validated ? 1 : 0)) / n,
    score: sum((o) => o.score) / n,
    fidelity: sum((o) => o.fidelity) / n,
    attempts: sum((o) => o.attempts) / n,
    tokens: sum((o) => o.tokens) / n,
    costUsd: sum((o) => o.costUsd) / n,
  };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const row = (name: string, s: Summary) => [
  name,
  String(s.n),
  pct(s.validated),
  s.score.toFixed(4),
  pct(s.fidelity),
  s.attempts.toFixed(2),
  Math.round(s.tokens).toLocaleString("en-US"),
  `$${s.costUsd.toFixed(4)}`,
];
const ratioRow = (a: Summary, b: Summary) => [
  "  redraft / naive",
  "",
  `x${(a.validated / b.validated).toFixed(2)}`,
  `x${(a.score / b.score).toFixed(4)}`,
  `x${(a.fidelity / b.fidelity).toFixed(3)}`,
  `x${(a.attempts / b.attempts).toFixed(2)}`,
  `x${(a.tokens / b.tokens).toFixed(2)}`,
  `x${(a.costUsd / b.costUsd).toFixed(2)}`,
];

/** Runs the cases through one policy, each with a fresh corrector of the same seed and behaviour. */
async function runPolicy(
  policy: "naive" | "redraft",
  cases: readonly Case[],
  behaviour: Behaviour,
  config: DeploymentConfig = { loop: { maxAttempts: MAX_ATTEMPTS } },
  seed = SEED,
): Promise<Outcome[]> {
  const references = new Map(cases.map((c) => [c.draft.id, c.reference]));
  const registry = new PackRegistry(config);
  const yardstick = new Yardstick(new PackRegistry());
  const out: Outcome[] = [];
  for (const c of cases) {
    // Its draws depend only on what it is asked: the same seed gives both policies the same corrector.
    const model = new SimulatedCorrector(references, behaviour, seed);
    out.push(
      policy === "naive" ? await naive(c, model, yardstick) : await redraft(c, model, registry, yardstick),
    );
  }
  return out;
}

const pair = (naiveOut: Outcome[], redraftOut: Outcome[]) => {
  const sn = summarize(naiveOut);
  const sr = summarize(redraftOut);
  return [
    `${pct(sn.validated)} / ${pct(sr.validated)}`,
    `${sn.score.toFixed(4)} / ${sr.score.toFixed(4)}`,
    `${pct(sn.fidelity)} / ${pct(sr.fidelity)}`,
    `${sn.attempts.toFixed(2)} / ${sr.attempts.toFixed(2)}`,
    `${Math.round(sn.tokens).toLocaleString("en-US")} / ${Math.round(sr.tokens).toLocaleString("en-US")}`,
    `x${(sr.tokens / sn.tokens).toFixed(2)}`,
  ];
};
const PAIR_HEADER = ["validated", "mean score", "fidelity", "attempts", "tokens/draft", "token ratio"];

async function main(): Promise<void> {
  const started = performance.now();
  const cases = buildCorpus(SEED, DRAFTS);
  const yardstick = new Yardstick(new PackRegistry());
  const initialErrors = cases.map((c) => yardstick.check(c.draft).counts.error);
  if (initialErrors.some((e) => e === 0))
    throw new Error("a corpus draft has no error: the injectors are broken");
  const mcqCases = cases.filter((c) => c.draft.kind === "mcq");
  const jsonCases = cases.filter((c) => c.draft.kind === "json");
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / (xs.length || 1);

  console.log("redraft bench:policy");
  console.log(machine());
  console.log(
    `corpus: ${cases.length} drafts (seed ${SEED}): ${mcqCases.length} mcq with ${mean(mcqCases.map((c) => c.faults.length)).toFixed(2)} injected faults on average, ` +
      `${jsonCases.length} json (${jsonCases.filter((c) => c.faults.every((f) => JSON_REPAIRABLE_FAULT_IDS.includes(f))).length} with repairable faults only); ` +
      `${mean(initialErrors).toFixed(2)} error violations per draft before any repair`,
  );
  console.log(
    `corrector: fixes each flagged violation with p=${MAIN.p}; seed-001 empty strings q=${MAIN.q}; breaks one good thing r=${MAIN.r}; unusable answer m=${MAIN.m}; priced as ${MODEL_ID}`,
  );
  console.log(
    `budget: ${MAX_ATTEMPTS} model calls per draft for both policies; fidelity = share of the reference's values kept unchanged\n`,
  );

  const naiveOut = await runPolicy("naive", cases, MAIN);
  const redraftOut = await runPolicy("redraft", cases, MAIN);
  const header = [
    "policy",
    "drafts",
    "validated",
    "mean score",
    "fidelity",
    "attempts",
    "tokens/draft",
    "USD/draft",
  ];
  const rows: string[][] = [];
  for (const [label, filter] of [
    ["all", (_: Outcome) => true],
    ["mcq", (o: Outcome) => o.kind === "mcq"],
    ["json", (o: Outcome) => o.kind === "json"],
  ] as const) {
    const a = summarize(redraftOut.filter(filter));
    const b = summarize(naiveOut.filter(filter));
    rows.push(row(`${label}: naive`, b), row(`${label}: redraft`, a), ratioRow(a, b));
  }
  console.log(table(header, rows));

  const count = (items: readonly Outcome[]) => {
    const m = new Map<string, number>();
    for (const o of items) m.set(`${o.kind} ${o.reason}`, (m.get(`${o.kind} ${o.reason}`) ?? 0) + 1);
    return [...m.entries()]
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
  };
  const naiveAt = (i: number) => naiveOut[i] as Outcome;
  const noCall = redraftOut.filter((o) => o.attempts === 0).length;
  const redraftOnly = redraftOut.filter((o, i) => o.validated && !naiveAt(i).validated);
  const naiveOnly = redraftOut.filter((o, i) => !o.validated && naiveAt(i).validated);
  const naiveHigher = redraftOut.filter((o, i) => naiveAt(i).score > o.score).length;
  console.log(`\nredraft outcomes: ${count(redraftOut)}`);
  console.log(`validated by deterministic repair alone (no model call): ${noCall}`);
  console.log(
    `validated only by redraft: ${redraftOnly.length} (${count(redraftOnly)}); only by naive: ${naiveOnly.length} (redraft stopped with ${count(naiveOnly)})`,
  );
  console.log(`naive ended with a higher score than redraft on ${naiveHigher} drafts`);

  // Ablations: which part of the policy buys what (same corpus, same corrector).
  const ablations: [string, DeploymentConfig][] = [
    [
      "redraft, stuck exit off (stuckAfter = attempts)",
      { loop: { maxAttempts: MAX_ATTEMPTS, stuckAfter: MAX_ATTEMPTS } },
    ],
    [
      "redraft, json repair off",
      { loop: { maxAttempts: MAX_ATTEMPTS }, packs: { json: { settings: { repair: false } } } },
    ],
  ];
  const ablationRows: string[][] = [["redraft (defaults)", ...pair(naiveOut, redraftOut)]];
  for (const [label, config] of ablations) {
    ablationRows.push([label, ...pair(naiveOut, await runPolicy("redraft", cases, MAIN, config))]);
  }
  console.log(`\nablations (all ${cases.length} drafts; each cell naive / variant):`);
  console.log(table(["variant", ...PAIR_HEADER], ablationRows));

  if (SWEEP) {
    const grid: Behaviour[] = [
      { p: 0.6, q: 0, r: 0, m: 0 },
      { p: 0.6, q: 0.3, r: 0, m: 0 },
      { p: 0.6, q: 0, r: 0.25, m: 0 },
      { p: 0.4, q: 0.3, r: 0.25, m: 0.03 },
      { p: 0.8, q: 0.3, r: 0.25, m: 0.03 },
      { p: 0.6, q: 0.3, r: 0.5, m: 0.03 },
      { p: 0.9, q: 0, r: 0.1, m: 0 },
    ];
    const sweepRows: string[][] = [];
    for (const b of grid) {
      const n = await runPolicy("naive", cases, b);
      const r = await runPolicy("redraft", cases, b);
      sweepRows.push([`p=${b.p} q=${b.q} r=${b.r} m=${b.m}`, ...pair(n, r)]);
    }
    console.log(`\nsensitivity to the corrector (all ${cases.length} drafts; each cell naive / redraft):`);
    console.log(table(["corrector", ...PAIR_HEADER], sweepRows));

    const seedRows: string[][] = [];
    for (let k = 1; k <= 4; k++) {
      const seed = SEED + k;
      const other = buildCorpus(seed, DRAFTS);
      const n = await runPolicy("naive", other, MAIN, undefined, seed);
      const r = await runPolicy("redraft", other, MAIN, undefined, seed);
      seedRows.push([`seed ${seed}`, ...pair(n, r)]);
    }
    console.log(`\nother corpora and corrector seeds (main corrector settings; naive / redraft):`);
    console.log(table(["seed", ...PAIR_HEADER], seedRows));
  }
  console.log(`\ntook ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
