/**
 * Policy benchmark (not a test): the same drafts, the same imperfect corrector and the same budget of
 * model calls, corrected by two hand-written retry loops, by the peer libraries (instructor-js and the
 * Vercel AI SDK, the real packages with fake clients), and by redraft (`correctDraft`).
 *
 *   npm run bench:policy [-- --drafts 500] [-- --seed N] [-- --corrector <profile|module>]... [-- --no-diagnose]
 *   npm run bench:policy -- --smoke          # 24 drafts, every built-in profile (CI)
 *   npm run bench:policy -- --write-docs     # rewrites the policy section of docs/BENCHMARKS.md
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
 * wording, and behaves the same for every policy in the same situation (keyed draws). Its behaviour is a
 * profile (`bench/lib/profiles.ts`): each `--corrector` is a built-in name or the path of a module
 * exporting a `CorrectorProfile`; without one, every built-in profile runs.
 *
 * THE POLICIES, each with at most `--attempts` (3) model calls per draft:
 *   - conversation retry (grows the transcript) and last-answer retry (plain prompt): the bench's own
 *     hand-written loops (`bench/lib/baselines.ts`);
 *   - instructor-js (TOOLS mode, max_retries = budget − 1) and the AI SDK's generateObject (one call,
 *     no validation retry), each as is and with the cleanup a zod user writes (`bench/lib/peers.ts`);
 *   - redraft: `correctDraft` with in-memory stores and maxAttempts = the budget, default stop rules.
 * Prompt caching is priced for all (`bench/lib/prompt-cache.ts`), each with its own breakpoints.
 *
 * SCORING: every delivered draft is judged by the same yardstick, the rules and the schema WITHOUT
 * repair ("validated" = no error-severity violation left), and against its reference ("faithful" =
 * every value of the reference still there, unchanged). The headline is faithful AND valid.
 */

import { correctDraft } from "../local/in-process.js";
import type { Draft } from "../shared/draft.js";
import { priceFor } from "../shared/model/pricing.js";
import type { ModelRequest } from "../shared/model/types.js";
import type { DeploymentConfig } from "../shared/pack.js";
import { PackRegistry } from "../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../shared/store/memory.js";
import { type Baseline, runBaseline } from "./lib/baselines.js";
import { CORRECTOR_MODEL, type CorrectorProfile, SimulatedCorrector } from "./lib/corrector.js";
import { BENCHMARKS_MD, sectionRecorder, writeSections } from "./lib/docs.js";
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
  lostValues,
  studySchema,
} from "./lib/json-corpus.js";
import { cleanQuestion, injectMcqFaults, MCQ_FAULT_IDS, mcqDraft, type Question } from "./lib/mcq-corpus.js";
import { installedVersion, type Peer, runPeer } from "./lib/peers.js";
import { BUILT_IN_PROFILES, loadProfile } from "./lib/profiles.js";
import { MIN_CACHEABLE_TOKENS, PromptCache } from "./lib/prompt-cache.js";
import { Rng } from "./lib/rng.js";
import { fmtInt, table } from "./lib/stats.js";
import { type Outcome, Yardstick } from "./lib/yardstick.js";

// ---- options ---------------------------------------------------------------------------------------

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const args = (name: string): string[] =>
  process.argv.flatMap((a, i) =>
    a === `--${name}` && process.argv[i + 1] ? [process.argv[i + 1] as string] : [],
  );
/** `--smoke`: a tiny corpus, so CI proves the bench still runs end to end in seconds. */
const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
/** The stop-rule variants behind the mcq figures: part of every full run, so the docs carry the evidence. */
const DIAGNOSE = !SMOKE && !process.argv.includes("--no-diagnose");
const SEED = Number(arg("seed", "20260219"));
const DRAFTS = Number(arg("drafts", SMOKE ? "24" : "500"));
const MAX_ATTEMPTS = Number(arg("attempts", "3"));
/** The goal: redraft's faithful-and-valid rate at least the best other policy's, at most this share of its tokens. */
const TOKEN_GOAL = 0.7;

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

type Policy = Baseline | Peer | "redraft";
const POLICIES: readonly Policy[] = [
  "conversation",
  "last-answer",
  "instructor",
  "instructor-cleanup",
  "ai-sdk",
  "ai-sdk-cleanup",
  "redraft",
];
const INSTRUCTOR = installedVersion("@instructor-ai/instructor");
const AI_SDK = installedVersion("ai");
const LABEL: Record<Policy, string> = {
  conversation: "conversation retry (grows the transcript)",
  "last-answer": "last-answer retry (plain prompt)",
  instructor: `instructor-js ${INSTRUCTOR}, TOOLS, max_retries ${MAX_ATTEMPTS - 1}`,
  "instructor-cleanup": `instructor-js ${INSTRUCTOR} + zod cleanup`,
  "ai-sdk": `AI SDK ${AI_SDK} generateObject`,
  "ai-sdk-cleanup": `AI SDK ${AI_SDK} generateObject + zod cleanup`,
  redraft: "redraft correctDraft",
};

async function redraft(
  c: Case,
  model: SimulatedCorrector,
  registry: PackRegistry,
  yardstick: Yardstick,
  promptChars: number[],
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
  const kept = fidelity(result.finalDraft.content, c.reference);
  return {
    draftId: c.draft.id,
    kind: c.draft.kind,
    validated,
    score: report.score,
    fidelity: kept,
    faithful: kept === 1,
    lost: lostValues(result.finalDraft.content, c.reference),
    promptChars,
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
  profile: CorrectorProfile,
  config: DeploymentConfig = { loop: { maxAttempts: MAX_ATTEMPTS } },
): Promise<Outcome[]> {
  const references = new Map(cases.map((c) => [c.draft.id, c.reference]));
  const registry = new PackRegistry(config);
  const yardstick = new Yardstick(new PackRegistry());
  const cache = new PromptCache();
  const out: Outcome[] = [];
  for (const c of cases) {
    const promptChars: number[] = [];
    const record = (request: ModelRequest) =>
      promptChars.push(request.system.reduce((s, b) => s + b.text.length, 0) + request.user.length);
    const model = new SimulatedCorrector(
      profile.create(references, SEED),
      cache,
      policy === "redraft" ? record : undefined,
    );
    if (policy === "redraft") out.push(await redraft(c, model, registry, yardstick, promptChars));
    else if (policy === "conversation" || policy === "last-answer")
      out.push(await runBaseline(policy, c.draft, c.reference, model, yardstick, MAX_ATTEMPTS));
    else out.push(await runPeer(policy, c.draft, c.reference, model, yardstick, MAX_ATTEMPTS));
  }
  return out;
}

// ---- report ----------------------------------------------------------------------------------------

interface Summary {
  n: number;
  good: number;
  validated: number;
  faithful: number;
  calls: number;
  tokens: number;
  tokensPerGood: number;
  costPerGood: number;
  growth: number;
  grown: number;
}

const isGood = (o: Outcome) => o.validated && o.faithful;

function summarize(outcomes: readonly Outcome[]): Summary {
  const n = outcomes.length || 1;
  const sum = (f: (o: Outcome) => number) => outcomes.reduce((s, o) => s + f(o), 0);
  const good = sum((o) => (isGood(o) ? 1 : 0));
  const third = outcomes.filter((o) => o.promptChars.length >= 3);
  return {
    n: outcomes.length,
    good: good / n,
    validated: sum((o) => (o.validated ? 1 : 0)) / n,
    faithful: sum((o) => (o.faithful ? 1 : 0)) / n,
    calls: sum((o) => o.calls) / n,
    tokens: sum((o) => o.tokens) / n,
    tokensPerGood: good ? sum((o) => o.tokens) / good : Number.NaN,
    costPerGood: good ? sum((o) => o.costUsd) / good : Number.NaN,
    growth: third.length
      ? third.reduce((s, o) => s + (o.promptChars[2] as number) / (o.promptChars[0] as number), 0) /
        third.length
      : Number.NaN,
    grown: third.length,
  };
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : Number.NaN);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const usd = (x: number) => (Number.isNaN(x) ? "n/a" : `$${x.toFixed(4)}`);
const int = (x: number) => (Number.isNaN(x) ? "n/a" : fmtInt(x));

/** redraft minus another policy on faithful-and-valid, paired per draft, with two standard errors. */
function paired(red: readonly Outcome[], other: readonly Outcome[]): { points: number; twoSe: number } {
  const d = red.map((o, i) => (isGood(o) ? 1 : 0) - (other[i] && isGood(other[i]) ? 1 : 0));
  const n = d.length || 1;
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, n - 1);
  return { points: mean * 100, twoSe: 2 * Math.sqrt(variance / n) * 100 };
}
const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(1)}`;

type Runs = Record<Policy, Outcome[]>;
const KINDS = ["all", "mcq", "json"] as const;
const ofKind = (xs: readonly Outcome[], kind: (typeof KINDS)[number]) =>
  kind === "all" ? [...xs] : xs.filter((o) => o.kind === kind);

async function runAll(cases: readonly Case[], profile: CorrectorProfile): Promise<Runs> {
  const runs = {} as Runs;
  for (const p of POLICIES) runs[p] = await runPolicy(p, cases, profile);
  return runs;
}

const { date, load, commit, output, say } = sectionRecorder();

/** The per-profile table, the goal check per kind and redraft's stop reasons. */
function report(profile: CorrectorProfile, runs: Runs): void {
  say(`\n== corrector profile "${profile.name}": ${profile.summary}`);
  const rows: string[][] = [];
  for (const kind of KINDS) {
    for (const p of POLICIES) {
      const s = summarize(ofKind(runs[p], kind));
      rows.push([
        `${kind}: ${LABEL[p]}`,
        pct(s.good),
        pct(s.validated),
        pct(s.faithful),
        s.calls.toFixed(2),
        int(s.tokens),
        int(s.tokensPerGood),
        usd(s.costPerGood),
        Number.isNaN(s.growth) ? "–" : `${s.growth.toFixed(2)}× (${s.grown})`,
      ]);
    }
  }
  say(
    table(
      [
        "policy",
        "faithful+valid",
        "validated",
        "faithful",
        "calls/draft",
        "tokens/draft",
        "tokens/faithful+valid",
        "USD/faithful+valid",
        "prompt growth",
      ],
      rows,
    ),
  );
  say(`goal: redraft's faithful+valid ≥ the best other policy's, at ≤ ${TOKEN_GOAL}× its tokens per draft:`);
  for (const kind of KINDS) {
    const red = summarize(ofKind(runs.redraft, kind));
    const others = POLICIES.filter((p) => p !== "redraft");
    const best = others.reduce((a, b) => {
      const sa = summarize(ofKind(runs[a], kind));
      const sb = summarize(ofKind(runs[b], kind));
      return sb.good > sa.good || (sb.good === sa.good && sb.tokens < sa.tokens) ? b : a;
    });
    const sb = summarize(ofKind(runs[best], kind));
    const d = paired(ofKind(runs.redraft, kind), ofKind(runs[best], kind));
    const ratio = red.tokens / sb.tokens;
    const met = red.good >= sb.good && ratio <= TOKEN_GOAL;
    say(
      `  ${kind.padEnd(4)} best other: ${LABEL[best]} ${pct(sb.good)}; redraft ${pct(red.good)} ` +
        `(${signed(d.points)} pts, ±${d.twoSe.toFixed(1)} at 2 s.e.) at ${ratio.toFixed(2)}× its tokens — ${met ? "met" : "NOT met"}`,
    );
  }
  // Valid drafts that lost a value: deleted (a repair, a cleanup or the model removed it) or changed.
  const unfaithful = (p: Policy) => {
    const xs = runs[p].filter((o) => o.validated && !o.faithful);
    const deleted = xs.filter((o) => o.lost.deleted > 0).length;
    const changed = xs.filter((o) => o.lost.changed > 0).length;
    return `${LABEL[p]} ${xs.length} (a value deleted in ${deleted}, changed in ${changed})`;
  };
  say(
    `valid but not faithful: ${unfaithful("redraft")}; ${unfaithful("instructor-cleanup")}; ${unfaithful("last-answer")} ` +
      "(the built-in profiles delete only values the reference lacks, so a deleted value in a valid draft was deleted by a repair or a cleanup)",
  );
  const firstPrompt = (p: Policy, kind: "mcq" | "json") =>
    int(
      mean(ofKind(runs[p], kind).flatMap((o) => (o.promptChars[0] === undefined ? [] : [o.promptChars[0]]))),
    );
  say(
    `first-call prompt, characters (system + messages, tool schema left out), mcq / json: ` +
      (["redraft", "last-answer", "instructor-cleanup"] as const)
        .map((p) => `${LABEL[p]} ${firstPrompt(p, "mcq")} / ${firstPrompt(p, "json")}`)
        .join("; "),
  );
  const reasons = new Map<string, number>();
  for (const o of runs.redraft)
    reasons.set(`${o.kind} ${o.reason}`, (reasons.get(`${o.kind} ${o.reason}`) ?? 0) + 1);
  say(
    `redraft's runs ended: ${[...reasons.entries()]
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ", ",
      )}; validated without a call: ${runs.redraft.filter((o) => o.calls === 0 && o.validated).length}`,
  );
}

/** Where redraft's mcq runs stop: the same drafts with the stuck and circuit-breaker rules relaxed. */
async function diagnose(cases: readonly Case[], profile: CorrectorProfile, runs: Runs): Promise<void> {
  const mcq = cases.filter((c) => c.draft.kind === "mcq");
  const variants: [string, NonNullable<DeploymentConfig["loop"]>][] = [
    ["defaults", {}],
    [`stuckAfter = ${MAX_ATTEMPTS}`, { stuckAfter: MAX_ATTEMPTS }],
    [`breakerAfter = ${MAX_ATTEMPTS}`, { breakerAfter: MAX_ATTEMPTS }],
    ["both", { stuckAfter: MAX_ATTEMPTS, breakerAfter: MAX_ATTEMPTS }],
  ];
  const rows: string[][] = [];
  for (const [label, loop] of variants) {
    const out = await runPolicy("redraft", mcq, profile, { loop: { maxAttempts: MAX_ATTEMPTS, ...loop } });
    const s = summarize(out);
    rows.push([`redraft, ${label}`, pct(s.good), pct(s.validated), s.calls.toFixed(2), int(s.tokens)]);
  }
  const s = summarize(ofKind(runs["last-answer"], "mcq"));
  rows.push([LABEL["last-answer"], pct(s.good), pct(s.validated), s.calls.toFixed(2), int(s.tokens)]);
  say(`mcq stop rules under "${profile.name}":`);
  say(table(["variant", "faithful+valid", "validated", "calls/draft", "tokens/draft"], rows));
}

async function main(): Promise<void> {
  const started = performance.now();
  const specs = args("corrector");
  const profiles = specs.length > 0 ? await Promise.all(specs.map(loadProfile)) : BUILT_IN_PROFILES;
  const cases = buildCorpus(SEED, DRAFTS);
  const yardstick = new Yardstick(new PackRegistry());
  const initialErrors = cases.map((c) => yardstick.check(c.draft).counts.error);
  if (initialErrors.some((e) => e === 0))
    throw new Error("a corpus draft has no error: the injectors are broken");
  const mcqCases = cases.filter((c) => c.draft.kind === "mcq");
  const jsonCases = cases.filter((c) => c.draft.kind === "json");
  const price = priceFor(CORRECTOR_MODEL);
  if (!price) throw new Error(`${CORRECTOR_MODEL} has no price`);

  say("redraft bench:policy");
  say(
    `corpus: ${cases.length} drafts (seed ${SEED}): ${mcqCases.length} mcq with ${mean(mcqCases.map((c) => c.faults.length)).toFixed(2)} injected faults on average, ` +
      `${jsonCases.length} json (${jsonCases.filter((c) => c.faults.every((f) => JSON_REPAIRABLE_FAULT_IDS.includes(f))).length} with repairable faults only); ` +
      `${mean(initialErrors).toFixed(2)} error violations per draft before any repair`,
  );
  say(
    `peers: @instructor-ai/instructor ${INSTRUCTOR} (fake OpenAI-compatible client, TOOLS mode, max_retries ${MAX_ATTEMPTS - 1}, retryAllErrors), ` +
      `ai ${AI_SDK} (generateObject over MockLanguageModelV4, jsonSchema with a validate function; no validation retry); ` +
      `"zod cleanup" = unknown keys of closed objects stripped, "" and out-of-enum values of optional fields dropped, before the first call and on every answer`,
  );
  say(
    `budget: at most ${MAX_ATTEMPTS} model calls per draft for every policy; priced as ${CORRECTOR_MODEL} ($${price.input}/M input, $${price.output}/M output, ` +
      `cache reads $${price.cacheRead}/M, cache writes $${price.cacheWrite}/M); tokens = characters / 4; prefixes under ${MIN_CACHEABLE_TOKENS} tokens are not cached; ` +
      `every policy caches its tool and system prefix, conversation retry also the conversation so far`,
  );
  say(
    "scoring: validated = no error left by the rules and schema WITHOUT repair, on the delivered draft; faithful = every value of the clean " +
      "reference still there, unchanged (a wrong value deleted is a loss unless the reference had none there); faithful+valid = both. " +
      "prompt growth = mean over the drafts that reached a 3rd call (how many in brackets) of its prompt's characters over the 1st call's, tool schema left out",
  );
  say(
    "the corrector answers the content and violations it is sent, not the prompt's wording: loops that send the same ones get the same answers " +
      "(a real model reading its own earlier answers may do better or worse); the profiles are knobs on one simulated model, not measurements of a real one",
  );

  for (const profile of profiles) {
    const runs = await runAll(cases, profile);
    report(profile, runs);
    if (DIAGNOSE) await diagnose(cases, profile, runs);
    console.error(`${profile.name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  if (WRITE_DOCS) {
    writeSections([
      { bench: "policy", command: "npm run bench:policy", output: output.join("\n"), date, load, commit },
    ]);
    console.error(`wrote the policy section of ${BENCHMARKS_MD}`);
  }
  console.error(`took ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
