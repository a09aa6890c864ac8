import { z } from "zod";
import { SelfCorrectionError } from "../errors.js";
import type { Finding, Pack, Rule, RuleContext } from "../pack.js";
import {
  MAX_MEMORY_LIMIT_BYTES,
  MAX_STACK_BYTES,
  QuickJSSandbox,
  type SandboxLimits,
  type SuiteResult,
  type TestFailure,
  type TestOutcome,
} from "./sandbox.js";

/** Rule ids the code kind reports under; a failing test reports as `test:<name>`. */
export const CODE_RULE_IDS = {
  language: "code_language",
  noTests: "code_no_tests",
  syntax: "code_syntax_error",
  tests: "code_tests",
} as const;

export const TEST_RULE_PREFIX = "test:";

/** The one language the sandbox runs. */
export const CODE_LANGUAGE = "javascript";

const KiB = 1024;
const MiB = 1024 * KiB;
/** Stack-trace lines kept in a suggestion, and the cap on their length. */
const STACK_LINES = 5;
const STACK_CHARS = 500;

export const CodeTestSchema = z.looseObject({
  name: z.string().min(1),
  code: z.string(),
});

/** A program and the tests that define what correct means for it. */
export const CodeContentSchema = z.looseObject({
  /** Only "javascript" runs; anything else is reported by `code_language`, not rejected here. */
  language: z.string(),
  source: z.string(),
  tests: z.array(CodeTestSchema),
});
export type CodeContent = z.infer<typeof CodeContentSchema>;

export const CodeSettingsSchema = z
  .object({
    /** Wall-clock budget per test, loading the source included. */
    timeoutMs: z.number().int().min(10).max(60_000),
    /** Heap a test may use (approximate, see sandbox.ts). */
    memoryLimitBytes: z.number().int().min(MiB).max(MAX_MEMORY_LIMIT_BYTES),
    /** QuickJS's stack limit. Above ~384 KiB deep recursion exhausts Node's own stack first: still reported, but it costs an engine. */
    maxStackBytes: z
      .number()
      .int()
      .min(16 * KiB)
      .max(MAX_STACK_BYTES),
  })
  .strict();
export type CodeSettings = z.infer<typeof CodeSettingsSchema>;

/**
 * @default timeoutMs 1000, memoryLimitBytes 32 MiB, maxStackBytes 256 KiB: recursion about 1,300 calls
 * deep, which QuickJS stops cleanly; at 1 MiB Node's ~1 MB native stack runs out first.
 */
export const DEFAULT_CODE_SETTINGS: CodeSettings = {
  timeoutMs: 1000,
  memoryLimitBytes: 32 * MiB,
  maxStackBytes: 256 * KiB,
};

type Ctx = RuleContext<CodeContent, CodeSettings>;

// ---------------------------------------------------------------------------------------------
// Running the tests, once per content

/** Built once: the engine is loaded by `ready()` and reused by every draft. */
const sandbox = new QuickJSSandbox();

interface CachedRun {
  readonly fingerprint: string;
  readonly limits: SandboxLimits;
  readonly result: SuiteResult;
}

/**
 * Runs per content object: the check and the score of one validation both need them. The fingerprint
 * guards against content mutated in place between two validations.
 */
const runs = new WeakMap<object, CachedRun>();

function isRunnable(content: CodeContent): boolean {
  return content.language === CODE_LANGUAGE;
}

function sameLimits(a: SandboxLimits, b: SandboxLimits): boolean {
  return (
    a.timeoutMs === b.timeoutMs &&
    a.memoryLimitBytes === b.memoryLimitBytes &&
    a.maxStackBytes === b.maxStackBytes
  );
}

/** The suite's result for this content, run at most once; undefined when the language cannot run. */
function runFor({ content, settings }: Ctx): SuiteResult | undefined {
  if (!isRunnable(content)) return undefined;
  const fingerprint = JSON.stringify([content.source, content.tests.map((t) => [t.name, t.code])]);
  const limits: SandboxLimits = {
    timeoutMs: settings.timeoutMs,
    memoryLimitBytes: settings.memoryLimitBytes,
    maxStackBytes: settings.maxStackBytes,
  };
  const cached = runs.get(content);
  if (cached && cached.fingerprint === fingerprint && sameLimits(cached.limits, limits)) return cached.result;
  if (!sandbox.isReady) {
    throw new SelfCorrectionError(
      "the code pack's QuickJS sandbox is not loaded: await codePack.ready() before checking (validateDraft and packFor do)",
      "sandbox_not_ready",
    );
  }
  const result = sandbox.runSuite(content.source, content.tests, limits);
  runs.set(content, { fingerprint, limits, result });
  return result;
}

// ---------------------------------------------------------------------------------------------
// Wording

function formatBytes(bytes: number): string {
  if (bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes % KiB === 0) return `${bytes / KiB} KiB`;
  return `${bytes} bytes`;
}

/** The first lines of a stack, capped at about 500 characters. */
export function trimStack(stack: string): string {
  const kept = stack
    .split("\n")
    .filter((line) => line.trim() !== "")
    .slice(0, STACK_LINES)
    .join("\n");
  return kept.length > STACK_CHARS ? `${kept.slice(0, STACK_CHARS - 1)}…` : kept;
}

const KEEP_TEST = "Make this test pass without changing the test.";

function failureText(
  name: string,
  failure: TestFailure,
  settings: CodeSettings,
): { message: string; hint: string } {
  const { error } = failure;
  const whileLoading = failure.phase === "source" ? " while loading the source, before the test ran" : "";
  switch (failure.reason) {
    case "timeout":
      return {
        message: `test "${name}" exceeded the ${settings.timeoutMs} ms timeout${whileLoading} and was interrupted`,
        hint: "Look for an infinite loop or work that grows without bound.",
      };
    case "memory":
      return {
        message: `test "${name}" exceeded the memory limit of ${formatBytes(settings.memoryLimitBytes)}${whileLoading}`,
        hint: "Look for a loop that keeps allocating, or data far larger than the task needs.",
      };
    case "stack":
      return {
        message: `test "${name}" overflowed the stack${whileLoading} (${error.name}: ${error.message}; QuickJS limit ${formatBytes(settings.maxStackBytes)})`,
        hint: "Look for unbounded recursion; prefer a loop to recursion more than about a thousand calls deep.",
      };
    case "crash":
      return { message: `test "${name}" crashed the sandbox${whileLoading}: ${error.message}`, hint: "" };
    case "not_run":
      return {
        message: `test "${name}" ${error.message}`,
        hint: "Fix the test that crashed the sandbox first.",
      };
    case "error": {
      const thrown = error.isError
        ? `${error.name}: ${error.message}`
        : `threw a non-Error value: ${error.message}`;
      return {
        message: `${thrown}${failure.phase === "source" ? ` (thrown${whileLoading})` : ""}`,
        hint: "",
      };
    }
  }
}

function testFinding(outcome: TestOutcome, index: number, settings: CodeSettings): Finding | undefined {
  const { failure } = outcome;
  if (outcome.passed || !failure) return undefined;
  const { message, hint } = failureText(outcome.name, failure, settings);
  const stack = trimStack(failure.error.stack);
  const suggestion = [hint, stack ? `Stack (trimmed to its first lines):\n${stack}` : "", KEEP_TEST]
    .filter((part) => part !== "")
    .join("\n");
  return { ruleId: `${TEST_RULE_PREFIX}${outcome.name}`, message, path: `/tests/${index}`, suggestion };
}

// ---------------------------------------------------------------------------------------------
// Rules

const languageRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.language,
  description: `The language is "${CODE_LANGUAGE}", the only one the sandbox runs.`,
  severity: "error",
  check({ content }) {
    if (isRunnable(content)) return [];
    return [
      {
        message: `language is ${JSON.stringify(content.language)}; only "${CODE_LANGUAGE}" can be run, so no test ran`,
        path: "/language",
        suggestion: `Set language to "${CODE_LANGUAGE}" and write the source in plain JavaScript.`,
      },
    ];
  },
};

const noTestsRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.noTests,
  description: "The draft has at least one test: without one nothing shows the source works.",
  severity: "error",
  check({ content }) {
    if (content.tests.length > 0) return [];
    return [
      {
        message: "the draft has no tests, so nothing shows that the source works",
        path: "/tests",
        suggestion: "A code draft needs the tests of its task; it cannot be validated without them.",
      },
    ];
  },
};

const syntaxRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.syntax,
  description: "The source compiles as a JavaScript script.",
  severity: "error",
  source: "test",
  check(ctx) {
    const run = runFor(ctx);
    if (run?.kind !== "syntax_error") return [];
    const { error, line, column } = run;
    const where =
      line === undefined ? "" : ` at line ${line}${column === undefined ? "" : `, column ${column}`}`;
    const tests = ctx.content.tests.length;
    return [
      {
        message: `${error.name}${where}: ${error.message}`,
        path: "/source",
        suggestion: `Fix the syntax of source; none of the ${tests} test${tests === 1 ? "" : "s"} can run until it compiles. Do not change the tests.`,
      },
    ];
  },
};

const testsRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.tests,
  description:
    "Every test passes when run after the source in a fresh QuickJS sandbox; each failure reports as test:<name>.",
  severity: "error",
  source: "test",
  check(ctx) {
    const run = runFor(ctx);
    if (run?.kind !== "ran") return [];
    const findings: Finding[] = [];
    run.outcomes.forEach((outcome, index) => {
      const finding = testFinding(outcome, index, ctx.settings);
      if (finding) findings.push(finding);
    });
    return findings;
  },
};

// ---------------------------------------------------------------------------------------------
// Pack

const INSTRUCTIONS = `The content is a JavaScript program with its tests: { language: "javascript", source, tests: [{ name, code }] }.
Each test runs in a fresh QuickJS sandbox: first \`source\` as a global script, then the test's \`code\`, which calls what \`source\` declares and checks it with assert(value, message?), assert.equal(actual, expected, message?) (===), assert.deepEqual(actual, expected, message?) (structural) and assert.throws(fn, expected?, message?). A test passes when its code finishes without throwing; a test that evaluates to a promise passes when the promise resolves.
- Fix \`source\` so that every test passes. Never edit \`tests\`: not a name, not a line of code, not their number or order.
- Keep the names and signatures of the functions and classes the tests use, declared at the top level of \`source\`.
- Plain ECMAScript only: there is no require or import, no process, fs, fetch, setTimeout or DOM; console.log does nothing. Do not declare assert or AssertionError.
- Each test has a time, memory and stack limit: no unbounded loops, and prefer loops to deep recursion.
- Keep language "javascript"; change only what the violations name.`;

const CONTENT_JSON_SCHEMA = {
  type: "object",
  properties: {
    language: { const: CODE_LANGUAGE },
    source: { type: "string", description: "The JavaScript program; the tests call its top-level functions" },
    tests: {
      type: "array",
      description: "The tests, exactly as given: never changed",
      items: {
        type: "object",
        properties: { name: { type: "string", minLength: 1 }, code: { type: "string" } },
        required: ["name", "code"],
      },
    },
  },
  required: ["language", "source", "tests"],
  additionalProperties: true,
};

/**
 * The pack of `kind: "code"` drafts: a JavaScript `source` and the `tests` it must pass, run in a
 * QuickJS sandbox (seeds 000 and 003: execution self-correction). The score is the share of passing tests.
 */
export const codePack: Pack<CodeContent, CodeSettings> = {
  kind: "code",
  description:
    "A JavaScript program and its tests, run in a QuickJS sandbox; the score is the share of passing tests.",
  contentSchema: CodeContentSchema,
  settings: DEFAULT_CODE_SETTINGS,
  settingsSchema: CodeSettingsSchema,
  rules: [languageRule, noTestsRule, syntaxRule, testsRule],
  score(ctx: Ctx): number {
    const run = runFor(ctx);
    const total = ctx.content.tests.length;
    if (run?.kind !== "ran" || total === 0) return 0;
    return run.outcomes.filter((o) => o.passed).length / total;
  },
  loop: { maxAttempts: 3 },
  protectedContent: ["/tests", "/language"],
  instructions: INSTRUCTIONS,
  contentJsonSchema() {
    return CONTENT_JSON_SCHEMA;
  },
  ready() {
    return sandbox.ready();
  },
};
