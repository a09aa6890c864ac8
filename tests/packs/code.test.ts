import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { ValidationReport, Violation } from "../../shared/draft.js";
import { inspectWithPack, resolvePack } from "../../shared/engine.js";
import { InvalidPackError } from "../../shared/errors.js";
import type { DeploymentConfig } from "../../shared/pack.js";
import {
  CODE_RULE_IDS,
  type CodeContent,
  CodeContentSchema,
  codePack,
  DEFAULT_CODE_SETTINGS,
} from "../../shared/packs/code/code.js";
import { QuickJSSandbox, type SandboxLimits, type TestOutcome } from "../../shared/packs/code/sandbox.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

const ADD_SOURCE = `function add(a, b) {
  return a + b;
}
function divide(a, b) {
  if (b === 0) throw new RangeError("division by zero");
  return a / b;
}`;

const ADD_TESTS = [
  { name: "adds", code: "assert.equal(add(2, 3), 5);" },
  { name: "adds negatives", code: "assert.equal(add(-2, -3), -5);" },
  { name: "refuses to divide by zero", code: "assert.throws(() => divide(1, 0), RangeError);" },
];

const registry = new PackRegistry({}, [codePack]);
/** Short limits so that the runaway tests stay quick. */
const tightConfig: DeploymentConfig = { packs: { code: { settings: { timeoutMs: 250 } } } };
const tightRegistry = new PackRegistry(tightConfig, [codePack]);
/**
 * A runaway test is cut by a budget of work (interrupt polls), not a clock; the messages say which
 * limit cut it. The elapsed time is checked only against a hang, with room for a loaded machine.
 */
const NOT_HUNG_MS = 60_000;

function code(source: string, tests: CodeContent["tests"] = ADD_TESTS, language = "javascript"): CodeContent {
  return { language, source, tests };
}

let drafts = 0;
function validate(content: CodeContent, reg: PackRegistry = registry): Promise<ValidationReport> {
  drafts += 1;
  return validateDraft({ id: `code-${drafts}`, kind: "code", content }, { registry: reg });
}

function only(report: ValidationReport, ruleId: string): Violation {
  const found = report.violations.filter((v) => v.ruleId === ruleId);
  expect(found, `violations of ${ruleId}`).toHaveLength(1);
  return found[0] as Violation;
}

/** One test alone, straight through the sandbox. */
const sandbox = new QuickJSSandbox();
const limits: SandboxLimits = { ...DEFAULT_CODE_SETTINGS, timeoutMs: 250 };

function runOne(testCode: string, source = ADD_SOURCE): TestOutcome {
  const result = sandbox.runSuite(source, [{ name: "t", code: testCode }], limits);
  if (result.kind !== "ran") throw new Error(`source did not compile: ${result.error.message}`);
  return result.outcomes[0] as TestOutcome;
}

function failureOf(testCode: string, source = ADD_SOURCE): string {
  const outcome = runOne(testCode, source);
  expect(outcome.passed, `expected "${testCode}" to fail`).toBe(false);
  return `${outcome.failure?.error.name}: ${outcome.failure?.error.message}`;
}

beforeAll(async () => {
  await sandbox.ready();
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe("code pack through validateDraft", () => {
  it("passes a source whose tests all pass, with score 1", async () => {
    const report = await validate(code(ADD_SOURCE));
    expect(report.violations).toEqual([]);
    expect(report.passed).toBe(true);
    expect(report.score).toBe(1);
    expect(report.rulesApplied).toEqual([
      CODE_RULE_IDS.language,
      CODE_RULE_IDS.noTests,
      CODE_RULE_IDS.tooManyTests,
      CODE_RULE_IDS.testName,
      CODE_RULE_IDS.duplicateTestName,
      CODE_RULE_IDS.syntax,
      CODE_RULE_IDS.builtins,
      CODE_RULE_IDS.tests,
      CODE_RULE_IDS.uncopyable,
    ]);
  });

  it("reports one failing test out of three as test:<name> and scores 2/3", async () => {
    const report = await validate(code(ADD_SOURCE.replace("return a + b;", "return Math.abs(a + b);")));
    expect(report.passed).toBe(false);
    expect(report.score).toBeCloseTo(2 / 3, 10);
    expect(report.violations).toHaveLength(1);
    const v = only(report, "test:adds negatives");
    expect(v).toMatchObject({
      severity: "error",
      source: "test",
      path: "/tests/1",
      message: "AssertionError: expected -5, got 5",
    });
    expect(v.suggestion).toContain("Make this test pass without changing the test.");
    expect(v.suggestion).toMatch(/Stack \(trimmed.*\n.*tests\/1\.js:1/);
    expect(v.suggestion?.length).toBeLessThan(700);
  });

  it("reports a syntax error once, with its line, and runs no test", async () => {
    const report = await validate(code("function add(a, b) {\n  return a + ;\n}"));
    expect(report.violations).toHaveLength(1);
    const v = only(report, CODE_RULE_IDS.syntax);
    expect(v).toMatchObject({ severity: "error", source: "test", path: "/source" });
    expect(v.message).toMatch(/^SyntaxError at line 2, column \d+: /);
    expect(report.score).toBe(0);
  });

  it("interrupts an infinite loop at the timeout and goes on with the next test", async () => {
    const started = performance.now();
    const report = await validate(
      code("function spin() { while (true) {} }", [
        { name: "spins", code: "spin();" },
        { name: "still runs", code: "assert.equal(1 + 1, 2);" },
      ]),
      tightRegistry,
    );
    expect(performance.now() - started).toBeLessThan(NOT_HUNG_MS);
    const v = only(report, "test:spins");
    expect(v.message).toBe('test "spins" used up its budget of 250 ms of CPU time and was interrupted');
    expect(v.path).toBe("/tests/0");
    expect(report.score).toBe(0.5);
  });

  it("stops the suite at its deadline: later tests are reported as not run", async () => {
    const suiteRegistry = new PackRegistry(
      { packs: { code: { settings: { timeoutMs: 1000, suiteTimeoutMs: 1500 } } } },
      [codePack],
    );
    const spinners = ["one", "two", "three", "four"].map((name) => ({ name, code: "spin();" }));
    const started = performance.now();
    const report = await validate(code("function spin() { while (true) {} }", spinners), suiteRegistry);
    expect(performance.now() - started).toBeLessThan(NOT_HUNG_MS);
    expect(report.violations.map((v) => v.ruleId)).toEqual(spinners.map((t) => `test:${t.name}`));
    expect(only(report, "test:one").message).toBe(
      'test "one" used up its budget of 1000 ms of CPU time and was interrupted',
    );
    // Cut at the suite's remaining ~500 ms of budget, not at its own 1000 ms.
    expect(only(report, "test:two").message).toBe(
      'test "two" was interrupted: the whole suite used up its budget of 1500 ms of CPU time',
    );
    for (const [index, name] of [
      [2, "three"],
      [3, "four"],
    ] as const) {
      const v = only(report, `test:${name}`);
      expect(v).toMatchObject({
        severity: "error",
        source: "test",
        path: `/tests/${index}`,
        message: `test "${name}" was not run: the whole suite used up its budget of 1500 ms of CPU time before it started`,
      });
      expect(v.suggestion).toMatch(/make the slow tests finish/);
      expect(v.suggestion).toMatch(/split the draft/);
    }
    expect(report.score).toBe(0);
    // 1.5 s of CPU time: on a machine shared with busy processes that is many more seconds of wall clock.
  }, 120_000);

  it("cuts a test at the suite's remaining time and fails the tests left unrun", () => {
    const result = sandbox.runSuite(
      ADD_SOURCE,
      [
        { name: "spins", code: "while (true) {}" },
        { name: "spins too", code: "while (true) {}" },
        { name: "quick", code: "assert.equal(add(1, 2), 3);" },
      ],
      { ...limits, timeoutMs: 200, suiteTimeoutMs: 300 },
    );
    expect(result.kind === "ran" && result.outcomes.map((o) => [o.passed, o.failure?.reason])).toEqual([
      [false, "too_slow"],
      [false, "suite_too_slow"],
      [false, "suite_not_run"],
    ]);
  });

  it("runs no test and says so when the draft has more tests than maxTests", async () => {
    const spy = vi.spyOn(QuickJSSandbox.prototype, "runSuite");
    const many = Array.from({ length: 201 }, (_, i) => ({ name: `t${i}`, code: "assert.ok(true);" }));
    const report = await validate(code(ADD_SOURCE, many));
    expect(report.violations).toHaveLength(1);
    const v = only(report, CODE_RULE_IDS.tooManyTests);
    expect(v).toMatchObject({ severity: "error", path: "/tests" });
    expect(v.message).toBe("the draft has 201 tests, more than the 200 a draft may have, so no test ran");
    expect(v.suggestion).toMatch(/at most 200 tests/);
    expect(report.score).toBe(0);
    expect(spy).not.toHaveBeenCalled();

    const small = new PackRegistry({ packs: { code: { settings: { maxTests: 3 } } } }, [codePack]);
    expect((await validate(code(ADD_SOURCE), small)).passed).toBe(true);
    const four = [...ADD_TESTS, { name: "fourth", code: "assert.ok(true);" }];
    expect(only(await validate(code(ADD_SOURCE, four), small), CODE_RULE_IDS.tooManyTests).message).toMatch(
      /^the draft has 4 tests, more than the 3/,
    );
  });

  it("reports a test name that is empty or longer than 120 characters, and runs no test", async () => {
    const long = "x".repeat(121);
    const report = await validate(
      code(ADD_SOURCE, [
        ADD_TESTS[0] as CodeContent["tests"][number],
        { name: long, code: "assert.ok(true);" },
      ]),
    );
    expect(report.violations).toHaveLength(1);
    const v = only(report, CODE_RULE_IDS.testName);
    expect(v).toMatchObject({ severity: "error", path: "/tests/1/name" });
    expect(v.message).toBe(
      `the name of test 1 ("${"x".repeat(40)}…") is 121 characters long, more than 120, so no test ran`,
    );
    expect(v.suggestion).toMatch(/1 to 120 characters/);
    expect(report.score).toBe(0);

    const empty = await validate(code(ADD_SOURCE, [{ name: "", code: "assert.ok(true);" }]));
    expect(only(empty, CODE_RULE_IDS.testName)).toMatchObject({
      path: "/tests/0/name",
      message: "the name of test 0 is empty, so no test ran",
    });
    // 120 characters is still fine.
    expect(
      (await validate(code(ADD_SOURCE, [{ name: "y".repeat(120), code: "assert.ok(true);" }]))).passed,
    ).toBe(true);
  });

  it("caps the findings of a bounds rule and sums up the rest", async () => {
    const unnamed = Array.from({ length: 25 }, () => ({ name: "", code: "assert.ok(true);" }));
    const report = await validate(code(ADD_SOURCE, unnamed));
    expect(report.violations).toHaveLength(20);
    expect(report.violations[19]).toMatchObject({
      ruleId: CODE_RULE_IDS.testName,
      path: "/tests",
      message: "and 6 more tests have a name that is empty or longer than 120 characters",
    });
  });

  it("reports duplicate test names and runs no test", async () => {
    const spy = vi.spyOn(QuickJSSandbox.prototype, "runSuite");
    const report = await validate(
      code(ADD_SOURCE, [...ADD_TESTS, { name: "adds", code: "assert.equal(add(1, 1), 2);" }]),
    );
    expect(report.violations).toHaveLength(1);
    const v = only(report, CODE_RULE_IDS.duplicateTestName);
    expect(v).toMatchObject({
      severity: "error",
      path: "/tests/3/name",
      message: 'test 3 has the same name as test 0, "adds", so no test ran',
    });
    expect(v.suggestion).toMatch(/name of its own/);
    expect(report.score).toBe(0);
    expect(spy).not.toHaveBeenCalled();
  });

  it("stops a runaway allocation at the memory limit", async () => {
    const started = performance.now();
    const report = await validate(
      code("function hog() { const a = []; while (true) a.push(new Array(1e6).fill(1)); }", [
        { name: "hogs", code: "hog();" },
      ]),
    );
    expect(performance.now() - started).toBeLessThan(NOT_HUNG_MS);
    expect(only(report, "test:hogs").message).toBe('test "hogs" exceeded the memory limit of 32 MiB');
  });

  it("reports unbounded recursion as a stack overflow", async () => {
    const report = await validate(
      code("function depth(n) { return depth(n + 1) + 1; }", [{ name: "recurses", code: "depth(0);" }]),
    );
    const v = only(report, "test:recurses");
    expect(v.message).toMatch(
      /^test "recurses" overflowed the stack \(InternalError: stack overflow; QuickJS limit 256 KiB\)/,
    );
    expect(v.suggestion).toContain("at depth (source.js:1");
  });

  it("survives nesting that exhausts Node's own stack: the engine is reloaded for the next draft", async () => {
    const nested = "let o = {}; for (let i = 0; i < 1e5; i++) o = { a: o }; JSON.stringify(o);";
    const report = await validate(
      code("", [
        { name: "nests", code: nested },
        { name: "after", code: "assert.ok(true);" },
      ]),
    );
    expect(only(report, "test:nests").message).toMatch(/^test "nests" overflowed the stack/);
    // The spare engine runs the rest of the tests, and the next validation runs normally.
    expect(report.violations).toHaveLength(1);
    expect((await validate(code(ADD_SOURCE))).passed).toBe(true);
  });

  it("keeps every escape attempt inside the sandbox and fails it", async () => {
    const attempts = [
      { name: "require", code: "require('fs').readFileSync('/etc/passwd', 'utf8');" },
      { name: "exit", code: "process.exit(1);" },
      {
        name: "function constructor",
        code: "globalThis.constructor.constructor('return process')().exit(1);",
      },
      { name: "fetch", code: "fetch('http://127.0.0.1');" },
      { name: "dynamic import", code: "import('fs');" },
      { name: "this", code: "this.process.mainModule.require('fs');" },
      {
        name: "pollute",
        code: "globalThis.pwned = true; Object.prototype.pwned = true; throw new Error('done');",
      },
    ];
    const exitCode = process.exitCode;
    const report = await validate(code(ADD_SOURCE, attempts));
    expect(report.violations.map((v) => v.ruleId)).toEqual(attempts.map((a) => `test:${a.name}`));
    const messages = Object.fromEntries(report.violations.map((v) => [v.ruleId, v.message]));
    expect(messages["test:require"]).toBe("ReferenceError: 'require' is not defined");
    expect(messages["test:exit"]).toBe("ReferenceError: 'process' is not defined");
    expect(messages["test:function constructor"]).toBe("ReferenceError: 'process' is not defined");
    expect(messages["test:fetch"]).toBe("ReferenceError: 'fetch' is not defined");
    expect(messages["test:dynamic import"]).toMatch(/could not load module 'fs'/);
    expect(messages["test:this"]).toMatch(/^TypeError: /);
    expect(report.score).toBe(0);
    // The host is untouched: still running, same exit code, no global leaked out.
    expect(process.exitCode).toBe(exitCode);
    expect((globalThis as Record<string, unknown>).pwned).toBeUndefined();
    expect(({} as Record<string, unknown>).pwned).toBeUndefined();
  });

  it("gives the sandbox no host globals", async () => {
    const hostNames = [
      "process",
      "require",
      "module",
      "Buffer",
      "fetch",
      "setTimeout",
      "setInterval",
      "global",
      "WebAssembly",
    ];
    const report = await validate(
      code("", [
        {
          name: "no host globals",
          code: `for (const name of ${JSON.stringify(hostNames)}) assert.equal(typeof this[name], "undefined", name);`,
        },
      ]),
    );
    expect(report.violations).toEqual([]);
  });

  it("runs each test in a fresh context: a test that changes globals does not affect the next", async () => {
    const report = await validate(
      code(ADD_SOURCE, [
        {
          name: "vandal",
          code: "add = () => 0; globalThis.marker = 1; Array.prototype.includes = () => true; assert.equal(add(1, 2), 0);",
        },
        {
          name: "unaffected",
          code: "assert.equal(add(1, 2), 3); assert.equal(typeof marker, 'undefined'); assert.equal([1].includes(2), false);",
        },
      ]),
    );
    expect(report.violations).toEqual([]);
  });

  it("fails every test, once each, when the source throws while loading", async () => {
    const report = await validate(code(`${ADD_SOURCE}\nconfig.load();`));
    expect(report.violations).toHaveLength(3);
    expect(report.violations[0]?.message).toBe(
      "ReferenceError: 'config' is not defined (thrown while loading the source, before the test ran)",
    );
    expect(report.score).toBe(0);
  });

  it("does not let the source disable assert", async () => {
    const report = await validate(
      code("Object.is = () => true; JSON.stringify = () => '';", [
        { name: "still checks", code: "assert.equal(1, 2);" },
        { name: "still deep", code: "assert.deepEqual([1], [2]);" },
      ]),
    );
    expect(report.violations.map((v) => v.message)).toEqual([
      "the source replaces Object.is; built-ins are read-only",
      "the source replaces JSON.stringify; built-ins are read-only",
      "AssertionError: expected 2, got 1",
      "AssertionError: expected [2], got [1] (first difference at [0]: expected 2, got 1)",
    ]);
    // assert is a global constant: assigning or redeclaring it fails the source as it loads.
    for (const source of ["assert = () => {};", "function assert() {}"]) {
      const redeclared = await validate(code(source, [{ name: "t", code: "assert.equal(1, 2);" }]));
      expect(redeclared.violations.map((v) => v.message)).toEqual([
        expect.stringMatching(
          /^(TypeError|SyntaxError): .*assert.*\(thrown while loading the source, before the test ran\)$/,
        ),
      ]);
    }
  });

  it("reports a language it cannot run and runs nothing", async () => {
    const report = await validate(code("def add(a, b): return a + b", ADD_TESTS, "python"));
    expect(report.violations).toHaveLength(1);
    expect(only(report, CODE_RULE_IDS.language)).toMatchObject({ path: "/language", source: "rule" });
    expect(report.score).toBe(0);
  });

  it("reports a draft without tests", async () => {
    const report = await validate(code(ADD_SOURCE, []));
    expect(only(report, CODE_RULE_IDS.noTests).path).toBe("/tests");
    expect(report.score).toBe(0);
  });

  it("reports a malformed content as a shape violation", async () => {
    const report = await validateDraft(
      { id: "code-shape", kind: "code", content: { language: "javascript", source: 1, tests: [] } },
      { registry },
    );
    expect(report.violations[0]?.ruleId).toBe("content_shape");
  });

  it("runs the tests once per content, for the check and the score, and caches by content only", async () => {
    // validateDraft checks inside a deferral: the suite runs asynchronously (code.ts).
    const spy = vi.spyOn(QuickJSSandbox.prototype, "runSuiteAsync");
    const source = `${ADD_SOURCE}\n// once per content`;
    await validate(code(source));
    expect(spy).toHaveBeenCalledTimes(1);
    // The same content in another object is not run again: its verdict is the same by construction.
    await validate(code(source));
    expect(spy).toHaveBeenCalledTimes(1);
    // The same object with different content is run again, and so is the same content with other limits.
    const content = code(source);
    await validate(content);
    content.source = source.replace("a + b", "a - b");
    const changed = await validate(content);
    expect(spy).toHaveBeenCalledTimes(2);
    expect(changed.passed).toBe(false);
    await validate(code(source), tightRegistry);
    expect(spy).toHaveBeenCalledTimes(3);
  });

  it("rejects settings out of bounds when the registry is built", () => {
    expect(() => new PackRegistry({ packs: { code: { settings: { timeoutMs: 0 } } } }, [codePack])).toThrow(
      InvalidPackError,
    );
    expect(() => new PackRegistry({ packs: { code: { settings: { memory: 1 } } } }, [codePack])).toThrow(
      InvalidPackError,
    );
    expect(
      () =>
        new PackRegistry({ packs: { code: { settings: { timeoutMs: 2000, suiteTimeoutMs: 1500 } } } }, [
          codePack,
        ]),
    ).toThrow(/suiteTimeoutMs must be at least timeoutMs/);
    expect(() => new PackRegistry({ packs: { code: { settings: { maxTests: 0 } } } }, [codePack])).toThrow(
      InvalidPackError,
    );
    expect(
      () => new PackRegistry({ packs: { code: { settings: { maxTests: 10_000 } } } }, [codePack]),
    ).toThrow(InvalidPackError);
  });

  it("throws a clear error when checked before ready()", async () => {
    vi.resetModules();
    const fresh = await import("../../shared/packs/code/code.js");
    const freshErrors = await import("../../shared/errors.js");
    const draft = { id: "not-ready", kind: "code", content: code(ADD_SOURCE) };
    const attempt = () => inspectWithPack(resolvePack(fresh.codePack), draft);
    // A system fault, not a verdict on the draft: not a SelfCorrectionError, which would reject it.
    expect(attempt).toThrow(/await codePack\.ready\(\)/);
    expect(attempt).not.toThrow(freshErrors.SelfCorrectionError);
    expect(attempt).toThrow(expect.objectContaining({ name: "SandboxSetupError" }));
  });

  it("describes its content, loop and instructions for the correction prompt", () => {
    expect(codePack.loop).toEqual({ maxAttempts: 3, breakerAfter: 3 });
    expect(codePack.instructions).toMatch(/Never edit `tests`/);
    expect(codePack.instructions).toMatch(/Keep the names/);
    const schema = codePack.contentJsonSchema?.({ id: "x", kind: "code", content: {} });
    expect(schema).toMatchObject({ required: ["language", "source", "tests"] });
    expect(CodeContentSchema.safeParse(code(ADD_SOURCE)).success).toBe(true);
  });
});

describe("QuickJS sandbox", () => {
  // As packFor does before every validation: replaces an engine a test took down.
  beforeEach(async () => {
    await sandbox.ready();
  });

  it("refuses to run before ready()", () => {
    expect(() => new QuickJSSandbox().runSuite("", [], limits)).toThrow(/await ready\(\)/);
  });

  it("assert.equal compares with === and shows actual against expected", () => {
    expect(
      runOne("assert.equal(add(1, 2), 3); assert.equal(NaN, NaN); assert.strictEqual('a', 'a');").passed,
    ).toBe(true);
    expect(failureOf("assert.equal(add(2, 2), 5);")).toBe("AssertionError: expected 5, got 4");
    expect(failureOf("assert.equal(add(1, 1), '2', 'sum');")).toBe(
      'AssertionError: sum: expected "2", got 2',
    );
    expect(failureOf("assert.equal([1], [1]);")).toBe("AssertionError: expected [1], got [1]");
  });

  it("assert.deepEqual compares structure and names the first difference", () => {
    const same =
      "assert.deepEqual({ a: [1, { b: 2 }], d: new Date(0), r: /x/g }, { a: [1, { b: 2 }], d: new Date(0), r: /x/g });" +
      "assert.deepEqual(new Map([[1, { x: [1] }]]), new Map([[1, { x: [1] }]]));" +
      "assert.deepEqual(new Set([{ a: 1 }]), new Set([{ a: 1 }]));" +
      "const c = { n: 1 }; c.self = c; const d = { n: 1 }; d.self = d; assert.deepEqual(c, d);";
    expect(runOne(same).passed).toBe(true);
    expect(failureOf("assert.deepEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 3 }] });")).toBe(
      "AssertionError: expected { a: [1, { b: 3 }] }, got { a: [1, { b: 2 }] } (first difference at a[1].b: expected 3, got 2)",
    );
    expect(failureOf("assert.deepEqual({ a: 1 }, { a: 1, c: 2 });")).toBe(
      "AssertionError: expected { a: 1, c: 2 }, got { a: 1 } (missing c, expected 2)",
    );
    expect(failureOf("assert.deepEqual([1, 2], [1, 2, 3]);")).toMatch(
      /first difference at length: expected 3, got 2/,
    );
    expect(failureOf("assert.deepEqual(1, '1');")).toBe('AssertionError: expected "1", got 1');
  });

  it("assert.throws checks that the function throws, optionally what", () => {
    expect(
      runOne(
        "assert.throws(() => divide(1, 0)); assert.throws(() => divide(1, 0), RangeError);" +
          "assert.throws(() => divide(1, 0), /zero/); assert.throws(() => divide(1, 0), 'a message');",
      ).passed,
    ).toBe(true);
    expect(failureOf("assert.throws(() => divide(4, 2));")).toBe(
      "AssertionError: expected the function to throw, but it returned normally",
    );
    expect(failureOf("assert.throws(() => divide(1, 0), TypeError);")).toBe(
      "AssertionError: the function threw RangeError: division by zero, which does not match [Function TypeError]",
    );
  });

  it("plain assert fails on a falsy value, with the message when given", () => {
    expect(runOne("assert(add(1, 1) === 2); assert.ok(1);").passed).toBe(true);
    expect(failureOf("assert(add(1, 1) === 3);")).toBe("AssertionError: expected a truthy value, got false");
    expect(failureOf("assert(0, 'zero is falsy');")).toBe("AssertionError: zero is falsy");
  });

  it("waits for a test that evaluates to a promise", () => {
    expect(runOne("(async () => { await null; assert.equal(add(1, 2), 3); })();").passed).toBe(true);
    expect(failureOf("(async () => { await null; assert.equal(add(1, 2), 4); })();")).toBe(
      "AssertionError: expected 4, got 3",
    );
    expect(failureOf("new Promise(() => {});")).toMatch(/never settled/);
    // A promise chain that never ends: stopped by the deadline or the heap, whichever comes first.
    const endless = runOne("(function again() { return Promise.resolve().then(again); })();");
    expect(["too_slow", "memory"]).toContain(endless.failure?.reason);
  });

  it("fails a failed assertion even when the test or the source catches its error", () => {
    expect(failureOf("try { assert.equal(add(1, 1), 3); } catch (e) {}")).toBe(
      "AssertionError: expected 3, got 2",
    );
    const swallowing = `${ADD_SOURCE}\nfunction quietly(f) { try { f(); } catch (e) {} return "fine"; }`;
    expect(failureOf("quietly(() => assert.deepEqual([add(1, 1)], [3]));", swallowing)).toMatch(
      /^AssertionError: expected \[3\], got \[2\]/,
    );
    // An assertion in a callback nobody awaits still runs before the verdict.
    expect(failureOf("Promise.resolve().then(() => assert.ok(add(1, 1) === 3)); 'done';")).toBe(
      "AssertionError: expected a truthy value, got false",
    );
  });

  it("assert.rejects waits for genuine promises only, and the test for assert.rejects", () => {
    expect(
      runOne(
        "assert.rejects(Promise.reject(new RangeError('no')), RangeError); assert.rejects(() => { throw new RangeError('sync'); }, /sync/);",
      ).passed,
    ).toBe(true);
    expect(failureOf("assert.rejects(Promise.resolve(1));")).toBe(
      "AssertionError: expected the promise to reject, but it resolved",
    );
    expect(failureOf("assert.rejects({ then(resolve, reject) { reject(new Error('x')); } });")).toMatch(
      /^AssertionError: assert.rejects expects a Promise/,
    );
    expect(failureOf("assert.rejects(new Promise(() => {})); 'not awaited';")).toMatch(
      /assert.rejects was still waiting/,
    );
  });

  it("fails a test that evaluates to a thenable that is not a Promise, without calling its then", () => {
    // Were its then called, this one would spin until the timeout.
    const spinning = runOne("({ then(resolve) { for (;;) {} } });");
    expect(spinning.failure?.reason).toBe("error");
    expect(spinning.failure?.error.message).toMatch(/evaluated to a thenable that is not a Promise/);
    expect(failureOf("({ get then() { throw new Error('boom'); } });")).toMatch(/thenable/);
    expect(runOne("assert.ok(true); ({ then: 1 });").passed).toBe(true);
  });

  it("hides the host's functions from the source and the tests", () => {
    const source = `${ADD_SOURCE}\nconst seen = Object.getOwnPropertyNames(globalThis).filter((k) => /redraft/i.test(k));`;
    expect(
      runOne(
        "assert.deepEqual(seen, []); assert.equal(globalThis.assert, undefined); assert.equal(typeof assert, 'function');",
        source,
      ).passed,
    ).toBe(true);
  });

  it("keeps running the remaining tests when a test takes the engine down", async () => {
    // Freeing this long promise chain trips an assertion inside QuickJS: the spare engine takes over.
    const next = { name: "next", code: "assert.equal(add(1, 2), 3);" };
    const chain = { name: "chain", code: "(function again() { return Promise.resolve().then(again); })();" };
    const nest = {
      name: "nest",
      code: "let o = {}; for (let i = 0; i < 1e5; i++) o = { a: o }; JSON.stringify(o);",
    };
    for (const tests of [
      [chain, next],
      [nest, next],
      [chain, next],
    ]) {
      const result = sandbox.runSuite(ADD_SOURCE, tests, limits);
      expect(result.kind === "ran" && result.outcomes.map((o) => o.passed)).toEqual([false, true]);
      await sandbox.ready();
    }
  });

  it("reports thrown values that are not errors", () => {
    expect(failureOf("throw 'plain string';")).toBe('Uncaught: "plain string"');
    const outcome = runOne("throw { code: 42 };");
    expect(outcome.failure?.error).toMatchObject({ isError: false, message: "{ code: 42 }" });
  });

  it("classifies runaway tests by the limit they hit", () => {
    expect(runOne("while (true) {}").failure?.reason).toBe("too_slow");
    // Typed arrays: filling a plain array natively is CPU time the budget now counts, and 250 ms of it runs out first.
    expect(runOne("const a = []; for (;;) a.push(new Float64Array(1e6));").failure?.reason).toBe("memory");
    expect(runOne("(function f() { f(); })();").failure?.reason).toBe("stack");
    expect(runOne("console.log('quiet'); assert.ok(true);").passed).toBe(true);
  });

  it("lets a draft's own objects assign over the frozen built-ins' prototype properties", () => {
    const source = [
      'class ValidationError extends Error { constructor(m) { super(m); this.name = "ValidationError"; this.message = "bad: " + m; } }',
      "function Stack() {} Stack.prototype.toString = function () { return 'Stack'; }; Stack.prototype.constructor = Stack;",
      "const point = { x: 1 }; point.valueOf = () => 42; point.hasOwnProperty = () => 'own';",
    ].join("\n");
    const outcome = runOne(
      'const e = new ValidationError("x"); assert.equal(e.name, "ValidationError"); assert.equal(e.message, "bad: x");' +
        'assert.equal(String(new Stack()), "Stack"); assert.equal(new Stack().constructor, Stack);' +
        // A plain object's own valueOf is a protocol hook: it does not cross into the tests' realm (its other own methods do).
        'assert.equal(point + 0, "[object Object]0"); assert.equal(point.hasOwnProperty(), "own"); assert.equal(Error.prototype.name, "Error");',
      source,
    );
    expect(outcome.failure?.error.message).toBeUndefined();
    expect(outcome.passed).toBe(true);
  });

  it("lets a test declare names the source also declares", () => {
    expect(
      runOne("const total = add(1, 2); assert.equal(total, 3);", `${ADD_SOURCE}\nconst total = 0;`).passed,
    ).toBe(true);
  });

  it("gives the syntax error's line and column", () => {
    const result = sandbox.runSuite("\n\nlet x = ;", [{ name: "t", code: "" }], limits);
    expect(result).toMatchObject({
      kind: "syntax_error",
      line: 3,
      column: 9,
      error: { name: "SyntaxError" },
    });
  });
});
