/**
 * A long source is split into passages and only the passages most like the draft's grounded fields
 * are sent to the judge: a BM25 ranking over word tokens, written here because it is forty lines and
 * deterministic (same source and draft, same passages, on every machine), with no embedding service.
 */
import { tokens } from "./quotes.js";

/**
 * Characters of source the judge is sent at most, about 6,000 tokens: a source this long or shorter
 * goes whole, a longer one by its best passages up to this total.
 */
export const JUDGE_SOURCE_CHARS = 24_000;
/** A passage's target length: a few paragraphs, long enough to hold a claim and its context. */
const PASSAGE_CHARS = 1_200;

/** One passage of the source: its number and where it lies, `[start, end)` in the source's characters. */
export interface Passage {
  id: number;
  start: number;
  end: number;
}

/** A passage as sent to the judge, with the score it was chosen by (absent when the source went whole). */
export interface PassageSeen extends Passage {
  score?: number;
}

/**
 * Splits at paragraph breaks, then sentence ends, then spaces, so that no passage is much longer
 * than `size`; the passages cover the source end to end, in order.
 */
export function splitPassages(text: string, size = PASSAGE_CHARS): Passage[] {
  const passages: Passage[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const cut = lastBreak(text, start + Math.floor(size / 2), end);
      if (cut > 0) end = cut;
    }
    passages.push({ id: passages.length + 1, start, end });
    start = end;
  }
  return passages;
}

/**
 * Where to end a passage within `[from, to)`: after the last paragraph break, else after the last
 * sentence end, else after the last space; -1 when there is none (a passage is then cut mid-word).
 */
function lastBreak(text: string, from: number, to: number): number {
  let sentence = -1;
  let space = -1;
  for (let i = to - 1; i > from; i--) {
    const ch = text[i] as string;
    if (ch === "\n" && /\n[ \t]*$/.test(text.slice(Math.max(from, i - 8), i))) return i + 1;
    if (!/\s/.test(ch)) continue;
    if (space < 0) space = i + 1;
    if (sentence < 0 && /[.!?]["')\]]?$/.test(text.slice(Math.max(from, i - 2), i))) sentence = i + 1;
  }
  return sentence > 0 ? sentence : space;
}

const K1 = 1.2;
const B = 0.75;

/** BM25 score of each passage against the query's words. */
function bm25(passageTexts: readonly string[], query: readonly string[]): number[] {
  const docs = passageTexts.map((t) => tokens(t));
  const avg = docs.reduce((n, d) => n + d.length, 0) / Math.max(1, docs.length);
  const df = new Map<string, number>();
  for (const d of docs) for (const w of new Set(d)) df.set(w, (df.get(w) ?? 0) + 1);
  const terms = [...new Set(query)];
  return docs.map((d) => {
    const tf = new Map<string, number>();
    for (const w of d) tf.set(w, (tf.get(w) ?? 0) + 1);
    let score = 0;
    for (const term of terms) {
      const f = tf.get(term);
      if (!f) continue;
      const n = df.get(term) ?? 0;
      const idf = Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
      score += (idf * (f * (K1 + 1))) / (f + K1 * (1 - B + (B * d.length) / (avg || 1)));
    }
    return score;
  });
}

/**
 * The passages the judge sees: the whole source when it fits the budget, else the best-ranked
 * passages against `queryTexts` (the grounded fields' values) up to the budget, at least one,
 * returned in source order. Ties go to the earlier passage.
 */
export function choosePassages(
  source: string,
  queryTexts: readonly string[],
  budget = JUDGE_SOURCE_CHARS,
): { passages: PassageSeen[]; split: boolean } {
  if (source.length <= budget) return { passages: [{ id: 1, start: 0, end: source.length }], split: false };
  const all = splitPassages(source);
  const scores = bm25(
    all.map((p) => source.slice(p.start, p.end)),
    queryTexts.flatMap((t) => tokens(t)),
  );
  const ranked = all
    .map((p, i) => ({ ...p, score: Math.round((scores[i] ?? 0) * 1000) / 1000 }))
    .sort((a, b) => b.score - a.score || a.id - b.id);
  const chosen: PassageSeen[] = [];
  let used = 0;
  for (const p of ranked) {
    const length = p.end - p.start;
    if (chosen.length > 0 && used + length > budget) continue;
    chosen.push(p);
    used += length;
  }
  return { passages: chosen.sort((a, b) => a.id - b.id), split: true };
}
