import * as z from "zod";

/**
 * Per-call timeout when none is given: a correction is one bounded answer, not a long generation.
 * Here rather than beside the SDK call, so that reading a Lambda's environment loads no model SDK.
 */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** SDK-level retries (429, 5xx, connection errors) before a named error reaches the state machine's own Retry. */
export const DEFAULT_MAX_RETRIES = 2;

/** Why the model is called: to correct a draft, or (logic phase) to judge one. */
export const ModelPurposeSchema = z.enum(["correct", "judge"]);
export type ModelPurpose = z.infer<typeof ModelPurposeSchema>;

export const TokenUsageSchema = z.object({
  input: z.number().int().nonnegative(),
  output: z.number().int().nonnegative(),
  cacheRead: z.number().int().nonnegative(),
  cacheWrite: z.number().int().nonnegative(),
});
export type TokenUsage = z.infer<typeof TokenUsageSchema>;

export const ZERO_USAGE: TokenUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/** A block of the system prompt. `cache: true` marks the end of the stable prefix for prompt caching. */
export interface SystemBlock {
  text: string;
  cache?: boolean;
}

/** The one tool the model must answer through; its input is the structured answer. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  /** Run, draft and purpose identify the call, so a replay cassette can answer it. */
  runId: string;
  draftId: string;
  purpose: ModelPurpose;
  /** Stable part first (system prompt, pack rules) so that prompt caching hits on every retry. */
  system: SystemBlock[];
  /** The variable part: the draft, its violations, the hints. */
  user: string;
  tool: ToolSpec;
  maxTokens: number;
  /**
   * The model to answer with, when not the client's own: a judge that is not the author
   * (`judge.model`), or the model a ladder (loop `models`) picks for a correction.
   */
  model?: string;
  /**
   * What a correction prompt was built from, as data. Never sent to a model: it lets a simulated
   * corrector (the policy benchmark, tests) read the request without parsing the prompt's wording.
   */
  subject?: CorrectionSubject;
}

/** The facts a correction prompt states, in structured form. */
export interface CorrectionSubject {
  phase: "execution" | "logic";
  attempt: number;
  maxAttempts: number;
  /** The best draft's content, which the prompt asks the model to correct. */
  content: unknown;
  violations: { ruleId: string; path?: string }[];
  /** Field-level correction: the paths a patch may change (everything else locked); absent: the whole draft. */
  open?: string[];
}

export interface ModelResponse {
  /** The tool input the model answered with, if it called the tool. */
  output?: unknown;
  /** Text the model answered with instead of (or besides) the tool call. */
  raw?: string;
  usage: TokenUsage;
  /** The model id that answered (priced by this id). */
  model: string;
  latencyMs: number;
  stopReason?: string;
  /**
   * The price the call is billed at: absent for an ordinary call (on demand), `batch` for an answer
   * that came back from a Message Batch or a Bedrock batch inference job (half price).
   */
  priceClass?: "batch";
  /** How the answer was asked for (structured.ts): constrained by the provider, or plain tool use. */
  outputMode?: "json_schema" | "strict_tool" | "tool";
}

/**
 * One interface for every provider: Anthropic, Claude on Bedrock, and the replay cassette.
 * Transient failures are thrown as ModelRateLimitedError / ModelOverloadedError / ModelTimeoutError.
 */
export interface ModelClient {
  readonly provider: string;
  readonly model: string;
  complete(request: ModelRequest): Promise<ModelResponse>;
}

export function totalTokens(u: TokenUsage): number {
  return u.input + u.output + u.cacheRead + u.cacheWrite;
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
  };
}
