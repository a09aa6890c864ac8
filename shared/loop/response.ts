import * as z from "zod";
import type { ModelResponse } from "../model/types.js";

const CorrectionAnswerSchema = z.looseObject({
  content: z.unknown(),
  analysis: z.string(),
  fixDescription: z.string(),
});
type CorrectionAnswer = { content: unknown; analysis: string; fixDescription: string };

export type ParsedAnswer =
  | { ok: true; answer: CorrectionAnswer }
  | { ok: false; failure: string; analysis: string };

const PROTECTED = ["id", "kind", "metadata"] as const;

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === "") return true;
  if (typeof value === "object") return Object.keys(value as object).length === 0;
  return false;
}

/** A text answer may still hold the JSON (fenced or bare); anything else is a parse failure. */
function fromText(raw: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(raw);
  const text = (fenced?.[1] ?? raw).trim();
  return JSON.parse(text);
}

/**
 * Turns a model answer into a correction, or a failure reason. Never throws: an answer that does
 * not parse, breaks the output schema, is empty, or touches a protected field is a failed attempt.
 */
export function parseCorrectionAnswer(response: ModelResponse): ParsedAnswer {
  // An answer cut off at the output limit is incomplete even when what came back parses.
  if (response.stopReason === "max_tokens") {
    return {
      ok: false,
      failure:
        "the answer was cut off at the output token limit (the draft may be too large to rewrite in one answer)",
      analysis: "",
    };
  }
  let candidate = response.output;
  if (candidate === undefined) {
    if (!response.raw?.trim())
      return { ok: false, failure: "the model returned an empty answer", analysis: "" };
    try {
      candidate = fromText(response.raw);
    } catch {
      return {
        ok: false,
        failure: `the answer is not JSON: ${response.raw.slice(0, 200)}`,
        analysis: "",
      };
    }
  }
  const parsed = CorrectionAnswerSchema.safeParse(candidate);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((i) => `${i.path.join(".") || "(answer)"}: ${i.message}`)
      .join("; ");
    return { ok: false, failure: `the answer breaks the output schema: ${issues}`, analysis: "" };
  }
  const answer = parsed.data;
  for (const field of PROTECTED) {
    if (field in answer) {
      return {
        ok: false,
        failure: `the answer tried to change the protected field "${field}"`,
        analysis: answer.analysis,
      };
    }
  }
  if (isEmpty(answer.content)) {
    return { ok: false, failure: "the answer's content is empty", analysis: answer.analysis };
  }
  return {
    ok: true,
    answer: { content: answer.content, analysis: answer.analysis, fixDescription: answer.fixDescription },
  };
}
