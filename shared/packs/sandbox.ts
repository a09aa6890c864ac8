/**
 * The QuickJS sandbox the code pack runs drafts' tests in.
 *
 * Every test gets a fresh QuickJS runtime and context, disposed afterwards, so no test can change
 * another's verdict. The sandbox exposes no host function at all: `assert` and a no-op `console`
 * are JavaScript evaluated inside it (the prelude), so there is no `require`, `process`, `fs`,
 * network or timer to reach. Limits are per test: a deadline checked by QuickJS's interrupt handler,
 * a memory limit, and a stack limit; an optional suite deadline bounds the whole run, so that a draft
 * of many slow tests cannot outlast the Lambda that validates it.
 *
 * Two facts about the WASM build shape the limits (measured with quickjs-emscripten 0.32):
 * - its allocator reports no block sizes, so QuickJS's own memory limit counts ~8 bytes per
 *   allocation and lets one large array through unchecked. The engine therefore gets its own
 *   `WebAssembly.Memory` with a hard maximum, and the interrupt handler stops a test whose heap grows
 *   past the limit;
 * - WASM frames run on the host's native stack (about 1 MB in Node), which deep recursion can exhaust
 *   before QuickJS's stack limit trips (~400 native bytes per JS frame, far more for a deeply nested
 *   JSON.stringify or parse). That aborts the WASM call mid-flight, and so does an assertion QuickJS
 *   trips when freeing some runtimes (a long self-resolving promise chain): the engine's state is then
 *   unknown, so it is dropped and a spare engine takes over. The default stack limit is kept low
 *   enough that plain recursion trips QuickJS's own limit first.
 *
 * The deadline and the heap watch are polled by QuickJS every few thousand bytecode branches, so one
 * long native call (a huge `fill`, a sort of millions) can overrun them; the engine's hard memory cap
 * and the Lambda timeout bound that.
 */
import {
  type JSPromiseState,
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
  RELEASE_SYNC,
} from "quickjs-emscripten";
import { z } from "zod";

const KiB = 1024;
const MiB = 1024 * KiB;
const WASM_PAGE_BYTES = 64 * KiB;

/** The WASM binary's minimum memory (it also holds the engine's 5 MiB C stack); a fresh engine's heap size. */
const ENGINE_BASE_BYTES = 16 * MiB;
/** The highest per-test memory limit a deployment may set; with the base, the engine's hard memory cap. */
export const MAX_MEMORY_LIMIT_BYTES = 256 * MiB;
/** Below the build's 5 MiB C stack: a larger QuickJS limit would let recursion run over the heap. */
export const MAX_STACK_BYTES = 4 * MiB;
/** Getters on a thrown value run while it is read: they get this budget, not the test's. */
const READ_BUDGET_MS = 100;
/** Promise jobs run in batches so that the deadline is checked between them. */
const JOB_BATCH = 256;
/**
 * A test is started only with at least this much of the suite's time left; with less, it is reported
 * as not run (loading the assert prelude alone needs a few milliseconds).
 */
const MIN_TEST_SLICE_MS = 10;
/** Caps on the text brought back from the sandbox per thrown value. */
const MAX_MESSAGE_CHARS = 2000;
const MAX_STACK_CHARS = 4000;

export const SOURCE_FILE = "source.js";
const PRELUDE_FILE = "redraft-assert.js";
const GLOBAL_SCRIPT = { type: "global" } as const;

/** Limits applied to each test on its own, and to the suite as a whole. */
export interface SandboxLimits {
  /** Wall-clock budget for loading the source and running one test. */
  readonly timeoutMs: number;
  /**
   * Wall-clock budget for the whole suite, compiling included; unbounded when absent. Once it has
   * passed, the remaining tests are not run (`suite_not_run`); a test still running when it passes
   * is interrupted (`suite_timeout`): each test is cut at its own timeout or the suite's, whichever
   * comes first.
   */
  readonly suiteTimeoutMs?: number;
  /** Heap the test may grow the engine by (approximate: the engine's heap is measured in 64 KiB pages). */
  readonly memoryLimitBytes: number;
  /** QuickJS's stack limit. */
  readonly maxStackBytes: number;
}

export interface SandboxTest {
  readonly name: string;
  readonly code: string;
}

/** A value thrown inside the sandbox, as text. */
export interface ThrownError {
  readonly name: string;
  readonly message: string;
  /** QuickJS's stack trace, without the assert helpers' own frames; may be empty. */
  readonly stack: string;
  /** False when the code threw something that is not an Error (a string, an object literal…). */
  readonly isError: boolean;
}

/**
 * Why a test failed: it threw (`error`), ran out of time, memory or stack, took the engine down
 * (`crash`), or was not run because an earlier test crashed the engine (`not_run`). With a suite
 * deadline, a test interrupted because the whole suite ran out of time fails with `suite_timeout`,
 * and the tests after it with `suite_not_run`.
 */
export type FailureReason =
  | "error"
  | "timeout"
  | "memory"
  | "stack"
  | "crash"
  | "not_run"
  | "suite_timeout"
  | "suite_not_run";

export interface TestFailure {
  readonly reason: FailureReason;
  /** `source` when the source's own top-level code failed, before the test's code ran. */
  readonly phase: "source" | "test";
  readonly error: ThrownError;
}

export interface TestOutcome {
  readonly name: string;
  readonly passed: boolean;
  readonly durationMs: number;
  readonly failure?: TestFailure;
}

export type SuiteResult =
  | {
      readonly kind: "syntax_error";
      readonly error: ThrownError;
      readonly line?: number;
      readonly column?: number;
    }
  | { readonly kind: "ran"; readonly outcomes: readonly TestOutcome[] };

// ---------------------------------------------------------------------------------------------
// The prelude: assert, AssertionError and console, written in JavaScript and evaluated inside the
// sandbox before the source. Intrinsics are captured first so that a source which patches
// Object.is, Array.isArray, JSON… cannot make a failing assertion pass. Its completion value is
// `describe`, which the host calls to turn a thrown value into JSON text.

const PRELUDE = String.raw`(function () {
  "use strict";
  var G = globalThis;
  var is = Object.is, keys = Object.keys, getProto = Object.getPrototypeOf, hasOwn = Object.hasOwn;
  var defineProperty = Object.defineProperty, freeze = Object.freeze, create = Object.create;
  var isArray = Array.isArray, apply = Reflect.apply, stringify = JSON.stringify, Str = String;
  var ObjectProto = Object.prototype, ErrorProto = Error.prototype, DateProto = Date.prototype;
  var RegExpProto = RegExp.prototype, MapProto = Map.prototype, SetProto = Set.prototype;
  var isProtoOf = ObjectProto.isPrototypeOf, getTime = DateProto.getTime, toISO = DateProto.toISOString;
  var regexpToString = RegExpProto.toString, regexpTest = RegExpProto.test;
  var symbolToString = Symbol.prototype.toString, sliceStr = Str.prototype.slice;
  var mapForEach = MapProto.forEach, mapHas = MapProto.has, mapGet = MapProto.get;
  var mapSize = Object.getOwnPropertyDescriptor(MapProto, "size").get;
  var setForEach = SetProto.forEach, setHas = SetProto.has;
  var setSize = Object.getOwnPropertyDescriptor(SetProto, "size").get;
  var IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  var MAX_SHOW = 200, MAX_ITEMS = 8;

  function clip(text, max) {
    return text.length > max ? apply(sliceStr, text, [0, max - 1]) + "\u2026" : text;
  }
  function isError(v) { return apply(isProtoOf, ErrorProto, [v]); }

  function show(v, depth) {
    try { return clip(render(v, depth || 0), MAX_SHOW); } catch (e) { return "[unprintable value]"; }
  }
  function render(v, depth) {
    switch (typeof v) {
      case "string": return stringify(v);
      case "number": return is(v, -0) ? "-0" : Str(v);
      case "bigint": return Str(v) + "n";
      case "boolean": return v ? "true" : "false";
      case "undefined": return "undefined";
      case "symbol": return apply(symbolToString, v, []);
      case "function": return "[Function " + (typeof v.name === "string" && v.name ? v.name : "anonymous") + "]";
    }
    if (v === null) return "null";
    var proto = getProto(v);
    if (proto === DateProto) { var t = apply(getTime, v, []); return t === t ? "Date(" + apply(toISO, v, []) + ")" : "Date(Invalid)"; }
    if (proto === RegExpProto) return apply(regexpToString, v, []);
    if (isError(v)) return Str(v.name) + ": " + Str(v.message);
    if (depth > 2) return isArray(v) ? "[\u2026]" : "{\u2026}";
    var out = "", n = 0;
    if (proto === MapProto) {
      apply(mapForEach, v, [function (value, key) {
        if (n < MAX_ITEMS) out += (n ? ", " : "") + render(key, depth + 1) + " => " + render(value, depth + 1);
        n++;
      }]);
      return "Map(" + n + ") {" + (n ? " " + out + (n > MAX_ITEMS ? ", \u2026" : "") + " " : "") + "}";
    }
    if (proto === SetProto) {
      apply(setForEach, v, [function (value) {
        if (n < MAX_ITEMS) out += (n ? ", " : "") + render(value, depth + 1);
        n++;
      }]);
      return "Set(" + n + ") {" + (n ? " " + out + (n > MAX_ITEMS ? ", \u2026" : "") + " " : "") + "}";
    }
    if (isArray(v)) {
      for (var i = 0; i < v.length && i < MAX_ITEMS; i++) out += (i ? ", " : "") + render(v[i], depth + 1);
      if (v.length > MAX_ITEMS) out += ", \u2026 " + (v.length - MAX_ITEMS) + " more";
      return "[" + out + "]";
    }
    var ks = keys(v);
    for (var j = 0; j < ks.length && j < MAX_ITEMS; j++) {
      out += (j ? ", " : "") + key(ks[j]) + ": " + render(v[ks[j]], depth + 1);
    }
    if (ks.length > MAX_ITEMS) out += ", \u2026";
    var ctor = proto !== ObjectProto && proto !== null && proto.constructor;
    var label = typeof ctor === "function" && typeof ctor.name === "string" && ctor.name ? ctor.name + " " : "";
    return label + (ks.length ? "{ " + out + " }" : "{}");
  }
  function key(k) { return apply(regexpTest, IDENT, [k]) ? k : stringify(k); }

  // The first place where actual and expected differ, or null when they are structurally equal.
  function diff(a, e, path, seen) {
    if (is(a, e)) return null;
    if (typeof a !== "object" || typeof e !== "object" || a === null || e === null) return { path: path, a: a, e: e };
    var proto = getProto(a);
    if (proto !== getProto(e)) return { path: path, a: a, e: e };
    for (var s = 0; s < seen.length; s += 2) if (seen[s] === a && seen[s + 1] === e) return null;
    seen[seen.length] = a;
    seen[seen.length] = e;
    if (proto === DateProto) return is(apply(getTime, a, []), apply(getTime, e, [])) ? null : { path: path, a: a, e: e };
    if (proto === RegExpProto) return apply(regexpToString, a, []) === apply(regexpToString, e, []) ? null : { path: path, a: a, e: e };
    if (isError(a) && (a.name !== e.name || a.message !== e.message)) return { path: path, a: a, e: e };
    var found = null;
    if (proto === MapProto) {
      if (apply(mapSize, a, []) !== apply(mapSize, e, [])) return { path: path, a: a, e: e };
      apply(mapForEach, a, [function (value, k) {
        if (found) return;
        if (!apply(mapHas, e, [k])) found = { path: path, a: a, e: e };
        else found = diff(value, apply(mapGet, e, [k]), path + ".get(" + show(k) + ")", seen);
      }]);
      return found;
    }
    if (proto === SetProto) {
      if (apply(setSize, a, []) !== apply(setSize, e, [])) return { path: path, a: a, e: e };
      apply(setForEach, a, [function (value) {
        if (found || apply(setHas, e, [value])) return;
        var match = false;
        if (typeof value === "object" && value !== null) {
          apply(setForEach, e, [function (other) { if (!match && diff(value, other, path, []) === null) match = true; }]);
        }
        if (!match) found = { path: path, a: a, e: e };
      }]);
      return found;
    }
    if (isArray(a)) {
      if (a.length !== e.length) return { path: path + ".length", a: a.length, e: e.length };
      for (var i = 0; i < a.length; i++) {
        found = diff(a[i], e[i], path + "[" + i + "]", seen);
        if (found) return found;
      }
      return null;
    }
    var ka = keys(a), ke = keys(e);
    for (var j = 0; j < ke.length; j++) {
      var k = ke[j], p = path + (apply(regexpTest, IDENT, [k]) ? "." + k : "[" + stringify(k) + "]");
      if (!hasOwn(a, k)) return { path: p, a: undefined, e: e[k], missing: true };
      found = diff(a[k], e[k], p, seen);
      if (found) return found;
    }
    for (var m = 0; m < ka.length; m++) {
      if (!hasOwn(e, ka[m])) return { path: path + (apply(regexpTest, IDENT, [ka[m]]) ? "." + ka[m] : "[" + stringify(ka[m]) + "]"), a: a[ka[m]], e: undefined, extra: true };
    }
    return null;
  }

  class AssertionError extends Error {
    constructor(message, details) {
      super(message);
      if (details) { this.actual = details.actual; this.expected = details.expected; this.operator = details.operator; }
    }
  }
  defineProperty(AssertionError.prototype, "name", { value: "AssertionError", writable: true, configurable: true });

  function fail(message, detail, details) {
    throw new AssertionError(message === undefined ? detail : Str(message) + ": " + detail, details);
  }
  function expectedGot(actual, expected) { return "expected " + show(expected) + ", got " + show(actual); }
  function sameValue(a, e) { return a === e || (a !== a && e !== e); }

  function assert(value, message) {
    if (!value) throw new AssertionError(message === undefined ? "expected a truthy value, got " + show(value) : Str(message), { actual: value, expected: true, operator: "ok" });
  }
  function ok(value, message) { assert(value, message); }
  function equal(actual, expected, message) {
    if (!sameValue(actual, expected)) fail(message, expectedGot(actual, expected), { actual: actual, expected: expected, operator: "===" });
  }
  function notEqual(actual, expected, message) {
    if (sameValue(actual, expected)) fail(message, "expected a value other than " + show(expected), { actual: actual, expected: expected, operator: "!==" });
  }
  function deepEqual(actual, expected, message) {
    var d = diff(actual, expected, "", []);
    if (!d) return;
    var where = "";
    if (d.path) {
      if (d.path[0] === ".") d.path = apply(sliceStr, d.path, [1]);
      where = d.missing ? " (missing " + d.path + ", expected " + show(d.e) + ")"
        : d.extra ? " (unexpected " + d.path + ": " + show(d.a) + ")"
        : " (first difference at " + d.path + ": expected " + show(d.e) + ", got " + show(d.a) + ")";
    }
    fail(message, expectedGot(actual, expected) + where, { actual: actual, expected: expected, operator: "deepEqual" });
  }
  function notDeepEqual(actual, expected, message) {
    if (!diff(actual, expected, "", [])) fail(message, "expected a value not deeply equal to " + show(expected), { actual: actual, expected: expected, operator: "notDeepEqual" });
  }
  function matches(error, expected) {
    if (expected === undefined) return true;
    if (getProto(expected) === RegExpProto) {
      return apply(regexpTest, expected, [error !== null && typeof error === "object" && typeof error.message === "string" ? error.message : Str(error)]);
    }
    if (typeof expected === "function") {
      if (expected.prototype !== undefined && error instanceof expected) return true;
      if (isError(expected.prototype)) return false;
      return expected(error) === true;
    }
    return false;
  }
  // assert.throws(fn), assert.throws(fn, message), assert.throws(fn, ErrorClass | /regexp/ | predicate, message?)
  function throws(fn, expected, message) {
    if (typeof expected === "string" && message === undefined) { message = expected; expected = undefined; }
    if (typeof fn !== "function") throw new TypeError("assert.throws expects a function, got " + show(fn));
    var threw = false, error;
    try { fn(); } catch (e) { threw = true; error = e; }
    if (!threw) fail(message, "expected the function to throw, but it returned normally", { operator: "throws" });
    if (!matches(error, expected)) fail(message, "the function threw " + show(error) + ", which does not match " + show(expected), { actual: error, expected: expected, operator: "throws" });
  }
  function doesNotThrow(fn, message) {
    try { fn(); } catch (e) { fail(message, "expected the function not to throw, but it threw " + show(e), { actual: e, operator: "doesNotThrow" }); }
  }
  async function rejects(promiseOrFn, expected, message) {
    if (typeof expected === "string" && message === undefined) { message = expected; expected = undefined; }
    var rejected = false, error;
    try { await (typeof promiseOrFn === "function" ? promiseOrFn() : promiseOrFn); } catch (e) { rejected = true; error = e; }
    if (!rejected) fail(message, "expected the promise to reject, but it resolved", { operator: "rejects" });
    if (!matches(error, expected)) fail(message, "the promise rejected with " + show(error) + ", which does not match " + show(expected), { actual: error, expected: expected, operator: "rejects" });
  }
  function failNow(message) { throw new AssertionError(message === undefined ? "failed" : Str(message), { operator: "fail" }); }

  var methods = { ok: ok, equal: equal, strictEqual: equal, notEqual: notEqual, notStrictEqual: notEqual,
    deepEqual: deepEqual, deepStrictEqual: deepEqual, notDeepEqual: notDeepEqual, notDeepStrictEqual: notDeepEqual,
    throws: throws, doesNotThrow: doesNotThrow, rejects: rejects, fail: failNow, AssertionError: AssertionError };
  var names = keys(methods);
  for (var i = 0; i < names.length; i++) {
    defineProperty(assert, names[i], { value: methods[names[i]], enumerable: true });
  }
  freeze(assert);
  freeze(AssertionError.prototype);
  freeze(AssertionError);
  // Neither can be replaced, so a source cannot make every test pass by redefining assert.
  defineProperty(G, "assert", { value: assert });
  defineProperty(G, "AssertionError", { value: AssertionError });
  var noop = function () {};
  G.console = { log: noop, info: noop, warn: noop, error: noop, debug: noop, trace: noop, dir: noop, table: noop };

  return function describe(thrown) {
    var out = create(null);
    out.isError = false; out.name = ""; out.message = ""; out.stack = ""; out.isNull = thrown === null;
    try {
      if (thrown !== null && (typeof thrown === "object" || typeof thrown === "function")) {
        var name, message, stack;
        try { name = thrown.name; } catch (e) {}
        try { message = thrown.message; } catch (e) {}
        try { stack = thrown.stack; } catch (e) {}
        out.isError = isError(thrown) || typeof message === "string";
        if (out.isError) {
          out.name = typeof name === "string" ? clip(name, 100) : "Error";
          out.message = typeof message === "string" ? clip(message, ${MAX_MESSAGE_CHARS}) : "";
          out.stack = typeof stack === "string" ? clip(stack, ${MAX_STACK_CHARS}) : "";
          return stringify(out);
        }
      }
      out.message = show(thrown);
    } catch (e) {}
    return stringify(out);
  };
})()`;

const DescribedSchema = z.object({
  isError: z.boolean(),
  isNull: z.boolean(),
  name: z.string(),
  message: z.string(),
  stack: z.string(),
});
type Described = z.infer<typeof DescribedSchema>;

// ---------------------------------------------------------------------------------------------
// Engine: one QuickJS WASM module with its own memory.

interface Engine {
  readonly module: QuickJSWASMModule;
  readonly memory: { readonly buffer: ArrayBuffer };
  /** Set when a call into the WASM was aborted: the module's state can no longer be trusted. */
  broken?: string;
  /** Set when a test grew the heap past its limit: replaced at the next `ready()` to give the memory back. */
  bloated?: boolean;
}

// lib ES2023 does not declare WebAssembly; this is the one constructor the sandbox needs.
const { Memory: WasmMemory } = (
  globalThis as unknown as {
    WebAssembly: {
      Memory: new (descriptor: { initial: number; maximum: number }) => { readonly buffer: ArrayBuffer };
    };
  }
).WebAssembly;

async function loadEngine(): Promise<Engine> {
  // A memory of our own with a hard maximum: the engine can never hold more than this much host memory.
  const memory = new WasmMemory({
    initial: ENGINE_BASE_BYTES / WASM_PAGE_BYTES,
    maximum: (ENGINE_BASE_BYTES + MAX_MEMORY_LIMIT_BYTES) / WASM_PAGE_BYTES,
  });
  const module = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmMemory: memory }));
  return { module, memory };
}

/** Time and memory watch for one test, polled by QuickJS's interrupt handler. */
class Guard {
  tripped: "timeout" | "memory" | undefined;
  #deadline: number;
  #reading = false;
  readonly #ceiling: number;
  readonly #memory: Engine["memory"];

  constructor(memory: Engine["memory"], limits: SandboxLimits) {
    this.#memory = memory;
    this.#deadline = performance.now() + limits.timeoutMs;
    // A heap already above the limit (an earlier test's high-water mark) is not this test's doing.
    this.#ceiling = Math.max(memory.buffer.byteLength, ENGINE_BASE_BYTES + limits.memoryLimitBytes);
  }

  readonly interrupt = (): boolean => {
    if (!this.#reading && this.#memory.buffer.byteLength > this.#ceiling) {
      this.tripped ??= "memory";
      return true;
    }
    if (performance.now() > this.#deadline) {
      if (!this.#reading) this.tripped ??= "timeout";
      return true;
    }
    return false;
  };

  /** The heap has reached the test's memory ceiling. */
  get heapFull(): boolean {
    return this.#memory.buffer.byteLength >= this.#ceiling;
  }

  get expired(): boolean {
    return performance.now() > this.#deadline;
  }

  /** Reading a thrown value may run its getters; they get a small budget of their own. */
  startReading(): void {
    this.#reading = true;
    this.#deadline = performance.now() + READ_BUDGET_MS;
  }
}

interface Session {
  readonly rt: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  readonly describe: QuickJSHandle;
  readonly guard: Guard;
}

type Step = { ok: true } | { ok: false; failure: TestFailure };

const NO_ERROR: ThrownError = { name: "", message: "", stack: "", isError: false };

function hostErrorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The host exception a call into the WASM throws when it runs out of V8's native stack. */
function isStackExhaustion(error: unknown): boolean {
  return error instanceof RangeError && /call stack/i.test(error.message);
}

function usable(engine: Engine | undefined): engine is Engine {
  return engine !== undefined && engine.broken === undefined && !engine.bloated;
}

/**
 * Runs JavaScript sources and their tests in QuickJS. Load it once with `ready()`; `runSuite` is
 * synchronous. It keeps a spare engine: when a test takes the engine down (the host stack ran out,
 * or QuickJS aborted while freeing a runtime), the spare takes over at once and the remaining tests
 * still run; the next `ready()` loads a new spare.
 */
export class QuickJSSandbox {
  #engine: Engine | undefined;
  #spare: Engine | undefined;
  #loading: Promise<void> | undefined;

  /** Loads the engines, or replaces one that crashed or grew large. Cheap when nothing needs doing. */
  async ready(): Promise<void> {
    if (usable(this.#engine) && this.#spare) return;
    this.#loading ??= this.#refill().finally(() => {
      this.#loading = undefined;
    });
    await this.#loading;
  }

  async #refill(): Promise<void> {
    if (!usable(this.#engine)) {
      const next = this.#spare ?? (await loadEngine());
      this.#spare = this.#spare === next ? undefined : this.#spare;
      this.#engine = next;
    }
    this.#spare ??= await loadEngine();
  }

  /** Whether `runSuite` can run now. */
  get isReady(): boolean {
    return this.#engine !== undefined && this.#engine.broken === undefined;
  }

  /** The engine to use after `engine` broke: the spare when there is one. */
  #recover(engine: Engine): Engine | undefined {
    if (engine.broken === undefined) return engine;
    const spare = this.#spare;
    this.#spare = undefined;
    if (spare) this.#engine = spare;
    return spare;
  }

  /**
   * Compiles `source`, then runs each test in a fresh context after the source. Never throws for
   * anything the code does; throws only when `ready()` was not awaited.
   */
  runSuite(source: string, tests: readonly SandboxTest[], limits: SandboxLimits): SuiteResult {
    let engine = this.#engine;
    if (!engine || engine.broken !== undefined) {
      throw new Error("the QuickJS sandbox is not loaded: await ready() before running tests");
    }
    const suiteStarted = performance.now();
    const suiteDeadline =
      limits.suiteTimeoutMs === undefined ? Number.POSITIVE_INFINITY : suiteStarted + limits.suiteTimeoutMs;
    const syntax = this.#compile(engine, source, limits);
    engine = this.#recover(engine);
    if (syntax) return syntax;
    const outcomes: TestOutcome[] = [];
    let sourceFailure: TestFailure | undefined;
    let crashedIn = "";
    tests.forEach((test, index) => {
      const remainingMs = suiteDeadline - performance.now();
      if (sourceFailure) {
        // The source's top-level code does the same thing before every test: no need to watch it fail again.
        outcomes.push({ name: test.name, passed: false, durationMs: 0, failure: sourceFailure });
      } else if (!engine) {
        const message = `was not run: the sandbox crashed twice (last in test "${crashedIn}") and is reloaded before the next validation`;
        const error = { name: "NotRun", message, stack: "", isError: true };
        outcomes.push({
          name: test.name,
          passed: false,
          durationMs: 0,
          failure: { reason: "not_run", phase: "test", error },
        });
      } else if (remainingMs < MIN_TEST_SLICE_MS) {
        const elapsedMs = Math.round(performance.now() - suiteStarted);
        const message = `was not run: the whole suite had already run for ${elapsedMs} ms, past its ${limits.suiteTimeoutMs} ms limit`;
        const error = { name: "NotRun", message, stack: "", isError: true };
        outcomes.push({
          name: test.name,
          passed: false,
          durationMs: 0,
          failure: { reason: "suite_not_run", phase: "test", error },
        });
      } else {
        // Cut at the test's own timeout or the suite's remaining time, whichever comes first.
        const cutBySuite = remainingMs < limits.timeoutMs;
        const slice = cutBySuite ? { ...limits, timeoutMs: Math.floor(remainingMs) } : limits;
        let outcome = this.#runTest(engine, source, test, index, slice);
        if (cutBySuite && outcome.failure?.reason === "timeout") {
          outcome = { ...outcome, failure: { ...outcome.failure, reason: "suite_timeout" } };
        }
        // A source cut short by the suite's deadline did not fail: the tests after it are simply not run.
        if (outcome.failure?.phase === "source" && outcome.failure.reason !== "suite_timeout")
          sourceFailure = outcome.failure;
        if (engine.broken !== undefined) crashedIn = test.name;
        engine = this.#recover(engine);
        outcomes.push(outcome);
      }
    });
    return { kind: "ran", outcomes };
  }

  #compile(engine: Engine, source: string, limits: SandboxLimits): SuiteResult | undefined {
    return this.#session(
      engine,
      limits,
      ({ ctx, describe, guard }): SuiteResult | undefined => {
        const compiled = ctx.evalCode(source, SOURCE_FILE, { ...GLOBAL_SCRIPT, compileOnly: true });
        if (!compiled.error) {
          compiled.value.dispose();
          return undefined;
        }
        const described = readThrown(ctx, describe, guard, compiled.error);
        const error = toThrownError(described);
        const at = /source\.js:(\d+)(?::(\d+))?/.exec(error.stack);
        const result: { kind: "syntax_error"; error: ThrownError; line?: number; column?: number } = {
          kind: "syntax_error",
          error,
        };
        if (at?.[1]) result.line = Number(at[1]);
        if (at?.[2]) result.column = Number(at[2]);
        return result;
      },
      (hostError) => ({
        kind: "syntax_error",
        error: {
          name: "SyntaxError",
          message: isStackExhaustion(hostError)
            ? "the source is nested too deeply to compile (the parser ran out of stack)"
            : `the source could not be compiled: the sandbox failed with ${hostErrorText(hostError)}`,
          stack: "",
          isError: true,
        },
      }),
    );
  }

  #runTest(
    engine: Engine,
    source: string,
    test: SandboxTest,
    index: number,
    limits: SandboxLimits,
  ): TestOutcome {
    const started = performance.now();
    const finish = (step: Step): TestOutcome => {
      const durationMs = Math.round((performance.now() - started) * 100) / 100;
      if (engine.memory.buffer.byteLength > ENGINE_BASE_BYTES + limits.memoryLimitBytes)
        engine.bloated = true;
      return step.ok
        ? { name: test.name, passed: true, durationMs }
        : { name: test.name, passed: false, durationMs, failure: step.failure };
    };
    let phase: TestFailure["phase"] = "source";
    return finish(
      this.#session(
        engine,
        limits,
        (session): Step => {
          const { ctx } = session;
          const loaded = ctx.evalCode(source, SOURCE_FILE, GLOBAL_SCRIPT);
          if (loaded.error) return failed(session, "source", loaded.error);
          loaded.value.dispose();
          phase = "test";
          // A block, so the test's own let/const cannot collide with the source's; the newline ends a trailing comment.
          const ran = ctx.evalCode(`{${test.code}\n}`, `tests/${index}.js`, GLOBAL_SCRIPT);
          if (ran.error) return failed(session, "test", ran.error);
          return settle(session, ran.value);
        },
        (hostError): Step => {
          const reason: FailureReason = isStackExhaustion(hostError) ? "stack" : "crash";
          const message =
            reason === "stack"
              ? "stack overflow: the host's stack ran out before QuickJS's limit (recursion or nesting too deep)"
              : `the sandbox crashed: ${hostErrorText(hostError)}`;
          const error = { name: "InternalError", message, stack: "", isError: true };
          return { ok: false, failure: { reason, phase, error } };
        },
      ),
    );
  }

  /**
   * One fresh runtime and context with the limits set and the prelude loaded, disposed afterwards.
   * A host exception out of the WASM marks the engine broken: its state is then unknown, so nothing
   * of it is disposed or reused.
   */
  #session<T>(
    engine: Engine,
    limits: SandboxLimits,
    body: (session: Session) => T,
    onCrash: (error: unknown) => T,
  ): T {
    let rt: QuickJSRuntime | undefined;
    let ctx: QuickJSContext | undefined;
    let describe: QuickJSHandle | undefined;
    try {
      const guard = new Guard(engine.memory, limits);
      rt = engine.module.newRuntime();
      rt.setMemoryLimit(limits.memoryLimitBytes);
      rt.setMaxStackSize(limits.maxStackBytes);
      rt.setInterruptHandler(guard.interrupt);
      ctx = rt.newContext();
      const prelude = ctx.evalCode(PRELUDE, PRELUDE_FILE, GLOBAL_SCRIPT);
      if (prelude.error) {
        prelude.error.dispose();
        throw new Error("the sandbox prelude failed to load (limits too low?)");
      }
      describe = prelude.value;
      return body({ rt, ctx, describe, guard });
    } catch (error) {
      engine.broken = hostErrorText(error);
      return onCrash(error);
    } finally {
      if (engine.broken === undefined) {
        try {
          describe?.dispose();
          ctx?.dispose();
          rt?.dispose();
        } catch (error) {
          engine.broken = `disposing a runtime failed: ${hostErrorText(error)}`;
        }
      }
    }
  }
}

/** Waits for a test that evaluated to a promise: runs the sandbox's jobs until it settles or time runs out. */
function settle(session: Session, value: QuickJSHandle): Step {
  const { rt, ctx, guard } = session;
  const first = ctx.getPromiseState(value);
  if (first.type === "fulfilled" && first.notAPromise) {
    value.dispose();
    return { ok: true };
  }
  disposeState(first);
  try {
    while (rt.hasPendingJob() && !guard.expired) {
      const jobs = rt.executePendingJobs(JOB_BATCH);
      if (jobs.error) return failed(session, "test", jobs.error);
    }
    if (guard.expired && guard.tripped === undefined) guard.tripped = "timeout";
    if (guard.tripped) return classified(guard, "test", NO_ERROR_DESCRIBED);
    const state = ctx.getPromiseState(value);
    if (state.type === "fulfilled") {
      state.value.dispose();
      return { ok: true };
    }
    if (state.type === "rejected") return failed(session, "test", state.error);
    const error = {
      name: "Error",
      message: "the test's promise never settled (the sandbox has no timers or I/O to wait for)",
      stack: "",
      isError: true,
    };
    return { ok: false, failure: { reason: "error", phase: "test", error } };
  } finally {
    value.dispose();
  }
}

function disposeState(state: JSPromiseState): void {
  if (state.type === "fulfilled") state.value.dispose();
  else if (state.type === "rejected") state.error.dispose();
}

const NO_ERROR_DESCRIBED: Described = { ...NO_ERROR, isNull: false };

/** Turns a thrown handle (consumed) into a failure. */
function failed(session: Session, phase: TestFailure["phase"], thrown: QuickJSHandle): Step {
  return classified(session.guard, phase, readThrown(session.ctx, session.describe, session.guard, thrown));
}

function classified(guard: Guard, phase: TestFailure["phase"], described: Described): Step {
  const error = toThrownError(described);
  let reason: FailureReason = "error";
  if (guard.tripped) reason = guard.tripped;
  else if (error.name === "InternalError" && error.message === "out of memory") reason = "memory";
  // QuickJS throws null when the heap is so full that it cannot allocate the out-of-memory error itself.
  else if (described.isNull && guard.heapFull) reason = "memory";
  else if (error.name === "InternalError" && error.message === "stack overflow") reason = "stack";
  return { ok: false, failure: { reason, phase, error } };
}

/** Reads a thrown value through the prelude's `describe`, consuming the handle. */
function readThrown(
  ctx: QuickJSContext,
  describe: QuickJSHandle,
  guard: Guard,
  thrown: QuickJSHandle,
): Described {
  guard.startReading();
  const call = ctx.callFunction(describe, ctx.undefined, thrown);
  thrown.dispose();
  let text: string | undefined;
  if (call.error) {
    call.error.dispose();
  } else {
    if (ctx.typeof(call.value) === "string") text = ctx.getString(call.value);
    call.value.dispose();
  }
  if (text !== undefined) {
    try {
      const parsed = DescribedSchema.safeParse(JSON.parse(text));
      if (parsed.success) return parsed.data;
    } catch {
      // Not JSON: fall through to the placeholder below.
    }
  }
  return { isError: false, isNull: false, name: "", message: "[a value that could not be read]", stack: "" };
}

function toThrownError(described: Described): ThrownError {
  if (described.isError) {
    return {
      name: described.name || "Error",
      message: described.message,
      stack: stripPreludeFrames(described.stack),
      isError: true,
    };
  }
  return { name: "Uncaught", message: described.message, stack: "", isError: false };
}

function stripPreludeFrames(stack: string): string {
  return stack
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.includes(PRELUDE_FILE))
    .join("\n");
}
