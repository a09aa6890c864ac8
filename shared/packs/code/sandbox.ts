/**
 * The QuickJS sandbox the code pack runs drafts' tests in.
 *
 * Every test gets a fresh QuickJS runtime and context, disposed afterwards, so no test can change
 * another's verdict. `assert` and a no-op `console` are JavaScript evaluated inside it before the
 * source (the harness, sandbox-harness.guest.js); the only host functions are the two the harness captures
 * and hides before any draft code runs (one records what the assertions did, one tells a genuine Promise
 * apart), so there is no `require`, `process`, `fs`, network or timer to reach.
 *
 * The realm is locked before the source runs: the harness freezes every object reachable from the
 * built-ins and pins their global bindings, and the test's code runs in a block whose bindings of
 * the built-ins' global names hold the values captured before the source ran. A source cannot change
 * what its tests compute their expectations with. Once per suite, a probe runs the source in an
 * unlocked realm and names each built-in it changed (`the source replaces Math.abs; built-ins are
 * read-only`), which the code pack reports.
 *
 * The host decides each verdict from what it observes itself: the test's completion or thrown value
 * (`evalCode`), the state of a promise it evaluated to (`getPromiseState`, never a guest `then`), and
 * what the harness recorded with it: failed assertions, and how many assertions the test's own code
 * ran. A failed assertion fails the test even when the code under test catches the AssertionError; a
 * test that ran no assertion (or not the number it declared with `assert.expect(n)`) fails; a test
 * that evaluates to a thenable that is no Promise fails, and so does one that ends with an
 * `assert.rejects` still waiting.
 *
 * Values cross between the source and the test only as copies. The source runs in one context (the
 * draft's realm), the test in another (the tests' realm) of the same runtime; the harness in each
 * packs what leaves it as tagged JSON text and rebuilds what arrives with its own constructors, and
 * the host carries the text (bridgeFunctions). Functions cross as callables run in their own realm,
 * promises as promises the host settles from getPromiseState, a class's objects with their methods.
 * The test's `assert` lives in the tests' realm only, so every assertion it records is the test's.
 *
 * Limits are per test: a budget of CPU time, a memory limit and a stack limit. The budget is the CPU
 * time of the thread the sandbox runs in, as the kernel counts it: the same draft gets the same
 * verdict on an idle laptop and on a loaded CI runner, and the harness's own set-up is not counted.
 * The thread checks it at every interrupt poll (about one per 10,000 branches and calls of the
 * guest's bytecode); a native call polls nothing, so a watchdog outside the thread reads its CPU
 * time and terminates it past the budget (QuickJSSandbox, SandboxThread): asynchronously, with
 * Node's `worker.cpuUsage()` polled on a timer (portable; /proc where Node lacks it), or, for a
 * synchronous caller, from /proc while it waits. An optional
 * suite budget bounds the sum over all tests, so that a draft of many slow tests cannot outlast the
 * Lambda that validates it. A failure to set a sandbox up is a `SandboxSetupError` thrown to the
 * caller (a system error of the run), never a verdict.
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
 * A sort without a comparator is routed through one (SORT_CAPS) so that its work is polled; every
 * other native call is bounded by the memory cap and by the watchdog outside the thread.
 *
 * No suite holds another draft: a validation inside a deferral (shared/deferred.ts; code.ts asks
 * the suite as a deferred question) runs it with `runSuiteAsync`, so the event loop serves other
 * drafts meanwhile, on a pool of threads (as many as the machine's parallelism, at most four) that
 * suites share in turns of one test: when a suite waits for a thread, every busy thread is asked
 * to hand its turn over after the test it runs, and the suite resumes later where it stopped
 * (`Resume`). A slow suite delays another by about one test's budget, never by its whole suite;
 * the verdict is the same on either path and however the turns fall.
 */

import { readFileSync, readlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import {
  isMainThread,
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
  workerData,
} from "node:worker_threads";
// Types only at the top: the engine (quickjs-emscripten-core and the one build the sandbox runs,
// release-sync) is imported by loadEngine(), so that importing the code pack loads no WASM build.
import type {
  JSPromiseState,
  newVariant,
  QuickJSContext,
  QuickJSHandle,
  QuickJSRuntime,
  QuickJSSyncVariant,
  QuickJSWASMModule,
} from "quickjs-emscripten-core";
import * as z from "zod";
import {
  HARNESS_CONSTANTS,
  HARNESS_FILE,
  type HarnessMode,
  HOST_SLOT,
  harnessSource,
  MAX_MESSAGE_CHARS,
  MAX_STACK_CHARS,
  MODE,
  RECORD,
} from "./sandbox-harness.js";

const KiB = 1024;
const MiB = 1024 * KiB;
const WASM_PAGE_BYTES = 64 * KiB;

/** The WASM binary's minimum memory (it also holds the engine's 5 MiB C stack); a fresh engine's heap size. */
const ENGINE_BASE_BYTES = 16 * MiB;
/** The highest per-test memory limit a deployment may set; with the base, the engine's hard memory cap. */
export const MAX_MEMORY_LIMIT_BYTES = 256 * MiB;
/** Below the build's 5 MiB C stack: a larger QuickJS limit would let recursion run over the heap. */
export const MAX_STACK_BYTES = 4 * MiB;
/** The budget's unit inside the sandbox: microseconds of the thread's CPU time per ms of budget. */
const TICKS_PER_MS = 1000;
/** Getters on a thrown value run while it is read: they get this many polls, not the test's budget. */
const READ_BUDGET_TICKS = 200;
/** CPU time the watchdog gives the reading of a thrown value (its getters) before it stops the thread. */
const READ_WATCHDOG_MICROS = 1_000_000;
/** Promise jobs run in batches so that the budget is checked between them. */
const JOB_BATCH = 256;
/** A test is started only with at least this many polls of the suite's budget left. */
const MIN_TEST_SLICE_TICKS = 10 * TICKS_PER_MS;

const SOURCE_FILE = "source.js";
const GLOBAL_SCRIPT = { type: "global" } as const;

/** Limits applied to each test on its own, and to the suite as a whole. */
export interface SandboxLimits {
  /** Budget for loading the source and running one test, in ms of the sandbox thread's CPU time. */
  readonly timeoutMs: number;
  /**
   * Budget of work for the whole suite, in the same unit; unbounded when absent. Once it is spent,
   * the remaining tests are not run (`suite_not_run`); a test still running when it runs out is
   * interrupted (`suite_timeout`): each test is cut at its own budget or the suite's rest, whichever
   * is smaller.
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
interface ThrownError {
  readonly name: string;
  readonly message: string;
  /** QuickJS's stack trace, without the assert helpers' own frames; may be empty. */
  readonly stack: string;
  /** False when the code threw something that is not an Error (a string, an object literal…). */
  readonly isError: boolean;
}

/**
 * Why a test failed: it threw or proved nothing (`error`), used up its budget (`timeout`), ran out of
 * memory or stack, took the engine down (`crash`), or was not run because an earlier test crashed the
 * engine (`not_run`). With a suite budget, a test interrupted because the whole suite used it up fails
 * with `suite_timeout`, and the tests after it with `suite_not_run`.
 */
type FailureReason =
  | "error"
  | "uncopyable"
  | "too_slow"
  | "memory"
  | "stack"
  | "crash"
  | "not_run"
  | "suite_too_slow"
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
  /** Wall-clock time, for information only: no verdict depends on it. */
  readonly durationMs: number;
  /** Milliseconds of CPU time the test used, as the operating system counts the sandbox's thread. */
  readonly cpuMs: number;
  readonly failure?: TestFailure;
}

export type SuiteResult =
  | {
      readonly kind: "syntax_error";
      readonly error: ThrownError;
      readonly line?: number;
      readonly column?: number;
    }
  | {
      readonly kind: "ran";
      readonly outcomes: readonly TestOutcome[];
      /**
       * What the source's top-level code changed in the built-ins, one sentence each (`the source
       * replaces Math.abs; built-ins are read-only`), found by the probe in an unlocked realm; the
       * tests themselves ran against the locked one.
       */
      readonly builtinChanges: readonly string[];
    };

/**
 * The sandbox could not be set up (the engine did not load, the harness did not evaluate): a fault
 * of the system, never a verdict about the draft, so it is thrown and the run fails `system_error`.
 */
export class SandboxSetupError extends Error {
  override readonly name = "SandboxSetupError";
}

const DescribedSchema = z.object({
  isError: z.boolean(),
  isNull: z.boolean(),
  name: z.string(),
  message: z.string(),
  stack: z.string(),
});
type Described = z.infer<typeof DescribedSchema>;

const ChangesSchema = z.array(z.string());

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
  // The variant's type names WebAssembly.Memory, which only the DOM lib declares fully. `printErr`
  // (an Emscripten Module option the typings leave out): when a test takes the engine down, Emscripten
  // writes "Aborted(…)" to stderr and then throws the same text as a RuntimeError, which the sandbox
  // catches and reports as that test's failure; the stderr copy is only noise in a host's logs.
  const options = { wasmMemory: memory } as Parameters<typeof newVariant>[1];
  options.emscriptenModule = { printErr: () => {} } as NonNullable<typeof options.emscriptenModule>;
  try {
    const [{ newQuickJSWASMModuleFromVariant, newVariant }, build] = await Promise.all([
      import("quickjs-emscripten-core"),
      import("@jitl/quickjs-wasmfile-release-sync"),
    ]);
    // The build's one declaration file serves its ESM and CJS entries, so TypeScript sees the CJS
    // shape (`default` = module.exports); Node loads the ESM entry, whose default is the variant.
    const exported = build.default as unknown as QuickJSSyncVariant | { default: QuickJSSyncVariant };
    const releaseSync = "default" in exported ? exported.default : exported;
    const module = await newQuickJSWASMModuleFromVariant(newVariant(releaseSync, options));
    return { module, memory };
  } catch (error) {
    throw new SandboxSetupError(`the QuickJS engine did not load: ${hostErrorText(error)}`, { cause: error });
  }
}

/**
 * Work and memory watch for one session, polled by QuickJS's interrupt handler. Nothing is counted
 * until `start`: the harness's set-up is the sandbox's work, not the draft's.
 */
class Guard {
  tripped: "too_slow" | "memory" | undefined;
  #used = 0;
  #startCpu = 0;
  #budget = Number.POSITIVE_INFINITY;
  #counting = false;
  #reading = false;
  #readTicks = 0;
  readonly #ceiling: number;
  readonly #memory: Engine["memory"];

  constructor(memory: Engine["memory"], limits: SandboxLimits) {
    this.#memory = memory;
    // A heap already above the limit (an earlier test's high-water mark) is not this test's doing.
    this.#ceiling = Math.max(memory.buffer.byteLength, ENGINE_BASE_BYTES + limits.memoryLimitBytes);
  }

  /** Microseconds of this thread's CPU time used since `start` (frozen once reading starts). */
  get ticks(): number {
    if (this.#counting && !this.#reading) this.#used = threadCpuMicros() - this.#startCpu;
    return this.#used;
  }

  /** Starts counting the draft's CPU time against `budgetMicros`; the watchdog outside sees it too. */
  start(budgetMicros: number): void {
    this.#budget = budgetMicros;
    this.#counting = true;
    this.#startCpu = threadCpuMicros();
    publishBudget(this.#startCpu, budgetMicros);
  }

  /** The session is over: nothing more is counted, and the watchdog stands down. */
  stop(): void {
    void this.ticks;
    this.#counting = false;
    publishBudget(0, 0);
  }

  readonly interrupt = (): boolean => {
    if (this.#reading) {
      this.#readTicks += 1;
      return this.#readTicks > READ_BUDGET_TICKS;
    }
    if (!this.#counting) return false;
    if (this.#memory.buffer.byteLength > this.#ceiling) {
      this.tripped ??= "memory";
      return true;
    }
    if (this.ticks > this.#budget) {
      this.tripped ??= "too_slow";
      return true;
    }
    return false;
  };

  /** The heap has reached the test's memory ceiling. */
  get heapFull(): boolean {
    return this.#memory.buffer.byteLength >= this.#ceiling;
  }

  get expired(): boolean {
    return this.tripped !== undefined || this.ticks > this.#budget;
  }

  /** Reading a thrown value may run its getters; they get a small budget of their own. */
  startReading(): void {
    void this.ticks;
    this.#reading = true;
    this.#readTicks = 0;
    // A getter stuck in a native call is stopped from outside, like the test.
    publishBudget(threadCpuMicros(), READ_WATCHDOG_MICROS);
  }
}

/** What the harness reported to the host during one test; the draft's code cannot reach it. */
interface HostRecord {
  /** The first failed assertion, even if the code under test caught its error. */
  failure?: { readonly message: string; readonly stack: string };
  /** `assert.rejects` calls still waiting for their promise. */
  waiting: number;
  /** Assertions the test's own code called (the source's calls are not counted). */
  assertions: number;
  /** The count the test declared with `assert.expect(n)`. */
  expected?: number;
  /** Why a value could not be copied between the realms, the first time one could not. */
  uncopyable?: string;
}

/** One of a session's two contexts, with the harness's toolbox (a frozen object without a prototype). */
interface Realm {
  readonly ctx: QuickJSContext;
  readonly toolbox: QuickJSHandle;
  readonly describe: QuickJSHandle;
  readonly thenable: QuickJSHandle;
}

/** A promise one realm lent the other: the host settles the copy when it sees the original settle. */
interface Watched {
  readonly holder: Realm;
  readonly receiver: Realm;
  readonly id: number;
  readonly handle: QuickJSHandle;
}

/** How the two realms of a session reach each other: only through the host, only as text. */
interface Links {
  draft?: Realm | undefined;
  tests?: Realm | undefined;
  readonly watched: Watched[];
}

interface Session {
  readonly rt: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  /** The tests' realm (lock mode only): where the test's code runs, apart from the source's. */
  readonly tests: Realm | undefined;
  readonly draft: Realm;
  readonly links: Links;
  /** The harness's toolbox: `describe` reads a thrown value as JSON text, `thenable` looks for a `then`. */
  readonly describe: QuickJSHandle;
  readonly thenable: QuickJSHandle;
  /** Binds the built-ins' global names to their captured values, for the test's block. */
  readonly prelude: string;
  /** Watch mode only: what the source changed in the built-ins, as JSON text. */
  readonly changes: QuickJSHandle | undefined;
  readonly record: HostRecord;
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

function ticksOf(ms: number): number {
  return Math.round(ms * TICKS_PER_MS);
}

/**
 * Runs JavaScript sources and their tests in QuickJS. Load it once with `ready()`; `runSuite` is
 * synchronous. It keeps a spare engine: when a test takes the engine down (the host stack ran out,
 * or QuickJS aborted while freeing a runtime), the spare takes over at once and the remaining tests
 * still run; the next `ready()` loads a new spare.
 */
class InThreadSandbox {
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
   * Compiles `source`, probes what its top-level code changes in the built-ins, then runs each test
   * in a fresh, locked context after the source. Never throws for anything the code does; throws
   * `SandboxSetupError` when `ready()` was not awaited or a sandbox could not be set up.
   */
  runSuite(
    source: string,
    tests: readonly SandboxTest[],
    limits: SandboxLimits,
    resume: Resume = { index: 0, usedMicros: 0 },
    onEvent: (event: SuiteEvent) => void = () => {},
    shouldPause: () => boolean = () => false,
  ): SuiteResult {
    let engine = this.#engine;
    if (!engine || engine.broken !== undefined) {
      throw new SandboxSetupError("the QuickJS sandbox is not loaded: await ready() before running tests");
    }
    const suiteBudget =
      limits.suiteTimeoutMs === undefined ? Number.POSITIVE_INFINITY : ticksOf(limits.suiteTimeoutMs);
    const testBudget = ticksOf(limits.timeoutMs);
    let builtinChanges: string[];
    if (resume.builtinChanges) {
      builtinChanges = [...resume.builtinChanges];
    } else {
      const probed = this.#compileAndProbe(engine, source, limits);
      engine = this.#recover(engine);
      if (probed.syntax) return probed.syntax;
      builtinChanges = probed.builtinChanges;
      onEvent({ type: "probed", builtinChanges });
    }
    const outcomes: TestOutcome[] = [];
    let used = resume.usedMicros;
    let sourceFailure: TestFailure | undefined = resume.sourceFailure;
    let crashedIn = "";
    const notRun = (name: string, reason: FailureReason, message: string): TestOutcome => ({
      name,
      passed: false,
      durationMs: 0,
      cpuMs: 0,
      failure: { reason, phase: "test", error: { name: "NotRun", message, stack: "", isError: true } },
    });
    let paused = false;
    tests.forEach((test, index) => {
      if (index < resume.index || paused) return;
      // Another suite waits for this thread: hand it over between tests (never before the first of
      // this turn). Not once the source failed or the engine is gone: the tests left then cost nothing,
      // and their outcomes depend on what this turn saw.
      if (index > resume.index && !sourceFailure && engine && shouldPause()) {
        paused = true;
        return;
      }
      const remaining = suiteBudget - used;
      if (sourceFailure) {
        // The source's top-level code does the same thing before every test: no need to watch it fail again.
        outcomes.push({ name: test.name, passed: false, durationMs: 0, cpuMs: 0, failure: sourceFailure });
      } else if (!engine) {
        const message = `was not run: the sandbox crashed twice (last in test "${crashedIn}") and is reloaded before the next validation`;
        outcomes.push(notRun(test.name, "not_run", message));
      } else if (remaining < MIN_TEST_SLICE_TICKS) {
        const message = `was not run: the tests before it had used up the whole suite's budget of ${limits.suiteTimeoutMs} ms`;
        outcomes.push(notRun(test.name, "suite_not_run", message));
      } else {
        // Cut at the test's own budget or the suite's rest, whichever is smaller.
        const cutBySuite = remaining < testBudget;
        let outcome = this.#runTest(engine, source, test, index, limits, cutBySuite ? remaining : testBudget);
        used += outcome.cpuMs * TICKS_PER_MS;
        if (cutBySuite && outcome.failure?.reason === "too_slow") {
          outcome = { ...outcome, failure: { ...outcome.failure, reason: "suite_too_slow" } };
        }
        // A source cut short by the suite's budget did not fail: the tests after it are simply not run.
        if (outcome.failure?.phase === "source" && outcome.failure.reason !== "suite_too_slow")
          sourceFailure = outcome.failure;
        if (engine.broken !== undefined) crashedIn = test.name;
        engine = this.#recover(engine);
        outcomes.push(outcome);
      }
      onEvent({ type: "outcome", outcome: outcomes[outcomes.length - 1] as TestOutcome });
    });
    return { kind: "ran", outcomes, builtinChanges };
  }

  /**
   * Compiles the source; when it compiles, runs its top-level code once in an unlocked realm (the
   * same session, in watch mode) and lists the built-ins it changed. The list is only a report: the
   * verdicts come from the locked realm, so a source that hides its changes from the probe (or
   * fails, or runs out of budget in it) gains nothing by it.
   */
  #compileAndProbe(
    engine: Engine,
    source: string,
    limits: SandboxLimits,
  ): { syntax?: SuiteResult; builtinChanges: string[] } {
    let probing = false;
    return this.#session(
      engine,
      limits,
      MODE.watch,
      ({ ctx, describe, changes, guard }) => {
        guard.start(ticksOf(limits.timeoutMs));
        const compiled = ctx.evalCode(source, SOURCE_FILE, { ...GLOBAL_SCRIPT, compileOnly: true });
        if (compiled.error) {
          const described = readThrown(ctx, describe, guard, compiled.error);
          const error = toThrownError(described);
          const at = /source\.js:(\d+)(?::(\d+))?/.exec(error.stack);
          const syntax: { kind: "syntax_error"; error: ThrownError; line?: number; column?: number } = {
            kind: "syntax_error",
            error,
          };
          if (at?.[1]) syntax.line = Number(at[1]);
          if (at?.[2]) syntax.column = Number(at[2]);
          return { syntax, builtinChanges: [] };
        }
        compiled.value.dispose();
        probing = true;
        return { builtinChanges: probe(ctx, source, changes, guard) };
      },
      (hostError) =>
        probing
          ? { builtinChanges: [] }
          : {
              syntax: {
                kind: "syntax_error",
                error: {
                  name: "SyntaxError",
                  message: isStackExhaustion(hostError)
                    ? "the source is nested too deeply to compile (the parser ran out of stack)"
                    : `the source could not be compiled: the sandbox failed with ${hostErrorText(hostError)}`,
                  stack: "",
                  isError: true,
                },
              },
              builtinChanges: [],
            },
    );
  }

  #runTest(
    engine: Engine,
    source: string,
    test: SandboxTest,
    index: number,
    limits: SandboxLimits,
    budgetTicks: number,
  ): TestOutcome {
    const started = performance.now();
    let ticks = 0;
    const finish = (step: Step): TestOutcome => {
      const durationMs = Math.round((performance.now() - started) * 100) / 100;
      if (engine.memory.buffer.byteLength > ENGINE_BASE_BYTES + limits.memoryLimitBytes)
        engine.bloated = true;
      const cpuMs = Math.round(ticks / 10) / 100;
      return step.ok
        ? { name: test.name, passed: true, durationMs, cpuMs }
        : { name: test.name, passed: false, durationMs, cpuMs, failure: step.failure };
    };
    let phase: TestFailure["phase"] = "source";
    return finish(
      this.#session(
        engine,
        limits,
        MODE.lock,
        (session): Step => {
          const { ctx, guard, tests } = session;
          try {
            guard.start(budgetTicks);
            publishSourcePhase(true);
            const loaded = ctx.evalCode(source, SOURCE_FILE, GLOBAL_SCRIPT);
            publishSourcePhase(false);
            if (loaded.error) return judged(session, failed(session, "source", loaded.error));
            loaded.value.dispose();
            phase = "test";
            if (!tests) throw new SandboxSetupError("the tests' realm is missing");
            bindSourceGlobals(session, tests, test.code);
            // The test's code runs in the tests' realm; its view of the session reads what it left there.
            const view: Session = {
              ...session,
              ctx: tests.ctx,
              describe: tests.describe,
              thenable: tests.thenable,
            };
            // A block for the test's own let/const; the newline ends a trailing comment.
            const ran = tests.ctx.evalCode(`{${test.code}\n}`, `tests/${index}.js`, GLOBAL_SCRIPT);
            return judged(view, ran.error ? failed(view, "test", ran.error) : settle(view, ran.value));
          } finally {
            publishSourcePhase(false);
            guard.stop();
            ticks = guard.ticks;
          }
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
   * One fresh runtime and context with the limits set and the harness loaded, disposed afterwards.
   * A host exception out of the WASM while the draft's code runs marks the engine broken: its state
   * is then unknown, so nothing of it is disposed or reused. A failure before any draft code ran is
   * the sandbox's, and is thrown as a `SandboxSetupError`.
   */
  #session<T>(
    engine: Engine,
    limits: SandboxLimits,
    mode: HarnessMode,
    body: (session: Session) => T,
    onCrash: (error: unknown) => T,
  ): T {
    // Outside the try: a harness file that cannot be read is a broken install, not a broken engine.
    let harnessText: string;
    try {
      harnessText = harnessSource();
    } catch (error) {
      throw new SandboxSetupError(`the sandbox harness could not be read: ${hostErrorText(error)}`, {
        cause: error,
      });
    }
    let rt: QuickJSRuntime | undefined;
    const contexts: QuickJSContext[] = [];
    const handles: QuickJSHandle[] = [];
    const links: Links = { watched: [] };
    let setUp = false;
    try {
      const guard = new Guard(engine.memory, limits);
      rt = engine.module.newRuntime();
      rt.setMemoryLimit(limits.memoryLimitBytes);
      rt.setMaxStackSize(limits.maxStackBytes);
      rt.setInterruptHandler(guard.interrupt);
      const runtime = rt;
      const record: HostRecord = { waiting: 0, assertions: 0 };
      const load = (realmMode: HarnessMode, realmRecord: HostRecord): { realm: Realm; prelude: string } => {
        const ctx = runtime.newContext();
        contexts.push(ctx);
        installHost(ctx, realmRecord, realmMode, links, record);
        const harness = ctx.evalCode(harnessText, HARNESS_FILE, GLOBAL_SCRIPT);
        if (harness.error) {
          const reason = ctx.dump(harness.error) as unknown;
          harness.error.dispose();
          throw new SandboxSetupError(
            `the sandbox harness failed to load: ${JSON.stringify(reason)?.slice(0, MAX_MESSAGE_CHARS)}`,
          );
        }
        // The toolbox is a frozen object without a prototype, made before any draft code ran: no getter runs here.
        const toolbox = harness.value;
        handles.push(toolbox);
        const describe = ctx.getProp(toolbox, "describe");
        const thenable = ctx.getProp(toolbox, "thenable");
        handles.push(describe, thenable);
        const preludeHandle = ctx.getProp(toolbox, "prelude");
        const prelude = ctx.getString(preludeHandle);
        preludeHandle.dispose();
        return { realm: { ctx, toolbox, describe, thenable }, prelude };
      };
      // The source's assertions (a source that checks itself) are recorded nowhere: only the tests' count.
      const { realm: draft, prelude } = load(mode, { waiting: 0, assertions: 0 });
      links.draft = draft;
      let changes: QuickJSHandle | undefined;
      if (mode === MODE.watch) {
        changes = draft.ctx.getProp(draft.toolbox, "changes");
        handles.push(changes);
      }
      const tests = mode === MODE.lock ? load(MODE.tests, record).realm : undefined;
      links.tests = tests;
      setUp = true;
      return body({
        rt,
        ctx: draft.ctx,
        describe: draft.describe,
        thenable: draft.thenable,
        prelude,
        changes,
        record,
        guard,
        draft,
        tests,
        links,
      });
    } catch (error) {
      engine.broken = hostErrorText(error);
      if (!setUp) {
        if (error instanceof SandboxSetupError) throw error;
        throw new SandboxSetupError(`the sandbox could not be set up: ${hostErrorText(error)}`, {
          cause: error,
        });
      }
      return onCrash(error);
    } finally {
      publishBudget(0, 0);
      if (engine.broken === undefined) {
        try {
          for (const { handle } of links.watched) handle.dispose();
          for (const handle of handles) handle.dispose();
          for (const ctx of contexts) ctx.dispose();
          rt?.dispose();
        } catch (error) {
          engine.broken = `disposing a runtime failed: ${hostErrorText(error)}`;
        }
      }
    }
  }
}

/** Runs the source's top-level code in a watch-mode session and reads what it changed in the built-ins. */
function probe(
  ctx: QuickJSContext,
  source: string,
  changes: QuickJSHandle | undefined,
  guard: Guard,
): string[] {
  const loaded = ctx.evalCode(source, SOURCE_FILE, GLOBAL_SCRIPT);
  (loaded.error ?? loaded.value).dispose();
  if (!changes) return [];
  guard.startReading();
  const call = ctx.callFunction(changes, ctx.undefined);
  if (call.error) {
    call.error.dispose();
    return [];
  }
  const text = ctx.typeof(call.value) === "string" ? ctx.getString(call.value) : "[]";
  call.value.dispose();
  try {
    const parsed = ChangesSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.map((line) => line.slice(0, MAX_MESSAGE_CHARS)) : [];
  } catch {
    return [];
  }
}

/**
 * Gives the harness its two host functions and the constants it shares with the host
 * (HARNESS_CONSTANTS), under a global name it deletes before any draft code runs. `record` keeps
 * failed assertions, counts waiting `assert.rejects` and the test's assertions; `isPromise` asks
 * QuickJS itself whether a value is a genuine Promise (a Proxy or a look-alike is not).
 */
function installHost(
  ctx: QuickJSContext,
  record: HostRecord,
  mode: HarnessMode,
  links: Links,
  verdict: HostRecord,
): void {
  const text = (handle: QuickJSHandle | undefined, max: number): string =>
    handle !== undefined && ctx.typeof(handle) === "string" ? ctx.getString(handle).slice(0, max) : "";
  const host = ctx.newObject();
  const recordFn = ctx.newFunction("record", (op, message, stack) => {
    const code = op !== undefined && ctx.typeof(op) === "number" ? ctx.getNumber(op) : 0;
    if (code === RECORD.failed) {
      record.failure ??= { message: text(message, MAX_MESSAGE_CHARS), stack: text(stack, MAX_STACK_CHARS) };
    } else if (code === RECORD.waiting) {
      record.waiting += 1;
    } else if (code === RECORD.settled) {
      record.waiting -= 1;
    } else if (code === RECORD.counted) {
      record.assertions += 1;
    } else if (code === RECORD.expected && message !== undefined && ctx.typeof(message) === "number") {
      record.expected = ctx.getNumber(message);
    }
  });
  const isPromiseFn = ctx.newFunction("isPromise", (value) => {
    if (value === undefined) return ctx.false;
    const state = ctx.getPromiseState(value);
    if (state.type === "fulfilled" && state.notAPromise) return ctx.false;
    disposeState(state);
    return ctx.true;
  });
  ctx.setProp(host, "record", recordFn);
  ctx.setProp(host, "isPromise", isPromiseFn);
  const bridge = bridgeFunctions(ctx, mode, links, verdict);
  for (const [name, fn] of bridge) {
    ctx.setProp(host, name, fn);
    fn.dispose();
  }
  for (const [name, value] of [...Object.entries(HARNESS_CONSTANTS), ["mode", mode] as const]) {
    const number = ctx.newNumber(value);
    ctx.setProp(host, name, number);
    number.dispose();
  }
  ctx.setProp(ctx.global, HOST_SLOT, host);
  recordFn.dispose();
  isPromiseFn.dispose();
  host.dispose();
}

/**
 * The host's side of the crossing (the guest's is in sandbox-harness.guest.js): `call` runs a
 * function the other realm lent, `global` reads a global of the source's (tests' realm only),
 * `watch` follows a promise the other realm lent, `uncopyable` records a value that could not be
 * copied (the test then fails, whatever its code does with the TypeError it gets). Only strings,
 * numbers and booleans pass through here.
 */
function bridgeFunctions(
  ctx: QuickJSContext,
  mode: HarnessMode,
  links: Links,
  verdict: HostRecord,
): [string, QuickJSHandle][] {
  const self = (): Realm | undefined => (mode === MODE.tests ? links.tests : links.draft);
  const other = (): Realm | undefined => (mode === MODE.tests ? links.draft : links.tests);
  const lost = () => ({
    error: ctx.newError({ name: "InternalError", message: "the sandbox's other realm is gone" }),
  });
  const call = ctx.newFunction("call", (id, text, isNew) => {
    const target = other();
    if (!target || id === undefined || text === undefined) return lost();
    const answer = callTool(target, "invoke", (c) => [
      c.newNumber(ctx.getNumber(id)),
      c.newString(ctx.getString(text)),
      isNew !== undefined && ctx.dump(isNew) === true ? c.true : c.false,
    ]);
    return answer === undefined ? interrupted(ctx) : ctx.newString(answer);
  });
  const global = ctx.newFunction("global", (name) => {
    const target = other();
    if (!target || name === undefined) return lost();
    const answer = callTool(target, "lookup", (c) => [c.newString(ctx.getString(name))]);
    return answer === undefined ? interrupted(ctx) : ctx.newString(answer);
  });
  const watch = ctx.newFunction("watch", (id) => {
    const holder = other();
    const receiver = self();
    if (!holder || !receiver || id === undefined) return lost();
    const promiseId = ctx.getNumber(id);
    const number = holder.ctx.newNumber(promiseId);
    const fn = holder.ctx.getProp(holder.toolbox, "promiseOf");
    const got = holder.ctx.callFunction(fn, holder.ctx.undefined, number);
    fn.dispose();
    number.dispose();
    if (got.error) {
      got.error.dispose();
      return interrupted(ctx);
    }
    links.watched.push({ holder, receiver, id: promiseId, handle: got.value });
    return undefined;
  });
  const uncopyable = ctx.newFunction("uncopyable", (message) => {
    verdict.uncopyable ??=
      message !== undefined && ctx.typeof(message) === "string"
        ? ctx.getString(message).slice(0, MAX_MESSAGE_CHARS)
        : "a value cannot be copied between the source and the tests";
  });
  return [
    ["call", call],
    ["global", global],
    ["watch", watch],
    ["uncopyable", uncopyable],
  ];
}

/** What a realm's code gets when the other realm's work was cut short (the budget, memory): the guard says why. */
function interrupted(ctx: QuickJSContext) {
  return { error: ctx.newError({ name: "InternalError", message: "interrupted" }) };
}

/** Calls a function of a realm's toolbox; its answer (always text), or undefined when the call was cut short. */
function callTool(
  realm: Realm,
  name: string,
  args: (ctx: QuickJSContext) => QuickJSHandle[],
): string | undefined {
  const { ctx } = realm;
  const fn = ctx.getProp(realm.toolbox, name);
  const handles = args(ctx);
  try {
    const result = ctx.callFunction(fn, ctx.undefined, ...handles);
    if (result.error) {
      result.error.dispose();
      return undefined;
    }
    const text = ctx.typeof(result.value) === "string" ? ctx.getString(result.value) : undefined;
    const truth = ctx.typeof(result.value) === "boolean" ? String(ctx.dump(result.value)) : undefined;
    result.value.dispose();
    return text ?? truth;
  } finally {
    fn.dispose();
    for (const handle of handles)
      if (handle.alive && handle !== ctx.true && handle !== ctx.false) handle.dispose();
  }
}

/** Identifiers a test's code may take from the source (a superset: only the source's globals are bound). */
const IDENTIFIER = /[A-Za-z_$][A-Za-z0-9_$]*/g;
/** Names the tests' realm never takes from the source. */
const OWN_NAMES = new Set(["this", "super", "arguments", "eval", "new", "typeof", "globalThis", "undefined"]);
const MAX_BOUND_NAMES = 2000;

/**
 * Makes the source's globals that the test's code names readable in the tests' realm: each becomes
 * an accessor on the tests' global object that asks the draft's realm for a copy at every read.
 */
function bindSourceGlobals(session: Session, tests: Realm, code: string): void {
  const names = new Set<string>();
  for (const match of code.matchAll(IDENTIFIER)) {
    if (names.size >= MAX_BOUND_NAMES) break;
    if (!OWN_NAMES.has(match[0])) names.add(match[0]);
  }
  for (const name of names) {
    if (callTool(session.draft, "present", (c) => [c.newString(name)]) !== "true") continue;
    callTool(tests, "bind", (c) => [c.newString(name)]);
  }
}

/** Settles the copies of lent promises whose originals have settled; whether any was. */
function pump(links: Links): boolean {
  let progressed = false;
  for (const watched of [...links.watched]) {
    const { holder, receiver, handle, id } = watched;
    const state = holder.ctx.getPromiseState(handle);
    if (state.type === "pending") continue;
    links.watched.splice(links.watched.indexOf(watched), 1);
    progressed = true;
    const ok = state.type === "fulfilled";
    const value = state.type === "fulfilled" ? state.value : state.error;
    const text = callTool(holder, "settled", (c) => [ok ? c.true : c.false, value]);
    handle.dispose();
    if (text === undefined) continue;
    callTool(receiver, "settle", (c) => [c.newNumber(id), c.newString(text)]);
  }
  return progressed;
}

function failure(message: string, stack = ""): Step {
  return {
    ok: false,
    failure: { reason: "error", phase: "test", error: { name: "Error", message, stack, isError: true } },
  };
}

/**
 * Runs the sandbox's pending jobs until none is left or the budget runs out, then judges what the
 * test evaluated to: a genuine promise by its state as QuickJS holds it, anything else as done unless
 * it has a `then` (the host never calls a guest `then`); and a test that ran no assertion, or not the
 * number it declared, proves nothing. Consumes `value`.
 */
function settle(session: Session, value: QuickJSHandle): Step {
  const { rt, ctx, guard, record } = session;
  const first = ctx.getPromiseState(value);
  const isPromise = !(first.type === "fulfilled" && first.notAPromise);
  if (isPromise) disposeState(first);
  try {
    while (!guard.expired) {
      if (rt.hasPendingJob()) {
        const jobs = rt.executePendingJobs(JOB_BATCH);
        if (jobs.error) return failed(session, "test", jobs.error);
      } else if (!pump(session.links)) break;
    }
    if (guard.expired && guard.tripped === undefined) guard.tripped = "too_slow";
    if (guard.tripped) return classified(guard, "test", NO_ERROR_DESCRIBED);
    if (isPromise) {
      const state = ctx.getPromiseState(value);
      if (state.type === "rejected") return failed(session, "test", state.error);
      if (state.type === "pending")
        return failure("the test's promise never settled (the sandbox has no timers or I/O to wait for)");
      state.value.dispose();
    } else if (hasThen(session, value)) {
      return failure(
        "the test evaluated to a thenable that is not a Promise: the sandbox waits only for genuine promises and never calls a then",
      );
    }
    if (record.waiting > 0)
      return failure("the test ended while assert.rejects was still waiting for its promise to settle");
    return counted(record);
  } finally {
    value.dispose();
  }
}

/** The test's own assertions against what it declared: none at all proves nothing. */
function counted(record: HostRecord): Step {
  const ran = record.assertions;
  const runs = `${ran} assertion${ran === 1 ? "" : "s"}`;
  if (record.expected !== undefined && ran !== record.expected)
    return failure(`the test ran ${runs}, but declared assert.expect(${record.expected})`);
  if (record.expected === undefined && ran === 0)
    return failure(
      "the test ran no assertion: a callback it passed was never called, or a promise it chained never settled",
    );
  return { ok: true };
}

/** Whether a value the test evaluated to has a `then`; a getter that throws or hangs counts as one. */
function hasThen(session: Session, value: QuickJSHandle): boolean {
  const { ctx, guard, thenable } = session;
  const kind = ctx.typeof(value);
  if (kind !== "object" && kind !== "function") return false;
  guard.startReading();
  const call = ctx.callFunction(thenable, ctx.undefined, value);
  if (call.error) {
    call.error.dispose();
    return true;
  }
  const found = ctx.typeof(call.value) !== "boolean" || ctx.dump(call.value) !== false;
  call.value.dispose();
  return found;
}

/**
 * The verdict: a failed assertion the harness recorded fails the test whatever the test's code
 * went on to do, and is the failure reported (unless the test hit a limit, which says more).
 */
function judged(session: Session, step: Step): Step {
  const { uncopyable } = session.record;
  if (uncopyable !== undefined && (step.ok || step.failure.reason === "error")) {
    const error = { name: "UncopyableValue", message: uncopyable, stack: "", isError: true };
    const phase = step.ok ? "test" : step.failure.phase;
    return { ok: false, failure: { reason: "uncopyable", phase, error } };
  }
  const recorded = session.record.failure;
  if (recorded === undefined) return step;
  if (!step.ok && step.failure.reason !== "error") return step;
  const phase = step.ok ? "test" : step.failure.phase;
  const error = {
    name: "AssertionError",
    message: recorded.message,
    stack: stripHarnessFrames(recorded.stack),
    isError: true,
  };
  return { ok: false, failure: { reason: "error", phase, error } };
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

/** Reads a thrown value through the harness's `describe`, consuming the handle. */
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
      stack: stripHarnessFrames(described.stack),
      isError: true,
    };
  }
  return { name: "Uncaught", message: described.message, stack: "", isError: false };
}

function stripHarnessFrames(stack: string): string {
  return stack
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.includes(HARNESS_FILE))
    .join("\n");
}

// ---------------------------------------------------------------------------------------------
// The sandbox's thread: CPU time the operating system counts, and a watchdog outside it.

/** Where a suite resumes after its thread was stopped: the next test, the suite's CPU spent so far, the probe's findings. */
interface Resume {
  readonly index: number;
  readonly usedMicros: number;
  readonly builtinChanges?: readonly string[];
  /** The source's top-level code failed in an earlier turn: every test left fails the same way, unrun. */
  readonly sourceFailure?: TestFailure;
}

/** What the thread reports while a suite runs, so that a stopped thread loses nothing it finished. */
type SuiteEvent =
  | { readonly type: "probed"; readonly builtinChanges: string[] }
  | { readonly type: "outcome"; readonly outcome: TestOutcome };

type Reply =
  | SuiteEvent
  | { readonly type: "ready"; readonly tid: number }
  | { readonly type: "done"; readonly result: SuiteResult; readonly paused: boolean }
  | { readonly type: "failed"; readonly message: string };

interface Job {
  readonly source: string;
  readonly tests: readonly SandboxTest[];
  readonly limits: SandboxLimits;
  readonly resume: Resume;
}

/** Marks the thread's `workerData`: this module, loaded in such a thread, serves suites. */
const THREAD_FLAG = "redraftSandboxThread";
/**
 * How often the host looks at the thread's CPU time, in ms of wall-clock time: the waiting caller
 * (synchronous path) or a timer (asynchronous path; each look interrupts the thread briefly, which
 * measured no cost against the synchronous path on a heavy test at 5 or 20 ms).
 */
const WATCH_EVERY_MS = 5;
/**
 * CPU time past its budget a test's thread may run before the watchdog stops it. The thread stops
 * itself at the budget whenever QuickJS polls (every few thousand bytecodes); only a native call
 * that does not poll (a huge BigInt printed, `repeat`, a long `indexOf`) runs on until the watchdog sees it.
 */
const WATCHDOG_GRACE_MICROS = 50_000;
/** The longest a thread may take to load (module graph and engine) before it counts as broken. */
const THREAD_START_MS = 60_000;

/**
 * The memory a thread shares with its host: an Int32 signal at byte 0 (bumped at every reply), the
 * budget slots at bytes 8–31 (see `published`), an Int32 pause flag at byte 32 (the host asks the
 * thread to hand its turn over between two tests), and an Int32 at byte 36 that is 1 while a test's
 * session runs the source's top-level code (see `inSource`).
 */
const SHARED_BYTES = 40;
const PAUSE_OFFSET = 32;
const SOURCE_PHASE_OFFSET = 36;
/** Budget slots the thread publishes for the watchdog: [_, start of the test's CPU (µs), budget (µs; 0: none), sequence]. */
let published: BigInt64Array | undefined;
/** Whether the thread is running the source's top-level code, for a watchdog that stops it there. */
let inSource: Int32Array | undefined;

function publishSourcePhase(running: boolean): void {
  if (inSource) Atomics.store(inSource, 0, running ? 1 : 0);
}

function publishBudget(startMicros: number, budgetMicros: number): void {
  if (!published) return;
  // A sequence number around the pair: the watchdog never reads one test's start with another's budget.
  Atomics.add(published, 3, 1n);
  Atomics.store(published, 1, BigInt(Math.round(startMicros)));
  Atomics.store(published, 2, BigInt(Number.isFinite(budgetMicros) ? Math.round(budgetMicros) : 0));
  Atomics.add(published, 3, 1n);
}

/** This thread's CPU time in µs (user and system), as the kernel counts it. */
function threadCpuMicros(): number {
  const usage = process.threadCpuUsage();
  return usage.user + usage.system;
}

/** The CPU time of another thread of this process, in µs, from /proc; undefined where there is none. */
function cpuOfThread(tid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8");
    const ns = Number(text.split(" ")[0]);
    return Number.isFinite(ns) ? ns / 1000 : undefined;
  } catch {
    return undefined;
  }
}

function ownThreadId(): number {
  try {
    return Number(readlinkSync("/proc/thread-self").split("/").pop()) || 0;
  } catch {
    return 0;
  }
}

/**
 * Reads the CPU time of a sandbox's thread from outside it, in µs, for the watchdog; undefined when
 * it cannot be read. Injectable (QuickJSSandbox's options) so that a test can take /proc away.
 */
export interface ThreadClocks {
  /** By the thread's kernel id, from /proc; the synchronous path's only reader (it cannot await). */
  readonly proc: (tid: number) => number | undefined;
  /**
   * By the Worker, asynchronously: Node's `worker.cpuUsage()` (added in Node 24.6 and in the 22
   * line; 22.23.3, the release scripts/lambda-node.ts pins for Lambda, has it), portable where
   * /proc is not. Node answers it from the worker thread at its next interrupt check, which V8
   * makes in JavaScript and in WebAssembly (QuickJS and every built-in of the guest's run in
   * WebAssembly), so it is answered while a guest's native call runs; not inside one of V8's own
   * built-ins, which only the host's side of the harness calls, on text of bounded size.
   * Undefined where Node lacks it: the asynchronous path then reads /proc too.
   */
  readonly worker: ((worker: Worker) => Promise<number>) | undefined;
}

const DEFAULT_CLOCKS: ThreadClocks = {
  proc: cpuOfThread,
  worker:
    typeof (Worker.prototype as Partial<Worker>).cpuUsage === "function"
      ? async (worker) => {
          const usage = await worker.cpuUsage();
          return usage.user + usage.system;
        }
      : undefined,
};

/** What a suite's turn on a thread ended with: the thread's reply, or its stop by the watchdog. */
type TurnEnd =
  | Reply
  | {
      readonly type: "stopped";
      /**
       * The thread was stopped inside the test it had started last (the budget it published was
       * still the one the watchdog judged): that test ran past its budget. False when it had moved
       * on before the stop took effect: nothing ran over, and the next test simply runs again.
       */
      readonly midTest: boolean;
      /** The stopped test was running the source's top-level code, not yet the test's own. */
      readonly inSource: boolean;
    };

/**
 * One worker thread running an InThreadSandbox. Used either synchronously (`started`, `run`: the
 * caller's thread waits on it) or asynchronously (`startedAsync`, `runAsync`: the event loop goes on
 * while it runs), never both: each reads the thread's port its own way.
 */
class SandboxThread {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #signal: Int32Array;
  readonly #budget: BigInt64Array;
  readonly #pause: Int32Array;
  readonly #inSource: Int32Array;
  readonly #clocks: ThreadClocks;
  #tid = 0;
  /** Set once the watchdog terminated the thread: it is never used again. */
  dead = false;

  constructor(clocks: ThreadClocks) {
    this.#clocks = clocks;
    const shared = new SharedArrayBuffer(SHARED_BYTES);
    this.#signal = new Int32Array(shared, 0, 1);
    this.#budget = new BigInt64Array(shared, 0, 4);
    this.#pause = new Int32Array(shared, PAUSE_OFFSET, 1);
    this.#inSource = new Int32Array(shared, SOURCE_PHASE_OFFSET, 1);
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    const url = new URL(import.meta.url);
    // From the sources (vitest, tsx), the thread needs tsx to load TypeScript; dist/ and a bundle are JavaScript.
    const typescript = url.pathname.endsWith(".ts");
    const hasTsx = process.execArgv.some((arg) => arg.includes("tsx"));
    // By its path: `--import tsx` would be resolved from the working directory, which a caller may have changed.
    const tsx =
      typescript && !hasTsx ? pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href : "";
    this.#worker = new Worker(url, {
      workerData: { [THREAD_FLAG]: true, shared, port: port2 },
      transferList: [port2],
      execArgv: tsx ? [...process.execArgv, "--import", tsx] : process.execArgv,
      stdout: false,
      stderr: false,
      // The stack of a Lambda's or a CLI's main thread (~1 MB), where the engine ran before it had a thread.
      resourceLimits: { stackSizeMb: 1 },
    });
    // A thread that fails to load says so by not answering (started() reports it); unheard, its
    // error event would be an uncaught exception of the caller's process.
    this.#worker.on("error", () => {});
    this.#worker.unref();
    this.#port.unref();
  }

  /** Waits (synchronously) until the thread has loaded; at once when it has. */
  started(): this {
    if (this.#tid !== 0) return this;
    const reply = this.#await(() => undefined, THREAD_START_MS);
    if (reply?.type !== "ready") {
      void this.#worker.terminate();
      throw new SandboxSetupError(
        `the sandbox's thread did not start: ${reply?.type === "failed" ? reply.message : "it did not answer"}`,
      );
    }
    // Without /proc (not Linux) there is no watchdog: the thread's own polls still stop bytecode at the budget.
    this.#tid = reply.tid === 0 ? -1 : reply.tid;
    return this;
  }

  /**
   * Runs a suite (or its rest) in the thread, waiting synchronously; `stopped` when the watchdog
   * had to stop the thread (a test ran past its budget inside a native call). Events come as they arrive.
   */
  run(job: Job, onEvent: (event: SuiteEvent) => void): TurnEnd {
    this.#port.postMessage(job);
    const reply = this.#await(onEvent, Number.POSITIVE_INFINITY);
    // Never asked to pause, the thread is stopped inside the test it runs.
    return reply ?? { type: "stopped", midTest: true, inSource: Atomics.load(this.#inSource, 0) === 1 };
  }

  /** Waits for a final reply, watching the thread's CPU time; undefined when it was stopped (or timed out). */
  #await(onEvent: (event: SuiteEvent) => void, timeoutMs: number): Reply | undefined {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const seen = Atomics.load(this.#signal, 0);
      for (
        let message = receiveMessageOnPort(this.#port);
        message;
        message = receiveMessageOnPort(this.#port)
      ) {
        const reply = message.message as Reply;
        if (reply.type === "probed" || reply.type === "outcome") onEvent(reply);
        else return reply;
      }
      if (performance.now() > deadline) return undefined;
      Atomics.wait(this.#signal, 0, seen, WATCH_EVERY_MS);
      if (this.#overBudget()) {
        void this.#worker.terminate();
        // What the thread had finished before it was stopped is still in the port.
        for (
          let message = receiveMessageOnPort(this.#port);
          message;
          message = receiveMessageOnPort(this.#port)
        ) {
          const reply = message.message as Reply;
          if (reply.type === "probed" || reply.type === "outcome") onEvent(reply);
        }
        return undefined;
      }
    }
  }

  /** Asks the thread to end its turn after the test it runs (the first test of a turn always runs). */
  askToPause(): void {
    Atomics.store(this.#pause, 0, 1);
  }

  /** Waits until the thread has loaded, without holding the caller's thread. */
  async startedAsync(): Promise<this> {
    const reply = await new Promise<Reply | undefined>((resolve) => {
      const timer = setTimeout(() => done(undefined), THREAD_START_MS);
      const done = (value: Reply | undefined): void => {
        clearTimeout(timer);
        this.#port.off("message", done);
        this.#port.unref();
        resolve(value);
      };
      this.#port.on("message", done);
    });
    if (reply?.type !== "ready") {
      this.dead = true;
      void this.#worker.terminate();
      throw new SandboxSetupError(
        `the sandbox's thread did not start: ${reply?.type === "failed" ? reply.message : "it did not answer"}`,
      );
    }
    this.#tid = reply.tid === 0 ? -1 : reply.tid;
    return this;
  }

  /**
   * Runs a suite's turn (from `job.resume`, until the suite ends or the thread is asked to pause)
   * while the event loop goes on. The watchdog polls the thread's CPU time on a timer (`clocks.worker`,
   * else /proc) and terminates the thread when the published test runs past its budget.
   */
  runAsync(job: Job, onEvent: (event: SuiteEvent) => void): Promise<TurnEnd> {
    return new Promise<TurnEnd>((resolve) => {
      let finished = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (end: TurnEnd): void => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        this.#port.off("message", onMessage);
        this.#worker.off("exit", onExit);
        this.#port.unref();
        resolve(end);
      };
      // The watchdog is stopping the thread: its exit is expected, and the turn ends `stopped`.
      let stopping = false;
      // A thread that ends otherwise (disposed, or crashed) would leave the suite waiting.
      const onExit = (code: number): void => {
        if (stopping) return;
        this.dead = true;
        finish({ type: "failed", message: `the thread exited (code ${code}) while it ran a suite` });
      };
      const onMessage = (reply: Reply): void => {
        if (finished) return;
        if (reply.type === "probed" || reply.type === "outcome") onEvent(reply);
        else finish(reply);
      };
      const watch = async (): Promise<void> => {
        const judged = await this.#overBudgetAsync();
        if (finished) return;
        if (judged === undefined) {
          // The timer holds the event loop open while the suite runs (the worker and port are unref'd).
          timer = setTimeout(() => void watch(), WATCH_EVERY_MS);
          return;
        }
        this.dead = true;
        stopping = true;
        await this.#worker.terminate();
        if (finished) return;
        // What the thread had finished before it was stopped is still in the port.
        this.#port.off("message", onMessage);
        for (
          let message = receiveMessageOnPort(this.#port);
          message;
          message = receiveMessageOnPort(this.#port)
        ) {
          const reply = message.message as Reply;
          if (reply.type === "probed" || reply.type === "outcome") onEvent(reply);
          else if (reply.type === "done" || reply.type === "failed") return finish(reply);
        }
        finish({
          type: "stopped",
          midTest: Atomics.load(this.#budget, 3) === judged,
          inSource: Atomics.load(this.#inSource, 0) === 1,
        });
      };
      this.#port.on("message", onMessage);
      this.#worker.on("exit", onExit);
      this.#port.postMessage(job);
      timer = setTimeout(() => void watch(), WATCH_EVERY_MS);
    });
  }

  /** Clears a pause asked for during the turn that just ended. */
  clearPause(): void {
    Atomics.store(this.#pause, 0, 0);
  }

  /**
   * The sequence number of the published budget when the thread's CPU time is past it (with the
   * grace), else undefined. The sequence tells the caller whether the same test was still running
   * when the thread was stopped.
   */
  async #overBudgetAsync(): Promise<bigint | undefined> {
    const clocks = this.#clocks;
    const before = Atomics.load(this.#budget, 3);
    const start = Number(Atomics.load(this.#budget, 1));
    const budget = Number(Atomics.load(this.#budget, 2));
    if (before % 2n === 1n || budget <= 0) return undefined;
    let now: number | undefined;
    if (clocks.worker) now = await clocks.worker(this.#worker).catch(() => undefined);
    else if (this.#tid > 0) now = clocks.proc(this.#tid);
    if (now === undefined) return undefined;
    const over = now - start > budget + WATCHDOG_GRACE_MICROS && Atomics.load(this.#budget, 3) === before;
    return over ? before : undefined;
  }

  #overBudget(): boolean {
    if (this.#tid <= 0) return false;
    const before = Atomics.load(this.#budget, 3);
    const start = Number(Atomics.load(this.#budget, 1));
    const budget = Number(Atomics.load(this.#budget, 2));
    // Odd: the thread is writing a new pair; changed: it wrote one meanwhile. Either way, look next time.
    if (before % 2n === 1n || Atomics.load(this.#budget, 3) !== before || budget <= 0) return false;
    const now = this.#clocks.proc(this.#tid);
    if (now === undefined) return false;
    return now - start > budget + WATCHDOG_GRACE_MICROS && Atomics.load(this.#budget, 3) === before;
  }

  dispose(): void {
    this.dead = true;
    void this.#worker.terminate();
  }
}

/** The outcome of a test whose thread the watchdog stopped inside one call of a built-in. */
function stoppedOutcome(
  test: SandboxTest,
  limits: SandboxLimits,
  usedMicros: number,
  phase: TestFailure["phase"],
): TestOutcome {
  const suiteBudget =
    limits.suiteTimeoutMs === undefined ? Number.POSITIVE_INFINITY : ticksOf(limits.suiteTimeoutMs);
  const remaining = suiteBudget - usedMicros;
  const cutBySuite = remaining < ticksOf(limits.timeoutMs);
  const budget = cutBySuite ? remaining : ticksOf(limits.timeoutMs);
  const reason: FailureReason = cutBySuite ? "suite_too_slow" : "too_slow";
  const what = phase === "source" ? "the source's top-level code" : "the test";
  const message = `${what} ran past its budget of ${Math.round(budget / TICKS_PER_MS)} ms of CPU time inside one call of a built-in, and its thread was stopped`;
  return {
    name: test.name,
    passed: false,
    durationMs: 0,
    cpuMs: Math.round(budget / 10) / 100,
    failure: { reason, phase, error: { name: "InternalError", message, stack: "", isError: true } },
  };
}

/**
 * A suite's progress over the turns and threads it takes: the outcomes so far, the probe's findings,
 * the CPU spent; the same for the synchronous and the asynchronous path, so both reach the same result.
 */
class SuiteRun {
  readonly outcomes: TestOutcome[] = [];
  builtinChanges: string[] | undefined;
  usedMicros = 0;
  /** As the thread keeps it (InThreadSandbox.runSuite): the source failed, so the tests left do too. */
  sourceFailure: TestFailure | undefined;

  readonly source: string;
  readonly tests: readonly SandboxTest[];
  readonly limits: SandboxLimits;

  constructor(source: string, tests: readonly SandboxTest[], limits: SandboxLimits) {
    this.source = source;
    this.tests = tests;
    this.limits = limits;
  }

  readonly onEvent = (event: SuiteEvent): void => {
    if (event.type === "probed") this.builtinChanges = event.builtinChanges;
    else {
      this.outcomes.push(event.outcome);
      this.usedMicros += event.outcome.cpuMs * TICKS_PER_MS;
      const { failure } = event.outcome;
      // A source cut short by the suite's budget did not fail: the tests after it are simply not run.
      if (failure?.phase === "source" && failure.reason !== "suite_too_slow") this.sourceFailure ??= failure;
    }
  };

  /** The next turn's job: from the first test without an outcome. */
  job(): Job {
    const { outcomes, usedMicros, builtinChanges, sourceFailure } = this;
    const resume: Resume = {
      index: outcomes.length,
      usedMicros,
      ...(builtinChanges && { builtinChanges }),
      ...(sourceFailure && { sourceFailure }),
    };
    return { source: this.source, tests: this.tests, limits: this.limits, resume };
  }

  /** The suite's result once a turn ended, or undefined when another turn must run. */
  after(end: TurnEnd): SuiteResult | undefined {
    if (end.type === "done") {
      if (end.paused) return undefined;
      if (end.result.kind === "syntax_error") return end.result;
      return { kind: "ran", outcomes: [...this.outcomes], builtinChanges: end.result.builtinChanges };
    }
    if (end.type === "failed") throw new SandboxSetupError(`the sandbox's thread failed: ${end.message}`);
    if (end.type !== "stopped") return undefined;
    if (!this.builtinChanges) {
      // The probe itself ran past its budget in a native call: it finds nothing; the tests will say the rest.
      this.builtinChanges = [];
      return undefined;
    }
    // Stopped after the test it had started last ended: that one is run again from the start.
    if (!end.midTest) return undefined;
    const test = this.tests[this.outcomes.length];
    if (!test) return { kind: "ran", outcomes: [...this.outcomes], builtinChanges: this.builtinChanges };
    const phase = end.inSource ? "source" : "test";
    this.onEvent({ type: "outcome", outcome: stoppedOutcome(test, this.limits, this.usedMicros, phase) });
    return undefined;
  }
}

/** At most this many threads run suites asynchronously, whatever the machine's parallelism. */
const MAX_POOL_THREADS = 4;

/**
 * The threads that run suites asynchronously, shared by every suite of a QuickJSSandbox and fair
 * between them: a suite takes a thread for a turn; when a suite waits for one, every busy thread is
 * asked to end its turn after its current test, and turns are given in the order they were asked
 * for. So a suite whose tests are slow delays another by about one test's budget, never by its whole
 * suite. Threads start when there is demand, up to the bound.
 */
class ThreadPool {
  readonly #size: number;
  readonly #clocks: ThreadClocks;
  readonly #idle: SandboxThread[] = [];
  readonly #busy = new Set<SandboxThread>();
  #starting = 0;
  #spare: SandboxThread | undefined;
  #spareLoading = false;
  #disposed = false;
  readonly #waiting: { resolve: (thread: SandboxThread) => void; reject: (error: unknown) => void }[] = [];

  constructor(size: number, clocks: ThreadClocks) {
    this.#size = size;
    this.#clocks = clocks;
  }

  /** A thread for one turn: an idle one, a new one while under the bound, else the next one freed. */
  async acquire(): Promise<SandboxThread> {
    if (this.#disposed) throw new SandboxSetupError("the QuickJS sandbox was disposed");
    const idle = this.#idle.pop();
    if (idle) {
      this.#busy.add(idle);
      return idle;
    }
    if (this.#busy.size + this.#starting < this.#size) return this.#start();
    for (const thread of this.#busy) thread.askToPause();
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  /** Gives a thread back after a turn: to the suite that waited longest, else to the idle ones. */
  release(thread: SandboxThread): void {
    this.#busy.delete(thread);
    if (this.#disposed) {
      thread.dispose();
      return;
    }
    thread.clearPause();
    const next = this.#waiting.shift();
    if (thread.dead) {
      // Stopped by the watchdog: the spare takes its place at once when it has loaded (and a new
      // spare starts loading); else a new thread does, for whoever waits or for the idle ones, so
      // that the next suite does not wait for a thread to load.
      const spare = this.#spare;
      this.#spare = undefined;
      this.#refillSpare();
      if (spare && next) {
        this.#busy.add(spare);
        next.resolve(spare);
      } else if (spare) this.#idle.push(spare);
      else if (next) this.#start().then(next.resolve, next.reject);
      else
        this.#start().then(
          (fresh) => this.release(fresh),
          () => {},
        );
      return;
    }
    if (next) {
      this.#busy.add(thread);
      next.resolve(thread);
    } else this.#idle.push(thread);
  }

  /** Terminates every thread; a suite still running fails with SandboxSetupError (its thread exited). */
  dispose(): void {
    this.#disposed = true;
    for (const { reject } of this.#waiting.splice(0))
      reject(new SandboxSetupError("the QuickJS sandbox was disposed while a suite waited for a thread"));
    for (const thread of [...this.#idle, ...this.#busy]) thread.dispose();
    this.#spare?.dispose();
    this.#spare = undefined;
    this.#idle.length = 0;
  }

  /**
   * Loads a spare thread in the background, from the first thread the watchdog stopped on: a draft
   * whose tests keep running past their budget in native calls would otherwise make the suites
   * beside it wait for a thread to load after each stop. Not counted against the bound.
   */
  #refillSpare(): void {
    if (this.#spare || this.#spareLoading) return;
    this.#spareLoading = true;
    new SandboxThread(this.#clocks)
      .startedAsync()
      .then(
        (thread) => {
          if (this.#disposed) thread.dispose();
          else this.#spare = thread;
        },
        () => {},
      )
      .finally(() => {
        this.#spareLoading = false;
      });
  }

  /** Starts one thread for the pool (counted against the bound while it loads). */
  async #start(): Promise<SandboxThread> {
    this.#starting += 1;
    try {
      const thread = await new SandboxThread(this.#clocks).startedAsync();
      if (this.#disposed) {
        thread.dispose();
        throw new SandboxSetupError("the QuickJS sandbox was disposed");
      }
      this.#busy.add(thread);
      return thread;
    } finally {
      this.#starting -= 1;
    }
  }
}

/** How a QuickJSSandbox reads its threads' CPU time and how many threads it runs suites on. */
export interface SandboxOptions {
  /** The watchdog's readers (tests inject them); Node's and /proc by default. */
  readonly clocks?: Partial<ThreadClocks>;
  /** Threads for `runSuiteAsync`; by default the machine's parallelism, at most MAX_POOL_THREADS. */
  readonly threads?: number;
}

/**
 * Runs JavaScript sources and their tests in QuickJS, in worker threads of its own. Each test's
 * budget is CPU time: the thread stops a test itself at the budget whenever QuickJS polls, and a
 * test that runs past it inside a native call, where QuickJS never polls, is stopped from outside:
 * the thread is terminated, the test fails `too_slow`, and a new thread runs the tests after it.
 *
 * Two ways to run a suite, with the same result:
 * - `runSuiteAsync`: the event loop goes on while the suite runs, on a pool of threads shared fairly
 *   between suites (ThreadPool); the watchdog polls the thread's CPU time on a timer with Node's
 *   `worker.cpuUsage()` (portable), /proc where Node lacks it. What a validation inside a deferral
 *   uses (code.ts), so a draft with a slow suite delays only itself.
 * - `runSuite`: synchronous, for callers that cannot wait (inspectWithPack): the calling thread waits
 *   on a thread of its own, started at the first call, and meanwhile reads its CPU time from /proc
 *   (not Linux: no outside stop; the thread's own polls still stop bytecode at the budget).
 */
export class QuickJSSandbox {
  readonly #clocks: ThreadClocks;
  readonly #pool: ThreadPool;
  #thread: SandboxThread | undefined;
  /** A thread loading in the background, to take over at once when the watchdog stops the current one. */
  #spare: SandboxThread | undefined;
  #ready = false;
  #syncStarted = false;

  constructor(options: SandboxOptions = {}) {
    this.#clocks = { ...DEFAULT_CLOCKS, ...options.clocks };
    const threads = options.threads ?? Math.min(availableParallelism(), MAX_POOL_THREADS);
    this.#pool = new ThreadPool(Math.max(1, threads), this.#clocks);
  }

  /** Starts one thread of the pool (and its engines). Cheap once done. */
  async ready(): Promise<void> {
    if (this.#ready) return;
    this.#pool.release(await this.#pool.acquire());
    this.#ready = true;
  }

  /** Terminates the sandbox's threads (a test's sandbox, once it is done with it). */
  dispose(): void {
    this.#pool.dispose();
    this.#thread?.dispose();
    this.#spare?.dispose();
    this.#thread = undefined;
    this.#spare = undefined;
  }

  /**
   * The synchronous path's next thread. The first starts alone (most callers never have a thread
   * stopped); from the first stop on, a spare loads in the background to take over the next one.
   */
  #next(): SandboxThread {
    const next = (this.#spare ?? new SandboxThread(this.#clocks)).started();
    this.#spare = this.#syncStarted ? new SandboxThread(this.#clocks) : undefined;
    this.#syncStarted = true;
    return next;
  }

  /** Whether `runSuite` and `runSuiteAsync` can run now. */
  get isReady(): boolean {
    return this.#ready;
  }

  /**
   * Compiles `source`, probes what its top-level code changes in the built-ins, then runs each test
   * in a fresh, locked context after the source. Never throws for anything the code does; throws
   * `SandboxSetupError` when `ready()` was not awaited or the sandbox could not be set up.
   */
  runSuite(source: string, tests: readonly SandboxTest[], limits: SandboxLimits): SuiteResult {
    if (!this.#ready) {
      throw new SandboxSetupError("the QuickJS sandbox is not loaded: await ready() before running tests");
    }
    const run = new SuiteRun(source, tests, limits);
    for (;;) {
      this.#thread ??= this.#next();
      const end = this.#thread.run(run.job(), run.onEvent);
      if (end.type === "stopped") this.#thread = undefined;
      const result = run.after(end);
      if (result) return result;
    }
  }

  /**
   * runSuite without holding the caller's thread: the suite runs in turns on the pool's threads
   * (see ThreadPool), and the promise settles with the same result runSuite gives.
   */
  async runSuiteAsync(
    source: string,
    tests: readonly SandboxTest[],
    limits: SandboxLimits,
  ): Promise<SuiteResult> {
    if (!this.#ready) {
      throw new SandboxSetupError("the QuickJS sandbox is not loaded: await ready() before running tests");
    }
    const run = new SuiteRun(source, tests, limits);
    for (;;) {
      const thread = await this.#pool.acquire();
      let end: TurnEnd;
      try {
        end = await thread.runAsync(run.job(), run.onEvent);
      } finally {
        this.#pool.release(thread);
      }
      const result = run.after(end);
      if (result) return result;
    }
  }
}

/** In the sandbox's own thread: load the engines, then run each suite the host sends. */
async function serveThread(data: { shared: SharedArrayBuffer; port: MessagePort }): Promise<void> {
  const signal = new Int32Array(data.shared, 0, 1);
  published = new BigInt64Array(data.shared, 0, 4);
  inSource = new Int32Array(data.shared, SOURCE_PHASE_OFFSET, 1);
  const pause = new Int32Array(data.shared, PAUSE_OFFSET, 1);
  const shouldPause = (): boolean => Atomics.load(pause, 0) === 1;
  const { port } = data;
  const send = (reply: Reply): void => {
    port.postMessage(reply);
    Atomics.add(signal, 0, 1);
    Atomics.notify(signal, 0);
  };
  const sandbox = new InThreadSandbox();
  try {
    await sandbox.ready();
  } catch (error) {
    send({ type: "failed", message: hostErrorText(error) });
    return;
  }
  port.on("message", (job: Job) => {
    void (async () => {
      try {
        await sandbox.ready();
        const result = sandbox.runSuite(job.source, job.tests, job.limits, job.resume, send, shouldPause);
        // Paused: the turn ended before the suite did, and the host gives the rest another turn.
        const paused = result.kind === "ran" && job.resume.index + result.outcomes.length < job.tests.length;
        send({ type: "done", result, paused });
      } catch (error) {
        send({ type: "failed", message: hostErrorText(error) });
      }
    })();
  });
  send({ type: "ready", tid: ownThreadId() });
}

if (!isMainThread && (workerData as Record<string, unknown> | null)?.[THREAD_FLAG] === true) {
  void serveThread(workerData as { shared: SharedArrayBuffer; port: MessagePort });
}
