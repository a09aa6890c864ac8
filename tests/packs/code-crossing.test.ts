import { beforeAll, describe, expect, it } from "vitest";
import { CODE_RULE_IDS, codePack, DEFAULT_CODE_SETTINGS } from "../../shared/packs/code/code.js";
import { QuickJSSandbox, type SandboxLimits, type SandboxTest } from "../../shared/packs/code/sandbox.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

/**
 * Values cross from the source into the tests as data (issue 34): each forging class below made a
 * wrong source pass before the source and the test ran in two realms. A source does not touch a
 * built-in; it hands the test its own objects (own methods, own toJSON, species, getters), or fools
 * the assertion count (frame names, `assert.expect`), or replaces `globalThis`. Each case has a
 * correct source, which must pass, and a wrong one, which must fail.
 */
const sandbox = new QuickJSSandbox();
const limits: SandboxLimits = { ...DEFAULT_CODE_SETTINGS, timeoutMs: 1000 };

beforeAll(async () => {
  await sandbox.ready();
});

function passes(source: string, code: string): boolean {
  const result = sandbox.runSuite(source, [{ name: "t", code }], limits);
  if (result.kind !== "ran") throw new Error(`syntax error: ${result.error.message}`);
  return result.outcomes.every((o) => o.passed);
}

interface Forgery {
  readonly name: string;
  readonly correct: string;
  readonly wrong: string;
  readonly test: string;
}

const EVENS = "function evens(a) { return a.filter((x) => x % 2 === 0); }";
const EACH = "function each(list, cb) { for (const x of list) cb(x); }";

const FORGERIES: readonly Forgery[] = [
  {
    name: "returns an array with its own non-enumerable includes",
    correct: EVENS,
    wrong:
      "function evens(a) { const r = [1, 3]; Object.defineProperty(r, 'includes', { value: () => true }); return r; }",
    test: "const out = evens([1, 2, 3, 4]); assert(out.includes(2)); assert(out.includes(4));",
  },
  {
    name: "returns an array with its own non-enumerable every",
    correct: EVENS,
    wrong:
      "function evens(a) { const r = [1, 3]; Object.defineProperty(r, 'every', { value: () => true }); return r; }",
    test: "assert(evens([1, 2, 3, 4]).every((x) => x % 2 === 0));",
  },
  {
    name: "returns an array with its own toJSON",
    correct: "function sorted(a) { return [...a].sort((x, y) => x - y); }",
    wrong:
      "function sorted(a) { const r = [...a]; Object.defineProperty(r, 'toJSON', { value: () => [1, 2, 3] }); return r; }",
    test: "assert.equal(JSON.stringify(sorted([3, 1, 2])), '[1,2,3]');",
  },
  {
    name: "returns a plain object with its own toJSON",
    correct: "function pair(a, b) { return { a, b }; }",
    wrong: "function pair(a, b) { return { a: b, b: a, toJSON() { return { a, b }; } }; }",
    test: 'assert.equal(JSON.stringify(pair(1, 2)), \'{"a":1,"b":2}\');',
  },
  {
    name: "returns an array whose own constructor[Symbol.species] makes slice answer for it",
    correct: "function top2(a) { return [...a].sort((x, y) => y - x).slice(0, 2); }",
    wrong:
      "function top2(a) { const r = [0, 0]; Object.defineProperty(r, 'constructor', { value: { [Symbol.species]: function () { return new Proxy([5, 4], { defineProperty() { return true; }, set() { return true; } }); } } }); return r; }",
    test: "assert.deepEqual(top2([1, 5, 4]).slice(), [5, 4]);",
  },
  {
    name: "returns a promise whose species hands back a settled promise",
    correct: "function addAsync(a, b) { return Promise.resolve(a + b); }",
    wrong:
      "function addAsync(a, b) { const p = new Promise(() => {}); Object.defineProperty(p, 'constructor', { value: { [Symbol.species]: function (executor) { executor(() => {}, () => {}); return Promise.resolve(5); } } }); return p; }",
    test: "assert.equal(typeof addAsync, 'function'); addAsync(2, 3).then((sum) => assert.equal(sum, 5));",
  },
  {
    name: "hands a callback an object whose getter throws undefined, and catches",
    correct: "function withPoint(cb) { cb({ x: 1, y: 2 }); }",
    wrong: "function withPoint(cb) { try { cb({ x: 1, get y() { throw undefined; } }); } catch (e) {} }",
    test: "withPoint((p) => assert.deepEqual(p, { x: 1, y: 2 }));",
  },
  {
    name: "asserts from a function named like a native frame, `forEachItem (native)`",
    correct: EACH,
    wrong:
      "function each(list, cb) { assert.ok(true); } Object.defineProperty(each, 'name', { value: 'forEachItem (native)' });",
    test: "each([1, 2], (x) => assert.ok(x > 0));",
  },
  {
    name: "asserts from a function named like the test's frame, `x (tests/0.js:1)`",
    correct: EACH,
    wrong:
      "function each(list, cb) { const f = () => assert.ok(true); Object.defineProperty(f, 'name', { value: 'x (tests/0.js:1)' }); f(); }",
    test: "each([1, 2], (x) => assert.ok(x > 0));",
  },
  {
    name: "calls assert.expect(0) over the test's own declaration",
    correct: EACH,
    wrong:
      "function each(list, cb) { const f = () => assert.expect(0); Object.defineProperty(f, 'name', { value: 'x (tests/0.js:1)' }); f(); }",
    test: "assert.expect(2); each([1, 2], (x) => assert.ok(x > 0));",
  },
  {
    name: "replaces globalThis",
    correct: "function answer() { return 42; }",
    wrong: "function answer() { return 41; } globalThis = { answer: () => 42 };",
    test: "assert.equal(globalThis.answer(), 42);",
  },
  {
    name: "returns an array with its own Symbol.iterator",
    correct: EVENS,
    wrong:
      "function evens(a) { const r = [1, 3]; Object.defineProperty(r, Symbol.iterator, { value: function* () { yield 2; yield 4; } }); return r; }",
    test: "assert.deepEqual([...evens([1, 2, 3, 4])], [2, 4]);",
  },
];

describe("values cross from the source into the tests as data", () => {
  it("has the issue's forging classes", () => {
    expect(FORGERIES.length).toBeGreaterThanOrEqual(11);
  });

  for (const forgery of FORGERIES) {
    it(`does not validate a wrong source that ${forgery.name}`, () => {
      expect(passes(forgery.wrong, forgery.test)).toBe(false);
    });
    it(`validates the correct source beside it (${forgery.name})`, () => {
      expect(passes(forgery.correct, forgery.test)).toBe(true);
    });
  }

  it("copies what the tests compare: Map, Set, Date, RegExp, typed arrays, holes, cycles, -0, NaN, BigInt", () => {
    const source = [
      "function make() {",
      "  const o = { n: -0, nan: NaN, big: 10n ** 20n, date: new Date(5), re: /a+/gi, bytes: new Uint8Array([1, 2]) };",
      "  o.map = new Map([[1, { deep: [1, , 3] }]]); o.set = new Set(['x']); o.self = o; o.shared = [o.bytes, o.bytes];",
      "  return o;",
      "}",
    ].join("\n");
    const test = [
      "const o = make();",
      "assert(Object.is(o.n, -0)); assert(Number.isNaN(o.nan)); assert.equal(o.big, 100000000000000000000n);",
      "assert.deepEqual(o.date, new Date(5)); assert.equal(String(o.re), '/a+/gi'); assert(o.re instanceof RegExp);",
      "assert.deepEqual(o.bytes, new Uint8Array([1, 2])); assert.deepEqual(o.map, new Map([[1, { deep: [1, , 3] }]]));",
      "assert.deepEqual(o.set, new Set(['x'])); assert.equal(o.self, o); assert.equal(o.shared[0], o.shared[1]);",
      "assert(Array.isArray(o.map.get(1).deep)); assert(!(1 in o.map.get(1).deep));",
    ].join("\n");
    expect(passes(source, test)).toBe(true);
  });

  it("crosses functions as callables both ways, classes with their methods, errors by name and message", () => {
    const source = [
      "function counter() { let n = 0; return () => ++n; }",
      "function apply(f, x) { return f(x) * 2; }",
      "class Stack { constructor() { this.items = []; } push(x) { this.items.push(x); return this; } pop() { return this.items.pop(); } get size() { return this.items.length; } }",
      "function fail() { throw new RangeError('too far'); }",
      "class NotFound extends Error { constructor(m) { super(m); this.name = 'NotFound'; } }",
      "function find() { throw new NotFound('no such key'); }",
      "async function later(x) { return { x }; }",
    ].join("\n");
    const test = [
      "const next = counter(); next(); assert.equal(next(), 2);",
      "assert.equal(apply((x) => x + 1, 1), 4);",
      "const s = new Stack(); s.push(1); s.push(2); assert.equal(s.size, 2); assert.deepEqual(s.items, [1, 2]);",
      "assert.equal(s.pop(), 2); assert.equal(s.size, 1); assert(s instanceof Stack);",
      "assert.throws(() => fail(), RangeError); assert.throws(() => fail(), /too far/);",
      "assert.throws(() => find(), (e) => e.name === 'NotFound' && e.message === 'no such key');",
      "later(3).then((v) => assert.deepEqual(v, { x: 3 }));",
    ].join("\n");
    expect(sandbox.runSuite(source, [{ name: "t", code: test }], limits)).toMatchObject({
      kind: "ran",
      outcomes: [{ passed: true }],
    });
  });

  it("never hands the source a test's own object or assert", () => {
    // The source gets a copy made in its own realm: what it changes stays there, and the only
    // assert it can reach (through its own Function) is its own realm's, which records nothing.
    const source =
      "function keep(o) { o.x = 2; try { o.constructor.constructor('assert(false); assert.expect(9)')(); } catch (e) {} return o.x; }";
    const test = "const mine = { x: 1 }; assert.equal(keep(mine), 2); assert.equal(mine.x, 1);";
    expect(passes(source, test)).toBe(true);
  });

  it("fails a value that cannot be copied under code_uncopyable_value, whatever the test does with the error", async () => {
    const registry = new PackRegistry({}, [codePack]);
    const tests: SandboxTest[] = [
      { name: "caught", code: "try { point(); } catch (e) {} assert.ok(true);" },
      { name: "plain", code: "assert.deepEqual(point(), { x: 1 });" },
      { name: "fine", code: "assert.equal(1, 1);" },
    ];
    const report = await validateDraft(
      {
        id: "uncopyable",
        kind: "code",
        content: {
          language: "javascript",
          source: "function point() { return { get x() { throw undefined; } }; }",
          tests,
        },
      },
      { registry },
    );
    expect(report.passed).toBe(false);
    const found = report.violations.filter((v) => v.ruleId === CODE_RULE_IDS.uncopyable);
    expect(found.map((v) => v.path)).toEqual(["/tests/0", "/tests/1"]);
    expect(found[0]?.message).toMatch(/cannot be copied into the tests: reading .*\.x threw undefined/);
    expect(report.violations.filter((v) => v.ruleId.startsWith("test:"))).toEqual([]);
  });
});
