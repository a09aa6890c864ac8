import { describe, expect, it } from "vitest";
import type { ValidationReport } from "../../shared/draft.js";
import { type CodeContent, codePack } from "../../shared/packs/code/code.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

/**
 * Drafts whose source is wrong and tries to forge its tests' verdicts. Each cheat is a correct base
 * with some functions made wrong, plus a trick; it must fail at least the tests that exercise the
 * wrong functions (a trick the locked realm refuses with an exception fails them all as the source
 * loads). Where the trick changes a built-in, code_builtins_read_only names it; and the same trick made
 * by the correct base never makes a test judge the implementation wrong: the verdict follows the
 * implementation, not the trick. tests/packs/code-forging.test.ts forges the built-ins one by one.
 */

const BASE = {
  add: "function add(a, b) { return a + b; }",
  addAsync: "async function addAsync(a, b) { return a + b; }",
  divide: 'function divide(a, b) { if (b === 0) throw new RangeError("division by zero"); return a / b; }',
  asyncDivide: "async function asyncDivide(a, b) { return divide(a, b); }",
  divmod: "function divmod(a, b) { return [Math.floor(a / b), a % b]; }",
  withSum: "function withSum(a, b, cb) { return cb(a + b); }",
  point: "function point(x, y) { return { x: x, y: y }; }",
  counts:
    "function counts(s) { const tally = {}; for (let i = 0; i < s.length; i++) tally[s[i]] = (tally[s[i]] || 0) + 1; return new Map(Object.entries(tally)); }",
  epoch: "function epoch() { return new Date(0); }",
};
type Name = keyof typeof BASE;

const TESTS: CodeContent["tests"] = [
  { name: "adds", code: "assert.equal(add(2, 3), 5);" },
  { name: "adds asynchronously", code: "(async () => { assert.equal(await addAsync(2, 3), 5); })();" },
  { name: "adds with then", code: "addAsync(2, 3).then((sum) => assert.equal(sum, 5));" },
  { name: "divides by zero", code: "assert.throws(() => divide(1, 0), RangeError);" },
  { name: "says why", code: "assert.throws(() => divide(1, 0), /division by zero/);" },
  { name: "rejects division by zero", code: "assert.rejects(asyncDivide(1, 0), RangeError);" },
  { name: "divmod", code: "const [q, r] = divmod(7, 2); assert.equal(q, 3); assert.equal(r, 1);" },
  { name: "callback", code: "withSum(2, 3, (sum) => assert.equal(sum, 5));" },
  { name: "point", code: "assert.deepEqual(point(1, 2), { x: 1, y: 2 });" },
  { name: "counts", code: 'assert.deepEqual(counts("aab"), new Map([["a", 2], ["b", 1]]));' },
  { name: "epoch", code: "assert.deepEqual(epoch(), new Date(0));" },
];

interface Cheat {
  readonly name: string;
  /** Global changes made before the functions are declared (sloppy script: a refused write is silent). */
  readonly trick?: string;
  readonly wrong: Partial<Record<Name, string>>;
  /** Tests run before the task's own. */
  readonly before?: CodeContent["tests"];
  /** The tests that must fail: at least those that exercise the wrong functions. */
  readonly fails: readonly string[];
  /** The built-ins the trick changes, as code_builtins_read_only names them. */
  readonly names?: readonly string[];
}

const SUBTRACTS = { add: "function add(a, b) { return a - b; }" };
const ADDS_ASYNC_WRONG = { addAsync: "async function addAsync(a, b) { return a - b; }" };
const DIVIDES_BY_ZERO = { divide: "function divide(a, b) { return a / b; }" };
const WRONG_POINT = { point: "function point(x, y) { return { x: y, y: x }; }" };
const WRONG_COUNTS = { counts: 'function counts() { return new Map([["a", 1], ["b", 2]]); }' };
const WRONG_EPOCH = { epoch: "function epoch() { return new Date(1); }" };
const FAKE_ASSERT = "{ ok() {}, equal() {}, deepEqual() {}, throws() {}, rejects() {} }";

const CHEATS: readonly Cheat[] = [
  {
    name: "defines a no-op assert on globalThis",
    trick: `Object.defineProperty(globalThis, "assert", { value: ${FAKE_ASSERT} });`,
    wrong: SUBTRACTS,
    fails: ["adds"],
  },
  {
    name: "assigns globalThis.assert and AssertionError",
    trick: `globalThis.assert = ${FAKE_ASSERT}; globalThis.AssertionError = Object;`,
    wrong: SUBTRACTS,
    fails: ["adds"],
  },
  {
    name: "deletes assert",
    trick: "delete globalThis.assert; delete globalThis.AssertionError;",
    wrong: SUBTRACTS,
    fails: ["adds"],
  },
  {
    name: "redefines assert's methods",
    trick:
      'try { Object.defineProperty(assert, "equal", { value() {} }); } catch {} try { assert.equal = () => {}; } catch {} try { delete assert.equal; } catch {}',
    wrong: SUBTRACTS,
    fails: ["adds"],
  },
  {
    name: "swaps assert's prototype or wraps it in a Proxy",
    trick:
      "try { Object.setPrototypeOf(assert, { equal() {} }); } catch {} globalThis.assert = new Proxy(function () {}, { get: () => () => {} });",
    wrong: SUBTRACTS,
    fails: ["adds"],
  },
  {
    name: "declares assert through eval",
    trick: `try { (0, eval)("var assert = ${FAKE_ASSERT}"); } catch {} try { eval("function assert() {}"); } catch {}`,
    wrong: SUBTRACTS,
    fails: ["adds"],
  },
  {
    name: "catches the test's AssertionError inside a callback",
    wrong: {
      withSum: "function withSum(a, b, cb) { try { return cb(a - b); } catch (e) { return a + b; } }",
    },
    fails: ["callback"],
  },
  {
    name: "replaces Error and its prototype",
    trick:
      'Error = function Error() {}; Error.prototype = {}; Object.defineProperty(Object.getPrototypeOf(RangeError.prototype), "name", { get() { return "Fine"; } });',
    wrong: DIVIDES_BY_ZERO,
    fails: ["divides by zero", "says why", "rejects division by zero"],
    names: ["replaces Error", "replaces Error.prototype.name"],
  },
  {
    name: "renames AssertionError",
    trick:
      'try { AssertionError.prototype.name = "Fine"; } catch {} try { Object.defineProperty(assert.AssertionError, Symbol.hasInstance, { value: () => false }); } catch {}',
    wrong: SUBTRACTS,
    fails: ["adds"],
  },
  {
    name: "replaces the Promise global",
    trick: "Promise = function Promise(executor) { executor(() => {}, () => {}); };",
    wrong: ADDS_ASYNC_WRONG,
    fails: ["adds asynchronously", "adds with then"],
    names: ["replaces Promise"],
  },
  {
    name: "replaces Promise.prototype.then to skip callbacks",
    trick: "Promise.prototype.then = function () { return Promise.resolve(); };",
    wrong: ADDS_ASYNC_WRONG,
    fails: ["adds asynchronously", "adds with then"],
  },
  {
    name: "replaces Promise.prototype.constructor and then to forge await",
    trick:
      "try { Promise.prototype.constructor = Object; } catch {} Promise.prototype.then = function (resolve) { resolve(5); };",
    wrong: ADDS_ASYNC_WRONG,
    fails: ["adds asynchronously", "adds with then"],
  },
  {
    name: "replaces Promise[Symbol.species] with an always-resolved promise",
    trick:
      "try { Object.defineProperty(Promise, Symbol.species, { get() { return function (executor) { executor(() => {}, () => {}); return Promise.resolve(); }; } }); } catch {}",
    wrong: { addAsync: "function addAsync() { return new Promise(() => {}); }" },
    fails: ["adds asynchronously", "adds with then"],
  },
  {
    name: "replaces Function.prototype.call, apply and bind",
    trick:
      "Function.prototype.call = Function.prototype.apply = function () { return true; }; Function.prototype.bind = function () { return function () {}; };",
    wrong: SUBTRACTS,
    fails: ["adds"],
    names: [
      "replaces Function.prototype.call",
      "replaces Function.prototype.apply",
      "replaces Function.prototype.bind",
    ],
  },
  {
    name: "makes RangeError claim every value through Symbol.hasInstance",
    trick: "Object.defineProperty(RangeError, Symbol.hasInstance, { value: () => true });",
    wrong: {
      divide: 'function divide(a, b) { if (b === 0) throw new TypeError("division by zero"); return a / b; }',
    },
    fails: ["divides by zero", "rejects division by zero"],
    names: ["adds RangeError[Symbol.hasInstance]"],
  },
  {
    name: "throws a plain object with RangeError's prototype, and patches Error.isError",
    trick: "Error.isError = () => true;",
    wrong: {
      divide:
        'function divide(a, b) { if (b === 0) throw Object.create(RangeError.prototype, { message: { value: "division by zero" } }); return a / b; }',
    },
    fails: ["divides by zero", "rejects division by zero"],
    names: ["replaces Error.isError"],
  },
  {
    name: "throws a Proxy that claims RangeError's prototype",
    wrong: {
      divide:
        'function divide(a, b) { if (b === 0) throw new Proxy(new TypeError("division by zero"), { getPrototypeOf: () => RangeError.prototype }); return a / b; }',
    },
    fails: ["divides by zero", "rejects division by zero"],
  },
  {
    name: "replaces RegExp.prototype.exec and test",
    trick:
      'RegExp.prototype.exec = function () { return ["x"]; }; RegExp.prototype.test = function () { return true; };',
    wrong: { divide: 'function divide(a, b) { if (b === 0) throw new RangeError("oops"); return a / b; }' },
    fails: ["says why"],
    names: ["replaces RegExp.prototype.exec", "replaces RegExp.prototype.test"],
  },
  {
    name: "replaces JSON",
    trick: 'JSON = { stringify: () => "{}", parse: () => ({}) };',
    wrong: WRONG_POINT,
    fails: ["point"],
    names: ["replaces JSON"],
  },
  {
    name: "replaces Object.is",
    trick: "Object.is = () => true; Number.isNaN = () => true;",
    wrong: SUBTRACTS,
    fails: ["adds"],
    names: ["replaces Object.is", "replaces Number.isNaN"],
  },
  {
    name: "replaces the array iterator to forge destructuring",
    trick:
      "Array.prototype[Symbol.iterator] = function* () { yield 3; yield 1; }; try { Object.getPrototypeOf([][Symbol.iterator]()).next = function () { return { done: true }; }; } catch {}",
    wrong: { divmod: "function divmod() { return [0, 0]; }" },
    fails: ["divmod"],
  },
  {
    name: "replaces the reflection intrinsics deepEqual could use",
    trick:
      'Object.keys = () => []; Object.getPrototypeOf = () => null; Array.isArray = () => false; Object.hasOwn = () => true; Reflect.apply = () => undefined; String = () => "";',
    wrong: { ...WRONG_POINT, ...WRONG_COUNTS },
    fails: ["point", "counts"],
    names: [
      "replaces Object.keys",
      "replaces Object.getPrototypeOf",
      "replaces Array.isArray",
      "replaces Object.hasOwn",
      "replaces Reflect.apply",
      "replaces String",
    ],
  },
  {
    name: "replaces Map, Set and Date methods",
    trick:
      'Map.prototype.forEach = function () {}; Map.prototype.has = () => true; Object.defineProperty(Map.prototype, "size", { get() { return 2; } }); Set.prototype.forEach = function () {}; Date.prototype.getTime = () => 0;',
    wrong: { ...WRONG_COUNTS, ...WRONG_EPOCH },
    fails: ["counts", "epoch"],
    names: [
      "replaces Map.prototype.forEach",
      "replaces Map.prototype.has",
      "replaces Map.prototype.size",
      "replaces Set.prototype.forEach",
      "replaces Date.prototype.getTime",
    ],
  },
  {
    name: "poisons Object.prototype and array indexes",
    trick:
      'Object.prototype.get = function () {}; Object.prototype.count = -1; Object.defineProperty(Array.prototype, "0", { get() { return undefined; }, set() {}, configurable: true });',
    wrong: { ...SUBTRACTS, ...WRONG_POINT },
    fails: ["adds", "point"],
    names: [
      "adds Object.prototype.get",
      "adds Object.prototype.count",
      "adds a getter or setter Array.prototype[0]",
      // An index added to Array.prototype (an array) moves its length too.
      "replaces Array.prototype.length",
    ],
  },
  {
    name: "throws an object whose getters throw and that looks resolved",
    wrong: {
      add: 'function add() { throw { get message() { throw new Error("gotcha"); }, get name() { throw 1; }, then(resolve) { resolve(5); } }; }',
    },
    fails: ["adds"],
  },
  {
    name: "throws a Proxy whose every trap throws",
    wrong: {
      add: "function add() { throw new Proxy({}, { get() { throw 1; }, getPrototypeOf() { throw 2; }, ownKeys() { throw 3; }, has() { throw 4; } }); }",
    },
    fails: ["adds"],
  },
  {
    name: "returns a thenable that never settles",
    wrong: { addAsync: "function addAsync() { return { then() {} }; }" },
    // "adds with then" passes: its callback is handed to the draft's own then, which may simply never call it.
    fails: ["adds asynchronously"],
  },
  {
    name: "makes the test evaluate to a forged resolved-looking thenable",
    wrong: {
      addAsync: "function addAsync() { return { then() { return { then(resolve) { resolve(); } }; } }; }",
    },
    fails: ["adds asynchronously", "adds with then"],
  },
  {
    name: "forges the rejection assert.rejects waits for",
    trick:
      'try { Promise.prototype.constructor = Object; } catch {} Promise.prototype.then = function (resolve, reject) { reject(new RangeError("division by zero")); };',
    wrong: { asyncDivide: "async function asyncDivide(a, b) { return a / b; }" },
    fails: ["rejects division by zero"],
  },
  {
    name: "gives its promise its own constructor and then",
    wrong: {
      asyncDivide:
        'function asyncDivide(a, b) { const p = Promise.resolve(a / b); Object.defineProperty(p, "constructor", { value: Object, configurable: true }); Object.defineProperty(p, "then", { value: (resolve, reject) => reject(new RangeError("division by zero")) }); return p; }',
    },
    fails: ["rejects division by zero"],
  },
  {
    name: "hands assert.rejects a look-alike that always rejects",
    wrong: {
      asyncDivide:
        'function asyncDivide() { return { then(resolve, reject) { reject(new RangeError("division by zero")); } }; }',
    },
    fails: ["rejects division by zero"],
  },
  {
    name: "a promise that never settles for assert.rejects",
    wrong: { asyncDivide: "function asyncDivide() { return new Promise(() => {}); }" },
    fails: ["rejects division by zero"],
  },
  {
    name: "an earlier test fixes the globals for the next ones",
    before: [
      {
        name: "fixes add for the others",
        code: 'globalThis.add = (a, b) => a + b; Object.defineProperty(globalThis, "assert", { value: {} }); assert.equal(add(2, 3), 5);',
      },
    ],
    wrong: SUBTRACTS,
    fails: ["adds"],
  },
];

const registry = new PackRegistry({}, [codePack]);
let drafts = 0;

function sourceOf(trick: string, functions: Partial<Record<Name, string>>): string {
  return [trick, ...Object.values({ ...BASE, ...functions })].join("\n");
}

function validate(source: string, tests: CodeContent["tests"] = TESTS): Promise<ValidationReport> {
  drafts += 1;
  return validateDraft(
    { id: `cheat-${drafts}`, kind: "code", content: { language: "javascript", source, tests } },
    { registry },
  );
}

function failing(report: ValidationReport): string[] {
  return report.violations.map((v) => v.ruleId);
}

function builtinsNamed(report: ValidationReport): string[] {
  return report.violations
    .filter((v) => v.ruleId === "code_builtins_read_only")
    .map((v) => v.message)
    .sort();
}

function sentence(change: string): string {
  return `the source ${change}; built-ins are read-only`;
}

describe("code drafts that forge their verdicts", () => {
  it("has a corpus of at least 25 distinct cheats", () => {
    expect(new Set(CHEATS.map((c) => c.name)).size).toBe(CHEATS.length);
    expect(CHEATS.length).toBeGreaterThanOrEqual(25);
  });

  it("validates the correct base: the control", async () => {
    const report = await validate(sourceOf("", {}));
    expect(report.violations).toEqual([]);
    expect(report.passed).toBe(true);
  });

  it("names harmless-looking changes of built-ins, while every test still passes", async () => {
    const harmless = [
      "const originalIs = Object.is; Object.is = function is(a, b) { return originalIs(a, b); };",
      "const originalStringify = JSON.stringify; JSON.stringify = function stringify(v, r, s) { return originalStringify(v, r, s); };",
      "Array.prototype[Symbol.iterator] = Array.prototype.values;",
      "Promise.prototype.then = Promise.prototype.then;",
      "globalThis.helpers = { twice: (f) => (x) => f(f(x)) };",
      "console.log('loaded');",
    ].join("\n");
    const report = await validate(sourceOf(harmless, {}));
    expect(report.violations.map((v) => `${v.ruleId}: ${v.message}`)).toEqual([
      "code_builtins_read_only: the source replaces Object.is; built-ins are read-only",
      "code_builtins_read_only: the source replaces JSON.stringify; built-ins are read-only",
    ]);
  });

  it("refuses an assignment to a prototype's method as the source loads, and names it", async () => {
    const report = await validate(
      sourceOf('Error.prototype.toString = function () { return this.name + ": " + this.message; };', {}),
    );
    expect(report.passed).toBe(false);
    expect(report.violations[0]?.message).toBe(
      "the source replaces Error.prototype.toString; built-ins are read-only",
    );
    expect(report.violations[1]?.message).toBe(
      "TypeError: the source replaces Error.prototype.toString; built-ins are read-only (thrown while loading the source, before the test ran)",
    );
  });

  for (const cheat of CHEATS) {
    it(`does not validate a wrong source that ${cheat.name}`, async () => {
      const tests = [...(cheat.before ?? []), ...TESTS];
      const report = await validate(sourceOf(cheat.trick ?? "", cheat.wrong), tests);
      expect(report.passed).toBe(false);
      expect(failing(report)).toEqual(expect.arrayContaining(cheat.fails.map((name) => `test:${name}`)));
      expect(builtinsNamed(report)).toEqual((cheat.names ?? []).map(sentence).sort());
      expect(report.violations.every((v) => v.severity === "error")).toBe(true);
    });

    const { trick } = cheat;
    if (trick !== undefined) {
      it(`never judges the correct source wrong when it ${cheat.name}`, async () => {
        const report = await validate(sourceOf(trick, {}), [...(cheat.before ?? []), ...TESTS]);
        expect(builtinsNamed(report)).toEqual((cheat.names ?? []).map(sentence).sort());
        // Only the locked realm refusing the trick as the source loads: no test finds the answers wrong.
        const judged = report.violations.filter(
          (v) =>
            v.ruleId.startsWith("test:") &&
            !v.message.endsWith("(thrown while loading the source, before the test ran)"),
        );
        expect(judged).toEqual([]);
        if (cheat.names === undefined) expect(report.passed).toBe(true);
      });
    }
  }
});

describe("a test that exhausts a host-side limit", () => {
  const limits = [
    { name: "parses deep JSON", code: "JSON.parse('['.repeat(1e5) + ']'.repeat(1e5));" },
    { name: "builds a huge string", code: "let s = 'x'; for (let i = 0; i < 40; i++) s += s;" },
    {
      name: "stringifies deep JSON",
      code: "let o = {}; for (let i = 0; i < 1e5; i++) o = { a: o }; JSON.stringify(o);",
    },
  ];
  for (const limit of limits) {
    it(`fails that test only when it ${limit.name}: the tests after it still run and report`, async () => {
      const report = await validate("function add(a, b) { return a - b; }", [
        limit,
        { name: "adds", code: "assert.equal(add(2, 3), 5);" },
        { name: "subtracts", code: "assert.equal(add(2, 2), 0);" },
      ]);
      expect(failing(report)).toEqual([`test:${limit.name}`, "test:adds"]);
      expect(report.violations[1]?.message).toBe("AssertionError: expected 5, got -1");
    });
  }
});
