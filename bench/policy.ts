/**
 * Policy benchmark (not a test): the same drafts, the same imperfect corrector and the same budget of
 * model calls, corrected by the two loops a user writes without redraft and by redraft (`correctDraft`).
 *
 *   npm run bench:policy
 *   npm run bench:policy -- --drafts 500 --seed 7 --p 0.6 --c 0.3 --s 0.15 --g 0.1 --q 0.3 --r 0.25 --m 0.03 --no-sweep
 *
 * CORPUS (seeded mulberry32, reproducible): `--drafts` drafts (default 500), alternating
 *   - mcq: a clean seed-004-like question with 1–4 distinct injected faults, each breaking one
 *     error-severity rule of the mcq pack;
 *   - json: a clean study record against a ~200-property JSON Schema, with either only faults that
 *     deterministic repair removes (35 %) or 1–3 faults only a correction fixes, in 70 % of those cases
 *     with empty optional pattern fields as well (seed 001).
 *   Each draft keeps its clean version as the reference: what a correct answer contains.
 *
 * THE CORRECTOR (`bench/lib/corrector.ts`) reads each request's structured `subject`, never the prompt's
 * wording, and behaves the same for every policy in the same situation (keyed draws). Its knobs: fix
 * probability p, correlated outcomes c, ignored suggestions s, regressions next to a fix g, seed 001's
 * empty strings q, unflagged breakage r, unusable answers m.
 *
 * THE POLICIES (`bench/lib/baselines.ts` for the two baselines, each with its own prompt):
 *   - conversation retry (instructor, Vercel AI SDK): the conversation grows by every answer and error;
 *   - last-answer retry: the last answer and its errors, a plain prompt;
 *   - redraft: `correctDraft` with in-memory stores and maxAttempts = the budget, default stuck and
 *     circuit-breaker rules.
 * Prompt caching is priced for all three (`bench/lib/prompt-cache.ts`): each policy's own breakpoints,
 * cache reads at the price table's cached-input rate, writes at its cache-write rate.
 *
 * SCORING: every delivered draft is judged by the same yardstick, the rules and the schema WITHOUT
 * repair. "validated" = no error-severity violation left.
 *
 * PROMPT GROWTH: the characters of redraft's correction prompt (system + user, as its real builder
 * makes them through the loop) at attempt 3 over attempt 1, for every draft that reaches attempt 3.
 */

import { correctDraft } from "../local/in-process.js";
import type { Draft } from "../shared/draft.js";
import { embedJson } from "../shared/loop/prompt.js";
import { priceFor } from "../shared/model/pricing.js";
import type { ModelRequest } from "../shared/model/types.js";
import type { DeploymentConfig } from "../shared/pack.js";
import { PackRegistry } from "../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../shared/store/memory.js";
import { type Baseline, type PromptSizes, runBaseline } from "./lib/baselines.js";
import { type Behaviour, CORRECTOR_MODEL, describe, SimulatedCorrector } from "./lib/corrector.js";
import {
  cleanRecord,
  deepClone,
  fidelity,
  JSON_MODEL_FAULT_IDS,
  JSON_MODEL_FAULTS,
  JSON_REPAIRABLE_FAULT_IDS,
  JSON_REPAIRABLE_FAULTS,
  type JsonObject,
  jsonDraft,
  studySchema,
} from "./lib/json-corpus.js";
import { cleanQuestion, injectMcqFaults, MCQ_FAULT_IDS, mcqDraft, type Question } from "./lib/mcq-corpus.js";
import { MIN_CACHEABLE_TOKENS, PromptCache } from "./lib/prompt-cache.js";
import { Rng } from "./lib/rng.js";
import { fmtInt, machine, table } from "./lib/stats.js";
import { type Outcome, Yardstick } from "./lib/yardstick.js";

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
const GROWTH_GOAL = 1.1;

const MAIN: Behaviour = {
  p: Number(arg("p", "0.6")),
  c: Number(arg("c", "0.3")),
  s: Number(arg("s", "0.15")),
  g: Number(arg("g", "0.1")),
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
      if (rng.chance(0.35)) {
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

// ---- policies --------------------------------------------------------------------------------------

type Policy = Baseline | "redraft";
const POLICIES: readonly Policy[] = ["conversation", "last-answer", "redraft"];
const LABEL: Record<Policy, string> = {
  conversation: "conversation retry",
  "last-answer": "last-answer retry",
  redraft: "redraft",
};

async function redraft(
  c: Case,
  model: SimulatedCorrector,
  registry: PackRegistry,
  yardstick: Yardstick,
): Promise<Outcome> {
  let t = Date.parse("2026-02-19T14:00:00Z");
  const result = await correctDraft(c.draft, {
    registry,
    runs: new MemoryRunStore(),
    blobs: new MemoryBlobStore(),
    model,
    clock: () => {
      t += 1000;
      return new Date(t);
    },
    dedupeWindowMs: 0,
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
    draftId: c.draft.id,
    kind: c.draft.kind,
    validated,
    score: report.score,
    fidelity: fidelity(result.finalDraft.content, c.reference),
    calls: model.calls,
    tokens: result.tokens.total,
    costUsd: result.costUsd,
    reason: result.reason ?? "validated",
  };
}

/** Runs the cases through one policy: one prompt cache for the whole run, a fresh corrector per draft. */
async function runPolicy(
  policy: Policy,
  cases: readonly Case[],
  behaviour: Behaviour,
  options: { config?: DeploymentConfig; seed?: number; sizes?: PromptSizes } = {},
): Promise<Outcome[]> {
  const { config = { loop: { maxAttempts: MAX_ATTEMPTS } }, seed = SEED, sizes } = options;
  const references = new Map(cases.map((c) => [c.draft.id, c.reference]));
  const registry = new PackRegistry(config);
  const yardstick = new Yardstick(new PackRegistry());
  const cache = new PromptCache();
  const out: Outcome[] = [];
  for (const c of cases) {
    const record =
      policy === "redraft" && sizes
        ? (request: ModelRequest) => {
            const chars = request.system.reduce((s, b) => s + b.text.length, 0) + request.user.length;
            const attempt = request.subject?.attempt ?? 0;
            sizes.set(request.draftId, (sizes.get(request.draftId) ?? new Map()).set(attempt, chars));
            // The draft's own share of the prompt, as the builder embeds it: what the model changed, not the loop.
            const draft = embedJson(request.subject?.content).length;
            const loopOnly = `${request.draftId} loop-only`;
            sizes.set(loopOnly, (sizes.get(loopOnly) ?? new Map()).set(attempt, chars - draft));
          }
        : undefined;
    const model = new SimulatedCorrector(references, behaviour, seed, cache, record);
    out.push(
      policy === "redraft"
        ? await redraft(c, model, registry, yardstick)
        : await runBaseline(policy, c.draft, c.reference, model, yardstick, MAX_ATTEMPTS, sizes),
    );
  }
  return out;
}

// ---- report ----------------------------------------------------------------------------------------

interface Summary {
  n: number;
  validated: number;
  score: number;
  fidelity: number;
  calls: number;
  tokens: number;
  tokensPerValidated: number;
  costUsd: number;
  costPerValidated: number;
}

function summarize(outcomes: readonly Outcome[]): Summary {
  const n = outcomes.length || 1;
  const sum = (f: (o: Outcome) => number) => outcomes.reduce((s, o) => s + f(o), 0);
  const validated = sum((o) => (o.validated ? 1 : 0));
  return {
    n: outcomes.length,
    validated: validated / n,
    score: sum((o) => o.score) / n,
    fidelity: sum((o) => o.fidelity) / n,
    calls: sum((o) => o.calls) / n,
    tokens: sum((o) => o.tokens) / n,
    tokensPerValidated: validated ? sum((o) => o.tokens) / validated : Number.NaN,
    costUsd: sum((o) => o.costUsd) / n,
    costPerValidated: validated ? sum((o) => o.costUsd) / validated : Number.NaN,
  };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const usd = (x: number) => (Number.isNaN(x) ? "n/a" : `$${x.toFixed(4)}`);
const int = (x: number) => (Number.isNaN(x) ? "n/a" : fmtInt(x));

/**
 * redraft against a baseline on validated rate, paired per draft: a win or a loss only when the mean
 * difference is more than two standard errors from zero, a tie otherwise.
 */
function verdict(
  red: readonly Outcome[],
  base: readonly Outcome[],
): { word: "wins" | "ties" | "loses"; points: number } {
  const d = red.map((o, i) => (o.validated ? 1 : 0) - (base[i]?.validated ? 1 : 0));
  const n = d.length || 1;
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, n - 1);
  const se = Math.sqrt(variance / n);
  const word = Math.abs(mean) <= 2 * se ? "ties" : mean > 0 ? "wins" : "loses";
  return { word, points: mean * 100 };
}
const verdictText = (v: ReturnType<typeof verdict>) =>
  `${v.word} ${v.points >= 0 ? "+" : "−"}${Math.abs(v.points).toFixed(1)}`;

type Runs = Record<Policy, Outcome[]>;
const byKind = (runs: Runs, kind: string | undefined): Runs => {
  const f = (xs: Outcome[]) => (kind ? xs.filter((o) => o.kind === kind) : xs);
  return {
    conversation: f(runs.conversation),
    "last-answer": f(runs["last-answer"]),
    redraft: f(runs.redraft),
  };
};
/** The baseline with the higher validated rate: redraft is compared with the better of the two. */
const betterBaseline = (runs: Runs): Baseline =>
  summarize(runs.conversation).validated >= summarize(runs["last-answer"]).validated
    ? "conversation"
    : "last-answer";

async function runAll(
  cases: readonly Case[],
  behaviour: Behaviour,
  seed = SEED,
  sizes?: Partial<Record<Policy, PromptSizes>>,
): Promise<Runs> {
  const runs = {} as Runs;
  for (const p of POLICIES)
    runs[p] = await runPolicy(p, cases, behaviour, { seed, ...(sizes?.[p] && { sizes: sizes[p] }) });
  return runs;
}

/** Max of attempt-3 / attempt-1 prompt characters over the drafts that reached attempt 3. */
function growth(
  sizes: PromptSizes,
  part: "whole" | "loop-only" = "whole",
): { drafts: number; max: number; worst: string; mean: number; over: string[] } {
  let max = 0;
  const over: string[] = [];
  let worst = "none";
  let total = 0;
  let drafts = 0;
  for (const [key, byAttempt] of sizes) {
    if (key.endsWith(" loop-only") !== (part === "loop-only")) continue;
    const id = key.replace(/ loop-only$/, "");
    const first = byAttempt.get(1);
    const third = byAttempt.get(3);
    if (first === undefined || third === undefined) continue;
    const ratio = third / first;
    drafts += 1;
    total += ratio;
    if (ratio > GROWTH_GOAL) over.push(id);
    if (ratio > max) {
      max = ratio;
      worst = `${id} (${fmtInt(first)} → ${fmtInt(third)} chars)`;
    }
  }
  return { drafts, max, worst, mean: drafts ? total / drafts : 0, over };
}

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
  const price = priceFor(CORRECTOR_MODEL);
  if (!price) throw new Error(`${CORRECTOR_MODEL} has no price`);

  console.log("redraft bench:policy");
  console.log(machine());
  console.log(
    `corpus: ${cases.length} drafts (seed ${SEED}): ${mcqCases.length} mcq with ${mean(mcqCases.map((c) => c.faults.length)).toFixed(2)} injected faults on average, ` +
      `${jsonCases.length} json (${jsonCases.filter((c) => c.faults.every((f) => JSON_REPAIRABLE_FAULT_IDS.includes(f))).length} with repairable faults only); ` +
      `${mean(initialErrors).toFixed(2)} error violations per draft before any repair`,
  );
  console.log(
    `corrector: ${describe(MAIN)} — fixes each flagged violation with p; a violation's outcome copies the previous one's with c; ` +
      `a violation not fixed is rewritten its own way (still wrong) with s; each fix regresses a fine field next to it with g; ` +
      `seed-001 empty strings with q; breaks one unflagged thing with r; unusable answer with m`,
  );
  console.log(
    `budget: ${MAX_ATTEMPTS} model calls per draft for every policy; priced as ${CORRECTOR_MODEL} ($${price.input}/M input, $${price.output}/M output, ` +
      `cache reads $${price.cacheRead}/M, cache writes $${price.cacheWrite}/M); tokens = characters / 4; prefixes under ${MIN_CACHEABLE_TOKENS} tokens are not cached`,
  );
  console.log(
    "caching: conversation retry caches its system prompt and the whole conversation so far; last-answer retry its system prompt; " +
      "redraft its tool and system prefix (its own breakpoint); one cache per policy run, shared across drafts",
  );
  console.log(
    "validated = no error left by the rules and schema WITHOUT repair, on the delivered draft, for every policy",
  );
  console.log(
    "the corrector answers the content and violations it is sent, not the prompt's wording: the two baselines send the same ones, " +
      "so they validate the same drafts and differ only in what they pay (a real model reading its own earlier answers may do better or worse)\n",
  );

  const sizes: Record<Policy, PromptSizes> = {
    conversation: new Map(),
    "last-answer": new Map(),
    redraft: new Map(),
  };
  const main = await runAll(cases, MAIN, SEED, sizes);
  const rows: string[][] = [];
  for (const kind of [undefined, "mcq", "json"]) {
    const runs = byKind(main, kind);
    for (const p of POLICIES) {
      const s = summarize(runs[p]);
      rows.push([
        `${kind ?? "all"}: ${LABEL[p]}`,
        String(s.n),
        pct(s.validated),
        s.calls.toFixed(2),
        int(s.tokens),
        int(s.tokensPerValidated),
        usd(s.costUsd),
        usd(s.costPerValidated),
        s.score.toFixed(4),
        pct(s.fidelity),
      ]);
    }
  }
  console.log(
    table(
      [
        "policy",
        "drafts",
        "validated",
        "calls/draft",
        "tokens/draft",
        "tokens/validated",
        "USD/draft",
        "USD/validated",
        "mean score",
        "fidelity",
      ],
      rows,
    ),
  );

  console.log(
    "\nredraft against each baseline, validated rate, paired per draft (a tie is within 2 standard errors):",
  );
  for (const kind of [undefined, "mcq", "json"]) {
    const runs = byKind(main, kind);
    console.log(
      `  ${(kind ?? "all").padEnd(4)}  vs conversation retry: ${verdictText(verdict(runs.redraft, runs.conversation))} pts; ` +
        `vs last-answer retry: ${verdictText(verdict(runs.redraft, runs["last-answer"]))} pts`,
    );
  }

  const count = (items: readonly Outcome[]) => {
    const m = new Map<string, number>();
    for (const o of items) m.set(`${o.kind} ${o.reason}`, (m.get(`${o.kind} ${o.reason}`) ?? 0) + 1);
    return [...m.entries()]
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
  };
  console.log(`\nredraft outcomes: ${count(main.redraft)}`);
  console.log(
    `validated by deterministic repair alone (no model call): ${main.redraft.filter((o) => o.calls === 0).length}`,
  );

  // Where the json gain comes from: repair of the very fault the corrector injects (q) and the corpus carries.
  const repairOff: DeploymentConfig = {
    loop: { maxAttempts: MAX_ATTEMPTS },
    packs: { json: { settings: { repair: "off" } } },
  };
  const jsonOnly = jsonCases;
  const jsonRuns = byKind(main, "json");
  const base = betterBaseline(jsonRuns);
  const redraftNoRepair = await runPolicy("redraft", jsonOnly, MAIN, { config: repairOff });
  const noQ = { ...MAIN, q: 0 };
  const baseNoQ = await runPolicy(base, jsonOnly, noQ);
  const redraftNoQ = await runPolicy("redraft", jsonOnly, noQ);
  const gain = (summarize(jsonRuns.redraft).validated - summarize(jsonRuns[base]).validated) * 100;
  const gainNoRepair = (summarize(redraftNoRepair).validated - summarize(jsonRuns[base]).validated) * 100;
  const gainNoQ = (summarize(redraftNoQ).validated - summarize(baseNoQ).validated) * 100;
  console.log(
    `\nwhere the json gain comes from (vs ${LABEL[base]}, the better baseline on json): +${gain.toFixed(1)} pts with defaults; ` +
      `${gainNoRepair >= 0 ? "+" : "−"}${Math.abs(gainNoRepair).toFixed(1)} pts with json repair off; ` +
      `${gainNoQ >= 0 ? "+" : "−"}${Math.abs(gainNoQ).toFixed(1)} pts when the corrector never writes empty strings (q=0).`,
  );
  const share = (x: number) =>
    gain > 0 ? `${Math.max(0, Math.min(100, (x / gain) * 100)).toFixed(0)} %` : "n/a";
  console.log(
    `  So ${share(gain - gainNoRepair)} of the json gain is deterministic repair, not correction; ${share(gain - gainNoQ)} of it ` +
      "goes away when the corrector stops injecting the empty optional strings (seed 001's fault) that repair removes: " +
      "that part measures how prone the simulated model is to that one fault, which repair undoes for free. The rest of the repair " +
      `gain is the corpus's own repairable faults (${jsonCases.filter((c) => c.faults.every((f) => JSON_REPAIRABLE_FAULT_IDS.includes(f))).length} json drafts need nothing else).`,
  );

  // Where the mcq loss comes from: redraft's early exits stop runs the baselines carry on with.
  const mcqRuns = byKind(main, "mcq");
  const variants: [string, NonNullable<DeploymentConfig["loop"]>][] = [
    [`stuck exit off (stuckAfter = ${MAX_ATTEMPTS})`, { stuckAfter: MAX_ATTEMPTS }],
    [`breaker later (breakerAfter = ${MAX_ATTEMPTS})`, { breakerAfter: MAX_ATTEMPTS }],
    ["both", { stuckAfter: MAX_ATTEMPTS, breakerAfter: MAX_ATTEMPTS }],
  ];
  const variantRows: string[][] = [];
  for (const [label, loop] of [["defaults", {}] as const, ...variants]) {
    const runs = (
      await runPolicy("redraft", mcqCases, MAIN, { config: { loop: { maxAttempts: MAX_ATTEMPTS, ...loop } } })
    ).filter((o) => o.kind === "mcq");
    const s = summarize(runs);
    variantRows.push([
      `redraft, ${label}`,
      pct(s.validated),
      s.calls.toFixed(2),
      int(s.tokensPerValidated),
      verdictText(verdict(runs, mcqRuns["last-answer"])),
    ]);
  }
  console.log("\nwhere the mcq loss comes from (mcq drafts only; verdict vs last-answer retry, pts):");
  console.log(
    table(["variant", "validated", "calls/draft", "tokens/validated", "vs last-answer"], variantRows),
  );

  const g = growth(sizes.redraft);
  const gc = growth(sizes.conversation);
  console.log(
    `\nprompt growth, attempt 3 / attempt 1 (system + user characters; the tool schema, the same at every attempt, left out):`,
  );
  console.log(
    `  redraft: ${g.drafts} drafts reach attempt 3; max ${g.max.toFixed(3)}× (${g.worst}), mean ${g.mean.toFixed(3)}× — goal ≤ ${GROWTH_GOAL}×: ${g.drafts === 0 ? "no draft reached attempt 3" : g.max <= GROWTH_GOAL ? "met" : "NOT met"}`,
  );
  const gl = growth(sizes.redraft, "loop-only");
  console.log(
    `  redraft without the draft's own content (which the model changes, e.g. options added): max ${gl.max.toFixed(3)}× (${gl.worst}), mean ${gl.mean.toFixed(3)}× — ` +
      `what the loop itself adds: the attempt line, the violations and the notes on earlier attempts — goal ≤ ${GROWTH_GOAL}×: ${gl.max <= GROWTH_GOAL ? "met" : "NOT met"}`,
  );
  if (g.over.length > 0) {
    const loopOver = new Set(gl.over);
    console.log(
      `  over ${GROWTH_GOAL}× as a whole: ${g.over.length} of ${g.drafts} drafts (${g.over.join(", ")}); the loop's own part is over it on ${g.over.filter((id) => loopOver.has(id)).length} of them, ` +
        "so the rest is the draft itself growing (the model's answer is the next attempt's best draft: options or fields it added)",
    );
  }
  console.log(
    `  conversation retry, for contrast: ${gc.drafts} drafts; max ${gc.max.toFixed(3)}×, mean ${gc.mean.toFixed(3)}×`,
  );

  if (SWEEP) {
    const grid: Behaviour[] = [
      MAIN,
      { ...MAIN, q: 0 },
      { ...MAIN, r: 0, g: 0 },
      { ...MAIN, c: 0 },
      { ...MAIN, c: 0.7 },
      { ...MAIN, s: 0 },
      { ...MAIN, s: 0.4 },
      { ...MAIN, g: 0.3 },
      { ...MAIN, r: 0.5 },
      { ...MAIN, p: 0.4 },
      { ...MAIN, p: 0.8 },
      { ...MAIN, p: 0.9, r: 0.1, g: 0.05, q: 0 },
      { ...MAIN, m: 0.15 },
    ];
    const tally: Record<string, Record<string, number>> = {};
    const sweepRows: string[][] = [];
    for (const b of grid) {
      const runs = b === MAIN ? main : await runAll(cases, b);
      const s = POLICIES.map((p) => summarize(runs[p]));
      const cells: string[] = [];
      for (const kind of ["all", "mcq", "json"]) {
        const k = byKind(runs, kind === "all" ? undefined : kind);
        const v = verdict(k.redraft, k[betterBaseline(k)]);
        const counts = tally[kind] ?? {};
        counts[v.word] = (counts[v.word] ?? 0) + 1;
        tally[kind] = counts;
        cells.push(verdictText(v));
      }
      sweepRows.push([
        describe(b),
        s.map((x) => pct(x.validated)).join(" / "),
        s.map((x) => int(x.tokensPerValidated)).join(" / "),
        s.map((x) => usd(x.costPerValidated)).join(" / "),
        ...cells,
      ]);
    }
    console.log(
      `\nsweep over the corrector (all ${cases.length} drafts; cells conversation / last-answer / redraft; verdicts: redraft vs the better baseline, pts):`,
    );
    console.log(
      table(["corrector", "validated", "tokens/validated", "USD/validated", "all", "mcq", "json"], sweepRows),
    );
    for (const kind of ["all", "mcq", "json"]) {
      const t = tally[kind] ?? {};
      console.log(
        `  ${kind.padEnd(4)}: redraft wins ${t.wins ?? 0}, ties ${t.ties ?? 0}, loses ${t.loses ?? 0} of ${grid.length} settings`,
      );
    }

    const seedRows: string[][] = [];
    for (let k = 1; k <= 3; k++) {
      const seed = SEED + k;
      const runs = await runAll(buildCorpus(seed, DRAFTS), MAIN, seed);
      const s = POLICIES.map((p) => summarize(runs[p]));
      const cells = ["all", "mcq", "json"].map((kind) => {
        const r = byKind(runs, kind === "all" ? undefined : kind);
        return verdictText(verdict(r.redraft, r[betterBaseline(r)]));
      });
      seedRows.push([
        `seed ${seed}`,
        s.map((x) => pct(x.validated)).join(" / "),
        s.map((x) => int(x.tokensPerValidated)).join(" / "),
        ...cells,
      ]);
    }
    console.log(
      `\nother corpora and corrector seeds (main corrector; conversation / last-answer / redraft):`,
    );
    console.log(table(["seed", "validated", "tokens/validated", "all", "mcq", "json"], seedRows));
  }
  console.error(`took ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
