/**
 * The code pack's sandbox against plain Node, per test (not a test): what a test costs in QuickJS
 * with the realm locked, in QuickJS with the harness as it was before the lockdown, and in Node.
 *
 *   npm run bench:sandbox                 # 5 rounds over the corpus
 *   npm run bench:sandbox -- --smoke      # 1 round over a few tests: proves the bench runs
 *
 * Corpus: the correct drafts of tests/packs/code-forging.test.ts style, small HumanEval-like
 * functions and their tests, where a test's own work is small and the per-test set-up dominates,
 * plus two heavier tests (a sieve, a sort) where the guest's own work dominates.
 *
 * Rows, each a fresh realm per test, as the sandbox does:
 * - `node vm`: a fresh `vm` context, the source then the test, with Node's strict assert;
 * - `quickjs, harness before lockdown`: a fresh QuickJS runtime and context, the harness of
 *   BEFORE_COMMIT (read with `git show`; skipped outside a git checkout), the source, the test;
 * - `quickjs, locked realm`: the same with today's harness in lock mode;
 * - `QuickJSSandbox.runSuite`: the whole synchronous path (compile, the probe once per suite,
 *   then every test in two realms, the source's and the tests', with every value crossing between
 *   them as a copy; all of it in the sandbox's worker thread, which the caller waits on), divided
 *   by the number of tests;
 * - `QuickJSSandbox.runSuiteAsync`: the same suite as a validation inside a deferral runs it, on
 *   the pool's thread while the event loop goes on, its watchdog polling `worker.cpuUsage()`.
 *
 * Then one slow-suite draft beside benign ones: a code draft whose tests each burn their whole CPU
 * budget inside a native call, started first, and three json and three code drafts after it. The
 * figure is how long the benign drafts take to all end, beside it against alone (same run, same
 * packs): through `inspectWithPack` (synchronous: every validation did this before suites ran
 * asynchronously, the slow suite holds the thread) and `inspectWithPackAsync` (the suite is a
 * deferred question, on the pool's threads in turns of one test).
 *
 * Times are wall-clock medians over rounds on a shared machine: compare rows within one run. The
 * verdicts never depend on wall-clock time (the budgets are the sandbox thread's CPU time), so
 * nothing here is a limit.
 * `--write-docs` rewrites this bench's section of docs/BENCHMARKS.md (never with `--smoke`).
 */

import nodeAssert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { createContext, runInContext } from "node:vm";
import { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC } from "quickjs-emscripten";
import type { Draft as RedraftDraft } from "../shared/draft.js";
import { type Inspection, inspectWithPack, inspectWithPackAsync } from "../shared/engine.js";
import { DEFAULT_CODE_SETTINGS } from "../shared/packs/code/code.js";
import { QuickJSSandbox, type SandboxTest } from "../shared/packs/code/sandbox.js";
import {
  HARNESS_CONSTANTS,
  HARNESS_FILE,
  HOST_SLOT,
  harnessSource,
  MODE,
} from "../shared/packs/code/sandbox-harness.js";
import { PackRegistry } from "../shared/registry.js";
import { BENCHMARKS_MD, sectionRecorder, writeSections } from "./lib/docs.js";
import { median, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const ROUNDS = SMOKE ? 1 : 5;
/** The commit the "before" row reads the harness from: one without the realm lockdown. */
const BEFORE_COMMIT = "297cd14";
const { date, load, commit, output, say } = sectionRecorder();

interface Draft {
  readonly name: string;
  readonly source: string;
  readonly tests: readonly SandboxTest[];
}

const LIGHT: Draft = {
  name: "light",
  source: [
    "function add(a, b) { return a + b; }",
    "function counts(s) { const m = new Map(); for (const c of s) m.set(c, (m.get(c) || 0) + 1); return m; }",
    "function isPalindrome(s) { const t = s.toLowerCase().replace(/[^a-z]/g, ''); return t === [...t].reverse().join(''); }",
    "function fizz(n) { return n % 15 === 0 ? 'FizzBuzz' : n % 3 === 0 ? 'Fizz' : n % 5 === 0 ? 'Buzz' : String(n); }",
    "function uniq(a) { return [...new Set(a)]; }",
    "function divide(a, b) { if (b === 0) throw new RangeError('division by zero'); return a / b; }",
  ].join("\n"),
  tests: [
    { name: "adds", code: "assert.equal(add(2, 3), 5);" },
    { name: "counts", code: 'assert.deepEqual(counts("aab"), new Map([["a", 2], ["b", 1]]));' },
    { name: "palindrome", code: 'assert.equal(isPalindrome("A man, a plan, a canal: Panama"), true);' },
    { name: "fizz", code: 'assert.deepEqual([3, 5, 15, 7].map(fizz), ["Fizz", "Buzz", "FizzBuzz", "7"]);' },
    { name: "uniq", code: "assert.deepEqual(uniq([1, 1, 2, 3, 3]), [1, 2, 3]);" },
    { name: "divides by zero", code: "assert.throws(() => divide(1, 0), RangeError);" },
    { name: "abs", code: "assert(Math.abs(divide(2, 3) - 0.6666667) < 1e-6);" },
    { name: "json", code: 'assert.equal(JSON.stringify(counts("ab").size), "2");' },
  ],
};

const HEAVY: Draft = {
  name: "heavy",
  source: [
    "function countPrimes(n) { const sieve = new Uint8Array(n + 1); let count = 0; for (let i = 2; i <= n; i++) { if (sieve[i]) continue; count++; for (let j = i * i; j <= n; j += i) sieve[j] = 1; } return count; }",
    "function sorted(a) { return [...a].sort((x, y) => x - y); }",
  ].join("\n"),
  tests: [
    { name: "primes", code: "assert.equal(countPrimes(200000), 17984);" },
    {
      name: "sorts",
      code: "const a = []; for (let i = 0; i < 20000; i++) a.push((i * 7919) % 20011); assert.equal(sorted(a)[0], 0);",
    },
  ],
};

const DRAFTS = SMOKE ? [{ ...LIGHT, tests: LIGHT.tests.slice(0, 2) }] : [LIGHT, HEAVY];

/** Median ms per test of `perTest` over the draft's tests, over ROUNDS rounds. */
function timePerTest(draft: Draft, perTest: (test: SandboxTest) => void): number {
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS + 1; r++) {
    const started = performance.now();
    for (const test of draft.tests) perTest(test);
    // The first round warms up (JIT, the engine's first allocations) and is not counted.
    if (r > 0 || ROUNDS === 1) rounds.push((performance.now() - started) / draft.tests.length);
  }
  return median(rounds);
}

function nodeVm(draft: Draft): (test: SandboxTest) => void {
  const assert = Object.assign((value: unknown) => nodeAssert.ok(value), {
    ok: nodeAssert.ok,
    equal: nodeAssert.strictEqual,
    deepEqual: nodeAssert.deepStrictEqual,
    throws: nodeAssert.throws,
  });
  return (test) => {
    const context = createContext({ assert });
    runInContext(draft.source, context);
    runInContext(`{${test.code}\n}`, context);
  };
}

type Module = Awaited<ReturnType<typeof newQuickJSWASMModuleFromVariant>>;

/** One raw QuickJS session per test: runtime, context, harness, source, test, disposed. */
function quickjs(module: Module, harness: string, draft: Draft): (test: SandboxTest) => void {
  return (test) => {
    const rt = module.newRuntime();
    const ctx = rt.newContext();
    try {
      const host = ctx.newObject();
      const record = ctx.newFunction("record", () => {});
      const isPromise = ctx.newFunction("isPromise", () => ctx.false);
      ctx.setProp(host, "record", record);
      ctx.setProp(host, "isPromise", isPromise);
      record.dispose();
      isPromise.dispose();
      for (const [name, value] of [...Object.entries(HARNESS_CONSTANTS), ["mode", MODE.lock] as const]) {
        const number = ctx.newNumber(value);
        ctx.setProp(host, name, number);
        number.dispose();
      }
      ctx.setProp(ctx.global, HOST_SLOT, host);
      host.dispose();
      for (const [code, file] of [
        [harness, HARNESS_FILE],
        [draft.source, "source.js"],
        [`{${test.code}\n}`, "tests/0.js"],
      ] as const) {
        const result = ctx.evalCode(code, file, { type: "global" });
        if (result.error) {
          const error = ctx.dump(result.error) as unknown;
          result.error.dispose();
          throw new Error(`${file} failed in the bench: ${JSON.stringify(error)}`);
        }
        result.value.dispose();
      }
    } finally {
      ctx.dispose();
      rt.dispose();
    }
  };
}

function harnessBefore(): string | undefined {
  try {
    return execFileSync("git", ["show", `${BEFORE_COMMIT}:shared/packs/sandbox-harness.guest.js`], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return undefined;
  }
}

/** The slow-suite draft's tests: each burns CPU inside one native call until the watchdog stops it. */
const SLOW_TESTS = SMOKE ? 1 : 3;
let fresh = 0;

/** Drafts whose content no earlier validation had (the code pack keeps suite results by content). */
function slowAndBenign(): { slow: RedraftDraft; benign: RedraftDraft[] } {
  fresh += 1;
  const slow: RedraftDraft = {
    id: "slow",
    kind: "code",
    content: {
      language: "javascript",
      source: `// slow ${fresh}`,
      tests: Array.from({ length: SLOW_TESTS }, (_, i) => ({
        name: `native ${i}`,
        code: 'assert.equal("a".repeat(300000).indexOf("a".repeat(150000) + "b"), -1);',
      })),
    },
  };
  const benign: RedraftDraft[] = [0, 1, 2].flatMap((i) => [
    {
      id: `json-${i}`,
      kind: "json",
      context: { schema: { type: "object", required: ["n"], properties: { n: { type: "integer" } } } },
      content: { n: i + fresh },
    },
    {
      id: `code-${i}`,
      kind: "code",
      content: {
        language: "javascript",
        source: `function add(a, b) { return a + b; } // ${fresh}.${i}`,
        tests: LIGHT.tests.slice(0, 4),
      },
    },
  ]);
  return { slow, benign };
}

/** Ms until every benign draft has ended, started after the slow one (or alone). */
async function benignMs(
  inspect: (draft: RedraftDraft) => Promise<Inspection>,
  withSlow: boolean,
): Promise<number> {
  const { slow, benign } = slowAndBenign();
  const started = performance.now();
  const slowDone = withSlow ? inspect(slow) : Promise.resolve(undefined);
  let ended = 0;
  await Promise.all(
    benign.map((draft) =>
      inspect(draft).then(() => {
        ended = performance.now() - started;
      }),
    ),
  );
  await slowDone;
  return ended;
}

async function besideSlowSuite(): Promise<void> {
  const registry = new PackRegistry();
  await registry.get("code").pack.ready?.();
  // Each validation on a task of its own, in the order started, as `redraft run` starts its drafts.
  const sync = (draft: RedraftDraft) =>
    new Promise<Inspection>((resolve, reject) =>
      setImmediate(() => {
        try {
          resolve(inspectWithPack(registry.get(draft.kind), draft));
        } catch (error) {
          reject(error);
        }
      }),
    );
  const deferred = (draft: RedraftDraft) => inspectWithPackAsync(registry.get(draft.kind), draft);
  const rows: string[][] = [];
  const paths = [
    ["inspectWithPack (synchronous, as before)", sync],
    ["inspectWithPackAsync (suites deferred)", deferred],
  ] as const;
  const rounds = SMOKE ? 1 : 3;
  // Every path alone first, then beside the slow draft: the threads its stops replace load in the
  // background for a while, which would otherwise be charged to the next path's drafts alone.
  const alone: number[][] = [];
  for (const [, inspect] of paths) {
    // A warm-up: the path's threads started, the packs' first compilations done.
    await benignMs(inspect, false);
    const times: number[] = [];
    for (let r = 0; r < rounds; r++) times.push(await benignMs(inspect, false));
    alone.push(times);
  }
  for (const [index, [how, inspect]] of paths.entries()) {
    const beside: number[] = [];
    for (let r = 0; r < rounds; r++) beside.push(await benignMs(inspect, true));
    const a = median(alone[index] ?? []);
    const b = median(beside);
    rows.push([how, a.toFixed(0), b.toFixed(0), `${(b / a).toFixed(1)}×`]);
  }
  say("");
  say(
    `Six benign drafts (three json, three code of 4 light tests) beside one code draft of ${SLOW_TESTS} tests that each ` +
      `burn their ${DEFAULT_CODE_SETTINGS.timeoutMs} ms CPU budget inside a native call, started first; ms until every benign draft ended, median of ${SMOKE ? 1 : 3}:`,
  );
  say("");
  say(table(["path", "benign alone", "beside the slow draft", "ratio"], rows));
}

async function main(): Promise<void> {
  say("redraft bench:sandbox: milliseconds per test, a fresh realm per test");
  say(`rounds: ${ROUNDS} (median), after one warm-up round${SMOKE ? " (smoke: figures mean nothing)" : ""}`);
  const module = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, {}));
  const sandbox = new QuickJSSandbox();
  await sandbox.ready();
  const before = harnessBefore();
  const rows: string[][] = [];
  for (const draft of DRAFTS) {
    const node = timePerTest(draft, nodeVm(draft));
    const locked = timePerTest(draft, quickjs(module, harnessSource(), draft));
    const unlocked = before === undefined ? undefined : timePerTest(draft, quickjs(module, before, draft));
    const suiteRounds: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now();
      const result = sandbox.runSuite(draft.source, draft.tests, DEFAULT_CODE_SETTINGS);
      if (result.kind !== "ran" || !result.outcomes.every((o) => o.passed))
        throw new Error(`the ${draft.name} corpus does not pass in the sandbox: ${JSON.stringify(result)}`);
      suiteRounds.push((performance.now() - started) / draft.tests.length);
    }
    const full = median(suiteRounds);
    const asyncRounds: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now();
      const result = await sandbox.runSuiteAsync(draft.source, draft.tests, DEFAULT_CODE_SETTINGS);
      if (result.kind !== "ran" || !result.outcomes.every((o) => o.passed))
        throw new Error(`the ${draft.name} corpus does not pass asynchronously: ${JSON.stringify(result)}`);
      asyncRounds.push((performance.now() - started) / draft.tests.length);
    }
    const fullAsync = median(asyncRounds);
    const ratio = (ms: number) => `${(ms / node).toFixed(1)}×`;
    rows.push(
      [`${draft.name} (${draft.tests.length} tests)`, "node vm", node.toFixed(2), "1.0×"],
      [
        "",
        "quickjs, harness before lockdown",
        unlocked === undefined ? "n/a" : unlocked.toFixed(2),
        unlocked === undefined ? "no git history" : ratio(unlocked),
      ],
      ["", "quickjs, locked realm", locked.toFixed(2), ratio(locked)],
      ["", "QuickJSSandbox.runSuite", full.toFixed(2), ratio(full)],
      ["", "QuickJSSandbox.runSuiteAsync", fullAsync.toFixed(2), ratio(fullAsync)],
    );
  }
  say("");
  say(table(["corpus", "how", "ms / test", "vs node"], rows));
  say("");
  say(
    "runSuite adds to the raw session the compile and the probe (both once per suite), the tests' realm " +
      "(a second context with its own harness), the copies of every value crossing between the realms, " +
      "the promise and assertion checks, the hop to the sandbox's thread and back, and reading each outcome; " +
      `\`harness before lockdown\` is the harness of ${BEFORE_COMMIT}, run the same raw way; ` +
      "runSuiteAsync adds the watchdog's polls of the thread's CPU time (worker.cpuUsage, every 5 ms).",
  );
  await besideSlowSuite();
  if (WRITE_DOCS) {
    writeSections([
      { bench: "sandbox", command: "npm run bench:sandbox", output: output.join("\n"), date, load, commit },
    ]);
    console.error(`wrote the sandbox section of ${BENCHMARKS_MD}`);
  }
}

await main();
