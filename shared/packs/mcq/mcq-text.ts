/**
 * Text helpers of the mcq pack. Word lists come from settings, so they are compiled to one
 * regex per list once (see `compileMcqText` in mcq.ts) and every check is a handful of scans.
 */

/** A letter, digit or underscore in any script: what a phrase must not be glued to. */
const WORD_CHAR = "[\\p{L}\\p{N}_]";
const REGEX_SYNTAX = /[.*+?^${}()|[\]\\/]/g;
const WHITESPACE_RUN = /\s+/g;
const EDGE_WHITESPACE = /^\s|\s$/;
const FINAL_STOP = /[.;]+$/;
const TERMINAL_PUNCTUATION = /[.!?]["'”’)\]]*$/;
const ENDS_WITH_QUESTION_MARK = /\?["'”’)\]]*$/;

/**
 * One global regex matching any of `phrases` as whole words (`all` matches "All", not "tall";
 * `100%` and `false-positive` work too); whitespace inside a phrase matches any run of whitespace.
 * Longer phrases are tried first so that "least likely" wins over "least". Undefined for an empty list.
 */
export function compilePhrases(phrases: readonly string[], caseSensitive = false): RegExp | undefined {
  const parts = phrases
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .sort((a, b) => b.length - a.length)
    .map((p) => p.replace(REGEX_SYNTAX, "\\$&").replace(WHITESPACE_RUN, "\\s+"));
  if (parts.length === 0) return undefined;
  return new RegExp(`(?<!${WORD_CHAR})(?:${parts.join("|")})(?!${WORD_CHAR})`, caseSensitive ? "gu" : "giu");
}

/**
 * A regex that matches when the last sentence of a text starts with one of `words`
 * ("… chest pain. Which of the following is the most likely diagnosis").
 */
export function compileLeadIn(words: readonly string[]): RegExp | undefined {
  const parts = words
    .map((w) => w.trim())
    .filter((w) => w.length > 0)
    .map((w) => w.replace(REGEX_SYNTAX, "\\$&").replace(WHITESPACE_RUN, "\\s+"));
  if (parts.length === 0) return undefined;
  return new RegExp(`(?:^|[.!?:]\\s+)(?:${parts.join("|")})(?!${WORD_CHAR})[^.!?]*$`, "iu");
}

/** The distinct phrases `re` finds in `text`, in order of appearance (case-insensitively distinct). */
export function findPhrases(re: RegExp | undefined, text: string): string[] {
  if (!re) return [];
  const matches = text.match(re);
  if (!matches) return [];
  const seen = new Set<string>();
  const found: string[] = [];
  for (const m of matches) {
    const normal = m.toLowerCase().replace(WHITESPACE_RUN, " ");
    if (seen.has(normal)) continue;
    seen.add(normal);
    found.push(m.replace(WHITESPACE_RUN, " "));
  }
  return found;
}

/** Blanks out every phrase `re` matches, so that an exception ("at least") cannot count as a hit ("least"). */
export function blankPhrases(re: RegExp | undefined, text: string): string {
  return re ? text.replace(re, " ") : text;
}

/** Whitespace-separated words; a hyphenated compound ("beta-blocker") is one word. Allocates nothing. */
export function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const space = c === 32 || (c >= 9 && c <= 13) || c === 160 || c === 0x2028 || c === 0x2029;
    if (space) inWord = false;
    else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  return words;
}

/** Case-, whitespace- and final-period-insensitive form of a text, for duplicate detection. */
export function normalizeText(text: string): string {
  return text.trim().replace(FINAL_STOP, "").replace(WHITESPACE_RUN, " ").toLowerCase();
}

/** Whether a string starts or ends with whitespace. */
export function hasEdgeWhitespace(text: string): boolean {
  return EDGE_WHITESPACE.test(text);
}

/** Whether a text ends like a sentence (`.`, `!` or `?`, optionally followed by closing quotes or brackets). */
export function endsLikeSentence(text: string): boolean {
  return TERMINAL_PUNCTUATION.test(text.trimEnd());
}

export function endsWithQuestionMark(text: string): boolean {
  return ENDS_WITH_QUESTION_MARK.test(text.trimEnd());
}

/** `"a"`, `"a" and "b"`, `"a", "b" and "c"`: quoted phrases for a message. */
export function quoteList(items: readonly string[]): string {
  const quoted = items.map((i) => `"${i}"`);
  if (quoted.length <= 1) return quoted.join("");
  return `${quoted.slice(0, -1).join(", ")} and ${quoted[quoted.length - 1]}`;
}

/** Truncates a text for a message, so a 2,000-character option does not flood a report. */
export function excerpt(text: string, max = 60): string {
  const t = text.trim();
  return t.length <= max ? t : `${t.slice(0, max - 1)}…`;
}
