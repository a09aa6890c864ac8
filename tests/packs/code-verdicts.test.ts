import { type ChildProcess, spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CODE_SETTINGS } from "../../shared/packs/code/code.js";
import {
  QuickJSSandbox,
  type SandboxLimits,
  type SandboxTest,
  type TestOutcome,
} from "../../shared/packs/code/sandbox.js";

/**
 * What a verdict rests on: an honest deepEqual, a test that asserted something, and a budget that
 * counts the draft's own work, so that the same draft gets the same verdict on a loaded machine.
 */

const sandbox = new QuickJSSandbox();
const limits: SandboxLimits = DEFAULT_CODE_SETTINGS;

beforeAll(async () => {
  await sandbox.ready();
});

function run(source: string, tests: readonly SandboxTest[]): TestOutcome[] {
  const result = sandbox.runSuite(source, tests, limits);
  if (result.kind !== "ran") throw new Error(`source did not compile: ${result.error.message}`);
  return [...result.outcomes];
}

function one(code: string, source = ""): TestOutcome {
  return run(source, [{ name: "t", code }])[0] as TestOutcome;
}

describe("assert.deepEqual compares what the values are", () => {
  // Each row: two values that differ in one way, and what the failure says.
  const differences: readonly [string, string, string, RegExp][] = [
    ["an own key", "({ a: 1 })", "({ a: 1, b: 2 })", /missing b, expected 2/],
    ["an extra own key", "({ a: 1, b: 2 })", "({ a: 1 })", /unexpected b: 2/],
    ["a symbol key", '({ a: 1, [Symbol.for("s")]: 1 })', "({ a: 1 })", /unexpected \[Symbol\(s\)\]: 1/],
    [
      "a symbol key's value",
      '({ [Symbol.for("s")]: 1 })',
      '({ [Symbol.for("s")]: 2 })',
      /at \[Symbol\(s\)\]/,
    ],
    ["a non-index array property", "Object.assign([1], { total: 1 })", "[1]", /unexpected total: 1/],
    ["a hole against undefined", "[1, , 3]", "[1, undefined, 3]", /\[1\] is a hole, expected undefined/],
    ["undefined against a hole", "[1, undefined, 3]", "[1, , 3]", /expected a hole at \[1\], got undefined/],
    ["the prototype", "Object.create(null)", "({})", /different prototypes/],
    [
      "a class against a plain object",
      "new (class P { constructor() { this.x = 1; } })()",
      "({ x: 1 })",
      /different prototypes/,
    ],
    ["an array against an array-like", "Object.create(Array.prototype)", "[]", /expected \[\]/],
    ["a Map's value", 'new Map([["a", 1]])', 'new Map([["a", 2]])', /get\("a"\): expected 2, got 1/],
    ["a Map's object key", "new Map([[{ k: 1 }, 1]])", "new Map([[{ k: 2 }, 1]])", /no equal key/],
    ["a Set's member", "new Set([{ a: 1 }])", "new Set([{ a: 2 }])", /expected Set/],
    ["a boxed number", "new Number(1)", "new Number(2)", /expected/],
    [
      "a typed array's element",
      "new Uint8Array([1, 2])",
      "new Uint8Array([1, 3])",
      /at \[1\]: expected 3, got 2/,
    ],
    ["an ArrayBuffer's bytes", "new Uint8Array([1]).buffer", "new Uint8Array([2]).buffer", /expected/],
    ["a date", "new Date(0)", "new Date(1)", /Date\(1970-01-01T00:00:00\.001Z\)/],
    ["a regexp's flags", "/a/g", "/a/i", /expected \/a\/i, got \/a\/g/],
    ["an error's message", 'new RangeError("a")', 'new RangeError("b")', /RangeError: b/],
    ["zero's sign", "-0", "0", /expected 0, got -0/],
    ["a nested value", "({ a: [{ b: 1 }] })", "({ a: [{ b: 2 }] })", /at a\[0\]\.b: expected 2, got 1/],
  ];
  for (const [what, actual, expected, says] of differences) {
    it(`tells ${what} apart`, () => {
      const outcome = one(`assert.deepEqual(${actual}, ${expected});`);
      expect(outcome.passed).toBe(false);
      expect(outcome.failure?.error.message).toMatch(says);
      // And notDeepEqual agrees.
      expect(one(`assert.notDeepEqual(${actual}, ${expected});`).passed).toBe(true);
    });
  }

  it("still finds equal what is equal", () => {
    const same = [
      ["[1, , 3]", "[1, , 3]"],
      ["Object.assign([1], { total: 1 })", "Object.assign([1], { total: 1 })"],
      ['({ [Symbol.for("s")]: [1, { a: NaN }] })', '({ [Symbol.for("s")]: [1, { a: NaN }] })'],
      ["new Map([[{ k: 1 }, [1]]])", "new Map([[{ k: 1 }, [1]]])"],
      ["new Uint8Array([1, 2]).buffer", "new Uint8Array([1, 2]).buffer"],
      ['Object.defineProperty({ a: 1 }, "hidden", { value: 2 })', "({ a: 1 })"],
    ];
    for (const [a, b] of same) expect(one(`assert.deepEqual(${a}, ${b});`).passed, `${a} vs ${b}`).toBe(true);
  });
});

describe("a test that asserted nothing proves nothing", () => {
  const SOURCE = [
    "function withSum(a, b, cb) {}",
    "function addAsync(a, b) { return new Promise(() => {}); }",
    "function addLater(a, b) { return { then() {} }; }",
    "function checkOwn(x) { assert.ok(true); assert(true); return x; }",
  ].join("\n");

  it("fails a callback never called, a promise never settling, a thenable never calling back", () => {
    const outcomes = run(SOURCE, [
      { name: "callback", code: "withSum(2, 3, (sum) => assert.equal(sum, 5));" },
      { name: "then", code: "addAsync(2, 3).then((sum) => assert.equal(sum, 5)); 'not awaited';" },
      { name: "thenable", code: "addLater(2, 3).then((sum) => assert.equal(sum, 5));" },
      { name: "nothing", code: "const x = 1 + 1;" },
      { name: "the source asserts for it", code: "checkOwn(1);" },
    ]);
    for (const outcome of outcomes) {
      expect(outcome.passed, outcome.name).toBe(false);
      expect(outcome.failure?.error.message, outcome.name).toMatch(/^the test ran no assertion/);
    }
  });

  it("counts the test's own assertions against assert.expect(n)", () => {
    const source = "function each(list, cb) { for (let i = 0; i < list.length - 1; i++) cb(list[i]); }";
    expect(
      one("assert.expect(3); each([1, 2, 3], (x) => assert.ok(x));", source).failure?.error.message,
    ).toBe("the test ran 2 assertions, but declared assert.expect(3)");
    expect(one("assert.expect(2); [1, 2].forEach((x) => assert.ok(x));").passed).toBe(true);
    expect(one("assert.expect(1); [1].forEach(assert);").passed).toBe(true);
    // The source's own assertions do not count toward the test's.
    expect(one("assert.expect(1); checkOwn(1);", SOURCE).failure?.error.message).toMatch(/ran 0 assertions/);
    expect(one("assert.expect(-1);").failure?.error.message).toMatch(/whole number/);
  });

  it("passes a test whose assertions ran in a callback or after an await", () => {
    const source =
      "function withSum(a, b, cb) { return cb(a + b); } async function addAsync(a, b) { return a + b; }";
    const outcomes = run(source, [
      { name: "callback", code: "withSum(2, 3, (sum) => assert.equal(sum, 5));" },
      { name: "then", code: "addAsync(2, 3).then((sum) => assert.equal(sum, 5));" },
      { name: "await", code: "(async () => { assert.equal(await addAsync(2, 3), 5); })();" },
    ]);
    expect(outcomes.map((o) => o.passed)).toEqual([true, true, true]);
  });
});

// ---------------------------------------------------------------------------------------------
// The same verdicts under load

/** A batch of drafts, correct and wrong, light and heavy, with one that runs out of budget. */
const BATCH: readonly { source: string; tests: SandboxTest[] }[] = [
  {
    // A correct solution whose test takes a few hundred polls (~0.2 s of CPU on the CI VM, idle).
    source:
      "function countPrimes(n) { const sieve = new Uint8Array(n + 1); let count = 0; for (let i = 2; i <= n; i++) { if (sieve[i]) continue; count++; for (let j = i * i; j <= n; j += i) sieve[j] = 1; } return count; }",
    tests: [
      { name: "primes below 10", code: "assert.equal(countPrimes(10), 4);" },
      { name: "primes below 300000", code: "assert.equal(countPrimes(300000), 25997);" },
    ],
  },
  {
    source:
      "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); } function sorted(a) { return [...a].sort((x, y) => x - y); }",
    tests: [
      { name: "fib", code: "assert.equal(fib(20), 6765);" },
      {
        name: "sorts",
        code: "const a = []; for (let i = 0; i < 20000; i++) a.push((i * 7919) % 20011); assert.equal(sorted(a)[0], 0);",
      },
    ],
  },
  {
    // Wrong, and heavy: the budget runs out at the same point every time.
    source: "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }",
    tests: [
      { name: "fib 35", code: "assert.equal(fib(35), 9227465);" },
      { name: "fib 10", code: "assert.equal(fib(10), 55);" },
    ],
  },
  {
    source: "function spin() { for (;;) {} } function add(a, b) { return a - b; }",
    tests: [
      { name: "spins", code: "spin();" },
      { name: "adds", code: "assert.equal(add(2, 3), 5);" },
    ],
  },
  {
    source: "function add(a, b) { return a + b; } Math.abs = () => 0;",
    tests: [{ name: "abs", code: "assert(Math.abs(add(-2, -3) + 5) < 1e-9);" }],
  },
];

/** What a verdict is made of: pass or fail, why, and the message; never a time. */
function verdicts(): unknown[] {
  return BATCH.map(({ source, tests }) => {
    const result = sandbox.runSuite(source, tests, { ...limits, suiteTimeoutMs: 3000 });
    if (result.kind !== "ran") return result;
    return {
      builtinChanges: result.builtinChanges,
      outcomes: result.outcomes.map((o) => [o.name, o.passed, o.failure?.reason, o.failure?.error.message]),
    };
  });
}

describe("verdicts under load", () => {
  const busy: ChildProcess[] = [];
  afterAll(() => {
    for (const child of busy) if (child.pid !== undefined && child.exitCode === null) child.kill("SIGKILL");
  });

  it("are the same with every core busy as on an idle machine", async () => {
    const idle = verdicts();
    // The batch holds passing and failing tests, and one cut by its budget.
    expect(JSON.stringify(idle)).toMatch(/"too_slow"/);
    expect(JSON.stringify(idle)).toMatch(/true/);
    for (let i = 0; i < availableParallelism() + 1; i++) {
      busy.push(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
    }
    // Wait until the busy processes run (their spawn is asynchronous).
    await Promise.all(busy.map((child) => new Promise((resolve) => child.once("spawn", resolve))));
    const loaded = verdicts();
    expect(loaded).toEqual(idle);
  }, 600_000);
});
