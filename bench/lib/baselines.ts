/**
 * Two hand-written retry loops, each with its OWN prompt (not redraft's builder or system prompt), its
 * own cache breakpoints and the same validator (the {@link Yardstick}: rules and schema, no repair):
 *
 * - **conversation retry (grows the transcript)**: the conversation grows by the model's answer and the
 *   validation error at every retry, and every call sends it whole; the user caches the system prompt
 *   and the conversation so far (a breakpoint after the last message). No peer library does this
 *   (instructor resends only its last answer and error, `bench/lib/peers.ts`): it is the loop a user
 *   writes by appending to a chat history;
 * - **last-answer retry (plain prompt)**: every retry sends only the last answer and its errors with a
 *   plain prompt; the user caches the system prompt.
 *
 * Both keep the last usable answer whatever its quality: no repair, no rollback, no early exit.
 */
import type { Draft, Violation } from "../../shared/draft.js";
import { parseCorrectionAnswer } from "../../shared/loop/response.js";
import { costUsd } from "../../shared/model/pricing.js";
import { type ModelRequest, totalTokens } from "../../shared/model/types.js";
import type { SimulatedCorrector } from "./corrector.js";
import type { PromptSegment } from "./prompt-cache.js";
import { errorsOf, judgeDelivered, type Outcome, type Yardstick } from "./yardstick.js";

export type Baseline = "conversation" | "last-answer";

/** The system prompt of every hand-written loop and peer library configuration in the bench. */

export const SYSTEM =
  "You fix structured drafts so that they pass validation. Keep everything that is correct. " +
  "Answer by calling the submit tool with the full corrected draft.";

/** The shape a user hands the SDK for an exam question (a hand-written schema, as with zod). */
const MCQ_SCHEMA = {
  type: "object",
  properties: {
    type: { type: "string" },
    vignette: { type: "string" },
    stem: { type: "string" },
    options: {
      type: "array",
      items: {
        type: "object",
        properties: { key: { type: "string" }, text: { type: "string" } },
        required: ["key", "text"],
      },
    },
    correct_answer: { type: "string" },
    rationale: { type: "string" },
  },
  required: ["stem", "options", "correct_answer", "rationale"],
};

/** The tool (or response schema) a user hands the model: the draft's JSON Schema, or {@link MCQ_SCHEMA}. */
export function tool(draft: Draft) {
  const schema = draft.kind === "json" ? (draft.context?.schema ?? {}) : MCQ_SCHEMA;
  return {
    name: "submit",
    description: "Submit the corrected draft.",
    inputSchema: { type: "object", properties: { content: schema }, required: ["content"] },
  };
}

const errorLines = (errors: readonly Violation[]) =>
  errors.map((v) => `- ${v.path || "(root)"}: ${v.message}`).join("\n");

export const firstMessage = (draft: Draft, content: unknown, errors: readonly Violation[]) =>
  `Here is a draft:\n${JSON.stringify(content, null, 2)}\n\nIt fails validation:\n${errorLines(errors)}\n\n` +
  `Fix it and return the full draft.${typeof draft.context?.intent === "string" ? `\nTask: ${draft.context.intent}` : ""}`;

const retryMessage = (errors: readonly Violation[]) =>
  `Your answer failed validation:\n${errorLines(errors)}\n\nPlease fix these errors and return the full draft again.`;

const UNUSABLE_MESSAGE = "Your answer did not call the submit tool. Call it with the full draft.";

export async function runBaseline(
  baseline: Baseline,
  draft: Draft,
  reference: unknown,
  model: SimulatedCorrector,
  yardstick: Yardstick,
  maxCalls: number,
): Promise<Outcome> {
  const spec = tool(draft);
  const toolText = JSON.stringify(spec);
  let content = draft.content;
  let report = yardstick.check(draft);
  const messages: string[] = [];
  let calls = 0;
  let unusable = false;
  let used = 0;
  let cost = 0;
  const promptChars: number[] = [];
  while (report.counts.error > 0 && calls < maxCalls) {
    calls += 1;
    const errors = errorsOf(report);
    let segments: PromptSegment[];
    if (baseline === "conversation") {
      if (calls === 1) messages.push(firstMessage(draft, content, errors));
      else messages.push(unusable ? UNUSABLE_MESSAGE : retryMessage(errors));
      segments = [
        { text: `${toolText}\n${SYSTEM}`, breakpoint: true },
        ...messages.map((text, i) => ({ text: `\n${text}`, breakpoint: i === messages.length - 1 })),
      ];
    } else {
      segments = [
        { text: `${toolText}\n${SYSTEM}`, breakpoint: true },
        { text: `\n${firstMessage(draft, content, errors)}` },
      ];
    }
    const user = segments
      .slice(1)
      .map((s) => s.text)
      .join("");
    promptChars.push(SYSTEM.length + user.length);
    const request: ModelRequest = {
      runId: `${baseline}-${draft.id}`,
      draftId: draft.id,
      purpose: "correct",
      system: [{ text: SYSTEM }],
      user,
      tool: spec,
      maxTokens: 8192,
      subject: {
        phase: "execution",
        attempt: calls,
        maxAttempts: maxCalls,
        content,
        violations: errors.map((v) => ({ ruleId: v.ruleId, ...(v.path !== undefined && { path: v.path }) })),
      },
    };
    const response = await model.completeWith(request, segments);
    used += totalTokens(response.usage);
    cost += costUsd(response.model, response.usage);
    const parsed = parseCorrectionAnswer({
      ...response,
      ...(response.output !== undefined && {
        output: { analysis: "", fixDescription: "", ...(response.output as object) },
      }),
    });
    if (baseline === "conversation") {
      messages.push(response.output ? JSON.stringify(response.output) : (response.raw ?? ""));
    }
    unusable = !parsed.ok;
    if (!parsed.ok) continue;
    content = parsed.answer.content as Draft["content"];
    report = yardstick.check({ ...draft, content });
  }
  return judgeDelivered(
    yardstick,
    draft,
    content,
    reference,
    { promptChars, calls, tokens: used, costUsd: cost },
    "max_attempts",
  );
}
