/**
 * The pieces bench:policy measures with: the zod user's cleanup, the corrector profiles (built-in and
 * loaded from a module), and the peer libraries driven through their fake clients: their call budget,
 * what they deliver when they give up, and that they validate with the same yardstick as redraft.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { zodUserCleanup } from "../../bench/lib/cleanup.js";
import {
  type Answer,
  BehaviourCorrector,
  type Corrector,
  SimulatedCorrector,
} from "../../bench/lib/corrector.js";
import { cleanRecord, deepClone, jsonDraft, studySchema } from "../../bench/lib/json-corpus.js";
import { cleanQuestion, injectMcqFaults, mcqDraft } from "../../bench/lib/mcq-corpus.js";
import { runPeer } from "../../bench/lib/peers.js";
import { BUILT_IN_PROFILES, loadProfile } from "../../bench/lib/profiles.js";
import { PromptCache } from "../../bench/lib/prompt-cache.js";
import { Rng } from "../../bench/lib/rng.js";
import { Yardstick } from "../../bench/lib/yardstick.js";
import type { ModelRequest } from "../../shared/model/types.js";
import { PackRegistry } from "../../shared/registry.js";

const yardstick = new Yardstick(new PackRegistry());

describe("zodUserCleanup", () => {
  const schema = {
    type: "object",
    properties: {
      id: { type: "string" },
      tag: { type: "string", pattern: "^T" },
      license: { $ref: "#/$defs/License" },
      nested: {
        type: "object",
        properties: { a: { type: "string" } },
        required: ["a"],
        additionalProperties: false,
      },
    },
    required: ["id"],
    additionalProperties: false,
    $defs: { License: { type: "string", enum: ["cc-by", "cc0"] } },
  };

  it("strips unknown keys of closed objects and drops empty or out-of-enum optionals, never a required value", () => {
    const value = { id: "", tag: "", license: "open", nested: { a: "", extra: 1 }, unknown: true };
    expect(zodUserCleanup(value, schema)).toEqual({ id: "", nested: { a: "" } });
  });

  it("keeps a wrong non-empty value it cannot judge by shape alone, and leaves the input untouched", () => {
    const value = { id: "x", tag: "wrong", license: "cc0" };
    const before = deepClone(value);
    expect(zodUserCleanup(value, schema)).toEqual(value);
    expect(value).toEqual(before);
  });

  it("survives hostile shapes: a $ref loop's missing target, arrays of scalars, non-object values", () => {
    const loop = { $ref: "#/$defs/Missing", properties: { a: { type: "string" } } };
    expect(zodUserCleanup({ a: "", b: 1 }, loop)).toEqual({ b: 1 });
    expect(zodUserCleanup([1, "x", null], { type: "array", items: { type: "string" } })).toEqual([
      1,
      "x",
      null,
    ]);
    expect(zodUserCleanup("text", schema)).toBe("text");
  });
});

describe("corrector profiles", () => {
  it("ships at least three built-in profiles with distinct names", () => {
    const names = BUILT_IN_PROFILES.map((p) => p.name);
    expect(names.length).toBeGreaterThanOrEqual(3);
    expect(new Set(names).size).toBe(names.length);
  });

  it("a stubborn profile never fixes its rule, however often it is asked", () => {
    const rng = new Rng(3);
    const reference = cleanQuestion(rng);
    const faulty = injectMcqFaults(reference, ["ext_rationale_completeness"], rng);
    const draft = mcqDraft("mcq-0", faulty);
    const corrector = new BehaviourCorrector(
      new Map([["mcq-0", reference]]),
      { p: 1, c: 0, s: 0, g: 0, q: 0, r: 0, m: 0, stubborn: ["ext_rationale_completeness"] },
      1,
    );
    for (let attempt = 1; attempt <= 5; attempt++) {
      const answer = corrector.answer(
        request("mcq-0", draft.content, attempt, "ext_rationale_completeness", "/rationale"),
      );
      const content = answer.output?.content as { rationale: string } | undefined;
      expect(content?.rationale).toBe(faulty.rationale);
    }
  });

  describe("--corrector <module>", () => {
    const dir = mkdtempSync(join(tmpdir(), "redraft-profile-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("loads a module's default export and uses its corrector", async () => {
      const file = join(dir, "echo.mjs");
      writeFileSync(
        file,
        "export default { name: 'echo', summary: 'answers the draft it is sent', create: () => ({ answer: (r) => ({ output: { content: r.subject.content } }) }) };\n",
      );
      const profile = await loadProfile(file);
      expect(profile.name).toBe("echo");
      const corrector = profile.create(new Map(), 1);
      expect(corrector.answer(request("x", { a: 1 }, 1, "r", "/a")).output?.content).toEqual({ a: 1 });
    });

    it("refuses a module without a profile, naming the built-in ones", async () => {
      const file = join(dir, "empty.mjs");
      writeFileSync(file, "export const nothing = 1;\n");
      await expect(loadProfile(file)).rejects.toThrow(/sloppy/);
    });

    it("finds a built-in profile by name", async () => {
      expect((await loadProfile("stubborn")).name).toBe("stubborn");
    });
  });
});

function request(
  draftId: string,
  content: unknown,
  attempt: number,
  ruleId: string,
  path: string,
): ModelRequest {
  return {
    runId: "r",
    draftId,
    purpose: "correct",
    system: [{ text: "s" }],
    user: "u",
    tool: { name: "t", description: "", inputSchema: {} },
    maxTokens: 10,
    subject: { phase: "execution", attempt, maxAttempts: 3, content, violations: [{ ruleId, path }] },
  };
}

/** A corrector that answers a fixed sequence and records what each call was asked. */
class Scripted implements Corrector {
  readonly asked: ModelRequest[] = [];
  constructor(private readonly answers: readonly Answer[]) {}
  answer(request: ModelRequest): Answer {
    this.asked.push(request);
    return this.answers[Math.min(this.asked.length - 1, this.answers.length - 1)] as Answer;
  }
}

describe("peer libraries through fake clients", () => {
  const schema = studySchema();
  const reference = cleanRecord(new Rng(11), 1);
  const broken = () => {
    const content = deepClone(reference) as Record<string, unknown>;
    content.doi = `https://doi.org/${String(content.doi)}`;
    return jsonDraft("json-1", content as typeof reference, schema);
  };

  it("instructor stops at the budget when no answer validates, and leaves the user with the draft it started from", async () => {
    const draft = broken();
    const scripted = new Scripted([{ output: { content: draft.content } }]);
    const model = new SimulatedCorrector(scripted, new PromptCache());
    const outcome = await runPeer("instructor", draft, reference, model, yardstick, 3);
    expect(outcome.calls).toBe(3);
    expect(outcome.validated).toBe(false);
    expect(outcome.promptChars).toHaveLength(3);
    // a retry sends the original messages plus the last answer and its error: longer than the first call
    expect(outcome.promptChars[1]).toBeGreaterThan(outcome.promptChars[0] as number);
    // every call asked about the violation the yardstick found
    expect(scripted.asked.every((r) => r.subject?.violations.some((v) => v.path === "/doi"))).toBe(true);
  });

  it("instructor retries an answer that is not a tool call and delivers the first valid answer, faithful", async () => {
    const scripted = new Scripted([{ raw: "I fixed it." }, { output: { content: reference } }]);
    const model = new SimulatedCorrector(scripted, new PromptCache());
    const outcome = await runPeer("instructor", broken(), reference, model, yardstick, 3);
    expect(outcome.calls).toBe(2);
    expect(outcome.validated && outcome.faithful).toBe(true);
  });

  it("the AI SDK makes one call and has no validation retry", async () => {
    const draft = broken();
    const scripted = new Scripted([
      { output: { content: draft.content } },
      { output: { content: reference } },
    ]);
    const model = new SimulatedCorrector(scripted, new PromptCache());
    const outcome = await runPeer("ai-sdk", draft, reference, model, yardstick, 3);
    expect(outcome.calls).toBe(1);
    expect(outcome.validated).toBe(false);
  });

  it("with cleanup, a draft whose only faults cleanup removes needs no call; deleting a value the reference has is unfaithful", async () => {
    const content = deepClone(reference) as Record<string, unknown>;
    content.notes_internal = "x";
    const withExtra = jsonDraft("json-1", content as typeof reference, schema);
    const model = new SimulatedCorrector(new Scripted([{ raw: "unused" }]), new PromptCache());
    const clean = await runPeer("ai-sdk-cleanup", withExtra, reference, model, yardstick, 3);
    expect(clean.calls).toBe(0);
    expect(clean.validated && clean.faithful).toBe(true);

    const licensed = { ...deepClone(reference), license: "CC-BY-4.0" };
    const wrongEnum = jsonDraft("json-1", { ...deepClone(licensed), license: "open" }, schema);
    const lossy = await runPeer(
      "instructor-cleanup",
      wrongEnum,
      licensed,
      new SimulatedCorrector(new Scripted([{ raw: "unused" }]), new PromptCache()),
      yardstick,
      3,
    );
    expect(lossy.calls).toBe(0);
    expect(lossy.validated).toBe(true);
    expect(lossy.faithful).toBe(false);
  });
});
