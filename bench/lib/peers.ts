/**
 * The peer libraries, driven in their idiomatic configurations with fake clients that answer from the
 * bench's simulated corrector, and validating with the same {@link Yardstick} as every other policy:
 *
 * - **instructor-js** (`@instructor-ai/instructor`): `Instructor({ client, mode: "TOOLS" })` over a fake
 *   OpenAI-compatible client, `chat.completions.create({ response_model, max_retries })` with
 *   max_retries = budget − 1, so it makes at most as many calls as redraft. Its own retry loop decides
 *   what each retry sends: the original messages, its last answer and the last validation error (not
 *   the whole conversation). Two facts of instructor 1.7.0 with the zod 4 this repository installs:
 *   its tool schema comes from zod-to-json-schema, which reads zod 3 schemas only, so the response
 *   model is written with `zod/v3`; and it retries only errors that are `instanceof` the installed
 *   zod's ZodError, which a zod 3 error is not, so the bench sets `retryAllErrors` (which also retries
 *   an answer that is not a tool call, as redraft does). When its retries run out instructor throws and
 *   the user is left with the draft it started from.
 * - **the Vercel AI SDK** (`ai`): `generateObject` with a mock LanguageModel (`ai/test`) and the draft's
 *   JSON Schema through `jsonSchema(schema, { validate })`. It has no validation retry: one call, and a
 *   `NoObjectGeneratedError` leaves the user with the draft it started from.
 *
 * Each in two variants: as is, and with the cleanup a zod user writes ({@link zodUserCleanup}) applied
 * to the draft before the first call (a draft it cleans into a valid one needs no call) and to every
 * answer before validation.
 *
 * The corrector reads the structured subject (the content it is asked to fix and the violations found
 * in it), never the prompt: the validator records them in a per-draft session as the library validates,
 * and the fake client hands them to the corrector with the library's own request. Usage is priced from
 * the messages each library actually sends, plus the draft's JSON Schema as the tool (for instructor, what
 * a zod schema of the same shape converts to; the response model itself only carries the validator).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import Instructor from "@instructor-ai/instructor";
import { generateObject, jsonSchema } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z as z3 } from "zod/v3";
import type { Draft, Violation } from "../../shared/draft.js";
import { costUsd } from "../../shared/model/pricing.js";
import { type CorrectionSubject, type ModelRequest, totalTokens } from "../../shared/model/types.js";
import { fromPointer } from "../../shared/pointer.js";
import { firstMessage, SYSTEM, tool } from "./baselines.js";
import { zodUserCleanup } from "./cleanup.js";
import type { SimulatedCorrector } from "./corrector.js";
import type { JsonObject } from "./json-corpus.js";
import type { PromptSegment } from "./prompt-cache.js";
import { errorsOf, judgeDelivered, type Outcome, type Yardstick } from "./yardstick.js";

export type Peer = "instructor" | "instructor-cleanup" | "ai-sdk" | "ai-sdk-cleanup";

// The AI SDK warns on stderr that generateObject is deprecated (for generateText with an output setting,
// which validates the same way); the bench's stderr is for its own progress.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

/** The installed version of a package, from the package.json above its entry point. */
export function installedVersion(name: string): string {
  let dir = dirname(createRequire(import.meta.url).resolve(name));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === name && pkg.version) return pkg.version;
    } catch {
      // no package.json here: look one level up
    }
    const up = dirname(dir);
    if (up === dir) return "unknown";
    dir = up;
  }
}

/** What the corrector is asked at the next call: the content the library is correcting and its violations. */
interface Session {
  content: unknown;
  violations: Violation[];
}

/** Runs the draft's content through the cleanup (when on) and the yardstick. */
function check(draft: Draft, value: unknown, cleanup: boolean, yardstick: Yardstick) {
  const schema = tool(draft).inputSchema.properties.content as JsonObject;
  const content = (cleanup ? zodUserCleanup(value, schema) : value) as Draft["content"];
  return { content, errors: errorsOf(yardstick.check({ ...draft, content })) };
}

const subjectOf = (session: Session, attempt: number, maxAttempts: number): CorrectionSubject => ({
  phase: "execution",
  attempt,
  maxAttempts,
  content: session.content,
  violations: session.violations.map((v) => ({
    ruleId: v.ruleId,
    ...(v.path !== undefined && { path: v.path }),
  })),
});

/** Drives one draft through one peer configuration. */
export async function runPeer(
  peer: Peer,
  draft: Draft,
  reference: unknown,
  model: SimulatedCorrector,
  yardstick: Yardstick,
  maxCalls: number,
): Promise<Outcome> {
  const cleanup = peer.endsWith("-cleanup");
  const spec = tool(draft);
  const toolText = JSON.stringify(spec);
  const start = check(draft, draft.content, cleanup, yardstick);
  const session: Session = { content: start.content, violations: start.errors };
  let tokens = 0;
  let cost = 0;
  const promptChars: number[] = [];

  /** One call to the corrector with the library's messages, priced with a cache breakpoint after the system prompt. */
  const call = async (messages: readonly string[]) => {
    const user = messages.join("\n");
    promptChars.push(SYSTEM.length + user.length);
    const segments: PromptSegment[] = [
      { text: `${toolText}\n${SYSTEM}`, breakpoint: true },
      ...messages.map((text) => ({ text: `\n${text}` })),
    ];
    const request: ModelRequest = {
      runId: `${peer}-${draft.id}`,
      draftId: draft.id,
      purpose: "correct",
      system: [{ text: SYSTEM }],
      user,
      tool: spec,
      maxTokens: 8192,
      subject: subjectOf(session, model.calls + 1, maxCalls),
    };
    const response = await model.completeWith(request, segments);
    tokens += totalTokens(response.usage);
    cost += costUsd(response.model, response.usage);
    const output = response.output as { content?: unknown } | undefined;
    return output?.content !== undefined
      ? { json: JSON.stringify(output.content) }
      : { text: response.raw ?? "" };
  };

  let delivered: unknown = start.content;
  if (start.errors.length > 0) {
    const prompt = firstMessage(draft, start.content, start.errors);
    if (peer.startsWith("instructor")) {
      delivered =
        (await viaInstructor(draft, prompt, session, cleanup, yardstick, maxCalls, call)) ?? delivered;
    } else {
      delivered = (await viaAiSdk(draft, prompt, session, cleanup, yardstick, call)) ?? delivered;
    }
  }
  return judgeDelivered(
    yardstick,
    draft,
    delivered,
    reference,
    { promptChars, calls: model.calls, tokens, costUsd: cost },
    "gave up",
  );
}

type Call = (messages: readonly string[]) => Promise<{ json: string } | { text: string }>;

/** instructor's retry loop; undefined when it throws (retries exhausted). */
async function viaInstructor(
  draft: Draft,
  prompt: string,
  session: Session,
  cleanup: boolean,
  yardstick: Yardstick,
  maxCalls: number,
  call: Call,
): Promise<unknown> {
  const client = {
    baseURL: "https://simulated.invalid/v1",
    chat: {
      completions: {
        create: async (params: { messages: { role: string; content: string | null }[] }) => {
          const answer = await call(
            params.messages.filter((m) => m.role !== "system").map((m) => m.content ?? ""),
          );
          const message =
            "json" in answer
              ? {
                  role: "assistant",
                  content: null,
                  tool_calls: [
                    { id: "call_1", type: "function", function: { name: "Draft", arguments: answer.json } },
                  ],
                }
              : { role: "assistant", content: answer.text };
          return {
            id: "chatcmpl-simulated",
            object: "chat.completion",
            created: 0,
            model: "simulated",
            choices: [{ index: 0, finish_reason: "json" in answer ? "tool_calls" : "stop", message }],
          };
        },
      },
    },
  };
  // The validator a zod user writes: the rules and the schema in a refinement, after the cleanup when on.
  const schema = z3.unknown().transform((value, ctx) => {
    const { _meta: _, ...raw } = value as Record<string, unknown>;
    const { content, errors } = check(draft, raw, cleanup, yardstick);
    if (errors.length === 0) return content;
    session.content = raw;
    session.violations = errors;
    for (const e of errors)
      ctx.addIssue({ code: "custom", path: fromPointer(e.path ?? ""), message: e.message });
    return z3.NEVER;
  });
  const instructor = Instructor({ client: client as never, mode: "TOOLS", retryAllErrors: true });
  // instructor prints every validation failure with console.warn/console.error whatever its logger
  // option says; the bench's stderr is for its own progress.
  const { warn, error } = console;
  console.warn = () => {};
  console.error = () => {};
  try {
    const result = (await instructor.chat.completions.create({
      model: "simulated",
      messages: [
        { role: "system", content: SYSTEM },
        { role: "user", content: prompt },
      ],
      response_model: { schema, name: "Draft" },
      max_retries: maxCalls - 1,
    })) as Record<string, unknown>;
    const { _meta: _, ...content } = result;
    return content;
  } catch {
    return undefined;
  } finally {
    console.warn = warn;
    console.error = error;
  }
}

/** One generateObject call; undefined when the answer does not validate. */
async function viaAiSdk(
  draft: Draft,
  prompt: string,
  session: Session,
  cleanup: boolean,
  yardstick: Yardstick,
  call: Call,
): Promise<unknown> {
  const model = new MockLanguageModelV4({
    doGenerate: async () => {
      const answer = await call([prompt]);
      return {
        content: [{ type: "text", text: "json" in answer ? answer.json : answer.text }],
        finishReason: { unified: "stop", raw: "stop" },
        usage: {
          inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: undefined, text: undefined, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
  const schema = tool(draft).inputSchema.properties.content as Parameters<typeof jsonSchema>[0];
  try {
    const { object } = await generateObject({
      model,
      system: SYSTEM,
      prompt,
      schema: jsonSchema<unknown>(schema, {
        validate: (value) => {
          const { content, errors } = check(draft, value, cleanup, yardstick);
          if (errors.length === 0) return { success: true, value: content };
          session.content = value;
          session.violations = errors;
          return {
            success: false,
            error: new Error(errors.map((e) => `${e.path}: ${e.message}`).join("\n")),
          };
        },
      }),
    });
    return object;
  } catch {
    return undefined;
  }
}
