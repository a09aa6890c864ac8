/**
 * bench:grounding — does the grounding check catch the values a source does not support, and leave
 * the supported ones alone?
 *
 *   npm run bench:grounding                  # 120 mcq and 120 json drafts, each with its source
 *   npm run bench:grounding -- --smoke       # a dozen drafts: proves the bench runs (CI)
 *   npm run bench:grounding -- --write-docs  # also rewrites its section of docs/BENCHMARKS.md
 *
 * The corpus: the mcq and json corpora of the other benches (bench/lib/mcq-corpus.ts,
 * bench/lib/json-corpus.ts), each draft given a source written from its own facts: every sentence
 * of a grounded mcq field (the pack's default, /vignette and /rationale) and a sentence stating each
 * grounded json field (the fields a deployment would ground: title, conclusion, sample size, centres,
 * condition, ages, first authors, arm sizes, first outcome), placed among filler sentences, so that a
 * field of several sentences is not one run of the source. A third of the sources are padded past the
 * judge's window (JUDGE_SOURCE_CHARS) and go through the passage ranking. Half of the drafts then get
 * one unsupported value: a changed number, a swapped name or an invented finding.
 *
 * The judges are simulated, reading structured facts (which field is supported, by which source
 * sentences, and which passages were sent), never the prompt's wording:
 * - honest: quotes the supporting sentences it was shown, verbatim; no quote for an unsupported field;
 * - loose: decides as honest does but copies carelessly: a third of its quotes with changed
 *   whitespace or curly quotes (forgiven), a fifth paraphrased (a dropped word, a lower-case start);
 * - inventing: claims support for every field, quoting the draft's own value as if it were the source;
 * - near-miss: as honest for supported fields, but for an unsupported one quotes the unchanged source
 *   sentence beside it, a real quote that does not carry the changed claim. It shows what the check
 *   cannot see: it proves a quote exists, not that it supports the claim.
 * Each answer goes through the real parse (`parseJudgeAnswer`) and check (`checkGrounding`); a field
 * counts as flagged when the check reports `source_unsupported` at its path. Precision and recall are
 * of that flag against the injected values. `strict` is the same check with no normalising (a quote
 * must occur byte for byte): the yardstick for what forgiving whitespace and quotation marks buys.
 */
import {
  checkGrounding,
  type GroundedField,
  groundedFields,
  SOURCE_UNSUPPORTED,
} from "../shared/grounding/check.js";
import { choosePassages, JUDGE_SOURCE_CHARS } from "../shared/grounding/passages.js";
import { MIN_QUOTE_CHARS, normalize } from "../shared/grounding/quotes.js";
import { parseJudgeAnswer } from "../shared/loop/judge.js";
import { BENCHMARKS_MD, sectionRecorder, writeSections } from "./lib/docs.js";
import { cleanRecord, getAt, type Json, type JsonObject, setAt } from "./lib/json-corpus.js";
import { cleanQuestion, type Question } from "./lib/mcq-corpus.js";
import { Rng } from "./lib/rng.js";
import { table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const PER_KIND = SMOKE ? 6 : 120;

type Fault = "changed number" | "swapped name" | "invented finding";
const FAULTS: readonly Fault[] = ["changed number", "swapped name", "invented finding"];
type JudgeName = "honest" | "loose" | "inventing" | "near-miss";
const JUDGES: readonly JudgeName[] = ["honest", "loose", "inventing", "near-miss"];

/** One grounded field as the simulated judges know it. */
interface FieldTruth {
  path: string;
  /** The draft's value, as the check reads it. */
  value: string;
  /** The injected fault, when the source does not support the value. */
  fault?: Fault;
  /** The source sentences the field was written from (for a faulty field: as the source still has them). */
  sentences: string[];
}

interface Case {
  kind: "mcq" | "json";
  source: string;
  fields: FieldTruth[];
  content: unknown;
}

// ── Sources ───────────────────────────────────────────────────────────────────────────────────

const FILLER = [
  "The ward round was moved to the afternoon for the rest of the month.",
  "Parking permits for visiting staff are issued at the front desk.",
  "The committee reviewed the audit schedule and approved it without change.",
  "Minutes of the previous meeting were accepted as a true record.",
  "A further review of the rota is planned for the next quarter.",
  "The canteen opens at seven and closes after the evening shift.",
  "Training sessions on the new records system ran for two weeks.",
  "All staff are reminded to complete their annual safety module.",
  "The pharmacy reported no change to its opening hours this year.",
  "Two rooms on the third floor were repainted during the holiday.",
];
const fillerSentence = (rng: Rng, n: number) =>
  `${rng.pick(FILLER).replace(/\.$/, "")} (item ${n}, ${rng.int(2, 90)} entries).`;

/**
 * The source: the fact sentences in order, each after one to three filler sentences, in paragraphs;
 * `long` pads it with filler paragraphs past the judge's window, the facts spread among them.
 */
function writeSource(facts: readonly string[], rng: Rng, long: boolean): string {
  const paragraphs: string[] = [];
  let n = 0;
  for (const fact of facts) {
    const before = Array.from({ length: rng.int(1, 3) }, () => fillerSentence(rng, ++n));
    paragraphs.push([...before, fact].join(" "));
  }
  if (!long) return paragraphs.join("\n\n");
  const padded: string[] = [];
  const target = JUDGE_SOURCE_CHARS * 1.6;
  let length = 0;
  const factEvery = Math.max(1, Math.floor(target / 400 / Math.max(1, paragraphs.length)));
  let next = 0;
  while (length < target || next < paragraphs.length) {
    let p = Array.from({ length: 4 }, () => fillerSentence(rng, ++n)).join(" ");
    if (padded.length % factEvery === 0 && next < paragraphs.length) p = paragraphs[next++] as string;
    padded.push(p);
    length += p.length + 2;
  }
  return padded.join("\n\n");
}

const sentencesOf = (text: string) => text.split(/(?<=[.!?])\s+/).filter((s) => s.trim());

// ── mcq ───────────────────────────────────────────────────────────────────────────────────────

const INVENTED = " A 2019 trial also showed that it halves mortality within a year.";

function mcqCase(i: number, rng: Rng, fault: Fault | undefined, long: boolean): Case {
  const q = cleanQuestion(rng);
  const other = cleanQuestion(rng, (i + 3) % 8);
  const truth = { vignette: sentencesOf(q.vignette), rationale: sentencesOf(q.rationale) };
  const source = writeSource([...truth.vignette, ...truth.rationale], rng, long);
  const draft: Question = { ...q };
  let faulty: "vignette" | "rationale" | undefined;
  if (fault === "changed number") {
    const numbers = [...q.vignette.matchAll(/\d+/g)];
    const m = rng.pick(numbers);
    const changed = String(Number(m[0]) + rng.int(1, 9));
    draft.vignette = q.vignette.slice(0, m.index) + changed + q.vignette.slice((m.index ?? 0) + m[0].length);
    faulty = "vignette";
  } else if (fault === "swapped name") {
    // A term of the rationale replaced by a term of another question's: a drug, a condition, a test.
    const words = [...new Set(q.rationale.match(/\b[A-Za-z][a-z]{6,}\b/g) ?? [])];
    const theirs = (other.rationale.match(/\b[A-Za-z][a-z]{6,}\b/g) ?? []).filter(
      (w) => !q.rationale.includes(w),
    );
    const word = rng.pick(words);
    draft.rationale = q.rationale.replace(word, rng.pick(theirs.length ? theirs : ["clopidogrel"]));
    faulty = "rationale";
  } else if (fault === "invented finding") {
    draft.rationale = `${q.rationale}${INVENTED}`;
    faulty = "rationale";
  }
  const fields: FieldTruth[] = (["vignette", "rationale"] as const).map((key) => ({
    path: `/${key}`,
    value: draft[key],
    sentences: truth[key],
    ...(faulty === key && fault && { fault }),
  }));
  return { kind: "mcq", source, fields, content: draft };
}

// ── json ──────────────────────────────────────────────────────────────────────────────────────

/** The fields a deployment grounding extracted study records would name, with a sentence for each. */
const JSON_FIELDS: readonly { path: string; say: (v: string) => string }[] = [
  { path: "/title", say: (v) => `The report is titled "${v}".` },
  { path: "/conclusion", say: (v) => `The authors conclude that ${v}` },
  { path: "/study/sample_size", say: (v) => `In total ${v} participants were randomized.` },
  { path: "/study/centers", say: (v) => `Recruitment took place at ${v} centres.` },
  { path: "/study/population/condition", say: (v) => `Eligible adults had a diagnosis of ${v}.` },
  { path: "/study/population/age_min", say: (v) => `The youngest eligible age was ${v} years.` },
  { path: "/study/population/age_max", say: (v) => `The oldest eligible age was ${v} years.` },
  { path: "/authors/0/family", say: (v) => `The corresponding author is Dr ${v}.` },
  { path: "/authors/1/family", say: (v) => `The second author is Dr ${v}.` },
  { path: "/arms/0/label", say: (v) => `The first arm received ${v} once daily.` },
  { path: "/arms/0/n", say: (v) => `The first arm enrolled ${v} participants.` },
  { path: "/arms/1/n", say: (v) => `The comparison arm enrolled ${v} participants.` },
  { path: "/outcomes/0/name", say: (v) => `The primary outcome was ${v}.` },
  { path: "/outcomes/0/value", say: (v) => `The primary effect estimate was ${v}.` },
];
const SWAP_NAMES = ["Okafor", "Lindqvist", "Haddad", "Moreau", "Tanaka", "Novak", "Brennan", "Castillo"];

function jsonCase(i: number, rng: Rng, fault: Fault | undefined, long: boolean): Case {
  const record = cleanRecord(rng, i, "small") as JsonObject;
  const drug = String(getAt(record, ["arms", 0, "label"]) ?? "the drug");
  record.conclusion = `${drug} reduced the primary outcome compared with placebo.`;
  const present = JSON_FIELDS.filter((f) => {
    const v = getAt(
      record,
      f.path
        .slice(1)
        .split("/")
        .map((s) => (/^\d+$/.test(s) ? Number(s) : s)),
    );
    return typeof v === "string" || typeof v === "number";
  });
  const segments = (path: string) =>
    path
      .slice(1)
      .split("/")
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  const original = new Map(present.map((f) => [f.path, String(getAt(record, segments(f.path)))]));
  const sentence = new Map(present.map((f) => [f.path, f.say(original.get(f.path) as string)]));
  const source = writeSource(
    present.map((f) => sentence.get(f.path) as string),
    rng,
    long,
  );
  const draft = structuredClone(record);
  let faulty: string | undefined;
  if (fault === "changed number") {
    const numeric = present.filter((f) => typeof getAt(record, segments(f.path)) === "number");
    const f = rng.pick(numeric);
    const v = getAt(record, segments(f.path)) as number;
    setAt(
      draft,
      segments(f.path),
      (Number.isInteger(v) ? v + rng.int(1, 9) : Math.round((v + 0.07) * 100) / 100) as Json,
    );
    faulty = f.path;
  } else if (fault === "swapped name") {
    const v = original.get("/authors/0/family");
    setAt(draft, ["authors", 0, "family"], rng.pick(SWAP_NAMES.filter((n) => n !== v)));
    faulty = "/authors/0/family";
  } else if (fault === "invented finding") {
    draft.conclusion = `${drug} reduced the primary outcome compared with placebo and halved hospital admissions.`;
    faulty = "/conclusion";
  }
  const fields: FieldTruth[] = present.map((f) => ({
    path: f.path,
    value: String(getAt(draft, segments(f.path))),
    sentences: [sentence.get(f.path) as string],
    ...(faulty === f.path && fault && { fault }),
  }));
  return { kind: "json", source, fields, content: draft };
}

// ── Simulated judges ──────────────────────────────────────────────────────────────────────────

/** A careless copy that the check forgives: line breaks and double spaces, curly quotation marks. */
function reformat(quote: string, rng: Rng): string {
  const words = quote.split(" ");
  const at = rng.int(1, Math.max(1, words.length - 1));
  const spaced = [...words.slice(0, at), `\n ${words.slice(at).join("  ")}`].join(" ");
  return spaced.replace(/"([^"]*)"/g, "“$1”").replace(/'/g, "’");
}

/** A copy that changes the words: one dropped, or the first letter's case: not the source any more. */
function paraphrase(quote: string, rng: Rng): string {
  const words = quote.split(" ");
  if (words.length > 4 && rng.chance(0.6)) {
    words.splice(rng.int(1, words.length - 2), 1);
    return words.join(" ");
  }
  return quote.charAt(0) === quote.charAt(0).toLowerCase()
    ? quote.charAt(0).toUpperCase() + quote.slice(1)
    : quote.charAt(0).toLowerCase() + quote.slice(1);
}

/** The judge's grounding answer for one case, from the facts and the passages it was sent. */
function judgeAnswer(name: JudgeName, c: Case, seen: (sentence: string) => boolean, rng: Rng) {
  return c.fields.map((f) => {
    const visible = f.sentences.filter(seen);
    let quotes: string[];
    if (name === "inventing") quotes = [f.value];
    else if (f.fault) quotes = name === "near-miss" ? visible : [];
    else if (name === "loose")
      quotes = visible.map((q) =>
        rng.chance(0.2) ? paraphrase(q, rng) : rng.chance(0.35) ? reformat(q, rng) : q,
      );
    else quotes = visible;
    return { path: f.path, claim: `what ${f.path} states`, quotes };
  });
}

// ── Scoring ───────────────────────────────────────────────────────────────────────────────────

interface Score {
  fields: number;
  tp: number;
  fp: number;
  fn: number;
  misquoted: number;
  normalisedOnly: number;
  strictTp: number;
  strictFp: number;
  strictFn: number;
  byFault: Record<Fault, { caught: number; total: number }>;
}
const emptyScore = (): Score => ({
  fields: 0,
  tp: 0,
  fp: 0,
  fn: 0,
  misquoted: 0,
  normalisedOnly: 0,
  strictTp: 0,
  strictFp: 0,
  strictFn: 0,
  byFault: {
    "changed number": { caught: 0, total: 0 },
    "swapped name": { caught: 0, total: 0 },
    "invented finding": { caught: 0, total: 0 },
  },
});
const ratio = (a: number, b: number) => (b === 0 ? "n/a" : (a / b).toFixed(3));

function main(): void {
  const { date, load, commit, output, say } = sectionRecorder();
  const rng = new Rng(20261128);
  const cases: Case[] = [];
  for (let i = 0; i < PER_KIND; i++) {
    // Half the drafts carry one unsupported value, the three faults in turn; every third source is long.
    const fault = i % 2 === 1 ? FAULTS[Math.floor(i / 2) % 3] : undefined;
    cases.push(mcqCase(i, rng, fault, i % 3 === 2));
    cases.push(jsonCase(i, rng, fault, i % 3 === 2));
  }
  const scores = new Map<string, Score>();
  let split = 0;
  let longest = 0;
  let factSentences = 0;
  let factSentencesSent = 0;
  for (const [index, c] of cases.entries()) {
    const fields: GroundedField[] =
      c.kind === "mcq"
        ? groundedFields(c.content, { fields: ["/vignette", "/rationale"], mode: "quotes" })
        : groundedFields(c.content, { fields: c.fields.map((f) => f.path), mode: "quotes" });
    const { passages, split: wasSplit } = choosePassages(
      c.source,
      fields.map((f) => f.value),
    );
    if (wasSplit) split += 1;
    longest = Math.max(longest, c.source.length);
    const sent = passages.map((p) => c.source.slice(p.start, p.end));
    const seen = (sentence: string) => sent.some((text) => text.includes(sentence));
    for (const f of c.fields)
      for (const s of f.sentences) {
        factSentences += 1;
        if (seen(s)) factSentencesSent += 1;
      }
    const normalizedSource = normalize(c.source);
    for (const name of JUDGES) {
      const judgeRng = new Rng(index * 31 + JUDGES.indexOf(name));
      const verdict = parseJudgeAnswer({
        output: { findings: [], grounding: judgeAnswer(name, c, seen, judgeRng) },
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        model: "simulated",
        latencyMs: 0,
      });
      if (!verdict.ok) throw new Error(`the ${name} judge's answer did not parse: ${verdict.failure}`);
      const check = checkGrounding(
        c.source,
        fields,
        verdict.grounding,
        JSON.stringify(c.content),
        normalizedSource,
      );
      const flagged = new Set(
        check.violations.filter((v) => v.ruleId === SOURCE_UNSUPPORTED).map((v) => v.path),
      );
      const score = scores.get(`${c.kind}|${name}`) ?? emptyScore();
      const all = scores.get(`all|${name}`) ?? emptyScore();
      for (const s of [score, all]) {
        for (const f of c.fields) {
          s.fields += 1;
          const hit = flagged.has(f.path);
          if (hit && f.fault) s.tp += 1;
          else if (hit) s.fp += 1;
          else if (f.fault) s.fn += 1;
          if (f.fault) {
            s.byFault[f.fault].total += 1;
            if (hit) s.byFault[f.fault].caught += 1;
          }
          // The strict yardstick: a quote counts only byte for byte.
          const claim = verdict.grounding.filter((g) => g.path === f.path);
          const strictOk = claim.some((g) =>
            g.quotes.some((q) => q.length >= MIN_QUOTE_CHARS && c.source.includes(q)),
          );
          if (!strictOk && f.fault) s.strictTp += 1;
          else if (!strictOk) s.strictFp += 1;
          else if (f.fault) s.strictFn += 1;
        }
        for (const f of check.fields)
          for (const q of f.quotes) {
            if (q.problem === "not_in_source" || q.problem === "quotes_draft") s.misquoted += 1;
            else if (!q.problem && !c.source.includes(q.text)) s.normalisedOnly += 1;
          }
      }
      scores.set(`${c.kind}|${name}`, score);
      scores.set(`all|${name}`, all);
    }
  }
  const injected = cases.reduce((n, c) => n + c.fields.filter((f) => f.fault).length, 0);
  const fieldCount = cases.reduce((n, c) => n + c.fields.length, 0);
  say(`redraft bench:grounding: precision and recall of ${SOURCE_UNSUPPORTED}, per grounded field`);
  say(
    `corpus: ${PER_KIND} mcq + ${PER_KIND} json drafts, ${fieldCount} grounded fields, ${injected} unsupported values injected (${FAULTS.join(", ")}, in turn)`,
  );
  say(
    `sources: ${split} of ${cases.length} longer than the judge's window (${JUDGE_SOURCE_CHARS} characters; the longest ${longest}), sent as BM25-ranked passages; ${factSentencesSent} of ${factSentences} fact sentences were in the passages sent`,
  );
  say("");
  const rows: string[][] = [];
  for (const kind of ["mcq", "json", "all"])
    for (const name of JUDGES) {
      const s = scores.get(`${kind}|${name}`) ?? emptyScore();
      rows.push([
        name === JUDGES[0] ? kind : "",
        name,
        String(s.fields),
        String(s.tp),
        String(s.fp),
        String(s.fn),
        ratio(s.tp, s.tp + s.fp),
        ratio(s.tp, s.tp + s.fn),
        `${ratio(s.strictTp, s.strictTp + s.strictFp)} / ${ratio(s.strictTp, s.strictTp + s.strictFn)}`,
        String(s.misquoted),
        String(s.normalisedOnly),
      ]);
    }
  say(
    table(
      [
        "kind",
        "judge",
        "fields",
        "TP",
        "FP",
        "FN",
        "precision",
        "recall",
        "strict P / R",
        "misquoted",
        "normalised",
      ],
      rows,
    ),
  );
  say("");
  const faultRows = JUDGES.map((name) => {
    const s = scores.get(`all|${name}`) ?? emptyScore();
    return [name, ...FAULTS.map((f) => `${s.byFault[f].caught}/${s.byFault[f].total}`)];
  });
  say("recall per injected fault (all drafts):");
  say(table(["judge", ...FAULTS], faultRows));
  say("");
  say(
    "TP: an injected value flagged source_unsupported; FP: a supported value flagged; FN: an injected value not flagged. " +
      "strict: the same answers with quotes compared byte for byte (no whitespace or quotation-mark normalising). " +
      "misquoted: quotes that occur nowhere in the source (source_misquoted); normalised: valid quotes that matched only after normalising.",
  );
  if (WRITE_DOCS) {
    writeSections([
      {
        bench: "grounding",
        command: "npm run bench:grounding",
        output: output.join("\n"),
        date,
        load,
        commit,
      },
    ]);
    console.error(`wrote the grounding section of ${BENCHMARKS_MD}`);
  }
}

main();
