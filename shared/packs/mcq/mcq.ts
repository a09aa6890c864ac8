import * as z from "zod";
import type { Repair } from "../../draft.js";
import type { Finding, Pack, RepairResult, Rule, RuleContext } from "../../pack.js";
import { toPointer } from "../../pointer.js";
import {
  blankPhrases,
  compileLeadIn,
  compilePhrases,
  countWords,
  endsLikeSentence,
  endsWithQuestionMark,
  excerpt,
  findPhrases,
  hasEdgeWhitespace,
  normalizeText,
  quoteList,
} from "./mcq-text.js";

/**
 * The `mcq` pack: single-best-answer exam questions checked against NBME item-writing practice
 * (seed 004, docs/DESIGN.md §1). Rule ids are a public contract: deployments disable and re-grade rules by them.
 */

// ---------------------------------------------------------------------------------------------
// Content

const McqOptionSchema = z.looseObject({
  key: z.string().min(1),
  text: z.string(),
});
type McqOption = z.infer<typeof McqOptionSchema>;

/**
 * The question as drafted. Lenient wherever a rule reports the problem with a better message
 * (a missing rationale or answer key, an empty stem, too few options). Loose, because the engine
 * checks the shape before any repair: a key the question does not define is removed afterwards by
 * `mcq_unknown_keys`, as a recorded repair, never silently by the schema.
 */
export const McqContentSchema = z.looseObject({
  type: z.string().optional(),
  vignette: z.string().nullish(),
  stem: z.string(),
  options: z.array(McqOptionSchema),
  correct_answer: z.string().nullish(),
  rationale: z.string().nullish(),
});
export type McqContent = z.infer<typeof McqContentSchema>;

// ---------------------------------------------------------------------------------------------
// Settings

const phraseList = z.array(z.string().min(1));

/** A metadata item a question must carry, satisfied by any one of `keys` holding a non-empty value. */
const MetadataRequirementSchema = z
  .object({ label: z.string().min(1), keys: z.array(z.string().min(1)).min(1) })
  .strict();

export const McqSettingsSchema = z
  .object({
    /** Negations in the stem, matched case-insensitively as whole words or phrases. */
    negationPhrases: phraseList,
    /** Negations that count only when written in capitals, the usual NBME emphasis ("NOT", "EXCEPT"). */
    negationCapitalized: phraseList,
    /** Phrases that contain a negation word but are not a negated question ("at least", "false-positive"). */
    negationExceptions: phraseList,
    /** Absolute qualifiers flagged in option texts. */
    absoluteTerms: phraseList,
    /** Phrases that contain an absolute term but belong to another rule or are harmless ("all of the above"). */
    absoluteExceptions: phraseList,
    /** Option texts that are "all/none of the above" style. */
    allNoneOfAbovePhrases: phraseList,
    /** Interrogatives that open a lead-in question when the stem does not end with "?". */
    questionWords: phraseList,
    /** A rationale shorter than this many words fails (0 turns the word check off). */
    rationaleMinWords: z.number().int().min(0),
    /** A rationale shorter than this many characters fails (0 turns the character check off). */
    rationaleMinChars: z.number().int().min(0),
    /** How option length is measured for homogeneity. */
    homogeneityUnit: z.enum(["words", "chars"]),
    /** Longest option / shortest option above this fails homogeneity. */
    maxLengthRatio: z.number().min(1),
    /** An option ending in . ! ? with at least this many words is a full sentence. */
    sentenceMinWords: z.number().int().min(1),
    /** An option with at most this many words is a bare term; terms mixed with sentences fail homogeneity. */
    termMaxWords: z.number().int().min(1),
    minOptions: z.number().int().min(2),
    maxOptions: z.number().int().min(2),
    /** The correct option longer (in characters) than this times the next-longest is conspicuous. */
    correctLongestRatio: z.number().min(1),
    requiredMetadata: z.array(MetadataRequirementSchema),
  })
  .strict()
  .refine((s) => s.minOptions <= s.maxOptions, { message: "minOptions must not exceed maxOptions" });
export type McqSettings = z.infer<typeof McqSettingsSchema>;

export const DEFAULT_MCQ_SETTINGS: McqSettings = {
  negationPhrases: [
    "except",
    "least",
    "is not",
    "are not",
    "was not",
    "were not",
    "does not",
    "do not",
    "would not",
    "should not",
    "could not",
    "cannot",
    "false",
    "incorrect",
    "untrue",
  ],
  negationCapitalized: ["NOT", "EXCEPT", "LEAST", "NEVER", "FALSE", "INCORRECT"],
  negationExceptions: ["at least", "false positive", "false-positive", "false negative", "false-negative"],
  absoluteTerms: [
    "always",
    "never",
    "all",
    "none",
    "only",
    "must",
    "completely",
    "entirely",
    "totally",
    "absolutely",
    "invariably",
    "certainly",
    "definitely",
    "guaranteed",
    "100%",
  ],
  absoluteExceptions: ["all of the above", "none of the above"],
  allNoneOfAbovePhrases: [
    "all of the above",
    "none of the above",
    "all the above",
    "none the above",
    "all of these",
    "none of these",
    "both of the above",
  ],
  questionWords: ["which", "what", "how", "why", "when", "where", "who", "whom", "whose"],
  rationaleMinWords: 8,
  rationaleMinChars: 40,
  homogeneityUnit: "words",
  // Seed 004: "Always administer aspirin" vs "PCI" (3:1) passes, "Administer aspirin and prepare
  // for PCI" vs "Antibiotics" (6:1) fails, the fully corrected options (6:3) pass.
  maxLengthRatio: 4,
  sentenceMinWords: 4,
  termMaxWords: 2,
  minOptions: 3,
  maxOptions: 8,
  correctLongestRatio: 1.5,
  requiredMetadata: [
    { label: "course", keys: ["course_id", "course"] },
    { label: "objective", keys: ["slo_ids", "objective", "objectives"] },
    { label: "difficulty", keys: ["difficulty"] },
    { label: "Bloom level", keys: ["bloom_level"] },
  ],
};

/** The regexes of one settings object. */
interface CompiledText {
  negation: RegExp | undefined;
  negationCaps: RegExp | undefined;
  negationExceptions: RegExp | undefined;
  absolute: RegExp | undefined;
  absoluteExceptions: RegExp | undefined;
  allNone: RegExp | undefined;
  leadIn: RegExp | undefined;
}

// Keyed by settings identity: a resolved pack keeps one settings object for all its drafts,
// so each word list is compiled once per deployment, never per draft.
const compiledBySettings = new WeakMap<McqSettings, CompiledText>();

function compiled(settings: McqSettings): CompiledText {
  let c = compiledBySettings.get(settings);
  if (!c) {
    c = {
      negation: compilePhrases(settings.negationPhrases),
      negationCaps: compilePhrases(settings.negationCapitalized, true),
      negationExceptions: compilePhrases(settings.negationExceptions),
      absolute: compilePhrases(settings.absoluteTerms),
      absoluteExceptions: compilePhrases(settings.absoluteExceptions),
      allNone: compilePhrases(settings.allNoneOfAbovePhrases),
      leadIn: compileLeadIn(settings.questionWords),
    };
    compiledBySettings.set(settings, c);
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Rules

type McqRule = Rule<McqContent, McqSettings>;
type Ctx = RuleContext<McqContent, McqSettings>;

const optionPath = (i: number, field: "key" | "text") => toPointer(["options", i, field]);
const label = (o: McqOption) => `option ${o.key.trim()}`;
const Label = (o: McqOption) => `Option ${o.key.trim()}`;
const isBlank = (s: string | null | undefined): boolean => s == null || s.trim().length === 0;

function correctOptionIndex(content: McqContent): number {
  const answer = content.correct_answer?.trim();
  if (!answer) return -1;
  return content.options.findIndex((o) => o.key.trim() === answer);
}

const negationDetection: McqRule = {
  id: "nbme_negation_detection",
  severity: "error",
  description:
    "The stem must not be negatively phrased (NOT, EXCEPT, LEAST, 'is not', 'false'…): NBME single best answer items ask a positive question.",
  check({ content, settings }) {
    const re = compiled(settings);
    const stem = blankPhrases(re.negationExceptions, content.stem);
    const terms = findPhrases(re.negation, stem);
    for (const t of findPhrases(re.negationCaps, stem)) {
      // "is NOT" already found by the phrase list says all that "NOT" would.
      if (!terms.some((x) => x.toLowerCase().includes(t.toLowerCase()))) terms.push(t);
    }
    if (terms.length === 0) return [];
    return [
      {
        message: `Stem is negatively phrased (${quoteList(terms)})`,
        path: "/stem",
        suggestion:
          'Rephrase the stem as a positive question with one best answer, e.g. "Which of the following is the most appropriate next step in management?", then make the correct answer and rationale fit the new question.',
      },
    ];
  },
};

const absoluteTerms: McqRule = {
  id: "nbme_absolute_terms",
  severity: "error",
  description:
    "Options must not use absolute terms (always, never, all, none, only, must, completely…): they cue test-wise examinees.",
  check({ content, settings }) {
    const re = compiled(settings);
    const findings: Finding[] = [];
    content.options.forEach((o, i) => {
      const terms = findPhrases(re.absolute, blankPhrases(re.absoluteExceptions, o.text));
      if (terms.length === 0) return;
      findings.push({
        message: `${Label(o)} uses the absolute term${terms.length > 1 ? "s" : ""} ${quoteList(terms)}: "${excerpt(o.text)}"`,
        path: optionPath(i, "text"),
        suggestion: `Remove ${quoteList(terms)} from ${label(o)}, or replace it with the specific condition under which the statement holds.`,
      });
    });
    return findings;
  },
};

const rationaleCompleteness: McqRule = {
  id: "ext_rationale_completeness",
  severity: "error",
  description:
    "The rationale must be present and long enough to explain the correct answer and the distractors.",
  check({ content, settings }) {
    const { rationaleMinWords: minWords, rationaleMinChars: minChars } = settings;
    const rationale = content.rationale?.trim() ?? "";
    const words = countWords(rationale);
    const chars = rationale.length;
    const tooShort = words < minWords || chars < minChars;
    if (!tooShort && rationale.length > 0) return [];
    const correct = content.options[correctOptionIndex(content)];
    const answer = correct ? `${label(correct)} ("${excerpt(correct.text, 40)}")` : "the correct option";
    const needed = [minWords > 0 ? `${minWords} words` : "", minChars > 0 ? `${minChars} characters` : ""]
      .filter(Boolean)
      .join(" and ");
    let message: string;
    if (content.rationale == null) message = "Rationale is missing";
    else if (rationale.length === 0) message = "Rationale is empty";
    else
      message = `Rationale is too short (${words} word${words === 1 ? "" : "s"}, ${chars} characters; at least ${needed} required)`;
    return [
      {
        message,
        path: "/rationale",
        suggestion: `Write a rationale${needed ? ` of at least ${needed}` : ""} that explains why ${answer} is the best answer and why each distractor is wrong.`,
      },
    ];
  },
};

const answerHomogeneity: McqRule = {
  id: "nbme_answer_homogeneity",
  severity: "error",
  description:
    "Options must be homogeneous: similar length (longest/shortest within a ratio) and the same form (not bare terms mixed with full sentences).",
  check({ content, settings }) {
    const { options } = content;
    if (options.length < 2) return [];
    const findings: Finding[] = [];
    const unit = settings.homogeneityUnit;
    let longest = 0;
    let shortest = 0;
    const lengths = options.map((o) => (unit === "words" ? countWords(o.text) : o.text.trim().length));
    for (let i = 1; i < lengths.length; i++) {
      if ((lengths[i] ?? 0) > (lengths[longest] ?? 0)) longest = i;
      if ((lengths[i] ?? 0) < (lengths[shortest] ?? 0)) shortest = i;
    }
    const max = lengths[longest] ?? 0;
    const min = lengths[shortest] ?? 0;
    const ratio = min === 0 ? Number.POSITIVE_INFINITY : max / min;
    if (max > 0 && ratio > settings.maxLengthRatio) {
      const long = options[longest] as McqOption;
      const shortKeys = options
        .filter((_, i) => (lengths[i] ?? 0) * settings.maxLengthRatio < max)
        .map((o) => o.key);
      findings.push({
        message: `Option lengths vary too much: ${label(long)} has ${max} ${unit}, ${label(options[shortest] as McqOption)} has ${min} (ratio ${min === 0 ? "∞" : ratio.toFixed(1)}, limit ${settings.maxLengthRatio})`,
        path: "/options",
        suggestion: `Give all options similar length and detail: expand option${shortKeys.length > 1 ? "s" : ""} ${shortKeys.join(", ")} to the level of detail of ${label(long)} ("${excerpt(long.text, 40)}"), or shorten ${label(long)}, so that no option has more than ${settings.maxLengthRatio}× the ${unit} of another.`,
      });
    }
    const sentences: string[] = [];
    const terms: string[] = [];
    for (let i = 0; i < options.length; i++) {
      const o = options[i] as McqOption;
      const words = unit === "words" ? (lengths[i] ?? 0) : countWords(o.text);
      if (words >= settings.sentenceMinWords && endsLikeSentence(o.text)) sentences.push(o.key);
      else if (words <= settings.termMaxWords) terms.push(o.key);
    }
    if (sentences.length > 0 && terms.length > 0) {
      findings.push({
        message: `Options mix forms: ${terms.join(", ")} ${terms.length > 1 ? "are" : "is a"} short term${terms.length > 1 ? "s" : ""}, ${sentences.join(", ")} ${sentences.length > 1 ? "are" : "is a"} full sentence${sentences.length > 1 ? "s" : ""}`,
        path: "/options",
        suggestion:
          "Write every option in the same grammatical form: either all short phrases of the same kind (e.g. all treatments as noun phrases) or all complete statements.",
      });
    }
    return findings;
  },
};

function hasValue(v: unknown): boolean {
  if (v == null) return false;
  if (typeof v === "string") return v.trim().length > 0;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v).length > 0;
  return true;
}

const metadataCompleteness: McqRule = {
  id: "ext_metadata_completeness",
  severity: "warning",
  description:
    "The draft's metadata should name its course, objective (slo_ids or objective), difficulty and Bloom level.",
  check({ draft, settings }) {
    const metadata = draft.metadata ?? {};
    const findings: Finding[] = [];
    for (const req of settings.requiredMetadata) {
      if (req.keys.some((k) => hasValue(metadata[k]))) continue;
      const keys = req.keys.map((k) => `metadata.${k}`).join(" or ");
      findings.push({
        message: `Metadata has no ${req.label} (${keys})`,
        // Metadata lives beside the content, not in it; the path names the draft field to set.
        path: toPointer(["metadata", req.keys[0] as string]),
        suggestion: `Set ${keys} when submitting the draft; a correction cannot change metadata, so a person must add it.`,
      });
    }
    return findings;
  },
};

const answerKeyValid: McqRule = {
  id: "mcq_answer_key_valid",
  severity: "error",
  description: "correct_answer must be the key of exactly one of the options.",
  check({ content }) {
    const keys = content.options.map((o) => o.key.trim());
    const keyList = keys.join(", ");
    const answer = content.correct_answer?.trim() ?? "";
    if (answer.length === 0) {
      return [
        {
          message: "correct_answer is missing",
          path: "/correct_answer",
          suggestion: `Set correct_answer to the key of the best option (one of ${keyList || "the option keys"}).`,
        },
      ];
    }
    if (keys.includes(answer)) return [];
    const byText = content.options.find((o) => normalizeText(o.text) === normalizeText(answer));
    const byCase = content.options.find((o) => o.key.trim().toLowerCase() === answer.toLowerCase());
    let suggestion = `Set correct_answer to one of the option keys (${keyList}).`;
    if (byText)
      suggestion = `correct_answer holds the text of ${label(byText)}; set it to the key "${byText.key.trim()}".`;
    else if (byCase) suggestion = `Keys are case-sensitive: set correct_answer to "${byCase.key.trim()}".`;
    return [
      {
        message: `correct_answer "${excerpt(answer, 40)}" is not the key of any option (keys: ${keyList || "none"})`,
        path: "/correct_answer",
        suggestion,
      },
    ];
  },
};

const duplicateOptions: McqRule = {
  id: "mcq_duplicate_options",
  severity: "error",
  description: "No two options may share a key or a text (ignoring case, whitespace and a final period).",
  check({ content }) {
    const findings: Finding[] = [];
    const keys = new Map<string, number>();
    const texts = new Map<string, number>();
    content.options.forEach((o, i) => {
      const key = o.key.trim();
      const firstKey = keys.get(key);
      if (firstKey === undefined) keys.set(key, i);
      else {
        findings.push({
          message: `Options ${firstKey + 1} and ${i + 1} share the key "${key}"`,
          path: optionPath(i, "key"),
          suggestion: `Give option ${i + 1} a key of its own (e.g. the next unused letter), so that correct_answer names one option.`,
        });
      }
      const text = normalizeText(o.text);
      const firstText = texts.get(text);
      if (firstText === undefined) texts.set(text, i);
      else {
        const first = content.options[firstText] as McqOption;
        findings.push({
          message: `${Label(o)} repeats the text of ${label(first)}: "${excerpt(o.text)}"`,
          path: optionPath(i, "text"),
          suggestion: `Replace ${label(o)} with a different plausible distractor of the same kind as the other options.`,
        });
      }
    });
    return findings;
  },
};

const optionCount: McqRule = {
  id: "mcq_option_count",
  severity: "error",
  description:
    "The number of options must lie within the configured bounds (single best answer items usually have 4-5).",
  check({ content, settings }) {
    const n = content.options.length;
    const { minOptions, maxOptions } = settings;
    if (n < minOptions) {
      return [
        {
          message: `Question has ${n} option${n === 1 ? "" : "s"}, fewer than the minimum of ${minOptions}`,
          path: "/options",
          suggestion: `Add ${minOptions - n} more plausible distractor${minOptions - n === 1 ? "" : "s"} of the same kind as the existing options (each with a new key).`,
        },
      ];
    }
    if (n > maxOptions) {
      return [
        {
          message: `Question has ${n} options, more than the maximum of ${maxOptions}`,
          path: "/options",
          suggestion: `Remove the ${n - maxOptions} least plausible distractor${n - maxOptions === 1 ? "" : "s"}, keeping the correct option and correct_answer consistent.`,
        },
      ];
    }
    return [];
  },
};

const noAllNoneOfAbove: McqRule = {
  id: "mcq_no_all_none_of_above",
  severity: "error",
  description: 'Options must not be "all of the above" or "none of the above".',
  check({ content, settings }) {
    const re = compiled(settings).allNone;
    const findings: Finding[] = [];
    content.options.forEach((o, i) => {
      const found = findPhrases(re, o.text);
      if (found.length === 0) return;
      findings.push({
        message: `${Label(o)} is an "all/none of the above" option: "${excerpt(o.text)}"`,
        path: optionPath(i, "text"),
        suggestion: `Replace ${label(o)} with a specific, plausible distractor; if it was the correct answer, make the single best option correct and update correct_answer.`,
      });
    });
    return findings;
  },
};

const correctNotLongest: McqRule = {
  id: "mcq_correct_not_longest",
  severity: "warning",
  description: "The correct option must not be conspicuously longer than every distractor.",
  check({ content, settings }) {
    const index = correctOptionIndex(content);
    if (index < 0 || content.options.length < 2) return [];
    let nextLongest = 0;
    content.options.forEach((o, i) => {
      if (i !== index) nextLongest = Math.max(nextLongest, o.text.trim().length);
    });
    const correct = content.options[index] as McqOption;
    const length = correct.text.trim().length;
    if (length <= settings.correctLongestRatio * nextLongest) return [];
    return [
      {
        message: `The correct ${label(correct)} has ${length} characters, over ${settings.correctLongestRatio}× the longest distractor (${nextLongest})`,
        path: optionPath(index, "text"),
        suggestion: `Shorten ${label(correct)} or give the distractors comparable detail, so that length does not give the answer away.`,
      },
    ];
  },
};

const stemAsksQuestion: McqRule = {
  id: "mcq_stem_asks_question",
  severity: "error",
  description:
    'The stem must ask a closed question: end with "?" or be a lead-in such as "Which of the following…".',
  check({ content, settings }) {
    const stem = content.stem;
    const suggestion =
      'End the stem with a closed lead-in question that has one best answer, e.g. "Which of the following is the most likely diagnosis?"';
    if (isBlank(stem)) return [{ message: "Stem is empty", path: "/stem", suggestion }];
    if (endsWithQuestionMark(stem)) return [];
    const leadIn = compiled(settings).leadIn;
    if (leadIn?.test(stem.trimEnd())) return [];
    return [
      { message: `Stem does not ask a question: "${excerpt(stem.slice(-80))}"`, path: "/stem", suggestion },
    ];
  },
};

/** The fields a question and each of its options may hold: the content schema's, nothing else. */
const CONTENT_KEYS: ReadonlySet<string> = new Set(Object.keys(McqContentSchema.shape));
const OPTION_KEYS: ReadonlySet<string> = new Set(Object.keys(McqOptionSchema.shape));

interface UnknownKey {
  path: string;
  key: string;
  value: unknown;
  /** What holds the key: the question itself or one of its options. */
  holder: "question" | "option";
}

/** Every key the question or one of its options does not define, in content order. */
function unknownKeys(content: McqContent): UnknownKey[] {
  const found: UnknownKey[] = [];
  for (const [key, value] of Object.entries(content)) {
    if (!CONTENT_KEYS.has(key)) found.push({ path: toPointer([key]), key, value, holder: "question" });
  }
  content.options.forEach((o, i) => {
    for (const [key, value] of Object.entries(o)) {
      if (!OPTION_KEYS.has(key))
        found.push({ path: toPointer(["options", i, key]), key, value, holder: "option" });
    }
  });
  return found;
}

const only = <T extends object>(value: T, allowed: ReadonlySet<string>): T =>
  Object.keys(value).every((k) => allowed.has(k))
    ? value
    : (Object.fromEntries(Object.entries(value).filter(([k]) => allowed.has(k))) as T);

const unknownKeysRule: McqRule = {
  id: "mcq_unknown_keys",
  severity: "error",
  description:
    "The question holds only type, vignette, stem, options, correct_answer and rationale, and each option only key and text; any other key is removed (a recorded repair), so that a correction cannot smuggle content in.",
  check({ content }) {
    return unknownKeys(content).map(({ path, key, holder }) => ({
      message: `"${excerpt(key, 40)}" is not a field of ${holder === "question" ? "a question" : "an option"}`,
      path,
      suggestion: `Remove the field: ${holder === "question" ? "a question holds only type, vignette, stem, options, correct_answer and rationale" : "an option holds only key and text"}.`,
    }));
  },
  repair({ content }: Ctx): RepairResult<McqContent> {
    const found = unknownKeys(content);
    if (found.length === 0) return { content, repairs: [] };
    const repairs = found.map(
      ({ path, key, value, holder }): Repair => ({
        ruleId: "mcq_unknown_keys",
        action: "remove",
        path,
        message: `Removed "${excerpt(key, 40)}": not a field of ${holder === "question" ? "a question" : "an option"}`,
        before: value,
      }),
    );
    const options = content.options.map((o) => only(o, OPTION_KEYS));
    return { content: { ...only(content, CONTENT_KEYS), options }, repairs };
  },
};

/** The string fields the whitespace rule trims, in content order. */
const TRIMMED_FIELDS = ["vignette", "stem", "correct_answer", "rationale"] as const;

function whitespaceRepair(field: string, before: string, after: string): Repair {
  return {
    ruleId: "mcq_whitespace",
    action: "trim",
    path: field,
    message: `Trimmed leading/trailing whitespace of ${field}`,
    before,
    after,
  };
}

const whitespace: McqRule = {
  id: "mcq_whitespace",
  severity: "info",
  description:
    "Leading and trailing whitespace is trimmed from the vignette, stem, answer key, rationale and option keys and texts (a recorded repair).",
  check({ content }) {
    const findings: Finding[] = [];
    for (const f of TRIMMED_FIELDS) {
      const v = content[f];
      if (typeof v === "string" && hasEdgeWhitespace(v)) {
        findings.push({
          message: `${f} has leading or trailing whitespace`,
          path: `/${f}`,
          suggestion: `Trim ${f}.`,
        });
      }
    }
    content.options.forEach((o, i) => {
      for (const f of ["key", "text"] as const) {
        if (!hasEdgeWhitespace(o[f])) continue;
        findings.push({
          message: `Option ${i + 1} ${f} has leading or trailing whitespace`,
          path: optionPath(i, f),
          suggestion: `Trim the ${f} of option ${i + 1}.`,
        });
      }
    });
    return findings;
  },
  repair({ content }: Ctx): RepairResult<McqContent> {
    const repairs: Repair[] = [];
    let next: McqContent | undefined;
    for (const f of TRIMMED_FIELDS) {
      const v = content[f];
      if (typeof v !== "string" || !hasEdgeWhitespace(v)) continue;
      const after = v.trim();
      next ??= { ...content };
      next[f] = after;
      repairs.push(whitespaceRepair(`/${f}`, v, after));
    }
    let options: McqOption[] | undefined;
    content.options.forEach((o, i) => {
      let option: McqOption | undefined;
      for (const f of ["key", "text"] as const) {
        const v = o[f];
        if (!hasEdgeWhitespace(v)) continue;
        const after = v.trim();
        // An all-blank key would break the content schema; leave it for the model to fix.
        if (f === "key" && after.length === 0) continue;
        option ??= { ...o };
        option[f] = after;
        repairs.push(whitespaceRepair(optionPath(i, f), v, after));
      }
      if (option) {
        options ??= [...content.options];
        options[i] = option;
      }
    });
    if (options) {
      next ??= { ...content };
      next.options = options;
    }
    return { content: next ?? content, repairs };
  },
};

// ---------------------------------------------------------------------------------------------
// Pack

const INSTRUCTIONS = `The content is a single-best-answer exam question written to NBME item-writing standards: { type, vignette?, stem, options: [{ key, text }], correct_answer, rationale }.
- The stem ends with a closed, positively phrased question (no NOT, EXCEPT, LEAST, "is not", "false"), e.g. "Which of the following is the most appropriate next step in management?".
- Options (usually 4-5, each with a unique key and unique text) are homogeneous: the same kind of answer, the same grammatical form and similar length; the correct option is not conspicuously the longest.
- Options use no absolute terms (always, never, all, none, only, must, completely) and no "all of the above" / "none of the above".
- correct_answer is the key of exactly one option.
- The rationale explains why the correct option is best and why each distractor is wrong.
Add no field beyond these (any other key is removed); change only what the violations name.`;

/** The same checks one line per rule: a correction prompt sends the lines of the rules a draft fails. */
const CHECKS: Readonly<Record<string, string>> = {
  nbme_negation_detection:
    'The stem is a closed, positively phrased question (no NOT, EXCEPT, LEAST, "is not", "false").',
  mcq_stem_asks_question: "The stem ends with a closed question.",
  nbme_answer_homogeneity:
    "Options are homogeneous: the same kind of answer, grammatical form and similar length.",
  mcq_correct_not_longest: "The correct option is not conspicuously the longest.",
  nbme_absolute_terms: "Options use no absolute terms (always, never, all, none, only, must, completely).",
  mcq_no_all_none_of_above: 'No "all of the above" / "none of the above".',
  mcq_answer_key_valid: "correct_answer is the key of exactly one option.",
  mcq_duplicate_options: "Each option has a unique key and unique text.",
  mcq_option_count: "Usually 4-5 options.",
  ext_rationale_completeness:
    "The rationale explains why the correct option is best and each distractor wrong.",
  mcq_unknown_keys:
    "Add no field beyond { type, vignette?, stem, options: [{ key, text }], correct_answer, rationale }.",
};

const OPTION_JSON_SCHEMA = {
  type: "object",
  properties: {
    key: { type: "string", minLength: 1, description: "Option letter, e.g. A" },
    text: { type: "string", minLength: 1 },
  },
  required: ["key", "text"],
  additionalProperties: false,
};

/** The pack of `kind: "mcq"` drafts: exam questions checked against NBME item-writing practice (seed 004). */
export const mcqPack: Pack<McqContent, McqSettings> = {
  kind: "mcq",
  description:
    "Single-best-answer exam questions (vignette, stem, options, answer key, rationale), NBME style.",
  contentSchema: McqContentSchema,
  settings: DEFAULT_MCQ_SETTINGS,
  settingsSchema: McqSettingsSchema,
  rules: [
    unknownKeysRule,
    whitespace,
    negationDetection,
    absoluteTerms,
    rationaleCompleteness,
    answerHomogeneity,
    metadataCompleteness,
    answerKeyValid,
    duplicateOptions,
    optionCount,
    noAllNoneOfAbove,
    correctNotLongest,
    stemAsksQuestion,
  ],
  instructions: INSTRUCTIONS,
  // With a context.source, the facts of the stem (NBME's stem is the vignette and the lead-in; the
  // facts are in the vignette, the lead-in only asks) and the correct answer's justification (the
  // rationale) must be quoted from the source.
  grounding: { fields: ["/vignette", "/rationale"], mode: "quotes" },
  checks: CHECKS,
  contentJsonSchema() {
    // What the model must return: stricter than McqContentSchema (which tolerates what rules report).
    return {
      type: "object",
      properties: {
        type: { type: "string", description: "Item type, e.g. single_best_answer" },
        vignette: { type: "string", description: "Clinical vignette, if the question has one" },
        stem: { type: "string", minLength: 1, description: "The lead-in question, ending with '?'" },
        options: { type: "array", items: OPTION_JSON_SCHEMA, minItems: 2 },
        correct_answer: { type: "string", minLength: 1, description: "The key of the single best option" },
        rationale: { type: "string", minLength: 1 },
      },
      required: ["stem", "options", "correct_answer", "rationale"],
      additionalProperties: false,
    };
  },
};
