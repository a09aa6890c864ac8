import * as z from "zod";
import { activeDeferral } from "../../deferred.js";
import { sha256 } from "../../hash.js";
import type { Finding, Pack, Rule, RuleContext } from "../../pack.js";
import {
  MAX_MEMORY_LIMIT_BYTES,
  MAX_STACK_BYTES,
  QuickJSSandbox,
  type SandboxLimits,
  SandboxSetupError,
  type SuiteResult,
  type TestFailure,
  type TestOutcome,
} from "./sandbox.js";

/** Rule ids the code kind reports under; a failing test reports as `test:<name>`. */
export const CODE_RULE_IDS = {
  language: "code_language",
  noTests: "code_no_tests",
  tooManyTests: "code_too_many_tests",
  testName: "code_test_name",
  duplicateTestName: "code_duplicate_test_name",
  syntax: "code_syntax_error",
  builtins: "code_builtins_read_only",
  tests: "code_tests",
  uncopyable: "code_uncopyable_value",
} as const;

const TEST_RULE_PREFIX = "test:";

/** The one language the sandbox runs. */
const CODE_LANGUAGE = "javascript";

const KiB = 1024;
const MiB = 1024 * KiB;
/** Stack-trace lines kept in a suggestion, and the cap on their length. */
const STACK_LINES = 5;
const STACK_CHARS = 500;

/**
 * Longest test name, in UTF-16 code units. A failing test reports as `test:<name>` and the loop's
 * state (Step Functions: 256 KiB at most) carries those rule ids, so names, like the number of
 * tests, are bounded.
 */
const MAX_TEST_NAME_CHARS = 120;
/** The most tests a deployment may allow per draft (`maxTests`): 500 rule ids of 125 characters stay well under the state limit. */
const MAX_MAX_TESTS = 500;
/** Findings one bounds rule reports at most; the rest are summed up in the last one. */
const MAX_BOUND_FINDINGS = 20;
/** How much of an overlong name a message quotes. */
const QUOTED_NAME_CHARS = 40;

/**
 * Names are checked by the `code_test_name` and `code_duplicate_test_name` rules, and the number of
 * tests by `code_too_many_tests`, not here: a violation of a named rule with a suggestion says more
 * than a `content_shape` one.
 */
const CodeTestSchema = z.looseObject({
  name: z.string(),
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

const CodeSettingsSchema = z
  .object({
    /**
     * Budget per test, loading the source included: milliseconds of CPU time of the sandbox's
     * thread, as the kernel counts it (work inside a native call included), never wall-clock time,
     * so a verdict does not depend on the machine's load.
     */
    timeoutMs: z.number().int().min(10).max(60_000),
    /**
     * Budget of work for the whole suite, in the same unit: once spent, the remaining tests are not
     * run and fail. Keep it well under the timeout of the Lambdas that validate (Validate and
     * Revalidate: 60 s), which stays the wall-clock bound of last resort.
     */
    suiteTimeoutMs: z.number().int().min(10).max(600_000),
    /** The most tests a draft may have; a draft with more runs none (`code_too_many_tests`). */
    maxTests: z.number().int().min(1).max(MAX_MAX_TESTS),
    /** Heap a test may use (approximate, see sandbox.ts). */
    memoryLimitBytes: z.number().int().min(MiB).max(MAX_MEMORY_LIMIT_BYTES),
    /** QuickJS's stack limit. Above ~384 KiB deep recursion exhausts Node's own stack first: still reported, but it costs an engine. */
    maxStackBytes: z
      .number()
      .int()
      .min(16 * KiB)
      .max(MAX_STACK_BYTES),
  })
  .strict()
  .refine((settings) => settings.suiteTimeoutMs >= settings.timeoutMs, {
    message: "suiteTimeoutMs must be at least timeoutMs",
    path: ["suiteTimeoutMs"],
  });
export type CodeSettings = z.infer<typeof CodeSettingsSchema>;

/**
 * @default timeoutMs 1000, suiteTimeoutMs 20 s (a third of the validating Lambda's 60 s), maxTests 200,
 * memoryLimitBytes 32 MiB, maxStackBytes 256 KiB: recursion about 1,300 calls deep, which QuickJS
 * stops cleanly; at 1 MiB Node's ~1 MB native stack runs out first.
 */
export const DEFAULT_CODE_SETTINGS: CodeSettings = {
  timeoutMs: 1000,
  suiteTimeoutMs: 20_000,
  maxTests: 200,
  memoryLimitBytes: 32 * MiB,
  maxStackBytes: 256 * KiB,
};

type Ctx = RuleContext<CodeContent, CodeSettings>;

// ---------------------------------------------------------------------------------------------
// Running the tests, once per content

/** Built once: the engine is loaded by `ready()` and reused by every draft. */
const sandbox = new QuickJSSandbox();

/**
 * Suite results by the hash of what they were computed from (source, tests, limits): the check and
 * the score of one validation both need them, and the same content gets the same verdict (the
 * budgets count work, not time). A result a crashed engine shaped is not kept.
 */
const runs = new Map<string, SuiteResult>();
const MAX_CACHED_RUNS = 64;

function cacheable(result: SuiteResult): boolean {
  return (
    result.kind === "syntax_error" ||
    result.outcomes.every((o) => o.failure?.reason !== "crash" && o.failure?.reason !== "not_run")
  );
}

function isRunnable(content: CodeContent): boolean {
  return content.language === CODE_LANGUAGE;
}

/** Why a test's name breaks the bounds, or undefined when it is fine. */
function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "is empty";
  if (name.length > MAX_TEST_NAME_CHARS)
    return `is ${name.length} characters long, more than ${MAX_TEST_NAME_CHARS}`;
  return undefined;
}

/** For each test whose name an earlier test already has, its index and that earlier test's index. */
function duplicateNames(tests: CodeContent["tests"]): { index: number; first: number }[] {
  const firstIndex = new Map<string, number>();
  const duplicates: { index: number; first: number }[] = [];
  tests.forEach(({ name }, index) => {
    // A name already reported by code_test_name is not reported again here.
    if (nameProblem(name)) return;
    const first = firstIndex.get(name);
    if (first === undefined) firstIndex.set(name, index);
    else duplicates.push({ index, first });
  });
  return duplicates;
}

/** The tests are few enough, and their names valid and unique: only then do they run. */
function withinBounds(content: CodeContent, settings: CodeSettings): boolean {
  return (
    content.tests.length <= settings.maxTests &&
    content.tests.every((t) => nameProblem(t.name) === undefined) &&
    duplicateNames(content.tests).length === 0
  );
}

/**
 * The suite's result for this content, run at most once per content; undefined when the language
 * cannot run or the tests break the bounds (too many, a bad or duplicate name).
 */
function runFor({ content, settings }: Ctx): SuiteResult | undefined {
  if (!isRunnable(content) || !withinBounds(content, settings)) return undefined;
  const limits: SandboxLimits = {
    timeoutMs: settings.timeoutMs,
    suiteTimeoutMs: settings.suiteTimeoutMs,
    memoryLimitBytes: settings.memoryLimitBytes,
    maxStackBytes: settings.maxStackBytes,
  };
  const key = sha256(
    JSON.stringify([
      content.source,
      content.tests.map((t) => [t.name, t.code]),
      [limits.timeoutMs, limits.suiteTimeoutMs, limits.memoryLimitBytes, limits.maxStackBytes],
    ]),
  );
  const cached = runs.get(key);
  if (cached) return cached;
  if (!sandbox.isReady) {
    throw new SandboxSetupError(
      "the code pack's QuickJS sandbox is not loaded: await codePack.ready() before checking (validateDraft and packFor do)",
    );
  }
  // Inside a deferral (a validation that can wait), the suite runs off the thread while the event
  // loop serves other drafts; the check's round ends with a provisional result that it throws away.
  const deferral = activeDeferral();
  if (deferral)
    return deferral.answer(`code-suite\u0000${key}`, () => runAsync(key, content, limits), PROVISIONAL);
  return remember(key, sandbox.runSuite(content.source, content.tests, limits));
}

/** What a deferral's round sees until the suite has run; never a verdict (deferred.ts discards the round). */
const PROVISIONAL: SuiteResult = { kind: "ran", outcomes: [], builtinChanges: [] };

/** Suites running asynchronously, by key: the same content validated twice at once runs once. */
const running = new Map<string, Promise<SuiteResult>>();

function runAsync(key: string, content: CodeContent, limits: SandboxLimits): Promise<SuiteResult> {
  const cached = runs.get(key);
  if (cached) return Promise.resolve(cached);
  let pending = running.get(key);
  if (!pending) {
    pending = sandbox
      .runSuiteAsync(content.source, content.tests, limits)
      .then((result) => remember(key, result))
      .finally(() => running.delete(key));
    running.set(key, pending);
  }
  return pending;
}

/** Keeps a result in the cache (when a crashed engine did not shape it), dropping the oldest past the bound. */
function remember(key: string, result: SuiteResult): SuiteResult {
  if (cacheable(result)) {
    if (runs.size >= MAX_CACHED_RUNS) {
      const oldest = runs.keys().next();
      if (!oldest.done) runs.delete(oldest.value);
    }
    runs.set(key, result);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Wording

function formatBytes(bytes: number): string {
  if (bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes % KiB === 0) return `${bytes / KiB} KiB`;
  return `${bytes} bytes`;
}

/** A name short enough to quote in a message. */
function quoteName(name: string): string {
  return JSON.stringify(name.length > QUOTED_NAME_CHARS ? `${name.slice(0, QUOTED_NAME_CHARS)}…` : name);
}

/** At most MAX_BOUND_FINDINGS findings; the last one says how many more there are. */
function capped(findings: Finding[], more: (count: number) => Finding): Finding[] {
  if (findings.length <= MAX_BOUND_FINDINGS) return findings;
  return [...findings.slice(0, MAX_BOUND_FINDINGS - 1), more(findings.length - MAX_BOUND_FINDINGS + 1)];
}

/** The first lines of a stack, capped at about 500 characters. */
function trimStack(stack: string): string {
  const kept = stack
    .split("\n")
    .filter((line) => line.trim() !== "")
    .slice(0, STACK_LINES)
    .join("\n");
  return kept.length > STACK_CHARS ? `${kept.slice(0, STACK_CHARS - 1)}…` : kept;
}

const KEEP_TEST = "Make this test pass without changing the test.";
const SUITE_FIX =
  "make the slow tests finish quickly (look for infinite loops or work that grows without bound in the code they call), or split the draft into several with fewer tests.";

function failureText(
  name: string,
  failure: TestFailure,
  settings: CodeSettings,
): { message: string; hint: string } {
  const { error } = failure;
  const whileLoading = failure.phase === "source" ? " while loading the source, before the test ran" : "";
  switch (failure.reason) {
    case "too_slow":
      return {
        message: `test "${name}" used up its budget of ${settings.timeoutMs} ms of CPU time${whileLoading} and was interrupted`,
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
    case "suite_too_slow":
      return {
        message: `test "${name}" was interrupted${whileLoading}: the whole suite used up its budget of ${settings.suiteTimeoutMs} ms of CPU time`,
        hint: `The suite's budget ran out while this test ran: ${SUITE_FIX}`,
      };
    case "suite_not_run":
      return {
        message: `test "${name}" was not run: the whole suite used up its budget of ${settings.suiteTimeoutMs} ms of CPU time before it started`,
        hint: `The tests before it used up the suite's budget: ${SUITE_FIX}`,
      };
    case "uncopyable":
      return {
        message: `test "${name}" failed: ${error.message}`,
        hint: "Return plain data (numbers, strings, arrays, plain objects, Map, Set, Date, errors): the tests receive a copy of what the source returns, made outside the source's reach, never the source's own objects.",
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

/** How the bounds rules end their suggestions: the tests are the task's, so a correction cannot fix this. */
const FIX_THE_DRAFT =
  "The tests cannot be changed by a correction: fix the draft itself and submit it again.";

const tooManyTestsRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.tooManyTests,
  description: "The draft has at most maxTests tests (default 200); with more, none runs.",
  severity: "error",
  check({ content, settings }) {
    const count = content.tests.length;
    if (count <= settings.maxTests) return [];
    return [
      {
        message: `the draft has ${count} tests, more than the ${settings.maxTests} a draft may have, so no test ran`,
        path: "/tests",
        suggestion: `Split the draft into several, each with at most ${settings.maxTests} tests (the limit keeps a validation within its time and the correction loop's state within its size). ${FIX_THE_DRAFT}`,
      },
    ];
  },
};

const testNameRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.testName,
  description: `Every test has a name of 1 to ${MAX_TEST_NAME_CHARS} characters; with a bad name, no test runs.`,
  severity: "error",
  check({ content }) {
    const findings: Finding[] = [];
    content.tests.forEach(({ name }, index) => {
      const problem = nameProblem(name);
      if (!problem) return;
      findings.push({
        message: `the name of test ${index}${name === "" ? "" : ` (${quoteName(name)})`} ${problem}, so no test ran`,
        path: `/tests/${index}/name`,
        suggestion: `Give every test a short name of 1 to ${MAX_TEST_NAME_CHARS} characters that says what it checks: a failing test is reported under it, as test:<name>. ${FIX_THE_DRAFT}`,
      });
    });
    return capped(findings, (more) => ({
      message: `and ${more} more tests have a name that is empty or longer than ${MAX_TEST_NAME_CHARS} characters`,
      path: "/tests",
      suggestion: `Give every test a name of 1 to ${MAX_TEST_NAME_CHARS} characters. ${FIX_THE_DRAFT}`,
    }));
  },
};

const duplicateTestNameRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.duplicateTestName,
  description: "No two tests share a name; with a duplicate, no test runs.",
  severity: "error",
  check({ content }) {
    const findings = duplicateNames(content.tests).map(
      ({ index, first }): Finding => ({
        message: `test ${index} has the same name as test ${first}, ${quoteName(content.tests[index]?.name ?? "")}, so no test ran`,
        path: `/tests/${index}/name`,
        suggestion: `Give each test a name of its own: a failing test is reported under its name, as test:<name>, so two tests with one name cannot be told apart. ${FIX_THE_DRAFT}`,
      }),
    );
    return capped(findings, (more) => ({
      message: `and ${more} more tests have the name of an earlier test`,
      path: "/tests",
      suggestion: `Give each test a name of its own. ${FIX_THE_DRAFT}`,
    }));
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

const builtinsRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.builtins,
  description:
    "The source leaves the built-ins (Math, Array.prototype, Map…) as they are: they are read-only, and the tests run against the originals.",
  severity: "error",
  source: "test",
  check(ctx) {
    const run = runFor(ctx);
    if (run?.kind !== "ran") return [];
    return run.builtinChanges.map(
      (message): Finding => ({
        message,
        path: "/source",
        suggestion:
          "Do not assign, define, delete or extend a built-in: the tests see the original built-ins whatever the source does. Write a helper function of your own (with a name no built-in has) and call it.",
      }),
    );
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
      // A value that could not cross into the tests is the uncopyable rule's to report.
      if (outcome.failure?.reason === "uncopyable") return;
      const finding = testFinding(outcome, index, ctx.settings);
      if (finding) findings.push(finding);
    });
    return findings;
  },
};

const uncopyableRule: Rule<CodeContent, CodeSettings> = {
  id: CODE_RULE_IDS.uncopyable,
  description:
    "What the source gives the tests (a return value, a callback's argument, a resolved or thrown value) can be copied into the tests' realm as data.",
  severity: "error",
  source: "test",
  check(ctx) {
    const run = runFor(ctx);
    if (run?.kind !== "ran") return [];
    const findings: Finding[] = [];
    run.outcomes.forEach((outcome, index) => {
      if (outcome.failure?.reason !== "uncopyable") return;
      const { message, hint } = failureText(outcome.name, outcome.failure, ctx.settings);
      findings.push({ message, path: `/tests/${index}`, suggestion: `${hint}\n${KEEP_TEST}` });
    });
    return findings;
  },
};

// ---------------------------------------------------------------------------------------------
// Pack

const INSTRUCTIONS = `The content is a JavaScript program with its tests: { language: "javascript", source, tests: [{ name, code }] }.
Each test runs in a fresh QuickJS sandbox: first \`source\` as a global script, then the test's \`code\`, which calls what \`source\` declares and checks it with assert(value, message?), assert.equal(actual, expected, message?) (===), assert.deepEqual(actual, expected, message?) (structural) and assert.throws(fn, expected?, message?). A test passes when its code finishes without throwing, ran at least one assertion (or exactly the n it declares with assert.expect(n)) and no assertion in it failed (a failed assertion counts even if its error is caught); a test that evaluates to a promise passes when the promise resolves.
- Fix \`source\` so that every test passes. Never edit \`tests\`: not a name, not a line of code, not their number or order.
- Keep the names and signatures of the functions and classes the tests use, declared at the top level of \`source\`.
- Plain ECMAScript only: there is no require or import, no process, fs, fetch, setTimeout or DOM; console.log does nothing. assert and AssertionError are constants for the tests: do not declare or assign them. The built-ins (Math, JSON, Object, Array, String, Map, Promise… and their prototypes) are frozen, and the tests use the originals: never assign, define, delete or add to a built-in, and do not declare a global with a built-in's name.
- Each test has a budget of CPU time, a memory and a stack limit, and the whole suite a budget (tests left when it runs out fail unrun): no unbounded loops, and prefer loops to deep recursion.
- The tests receive copies of what the source returns, throws or passes to their callbacks (plain data, Map, Set, Date, errors; functions and class methods as callables), never the source's own objects: return results instead of changing a test's arguments in place.
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
        properties: {
          name: {
            type: "string",
            minLength: 1,
            maxLength: MAX_TEST_NAME_CHARS,
            description: "Unique among the tests",
          },
          code: { type: "string" },
        },
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
  rules: [
    languageRule,
    noTestsRule,
    tooManyTestsRule,
    testNameRule,
    duplicateTestNameRule,
    syntaxRule,
    builtinsRule,
    testsRule,
    uncopyableRule,
  ],
  score(ctx: Ctx): number {
    const run = runFor(ctx);
    const total = ctx.content.tests.length;
    if (run?.kind !== "ran" || total === 0) return 0;
    return run.outcomes.filter((o) => o.passed).length / total;
  },
  // Seed 003 gives a failing test three rounds of analyse, fix, retest before escalating: the breaker
  // waits for all three instead of the default two.
  loop: { maxAttempts: 3, breakerAfter: 3 },
  protectedContent: ["/tests", "/language"],
  instructions: INSTRUCTIONS,
  contentJsonSchema() {
    return CONTENT_JSON_SCHEMA;
  },
  ready() {
    return sandbox.ready();
  },
};
