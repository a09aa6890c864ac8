/**
 * Where a quote occurs in a source. Code, not the model, decides whether a quote is real: the only
 * differences forgiven are runs of whitespace and the shape of quotation marks (curly → straight),
 * which a model or a copy-paste changes without changing a word. Nothing else is forgiven: a
 * changed digit, letter, case or punctuation mark is a different quote.
 */

/** A quote shorter than this (in characters, after normalising) cannot carry a claim: "42", "the". */
export const MIN_QUOTE_CHARS = 12;

const SINGLE_QUOTES = /[\u2018\u2019\u201A\u201B\u2032\u2035]/;
const DOUBLE_QUOTES = /[\u201C\u201D\u201E\u201F\u2033\u2036\u00AB\u00BB]/;
const SPACE = /\s/;

/** One character as the comparison sees it. */
function fold(ch: string): string {
  if (SINGLE_QUOTES.test(ch)) return "'";
  if (DOUBLE_QUOTES.test(ch)) return '"';
  return ch;
}

/** A normalised text and, for each of its characters, the offset of the original character it came from. */
export interface Normalized {
  text: string;
  /** `offsets[i]` is where normalised character i starts in the original; one extra entry for the end. */
  offsets: number[];
}

/** Whitespace runs become one space, leading and trailing whitespace goes, quotation marks are straightened. */
export function normalize(original: string): Normalized {
  let text = "";
  const offsets: number[] = [];
  let pendingSpace = -1;
  for (let i = 0; i < original.length; i++) {
    const ch = original[i] as string;
    if (SPACE.test(ch)) {
      if (pendingSpace < 0 && text.length > 0) pendingSpace = i;
      continue;
    }
    if (pendingSpace >= 0) {
      text += " ";
      offsets.push(pendingSpace);
      pendingSpace = -1;
    }
    text += fold(ch);
    offsets.push(i);
  }
  // The end of the last kept character, so that a match's end maps back past it.
  const last = offsets.length ? (offsets[offsets.length - 1] as number) + 1 : 0;
  offsets.push(last);
  return { text, offsets };
}

/** A span of the original source, `[start, end)` in UTF-16 code units. */
export interface Span {
  start: number;
  end: number;
}

/**
 * The first place a quote occurs in the source, as offsets into the original source text, or
 * undefined. `source` is the source normalised once (`normalize`), since many quotes are looked up.
 */
export function findQuote(source: Normalized, quote: string): Span | undefined {
  const found = findNormalized(source, quote);
  // The judge reads the source with "<" written "&lt;" (dataBlock in shared/loop/prompt.ts): a quote
  // that copies that escape is read back as the source had it, which undoes our escaping, no more.
  if (found || !quote.includes("&lt;")) return found;
  return findNormalized(source, quote.replaceAll("&lt;", "<"));
}

function findNormalized(source: Normalized, quote: string): Span | undefined {
  const needle = normalize(quote).text;
  if (!needle) return undefined;
  const at = source.text.indexOf(needle);
  if (at < 0) return undefined;
  const lastChar = source.offsets[at + needle.length - 1] as number;
  return { start: source.offsets[at] as number, end: lastChar + 1 };
}

/** The quote's length as compared (normalised). */
export const quoteLength = (quote: string): number => normalize(quote).text.length;

/** Lower-case word tokens (letters and digits), the unit of every lexical comparison here. */
export function tokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * The window of the source that shares the most distinct words with `text` (a quote that does not
 * occur, or a field's value): what a corrector and a person are shown as "the closest match". Lexical
 * and deterministic; it finds where to look, it never makes a quote count.
 */
export function closestMatch(source: string, text: string, window = 240): Span {
  const wanted = new Set(tokens(text));
  const words = [...source.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => ({
    word: m[0].toLowerCase(),
    start: m.index ?? 0,
    end: (m.index ?? 0) + m[0].length,
  }));
  if (words.length === 0 || wanted.size === 0) return { start: 0, end: Math.min(source.length, window) };
  const span = Math.max(1, tokens(text).length);
  let best = { score: -1, from: 0 };
  // Slide a window of as many words as the text has; ties go to the earliest window.
  const counts = new Map<string, number>();
  let distinct = 0;
  const add = (w: string, d: number) => {
    if (!wanted.has(w)) return;
    const n = (counts.get(w) ?? 0) + d;
    counts.set(w, n);
    if (d > 0 && n === 1) distinct += 1;
    if (d < 0 && n === 0) distinct -= 1;
  };
  for (let i = 0; i < words.length; i++) {
    add((words[i] as { word: string }).word, 1);
    if (i >= span) add((words[i - span] as { word: string }).word, -1);
    const from = Math.max(0, i - span + 1);
    if (distinct > best.score) best = { score: distinct, from };
  }
  const first = words[best.from] as { start: number };
  const lastIndex = Math.min(words.length - 1, best.from + span - 1);
  const last = words[lastIndex] as { end: number };
  return { start: first.start, end: last.end };
}

/** The source around a span, widened to `radius` characters each side and cut at word boundaries. */
export function excerptAround(source: string, span: Span, radius = 200): Span & { text: string } {
  let start = Math.max(0, span.start - radius);
  let end = Math.min(source.length, span.end + radius);
  if (start > 0) {
    const space = source.indexOf(" ", start);
    if (space >= 0 && space < span.start) start = space + 1;
  }
  if (end < source.length) {
    const space = source.lastIndexOf(" ", end);
    if (space > span.end) end = space;
  }
  return { start, end, text: source.slice(start, end) };
}
