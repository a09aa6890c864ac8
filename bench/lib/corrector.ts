import fastJsonPatch from "fast-json-patch";
import { outputModeFor } from "../../shared/model/messages.js";
import { DEFAULT_ANTHROPIC_MODEL } from "../../shared/model/pricing.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";
import { fromPointer } from "../../shared/pointer.js";
import {
  deepClone,
  fillEmptyOptionals,
  getAt,
  JSON_MODEL_FAULT_IDS,
  JSON_MODEL_FAULTS,
  type Json,
  type JsonObject,
  setAt,
} from "./json-corpus.js";
import { MCQ_FAULT_IDS, MCQ_FAULTS, type Question } from "./mcq-corpus.js";
import { type PromptCache, type PromptSegment, redraftSegments } from "./prompt-cache.js";
import { keyedRng, keyedUniform, Rng } from "./rng.js";

export const CORRECTOR_MODEL = DEFAULT_ANTHROPIC_MODEL;
/** The cheap, weaker model of the two-model corrector (the ladder's first rung). */
export const CHEAP_MODEL = "claude-haiku-5-5";

/** How the simulated corrector behaves; every probability is per answer unless said otherwise. */
export interface Behaviour {
  /** Probability of fixing each flagged violation (with the reference's value). */
  p: number;
  /** Correlation: probability that a violation's outcome copies the previous violation's in the same answer. */
  c: number;
  /** Probability that a violation not fixed is rewritten the model's own way, ignoring the suggestion (still wrong). */
  s: number;
  /** Probability per applied fix of a regression in a field next to it that was fine. */
  g: number;
  /** Probability of seed 001's failure: absent optional pattern fields filled with "". */
  q: number;
  /** Probability of breaking one unflagged thing anywhere. */
  r: number;
  /** Probability of an unusable (text, not tool) answer. */
  m: number;
  /**
   * Rules the model will not fix however often it is told (its own idea of the field wins): a flagged
   * violation of one of them is never fixed, only rewritten its own way (with s) or left as it is.
   */
  stubborn?: readonly string[];
  /** Reads the prompt: p for a violation whose rule the prompt follows with a "Fix:" line. */
  withFix?: number;
  /** Reads the prompt: p falls by `perThousand` per 1,000 prompt tokens (system + user + tool, chars/4) above `above`. */
  decay?: { above: number; perThousand: number };
  /** Probability that an answer that is not constrained comes as text: the JSON in prose or a fence. */
  prose?: number;
  /** Lazy: fixes at most this many violations per answer, the first ones listed. */
  lazy?: number;
  /** Per model (request.model): another behaviour, for the two-model corrector of the ladder. */
  byModel?: Readonly<Record<string, Partial<Behaviour>>>;
}

export const describe = (b: Behaviour) =>
  `p=${b.p} c=${b.c} s=${b.s} g=${b.g} q=${b.q} r=${b.r} m=${b.m}${b.stubborn?.length ? ` stubborn on ${b.stubborn.join(", ")}` : ""}` +
  (b.withFix !== undefined ? ` p with a Fix line=${b.withFix}` : "") +
  (b.decay ? ` p −${b.decay.perThousand} per 1,000 prompt tokens above ${b.decay.above}` : "") +
  (b.prose !== undefined ? ` prose=${b.prose}` : "") +
  (b.lazy !== undefined ? ` fixes at most ${b.lazy} per answer` : "") +
  (b.byModel
    ? ` ${Object.entries(b.byModel)
        .map(
          ([m, o]) =>
            `${m}: ${Object.entries(o)
              .map(([k, v]) => `${k}=${String(v)}`)
              .join(" ")}`,
        )
        .join("; ")}`
    : "");

/** What a corrector answers: the tool input (`{content, analysis, fixDescription}`) or, unusable, text. */
export interface Answer {
  output?: { content: unknown; analysis?: string; fixDescription?: string };
  raw?: string;
  /** The model would answer this in text (prose or a fence) unless the output is constrained. */
  prose?: "prose" | "fence";
}

/**
 * The interface a corrector profile implements, the built-in ones as well as a module passed with
 * `--corrector <module>`: `answer` reads the request's structured `subject` (the content it is asked to
 * fix and the violations flagged in it, by rule id and JSON Pointer), never the prompt's wording, and
 * must answer the same way in the same situation (draw from the seed, the draft id and the attempt),
 * so that every policy meets the same model.
 */
export interface Corrector {
  answer(request: ModelRequest): Answer;
}

/** A model behaviour: what a `--corrector` module exports (as its default export or as `profile`). */
export interface CorrectorProfile {
  /** A short name for the tables. */
  name: string;
  /** What the model gets wrong, in a sentence. */
  summary: string;
  /** A corrector for one policy run: `references` are the clean drafts by draft id. */
  create(references: ReadonlyMap<string, Question | JsonObject>, seed: number): Corrector;
  /**
   * Two models: the peers call `strong`; redraft runs the model ladder `[cheap, strong after 1]`.
   * The corrector answers by `request.model` and each call is priced by the model that answered.
   */
  ladder?: { cheap: string; strong: string };
}

interface Flagged {
  ruleId: string;
  path: string;
}

/** What a request asks, from its structured subject, never from the prompt's wording. */
function readRequest(request: ModelRequest): {
  attempt: number;
  content: unknown;
  flagged: Flagged[];
} {
  const subject = request.subject;
  if (!subject) throw new Error(`the request for ${request.draftId} carries no correction subject`);
  const flagged = subject.violations.map((v) => ({ ruleId: v.ruleId, path: v.path ?? "" }));
  return { attempt: subject.attempt, content: subject.content, flagged };
}

function fixMcq(q: Question, v: Flagged, ref: Question): void {
  const [field, index, sub] = fromPointer(v.path);
  const sameShape = Array.isArray(q.options) && q.options.length === ref.options.length;
  if (field === "options" && (index === undefined || !sameShape)) {
    // A whole-options problem (count, homogeneity, form): the options are rewritten.
    q.options = deepClone(ref.options);
    q.correct_answer = ref.correct_answer;
  } else if (field === "options" && index !== undefined && (sub === "text" || sub === "key")) {
    const option = q.options[Number(index)];
    const fixed = ref.options[Number(index)];
    if (option && fixed) option[sub] = fixed[sub];
  } else if (
    field === "stem" ||
    field === "rationale" ||
    field === "correct_answer" ||
    field === "vignette"
  ) {
    q[field] = ref[field];
  }
}

function fixJson(record: JsonObject, v: Flagged, ref: JsonObject): void {
  const path = fromPointer(v.path);
  if (path.length === 0) return;
  if (v.ruleId === "schema:additionalProperties" || v.ruleId === "schema:unevaluatedProperties") {
    setAt(record, path, undefined);
    return;
  }
  const value = getAt(ref, path);
  setAt(record, path, value === undefined ? undefined : deepClone(value));
}

/** The model's own idea of a fix, not the suggestion's: the field changes and stays wrong. */
function ignoreSuggestionMcq(q: Question, v: Flagged, rng: Rng): Question {
  const fault = MCQ_FAULTS[v.ruleId];
  return fault && Array.isArray(q.options) && v.ruleId !== "mcq_option_count" ? fault(q, rng) : q;
}

function ignoreSuggestionJson(record: JsonObject, v: Flagged): void {
  const path = fromPointer(v.path);
  if (path.length === 0) return;
  const current = getAt(record, path);
  if (typeof current === "number") setAt(record, path, -current - 1);
  else if (typeof current === "string") setAt(record, path, current === "" ? "n/a" : "");
  else if (current === undefined) setAt(record, path, "");
}

/** A regression next to a fix: a sibling value that was right is changed (a violation or a silent loss). */
function regressJson(record: JsonObject, v: Flagged, ref: JsonObject, rng: Rng): void {
  const path = fromPointer(v.path);
  const parentPath = path.slice(0, -1);
  const parent = getAt(record, parentPath);
  if (!parent || typeof parent !== "object" || Array.isArray(parent)) {
    JSON_MODEL_FAULTS[rng.pick(JSON_MODEL_FAULT_IDS)]?.(record, rng);
    return;
  }
  const fine = Object.keys(parent).filter((k) => {
    const value = parent[k];
    return (
      k !== path.at(-1) &&
      (typeof value === "string" || typeof value === "number") &&
      value === getAt(ref, [...parentPath, k])
    );
  });
  if (fine.length === 0) return;
  const key = rng.pick(fine);
  const value = parent[key] as Json;
  parent[key] =
    typeof value === "number" ? value + 1 : String(value).slice(0, Math.ceil(String(value).length / 2));
}

function breakMcq(q: Question, flagged: readonly Flagged[], rng: Rng): Question {
  const flaggedRules = new Set(flagged.map((f) => f.ruleId));
  const kinds = MCQ_FAULT_IDS.filter((id) => id !== "mcq_option_count" && !flaggedRules.has(id));
  if (kinds.length === 0 || !Array.isArray(q.options)) return q;
  return MCQ_FAULTS[rng.pick(kinds)]?.(q, rng) ?? q;
}

type Outcome = "fixed" | "ignored" | "untouched";

/**
 * A model that corrects imperfectly and is not built around any policy's strengths: correlated
 * outcomes within an answer, answers that ignore the suggestion, regressions next to a fix, seed 001's
 * empty strings, unflagged breakage, unusable answers, rules it will not fix. Every draw is keyed by
 * (seed, draftId, attempt, purpose[, violation]), so every policy meets the same behaviour in the same
 * situation.
 */
export class BehaviourCorrector implements Corrector {
  constructor(
    private readonly references: ReadonlyMap<string, Question | JsonObject>,
    private readonly behaviour: Behaviour,
    private readonly seed: number,
  ) {}

  answer(request: ModelRequest): Answer {
    const behaviour = { ...this.behaviour, ...this.behaviour.byModel?.[request.model ?? CORRECTOR_MODEL] };
    const { p: p0, c, s, g, q, r, m } = behaviour;
    const stubborn = new Set(behaviour.stubborn ?? []);
    // What a model reading the prompt does with it: its length, and the "Fix:" lines it names.
    const promptTokens =
      (request.system.reduce((n, b) => n + b.text.length, 0) +
        request.user.length +
        JSON.stringify(request.tool).length) /
      4;
    const decay = behaviour.decay
      ? Math.max(0, promptTokens - behaviour.decay.above) * (behaviour.decay.perThousand / 1000)
      : 0;
    const pFor = (v: Flagged) => {
      const named =
        behaviour.withFix !== undefined &&
        new RegExp(`\\[${v.ruleId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\][^\n]*\n\\s*Fix:`).test(
          request.user,
        );
      return Math.max(0.05, (named ? (behaviour.withFix as number) : p0) - decay);
    };
    const { attempt, content, flagged } = readRequest(request);
    const reference = this.references.get(request.draftId);
    if (!reference) throw new Error(`no reference for ${request.draftId}`);
    const key = [this.seed, request.draftId, attempt] as const;
    if (keyedUniform(...key, "unusable") < m) {
      return {
        raw: "I have corrected the draft as requested; the main problems were in the flagged fields.",
      };
    }
    const isMcq = request.draftId.startsWith("mcq-");
    const rngFor = (...purpose: string[]) => new Rng(keyedRng(...key, ...purpose)() * 2 ** 32);
    let next = deepClone(content) as Question | JsonObject;
    const seen = new Set<string>();
    let previous: Outcome | undefined;
    let fixed = 0;
    for (const v of flagged) {
      const id = `${v.ruleId} ${v.path}`;
      if (seen.has(id)) continue;
      seen.add(id);
      let outcome: Outcome;
      if (previous !== undefined && keyedUniform(...key, "correlated", id) < c) outcome = previous;
      else if (keyedUniform(...key, "fix", id) < pFor(v)) outcome = "fixed";
      else outcome = keyedUniform(...key, "ignore", id) < s ? "ignored" : "untouched";
      if (outcome === "fixed" && stubborn.has(v.ruleId))
        outcome = keyedUniform(...key, "ignore", id) < s ? "ignored" : "untouched";
      if (outcome === "fixed" && behaviour.lazy !== undefined && fixed >= behaviour.lazy)
        outcome = "untouched";
      previous = outcome;
      if (outcome === "fixed") {
        fixed += 1;
        if (isMcq) fixMcq(next as Question, v, reference as Question);
        else fixJson(next as JsonObject, v, reference as JsonObject);
        if (keyedUniform(...key, "regress", id) < g) {
          const rng = rngFor("regress-which", id);
          if (isMcq) next = breakMcq(next as Question, flagged, rng);
          else regressJson(next as JsonObject, v, reference as JsonObject, rng);
        }
      } else if (outcome === "ignored") {
        if (isMcq) next = ignoreSuggestionMcq(next as Question, v, rngFor("ignore-how", id));
        else ignoreSuggestionJson(next as JsonObject, v);
      }
    }
    if (keyedUniform(...key, "break") < r) {
      const rng = rngFor("break-which");
      if (isMcq) next = breakMcq(next as Question, flagged, rng);
      else JSON_MODEL_FAULTS[rng.pick(JSON_MODEL_FAULT_IDS)]?.(next as JsonObject, rng);
    }
    if (!isMcq && keyedUniform(...key, "empty") < q) {
      fillEmptyOptionals(next as JsonObject, rngFor("empty-which"), 0.5);
    }
    const proseDraw = keyedUniform(...key, "prose");
    return {
      output: {
        content: next,
        analysis: `Attempt ${attempt}: ${flagged.length} violations flagged.`,
        fixDescription: `Fixed ${fixed} of them.`,
      },
      ...(behaviour.prose !== undefined &&
        proseDraw < behaviour.prose && { prose: proseDraw < behaviour.prose / 2 ? "prose" : "fence" }),
    };
  }
}

/**
 * The answer as the request asked for it: a patch of the changed values when the request is a
 * field-level one (`subject.open`), the whole content otherwise. The patch is the difference the
 * model's rewrite makes, so a regression next to a fix lands in it, on a locked field.
 */
function shaped(request: ModelRequest, output: NonNullable<Answer["output"]>): Record<string, unknown> {
  const open = request.subject?.open;
  if (!open) return output;
  const ops = fastJsonPatch.compare(request.subject?.content as object, output.content as object);
  const patch = ops.map((o) =>
    o.op === "remove" ? { path: o.path } : { path: o.path, value: (o as { value?: unknown }).value },
  );
  return { patch };
}

/**
 * The model client every policy calls: it counts calls, asks the profile's {@link Corrector} for the
 * answer and prices the usage through a shared {@link PromptCache}: redraft's requests with their own
 * cache breakpoint ({@link complete}), the other policies' with theirs ({@link completeWith}).
 */
export class SimulatedCorrector implements ModelClient {
  readonly provider = "simulated";
  readonly model = CORRECTOR_MODEL;
  calls = 0;

  constructor(
    private readonly corrector: Corrector,
    private readonly cache: PromptCache,
    private readonly onRequest?: (request: ModelRequest) => void,
  ) {}

  async complete(request: ModelRequest): Promise<ModelResponse> {
    return this.completeWith(request, redraftSegments(request));
  }

  async completeWith(request: ModelRequest, segments: readonly PromptSegment[]): Promise<ModelResponse> {
    this.calls += 1;
    this.onRequest?.(request);
    const answer = this.corrector.answer(request);
    const model = request.model ?? CORRECTOR_MODEL;
    // Constrained output (structured.ts) cannot come back as prose: the provider decodes to the schema.
    const mode = outputModeFor(request, model).mode;
    let output = answer.output ? shaped(request, answer.output) : undefined;
    let raw = answer.raw;
    if (output && answer.prose && mode === "tool") {
      const json = JSON.stringify(output);
      raw =
        answer.prose === "fence"
          ? `Here is the corrected draft:\n\n\`\`\`json\n${json}\n\`\`\``
          : `I fixed the flagged fields. ${json} Let me know if anything else needs a change.`;
      output = undefined;
    }
    const outputChars = output ? JSON.stringify(output).length : (raw ?? "").length;
    return {
      ...(output !== undefined && { output }),
      ...(raw !== undefined && { raw }),
      usage: this.cache.usage(segments, outputChars),
      model,
      latencyMs: 0,
      stopReason: output ? "tool_use" : "end_turn",
      outputMode: mode,
    };
  }
}
