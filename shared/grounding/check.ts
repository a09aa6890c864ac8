/**
 * Grounding: for each grounded field of a draft the judge names the claim and quotes the source
 * that supports it; this module, not the model, decides whether each quote is real
 * (`findQuote`: whitespace and quotation marks forgiven, nothing else) and long enough
 * (MIN_QUOTE_CHARS). A field with no valid quote is `source_unsupported`; a quote that does not
 * occur is `source_misquoted`. Both are errors when the field has no valid quote, and go back to
 * the correction loop with the source around the closest match.
 */
import * as z from "zod";
import type { Violation } from "../draft.js";
import { toPointer, valueAt } from "../pointer.js";
import {
  closestMatch,
  excerptAround,
  findQuote,
  MIN_QUOTE_CHARS,
  type Normalized,
  normalize,
  quoteLength,
  type Span,
} from "./quotes.js";

export const SOURCE_UNSUPPORTED = "source_unsupported";
export const SOURCE_MISQUOTED = "source_misquoted";

/** A pack's (or a deployment's per-kind) grounding setting: which fields need a quote from the source. */
export const GroundingSettingsSchema = z
  .object({
    /** JSON pointers into the content, or "all" for every text and number in it. */
    fields: z.array(
      z.union([z.literal("all"), z.string().regex(/^(\/.*)?$/, 'must be a JSON pointer or "all"')]),
    ),
    mode: z.literal("quotes"),
  })
  .strict();
export type GroundingSettings = z.infer<typeof GroundingSettingsSchema>;

/** What the judge returns per grounded field. */
export const GroundingClaimSchema = z.object({
  path: z.string(),
  claim: z.string().max(4000).default(""),
  quotes: z.array(z.string().max(4000)).max(20).default([]),
});
export type GroundingClaim = z.infer<typeof GroundingClaimSchema>;

/** A grounded field: where it is and what it says. */
export interface GroundedField {
  path: string;
  value: string;
}

const MAX_FIELDS = 200;
/** Quotes checked per field; a claim needs one, a few more are the judge being thorough. */
const MAX_QUOTES_PER_FIELD = 8;

/**
 * The fields a setting names that the content has, as text (a number is grounded by its digits);
 * "all" is every string and number in the content, in document order. At most MAX_FIELDS.
 */
export function groundedFields(content: unknown, settings: GroundingSettings): GroundedField[] {
  const out: GroundedField[] = [];
  const seen = new Set<string>();
  const push = (path: string, value: unknown) => {
    if (seen.has(path) || out.length >= MAX_FIELDS) return;
    if (typeof value === "number" && Number.isFinite(value)) out.push({ path, value: String(value) });
    else if (typeof value === "string" && value.trim()) out.push({ path, value });
    else return;
    seen.add(path);
  };
  for (const field of settings.fields) {
    if (field === "all") {
      const walk = (value: unknown, segments: (string | number)[]) => {
        if (out.length >= MAX_FIELDS) return;
        if (Array.isArray(value)) {
          for (const [i, v] of value.entries()) walk(v, [...segments, i]);
        } else if (value && typeof value === "object")
          for (const [k, v] of Object.entries(value)) walk(v, [...segments, k]);
        else push(toPointer(segments), value);
      };
      walk(content, []);
    } else push(field, valueAt(content, field));
  }
  return out;
}

/** Why a quote does not count. */
type QuoteProblem = "not_in_source" | "quotes_draft" | "too_short";

/** One quote as checked: where it occurs in the source, or why it does not count. */
interface QuoteEvidence {
  text: string;
  start?: number;
  end?: number;
  problem?: QuoteProblem;
}

/** Everything known about one grounded field after the check: the evidence a person sees beside the source. */
export interface FieldEvidence {
  path: string;
  /** The field's value as judged (clipped). */
  value: string;
  claim: string;
  status: "supported" | "unsupported";
  quotes: QuoteEvidence[];
  /** Where the source comes closest to the field (or to its first bad quote), for an unsupported field. */
  match?: Span;
  /** The source around that match: what the corrector is shown. */
  excerpt?: Span & { text: string };
}

export interface GroundingCheck {
  fields: FieldEvidence[];
  violations: Violation[];
}

const clip = (text: string, max = 160) => (text.length > max ? `${text.slice(0, max)}…` : text);

/** Every string and number of a content, one per line: the text a quote of the draft would come from. */
export function contentText(content: unknown): string {
  const out: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === "string") out.push(value);
    else if (typeof value === "number") out.push(String(value));
    else if (Array.isArray(value)) for (const v of value) walk(v);
    else if (value && typeof value === "object") for (const v of Object.values(value)) walk(v);
  };
  walk(content);
  return out.join("\n");
}

/**
 * Checks the judge's claims against the source. `draftText` is the draft's content as text: a quote
 * found there but not in the source is the judge quoting the draft, and says so.
 */
export function checkGrounding(
  source: string,
  fields: readonly GroundedField[],
  claims: readonly GroundingClaim[],
  draftText: string,
  normalizedSource: Normalized = normalize(source),
): GroundingCheck {
  const normalizedDraft = normalize(draftText);
  const result: GroundingCheck = { fields: [], violations: [] };
  for (const field of fields) {
    const mine = claims.filter((c) => c.path === field.path);
    const claim = mine
      .map((c) => c.claim)
      .filter(Boolean)
      .join(" ");
    const quotes: QuoteEvidence[] = [];
    // Each quote is a search of the whole source: a field gets MAX_QUOTES_PER_FIELD, however many are sent.
    for (const text of mine.flatMap((c) => c.quotes).slice(0, MAX_QUOTES_PER_FIELD)) {
      const span = findQuote(normalizedSource, text);
      if (!span) {
        const inDraft = findQuote(normalizedDraft, text) !== undefined;
        quotes.push({ text, problem: inDraft ? "quotes_draft" : "not_in_source" });
      } else if (quoteLength(text) < MIN_QUOTE_CHARS) quotes.push({ text, ...span, problem: "too_short" });
      else quotes.push({ text, ...span });
    }
    const supported = quotes.some((q) => !q.problem);
    const evidence: FieldEvidence = {
      path: field.path,
      value: clip(field.value, 400),
      claim,
      status: supported ? "supported" : "unsupported",
      quotes,
    };
    if (!supported) {
      const firstBad = quotes.find((q) => q.problem !== "too_short")?.text;
      evidence.match = closestMatch(source, firstBad ?? field.value);
      evidence.excerpt = excerptAround(source, evidence.match);
    }
    result.fields.push(evidence);
    const excerptNote = evidence.excerpt
      ? ` The source near the closest match: "${clip(evidence.excerpt.text, 400)}"`
      : "";
    for (const q of quotes) {
      if (q.problem !== "not_in_source" && q.problem !== "quotes_draft") continue;
      result.violations.push({
        ruleId: SOURCE_MISQUOTED,
        severity: supported ? "warning" : "error",
        source: "judge",
        confidence: 1,
        path: field.path,
        message:
          q.problem === "quotes_draft"
            ? `the quote "${clip(q.text)}" is from the draft, not from the source`
            : `the quote "${clip(q.text)}" does not occur in the source`,
        suggestion: `Write ${field.path} as the source says it.${excerptNote}`,
      });
    }
    if (!supported) {
      const why =
        quotes.length === 0
          ? "no quote from the source was given for it"
          : `none of its ${quotes.length} quote(s) occurs in the source with at least ${MIN_QUOTE_CHARS} characters`;
      result.violations.push({
        ruleId: SOURCE_UNSUPPORTED,
        severity: "error",
        source: "judge",
        confidence: 1,
        path: field.path,
        message: `${field.path} ("${clip(field.value, 120)}") is not supported by the source: ${why}`,
        suggestion: `Change ${field.path} to what the source supports, or remove the unsupported claim.${excerptNote}`,
      });
    }
  }
  return result;
}

/** What the outcome event and the loop state carry of a round's grounding: small and bounded. */
export interface GroundingSummary {
  checked: boolean;
  supported: number;
  unsupported: number;
  fields: { path: string; status: FieldEvidence["status"]; quotes: Span[] }[];
}

export const NO_GROUNDING: GroundingSummary = { checked: false, supported: 0, unsupported: 0, fields: [] };

/** The summary of a check: counts, and per field (the first 50) where its valid quotes lie (the first 3). */
export function summarize(fields: readonly FieldEvidence[]): GroundingSummary {
  return {
    checked: true,
    supported: fields.filter((f) => f.status === "supported").length,
    unsupported: fields.filter((f) => f.status === "unsupported").length,
    fields: fields.slice(0, 50).map((f) => ({
      path: f.path,
      status: f.status,
      quotes: f.quotes
        .filter((q) => !q.problem && q.start !== undefined && q.end !== undefined)
        .slice(0, 3)
        .map((q) => ({ start: q.start as number, end: q.end as number })),
    })),
  };
}
