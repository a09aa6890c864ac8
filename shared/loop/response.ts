import * as z from "zod";
import type { ModelResponse } from "../model/types.js";
import type { PatchOp } from "./patch.js";

const CorrectionAnswerSchema = z.looseObject({
  content: z.unknown().optional(),
  patch: z
    .array(
      z
        .strictObject({
          op: z.enum(["set", "remove"]).optional(),
          path: z.string(),
          value: z.unknown().optional(),
        })
        // `{path, value}` sets, `{path}` alone removes; an explicit op wins.
        .transform(
          (o): PatchOp =>
            (o.op ?? (o.value === undefined ? "remove" : "set")) === "remove"
              ? { op: "remove", path: o.path }
              : { op: "set", path: o.path, value: o.value },
        ),
    )
    .optional(),
  analysis: z.string().optional(),
  fixDescription: z.string().optional(),
});
/** A whole-draft answer carries `content`; a field-level one carries `patch` (see patch.ts). */
type CorrectionAnswer = {
  content?: unknown;
  patch?: PatchOp[];
  analysis: string;
  fixDescription: string;
};

export type ParsedAnswer =
  | { ok: true; answer: CorrectionAnswer }
  | { ok: false; failure: string; analysis: string };

const PROTECTED = ["id", "kind", "metadata"] as const;

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === "") return true;
  if (typeof value === "object") return Object.keys(value as object).length === 0;
  return false;
}

/**
 * The first balanced `{…}` in `text` that parses as JSON, scanning braces outside strings: a model
 * that wraps its answer in prose ("Here is the fix: {…} Let me know…") or in a fence still answered.
 * Not a regular expression: nested objects and braces inside strings are counted as JSON counts them.
 */
export function extractJsonObject(text: string): unknown {
  for (let start = text.indexOf("{"); start >= 0; start = text.indexOf("{", start + 1)) {
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (ch === "\\") i += 1;
        else if (ch === '"') inString = false;
      } else if (ch === '"') inString = true;
      else if (ch === "{") depth += 1;
      else if (ch === "}") {
        depth -= 1;
        if (depth === 0) {
          try {
            return JSON.parse(text.slice(start, i + 1));
          } catch {
            break; // not JSON from this brace: try the next one
          }
        }
      }
    }
  }
  throw new SyntaxError("no JSON object in the text");
}

/** A text answer may still hold the JSON (whole, fenced, or wrapped in prose); anything else is a parse failure. */
function fromText(raw: string): unknown {
  try {
    return JSON.parse(raw.trim());
  } catch {
    return extractJsonObject(raw);
  }
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
  // A whole-draft answer accounts for itself in words; a patch (patch.ts) is its own account.
  if (answer.patch === undefined || answer.content !== undefined) {
    const missing = (["analysis", "fixDescription"] as const).filter((k) => typeof answer[k] !== "string");
    if (missing.length > 0)
      return {
        ok: false,
        failure: `the answer breaks the output schema: ${missing.map((k) => `${k}: expected string`).join("; ")}`,
        analysis: "",
      };
  }
  for (const field of PROTECTED) {
    if (field in answer) {
      return {
        ok: false,
        failure: `the answer tried to change the protected field "${field}"`,
        analysis: answer.analysis ?? "",
      };
    }
  }
  if (answer.patch !== undefined && answer.content === undefined) {
    if (answer.patch.length === 0)
      return { ok: false, failure: "the answer's patch is empty", analysis: answer.analysis ?? "" };
    return {
      ok: true,
      answer: {
        patch: answer.patch,
        analysis: answer.analysis ?? "",
        fixDescription: answer.fixDescription ?? `patched ${answer.patch.map((o) => o.path).join(", ")}`,
      },
    };
  }
  if (isEmpty(answer.content)) {
    return { ok: false, failure: "the answer's content is empty", analysis: answer.analysis ?? "" };
  }
  return {
    ok: true,
    answer: {
      content: answer.content,
      analysis: answer.analysis ?? "",
      fixDescription: answer.fixDescription ?? "",
    },
  };
}
