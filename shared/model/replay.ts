import { readFileSync } from "node:fs";
import * as z from "zod";
import {
  CassetteExhaustedError,
  type ModelError,
  ModelNotConfiguredError,
  ModelOverloadedError,
  ModelRateLimitedError,
  ModelRequestFailedError,
  ModelTimeoutError,
} from "../errors.js";
import { decodeText } from "../text-encoding.js";
import {
  type ModelClient,
  type ModelPurpose,
  ModelPurposeSchema,
  type ModelRequest,
  type ModelResponse,
  type TokenUsage,
} from "./types.js";

/** Token usage as the Messages API reports it, so a cassette can be written from real answers. */
export const CassetteUsageSchema = z.strictObject({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  cache_read_input_tokens: z.number().int().nonnegative().optional(),
  cache_creation_input_tokens: z.number().int().nonnegative().optional(),
});
export type CassetteUsage = z.infer<typeof CassetteUsageSchema>;

const answerFields = {
  draftId: z.string().min(1),
  purpose: ModelPurposeSchema,
  usage: CassetteUsageSchema.optional(),
  model: z.string().min(1).optional(),
};

/** The model answered through the tool; `raw` is text it wrote besides the tool call, if any. */
export const CassetteOutputEntrySchema = z.strictObject({
  ...answerFields,
  output: z.unknown(),
  raw: z.string().optional(),
});

/** The model answered with text only (no tool call): the loop counts it as a failed attempt. */
export const CassetteRawEntrySchema = z.strictObject({ ...answerFields, raw: z.string() });

/** The kinds of failure a cassette can stage; the first three are the transient, retried ones. */
export const CassetteErrorKindSchema = z.enum(["rate_limited", "overloaded", "timeout", "failed"]);
export type CassetteErrorKind = z.infer<typeof CassetteErrorKindSchema>;

/** The call fails with the named error, as a real provider would. */
export const CassetteErrorEntrySchema = z.strictObject({
  draftId: z.string().min(1),
  purpose: ModelPurposeSchema,
  error: CassetteErrorKindSchema,
  message: z.string().optional(),
});

export const CassetteEntrySchema = z.union([
  CassetteErrorEntrySchema,
  CassetteRawEntrySchema,
  CassetteOutputEntrySchema,
]);
export type CassetteEntry = z.infer<typeof CassetteEntrySchema>;

/**
 * A recorded (or hand-written) set of model answers. Answers are matched by draft and purpose and
 * used in the order listed. Version 1 is the contract between the recorder, fixtures and replay.
 */
export const CassetteSchema = z.strictObject({
  version: z.literal(1),
  note: z.string().optional(),
  responses: z.array(CassetteEntrySchema),
});
export type Cassette = z.infer<typeof CassetteSchema>;

/** The entry schema an entry's own keys ask for, so an error can say what is wrong with it. */
function intendedSchema(entry: unknown) {
  if (typeof entry !== "object" || entry === null) return undefined;
  if ("error" in entry) return CassetteErrorEntrySchema;
  if ("output" in entry) return CassetteOutputEntrySchema;
  if ("raw" in entry) return CassetteRawEntrySchema;
  return undefined;
}

/** `usage.input: unknown key`, `purpose: invalid option: …`: each problem on one line, by field. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .flatMap((issue) => {
      const path = issue.path
        .map((p, i) => (typeof p === "number" ? `[${p}]` : `${i > 0 ? "." : ""}${String(p)}`))
        .join("");
      if (issue.code === "unrecognized_keys")
        return issue.keys.map((key) => `${path ? `${path}.` : ""}${key}: unknown key`);
      const message =
        issue.code === "invalid_type" && issue.message.endsWith("received undefined")
          ? `missing (expected ${issue.expected})`
          : issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
      return [`${path || "(cassette)"}: ${message}`];
    })
    .join("; ");
}

function describeEntry(entry: unknown, index: number): string {
  const { draftId, purpose } = (typeof entry === "object" && entry !== null ? entry : {}) as Record<
    string,
    unknown
  >;
  const who =
    typeof draftId === "string"
      ? ` (draft "${draftId}"${typeof purpose === "string" ? `, ${purpose}` : ""})`
      : "";
  const schema = intendedSchema(entry);
  if (schema === undefined) return `responses[${index}]${who}: needs one of "output", "raw" or "error"`;
  const result = schema.safeParse(entry);
  return `responses[${index}]${who}: ${result.success ? "invalid" : describeIssues(result.error)}`;
}

/**
 * What is wrong with a cassette, on one line naming the first bad entry and its fields
 * (`responses[3] (draft "q1", correct): purpose: invalid option: …`), or undefined when it is valid.
 */
export function cassetteProblem(value: unknown): string | undefined {
  const result = CassetteSchema.safeParse(value);
  if (result.success) return undefined;
  const entryIssue = result.error.issues.find(
    (issue) => issue.path[0] === "responses" && typeof issue.path[1] === "number",
  );
  const responses =
    typeof value === "object" && value !== null ? (value as { responses?: unknown }).responses : [];
  return entryIssue !== undefined && Array.isArray(responses)
    ? describeEntry(responses[entryIssue.path[1] as number], entryIssue.path[1] as number)
    : describeIssues(result.error);
}

/**
 * Validates a cassette. Throws ModelNotConfiguredError naming the first bad entry, since a replay
 * client with a broken cassette is a model that cannot be used.
 */
export function parseCassette(value: unknown, source = "cassette"): Cassette {
  const result = CassetteSchema.safeParse(value);
  if (result.success) return result.data;
  throw new ModelNotConfiguredError(`invalid replay ${source}: ${cassetteProblem(value)}`);
}

/** The cassette's snake_case usage as TokenUsage; an entry without usage used no tokens. */
export function usageFromCassette(usage: CassetteUsage | undefined): TokenUsage {
  return {
    input: usage?.input_tokens ?? 0,
    output: usage?.output_tokens ?? 0,
    cacheRead: usage?.cache_read_input_tokens ?? 0,
    cacheWrite: usage?.cache_creation_input_tokens ?? 0,
  };
}

/** TokenUsage in the cassette's snake_case form. */
export function usageToCassette(usage: TokenUsage): CassetteUsage {
  return {
    input_tokens: usage.input,
    output_tokens: usage.output,
    cache_read_input_tokens: usage.cacheRead,
    cache_creation_input_tokens: usage.cacheWrite,
  };
}

function errorFor(entry: z.infer<typeof CassetteErrorEntrySchema>): ModelError {
  const message = entry.message ?? `replayed ${entry.error} error for draft "${entry.draftId}"`;
  switch (entry.error) {
    case "rate_limited":
      return new ModelRateLimitedError(message);
    case "overloaded":
      return new ModelOverloadedError(message);
    case "timeout":
      return new ModelTimeoutError(message);
    case "failed":
      return new ModelRequestFailedError(message);
  }
}

const keyOf = (...parts: string[]) => parts.join("\u0000");

/**
 * Answers model calls from a cassette, with no network. Each run of a draft replays that draft's
 * answers from the first one (the cursor is kept per run, draft and purpose); an `error` entry
 * throws its named error and moves the cursor on, so a retried call gets the next entry.
 */
export class ReplayModelClient implements ModelClient {
  readonly provider = "replay";
  readonly model = "replay";
  private readonly answers = new Map<string, CassetteEntry[]>();
  private readonly cursors = new Map<string, number>();

  private constructor(cassette: Cassette) {
    for (const entry of cassette.responses) {
      const key = keyOf(entry.draftId, entry.purpose);
      const list = this.answers.get(key) ?? [];
      list.push(entry);
      this.answers.set(key, list);
    }
  }

  /** A replay client over a cassette object, validated first. */
  static fromCassette(cassette: unknown): ReplayModelClient {
    return new ReplayModelClient(parseCassette(cassette));
  }

  /** A replay client over a cassette file, read and validated once (at cold start). */
  static fromFile(path: string): ReplayModelClient {
    let value: unknown;
    try {
      // As a person's file is read everywhere (text-encoding.ts): never answers with U+FFFD in them.
      const decoded = decodeText(readFileSync(path));
      if ("problem" in decoded) throw new Error(decoded.problem);
      value = JSON.parse(decoded.text);
    } catch (error) {
      throw new ModelNotConfiguredError(
        `replay cassette ${path} cannot be read as JSON: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return new ReplayModelClient(parseCassette(value, `cassette ${path}`));
  }

  /** How many answers the cassette holds for a draft and purpose. */
  count(draftId: string, purpose: ModelPurpose): number {
    return this.answers.get(keyOf(draftId, purpose))?.length ?? 0;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const list = this.answers.get(keyOf(request.draftId, request.purpose)) ?? [];
    const cursorKey = keyOf(request.runId, request.draftId, request.purpose);
    const used = this.cursors.get(cursorKey) ?? 0;
    const entry = list[used];
    if (entry === undefined) throw new CassetteExhaustedError(request.draftId, request.purpose, used);
    this.cursors.set(cursorKey, used + 1);

    if ("error" in entry) throw errorFor(entry);
    return {
      ...("output" in entry ? { output: entry.output } : {}),
      ...(entry.raw !== undefined ? { raw: entry.raw } : {}),
      usage: usageFromCassette(entry.usage),
      // An entry that names no model answers as the model asked for (a ladder's rung), else as "replay".
      model: entry.model ?? request.model ?? "replay",
      latencyMs: 0,
    };
  }
}
