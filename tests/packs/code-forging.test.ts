import nodeAssert from "node:assert/strict";
import { createContext, runInContext } from "node:vm";
import { describe, expect, it } from "vitest";
import type { ValidationReport } from "../../shared/draft.js";
import { type CodeContent, codePack } from "../../shared/packs/code/code.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

/**
 * A wrong source that replaces a built-in its test computes or compares the expectation with, so
 * that an unlocked realm would agree with the wrong answer. In the locked realm the test sees the
 * original built-in: the wrong source must not validate, the probe names what it replaced, and the
 * correct implementations (all in one draft, with every test) validate.
 */
interface Forgery {
  /** The built-in forged, as code_builtins_read_only names it; undefined when no built-in is touched. */
  readonly builtin: string | undefined;
  /** The draft's function under test, named `f<i>` in the drafts. */
  readonly correct: string;
  readonly wrong: string;
  /** The trick, run before the functions are declared. */
  readonly trick: string;
  /** The test's code; `F` stands for the function's name. */
  readonly test: string;
}

/** A test that compares `F()` with an expression of a built-in, and a trick that makes it return `forged`. */
function viaValue(
  builtin: string,
  expression: string,
  correct: string,
  forged: string,
  trick: string,
): Forgery {
  return {
    builtin,
    correct: `return ${correct};`,
    wrong: `return ${forged};`,
    trick,
    test: `assert.deepEqual(F(), ${expression});`,
  };
}

/** `builtin = () => forged`: the test's expectation is computed with the replaced function. */
function replaced(builtin: string, call: string, correct: string, forged: string): Forgery {
  return viaValue(
    `replaces ${builtin}`,
    call,
    correct,
    forged,
    `${builtin} = function () { return ${forged}; };`,
  );
}

// The issue's cases, as written there.
const ISSUE: readonly Forgery[] = [
  {
    builtin: "replaces Map",
    correct: "const m = new Map(); for (const c of arguments[0]) m.set(c, (m.get(c) || 0) + 1); return m;",
    wrong: "return {};",
    trick: "Map = function () { return {}; };",
    test: 'assert.deepEqual(F("aab"), new Map([["a", 2], ["b", 1]]));',
  },
  {
    builtin: "replaces Date",
    correct: "return new Date(0);",
    wrong: "return {};",
    trick: "Date = function () { return {}; };",
    test: "assert.deepEqual(F(), new Date(0));",
  },
  {
    builtin: "replaces Set",
    correct: "return new Set(arguments[0]);",
    wrong: "return {};",
    trick: "Set = function () { return {}; };",
    test: "assert.deepEqual(F([1, 1, 2]), new Set([1, 2]));",
  },
  {
    builtin: "replaces RangeError",
    correct: 'throw new RangeError("out of range");',
    wrong: 'throw new Error("anything");',
    trick: "RangeError = Error;",
    test: "assert.throws(() => F(), RangeError);",
  },
  {
    builtin: "replaces Math.abs",
    correct: "return Math.sqrt(arguments[0]);",
    wrong: "return 42;",
    trick: "Math.abs = () => 0;",
    test: "assert(Math.abs(F(2) - 1.41421356) < 1e-6);",
  },
  replaced("Math.max", "Math.max(1, 3, 2)", "3", "0"),
  {
    builtin: "replaces Array.prototype.includes",
    correct: "return [0, 2, 4];",
    wrong: "return [];",
    trick: "Array.prototype.includes = () => true;",
    test: "assert(F().includes(2));",
  },
  {
    builtin: "replaces Array.prototype.join",
    correct: 'return ["a", "b"];',
    wrong: "return [];",
    trick: 'Array.prototype.join = () => "a b";',
    test: 'assert.equal(F().join(" "), "a b");',
  },
  {
    builtin: "replaces Array.prototype.every",
    correct: "return [1, 2];",
    wrong: "return [-1, 2];",
    trick: "Array.prototype.every = () => true;",
    test: "assert(F().every((x) => x > 0));",
  },
  {
    builtin: "replaces Array.isArray",
    correct: 'return ["a", "b"];',
    wrong: 'return "ab";',
    trick: "Array.isArray = () => true;",
    test: "assert(Array.isArray(F()));",
  },
  {
    builtin: "replaces String.prototype.trim",
    correct: 'return "a";',
    wrong: 'return "  a ";',
    trick: 'String.prototype.trim = function () { return "  a "; };',
    test: 'assert.equal(F(), "  a ".trim());',
  },
  {
    builtin: "replaces String.prototype.includes",
    correct: 'return "hi Bob";',
    wrong: 'return "hi";',
    trick: "String.prototype.includes = () => true;",
    test: 'assert(F().includes("Bob"));',
  },
  {
    builtin: "replaces RegExp.prototype.test",
    correct: 'return "123";',
    wrong: 'return "ab";',
    trick: "RegExp.prototype.test = () => true;",
    test: "assert(/^\\d{3}$/.test(F()));",
  },
  {
    builtin: "replaces Number.isInteger",
    correct: "return 2;",
    wrong: "return 2.5;",
    trick: "Number.isInteger = () => true;",
    test: "assert(Number.isInteger(F()));",
  },
  {
    builtin: "replaces Number.prototype.toFixed",
    correct: 'return "3.14";',
    wrong: 'return "3.1";',
    trick: 'Number.prototype.toFixed = () => "3.1";',
    test: "assert.equal(F(), (3.14159).toFixed(2));",
  },
  {
    builtin: "replaces Object.keys",
    correct: "return { a: 1, b: 2 };",
    wrong: "return { a: 1 };",
    trick: 'Object.keys = () => ["a", "b"];',
    test: 'assert.deepEqual(Object.keys(F()), ["a", "b"]);',
  },
  {
    builtin: "replaces JSON.stringify",
    correct: "return { x: 1, y: 2 };",
    wrong: "return { x: 2, y: 1 };",
    trick: 'JSON.stringify = () => \'{"x":1,"y":2}\';',
    test: 'assert.equal(JSON.stringify(F()), \'{"x":1,"y":2}\');',
  },
  {
    builtin: "replaces Date.now",
    correct: "return Date.now() - 1;",
    wrong: "return Infinity;",
    trick: "Date.now = () => Infinity;",
    test: "assert(F() <= Date.now());",
  },
  {
    builtin: "adds a getter or setter Object.prototype.debug",
    correct: "return { debug: true };",
    wrong: "return {};",
    trick: 'try { Object.defineProperty(Object.prototype, "debug", { get() { return true; } }); } catch {}',
    test: "assert.equal(F().debug, true);",
  },
  {
    builtin: "adds a getter or setter Array.prototype[1]",
    correct: "return [1, 2];",
    wrong: "return [1];",
    trick: 'try { Object.defineProperty(Array.prototype, "1", { get() { return 2; } }); } catch {}',
    test: "assert.equal(F()[1], 2);",
  },
  // deepEqual itself: symbol keys, non-index array properties, holes read through the prototype.
  {
    builtin: undefined,
    correct: 'return { a: 1, [Symbol.for("id")]: 1 };',
    wrong: "return { a: 1 };",
    trick: "",
    test: 'assert.deepEqual(F(), { a: 1, [Symbol.for("id")]: 1 });',
  },
  {
    builtin: undefined,
    correct: "return Object.assign([1, 2], { total: 3 });",
    wrong: "return [1, 2];",
    trick: "",
    test: "assert.deepEqual(F(), Object.assign([1, 2], { total: 3 }));",
  },
  {
    builtin: "adds Array.prototype[1]",
    correct: "return [1, 2, 3];",
    wrong: "return [1, , 3];",
    trick:
      "try { Array.prototype[1] = 2; } catch {} try { Object.defineProperty(Array.prototype, 1, { value: 2 }); } catch {}",
    test: "assert.deepEqual(F(), [1, 2, 3]);",
  },
];

// Every global constructor and the methods of the namespaces and prototypes a test might call.
const MORE: readonly Forgery[] = [
  replaced("Math.min", "Math.min(4, 2, 3)", "2", "7"),
  replaced("Math.floor", "Math.floor(2.7)", "2", "9"),
  replaced("Math.ceil", "Math.ceil(2.2)", "3", "9"),
  replaced("Math.round", "Math.round(2.5)", "3", "9"),
  replaced("Math.trunc", "Math.trunc(-2.7)", "-2", "9"),
  replaced("Math.sqrt", "Math.sqrt(16)", "4", "9"),
  replaced("Math.pow", "Math.pow(2, 10)", "1024", "9"),
  replaced("Math.hypot", "Math.hypot(3, 4)", "5", "9"),
  replaced("Math.sign", "Math.sign(-3)", "-1", "9"),
  replaced("Math.log2", "Math.log2(8)", "3", "9"),
  replaced("JSON.parse", 'JSON.parse("[1,2]")', "[1, 2]", "[9]"),
  replaced("Object.entries", "Object.entries({ a: 1 })", '[["a", 1]]', "[]"),
  replaced("Object.values", "Object.values({ a: 1, b: 2 })", "[1, 2]", "[]"),
  replaced("Object.assign", "Object.assign({}, { a: 1 })", "{ a: 1 }", "{}"),
  replaced("Object.fromEntries", 'Object.fromEntries([["a", 1]])', "{ a: 1 }", "{}"),
  replaced("Object.freeze", "Object.freeze([1])", "[1]", "[]"),
  replaced("Array.from", 'Array.from("ab")', '["a", "b"]', "[]"),
  replaced("Array.of", "Array.of(1, 2)", "[1, 2]", "[]"),
  replaced("Array.prototype.map", "[1, 2].map((x) => x * 2)", "[2, 4]", "[]"),
  replaced("Array.prototype.filter", "[1, 2, 3].filter((x) => x % 2)", "[1, 3]", "[]"),
  replaced("Array.prototype.reduce", "[1, 2, 3].reduce((a, b) => a + b, 0)", "6", "0"),
  replaced("Array.prototype.slice", "[1, 2, 3].slice(1)", "[2, 3]", "[]"),
  replaced("Array.prototype.concat", "[1].concat([2])", "[1, 2]", "[]"),
  replaced("Array.prototype.indexOf", "[5, 6].indexOf(6)", "1", "0"),
  replaced("Array.prototype.find", "[1, 2, 3].find((x) => x > 1)", "2", "0"),
  replaced("Array.prototype.some", "[1, 2].some((x) => x > 1)", "true", "false"),
  replaced("Array.prototype.flat", "[[1], [2]].flat()", "[1, 2]", "[]"),
  replaced("Array.prototype.sort", "[3, 1, 2].sort()", "[1, 2, 3]", "[]"),
  replaced("Array.prototype.reverse", "[1, 2].reverse()", "[2, 1]", "[]"),
  replaced("String.prototype.split", '"a,b".split(",")', '["a", "b"]', "[]"),
  replaced("String.prototype.toUpperCase", '"ab".toUpperCase()', '"AB"', '"x"'),
  replaced("String.prototype.toLowerCase", '"AB".toLowerCase()', '"ab"', '"x"'),
  replaced("String.prototype.replace", '"aa".replace("a", "b")', '"ba"', '"x"'),
  replaced("String.prototype.padStart", '"7".padStart(3, "0")', '"007"', '"x"'),
  replaced("String.prototype.repeat", '"ab".repeat(2)', '"abab"', '"x"'),
  replaced("String.prototype.startsWith", '"abc".startsWith("ab")', "true", "false"),
  replaced("String.prototype.charCodeAt", '"A".charCodeAt(0)', "65", "0"),
  replaced("String.fromCharCode", "String.fromCharCode(65)", '"A"', '"x"'),
  replaced("Number.parseFloat", 'Number.parseFloat("2.5")', "2.5", "0"),
  replaced("Number.isNaN", "Number.isNaN(NaN)", "true", "false"),
  replaced("Number.prototype.toString", "(255).toString(16)", '"ff"', '"x"'),
  replaced("parseInt", 'parseInt("42", 10)', "42", "0"),
  viaValue(
    "replaces RegExp.prototype.exec",
    '/b/.exec("abc").index',
    "1",
    "0",
    "RegExp.prototype.exec = () => ({ index: 0 });",
  ),
  replaced("String.prototype.match", '"a1b2".match(/\\d/g)', '["1", "2"]', "[]"),
  replaced("Date.prototype.getTime", "new Date(5).getTime()", "5", "0"),
  replaced("Date.prototype.toISOString", "new Date(0).toISOString()", '"1970-01-01T00:00:00.000Z"', '"x"'),
  replaced("Date.UTC", "Date.UTC(2020, 0, 1)", "1577836800000", "0"),
  replaced("Map.prototype.get", 'new Map([["a", 1]]).get("a")', "1", "0"),
  replaced("Map.prototype.has", 'new Map([["a", 1]]).has("b")', "false", "true"),
  replaced("Set.prototype.has", "new Set([1]).has(2)", "false", "true"),
  replaced("Object", "Object({ a: 1 })", "{ a: 1 }", "{}"),
  replaced("Array", "Array(1, 2)", "[1, 2]", "[]"),
  replaced("String", "String(12)", '"12"', '"x"'),
  replaced("Number", 'Number("12")', "12", "0"),
  replaced("Boolean", 'Boolean("")', "false", "true"),
  replaced("BigInt", 'BigInt("12")', "12n", "0n"),
  viaValue(
    "replaces Symbol.for",
    'Symbol.for("a").description',
    '"a"',
    '"x"',
    'Symbol.for = () => ({ description: "x" });',
  ),
  {
    builtin: "replaces Promise.resolve",
    correct: "return 5;",
    wrong: "return 4;",
    trick: "Promise.resolve = () => ({ then(ok) { ok(4); } });",
    test: "Promise.resolve(5).then((v) => assert.equal(F(), v));",
  },
  {
    builtin: "replaces Promise.all",
    correct: "return [1, 2];",
    wrong: "return [];",
    trick: "Promise.all = async () => [];",
    test: "Promise.all([1, 2]).then((v) => assert.deepEqual(F(), v));",
  },
  {
    builtin: "replaces Map.prototype.set",
    correct: 'return new Map([["a", 1]]);',
    wrong: "return new Map();",
    trick: "Map.prototype.set = function () { return this; };",
    test: 'assert.deepEqual(F(), new Map().set("a", 1));',
  },
  {
    builtin: "replaces Set.prototype.add",
    correct: "return new Set([1]);",
    wrong: "return new Set();",
    trick: "Set.prototype.add = function () { return this; };",
    test: "assert.deepEqual(F(), new Set().add(1));",
  },
  {
    builtin: "replaces WeakMap",
    correct: "return new WeakMap();",
    wrong: "return {};",
    trick: "WeakMap = function () { return {}; };",
    test: "assert.deepEqual(F(), new WeakMap());",
  },
  {
    builtin: "replaces TypeError",
    correct: 'throw new TypeError("not a number");',
    wrong: 'throw new Error("anything");',
    trick: "TypeError = Error;",
    test: "assert.throws(() => F(), TypeError);",
  },
  {
    builtin: "replaces Uint8Array",
    correct: "return new Uint8Array([1, 2]);",
    wrong: "return [1, 2];",
    trick: "Uint8Array = function (a) { return a; };",
    test: "assert.deepEqual(F(), new Uint8Array([1, 2]));",
  },
];

/** A draft of the forgeries' functions (`f<offset + i>`, the correct or the wrong one) and their tests. */
function drafted(forgeries: readonly Forgery[], which: "correct" | "wrong", offset: number): CodeContent {
  const functions = forgeries.map((f, i) => `function f${offset + i}() { ${f[which]} }`);
  const tests = forgeries.map((f, i) => ({
    name: `forging ${offset + i}`,
    code: f.test.replaceAll("F(", `f${offset + i}(`),
  }));
  return { language: "javascript", source: functions.join("\n"), tests };
}

const registry = new PackRegistry({}, [codePack]);
let drafts = 0;
function validate(content: CodeContent): Promise<ValidationReport> {
  drafts += 1;
  return validateDraft({ id: `forging-${drafts}`, kind: "code", content }, { registry });
}

const ALL = [...ISSUE, ...MORE];

/**
 * Whether the wrong source passes its test in an unlocked realm (a Node vm context, with Node's own
 * strict assert): the proof that the trick forges a verdict when nothing locks the built-ins.
 */
async function passesUnlocked(forgery: Forgery, index: number): Promise<boolean> {
  const { source, tests } = drafted([forgery], "wrong", index);
  const assert = Object.assign((value: unknown) => nodeAssert.ok(value), {
    ok: nodeAssert.ok,
    equal: nodeAssert.strictEqual,
    deepEqual: nodeAssert.deepStrictEqual,
    throws: nodeAssert.throws,
  });
  const context = createContext({ assert });
  try {
    runInContext(`${forgery.trick}\n${source}`, context);
    await runInContext(`{${tests[0]?.code}\n}`, context);
    return true;
  } catch {
    return false;
  }
}

describe("a wrong source that forges a built-in its test relies on", () => {
  it("covers the issue's cases and at least 30 more", () => {
    expect(MORE.length).toBeGreaterThanOrEqual(30);
    const named = ALL.map((f) => f.builtin).filter((b) => b !== undefined);
    expect(new Set(named).size).toBe(named.length);
  });

  it("validates the correct implementations, every test in one draft", async () => {
    const report = await validate(drafted(ALL, "correct", 0));
    expect(report.violations).toEqual([]);
    expect(report.passed).toBe(true);
  });

  ALL.forEach((forgery, index) => {
    const label = forgery.builtin ?? `deepEqual case ${index}`;
    // The deepEqual cases forge the old harness's comparison, which Node's strict deepEqual never had.
    if (forgery.builtin !== undefined && forgery.builtin !== "adds Array.prototype[1]") {
      it(`forges the verdict in an unlocked realm when it ${label}`, async () => {
        expect(await passesUnlocked(forgery, index)).toBe(true);
      });
    }
    it(`does not validate a wrong source that ${label}`, async () => {
      const content = drafted([forgery], "wrong", index);
      content.source = `${forgery.trick}\n${content.source}`;
      const report = await validate(content);
      expect(report.passed).toBe(false);
      // The test itself fails: it saw the original built-in, not the forged one.
      expect(report.violations.map((v) => v.ruleId)).toContain(`test:forging ${index}`);
      const named = report.violations
        .filter((v) => v.ruleId === "code_builtins_read_only")
        .map((v) => v.message);
      if (forgery.builtin === undefined) expect(named).toEqual([]);
      else expect(named).toContain(`the source ${forgery.builtin}; built-ins are read-only`);
    });
  });
});
