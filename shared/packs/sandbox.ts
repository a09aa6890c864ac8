/**
 * The QuickJS sandbox the code pack runs drafts' tests in.
 *
 * Every test gets a fresh QuickJS runtime and context, disposed afterwards, so no test can change
 * another's verdict. `assert` and a no-op `console` are JavaScript evaluated inside it before the
 * source (the harness, sandbox-harness.guest.js); the only host functions are the two the harness captures
 * and hides before any draft code runs (one records failed assertions, one tells a genuine Promise
 * apart), so there is no `require`, `process`, `fs`, network or timer to reach.
 *
 * The host decides each verdict from what it observes itself: the test's completion or thrown value
 * (`evalCode`), the state of a promise it evaluated to (`getPromiseState`, never a guest `then`), and
 * the failed assertions the harness recorded with it. A failed assertion fails the test even when the
 * code under test catches the AssertionError; a test that evaluates to a thenable that is no Promise
 * fails, and so does one that ends with an `assert.rejects` still waiting. Limits are per test: a deadline checked by QuickJS's interrupt handler,
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
import * as z from "zod";
import {
  HARNESS_CONSTANTS,
  HARNESS_FILE,
  HOST_SLOT,
  harnessSource,
  MAX_MESSAGE_CHARS,
  MAX_STACK_CHARS,
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
/** Getters on a thrown value run while it is read: they get this budget, not the test's. */
const READ_BUDGET_MS = 100;
/** Promise jobs run in batches so that the deadline is checked between them. */
const JOB_BATCH = 256;
/**
 * A test is started only with at least this much of the suite's time left; with less, it is reported
 * as not run (loading the assert harness alone needs a few milliseconds).
 */
const MIN_TEST_SLICE_MS = 10;

const SOURCE_FILE = "source.js";
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
interface ThrownError {
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
type FailureReason =
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
  // The variant's type names WebAssembly.Memory, which only the DOM lib declares fully. `printErr`
  // (an Emscripten Module option the typings leave out): when a test takes the engine down, Emscripten
  // writes "Aborted(…)" to stderr and then throws the same text as a RuntimeError, which the sandbox
  // catches and reports as that test's failure; the stderr copy is only noise in a host's logs.
  const options = { wasmMemory: memory } as Parameters<typeof newVariant>[1];
  options.emscriptenModule = { printErr: () => {} } as NonNullable<typeof options.emscriptenModule>;
  const module = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, options));
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

/** What the harness reported to the host during one test; the draft's code cannot reach it. */
interface HostRecord {
  /** The first failed assertion, even if the code under test caught its error. */
  failure?: { readonly message: string; readonly stack: string };
  /** `assert.rejects` calls still waiting for their promise. */
  waiting: number;
}

interface Session {
  readonly rt: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  /** The harness's toolbox: `describe` reads a thrown value as JSON text, `thenable` looks for a `then`. */
  readonly describe: QuickJSHandle;
  readonly thenable: QuickJSHandle;
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
          if (loaded.error) return judged(session, failed(session, "source", loaded.error));
          loaded.value.dispose();
          phase = "test";
          // A block, so the test's own let/const cannot collide with the source's; the newline ends a trailing comment.
          const ran = ctx.evalCode(`{${test.code}\n}`, `tests/${index}.js`, GLOBAL_SCRIPT);
          return judged(session, ran.error ? failed(session, "test", ran.error) : settle(session, ran.value));
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
   * A host exception out of the WASM marks the engine broken: its state is then unknown, so nothing
   * of it is disposed or reused.
   */
  #session<T>(
    engine: Engine,
    limits: SandboxLimits,
    body: (session: Session) => T,
    onCrash: (error: unknown) => T,
  ): T {
    // Outside the try: a harness file that cannot be read is a broken install, not a broken engine.
    const harnessText = harnessSource();
    let rt: QuickJSRuntime | undefined;
    let ctx: QuickJSContext | undefined;
    let describe: QuickJSHandle | undefined;
    let thenable: QuickJSHandle | undefined;
    try {
      const guard = new Guard(engine.memory, limits);
      rt = engine.module.newRuntime();
      rt.setMemoryLimit(limits.memoryLimitBytes);
      rt.setMaxStackSize(limits.maxStackBytes);
      rt.setInterruptHandler(guard.interrupt);
      ctx = rt.newContext();
      const record: HostRecord = { waiting: 0 };
      installHost(ctx, record);
      const harness = ctx.evalCode(harnessText, HARNESS_FILE, GLOBAL_SCRIPT);
      if (harness.error) {
        harness.error.dispose();
        throw new Error("the sandbox harness failed to load (limits too low?)");
      }
      // The toolbox is a frozen object without a prototype, made before any draft code ran: no getter runs here.
      describe = ctx.getProp(harness.value, "describe");
      thenable = ctx.getProp(harness.value, "thenable");
      harness.value.dispose();
      return body({ rt, ctx, describe, thenable, record, guard });
    } catch (error) {
      engine.broken = hostErrorText(error);
      return onCrash(error);
    } finally {
      if (engine.broken === undefined) {
        try {
          describe?.dispose();
          thenable?.dispose();
          ctx?.dispose();
          rt?.dispose();
        } catch (error) {
          engine.broken = `disposing a runtime failed: ${hostErrorText(error)}`;
        }
      }
    }
  }
}

/**
 * Gives the harness its two host functions and the constants it shares with the host
 * (HARNESS_CONSTANTS), under a global name it deletes before any draft code runs. `record` keeps failed assertions and counts waiting `assert.rejects`; `isPromise` asks
 * QuickJS itself whether a value is a genuine Promise (a Proxy or a look-alike is not).
 */
function installHost(ctx: QuickJSContext, record: HostRecord): void {
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
  for (const [name, value] of Object.entries(HARNESS_CONSTANTS)) {
    const number = ctx.newNumber(value);
    ctx.setProp(host, name, number);
    number.dispose();
  }
  ctx.setProp(ctx.global, HOST_SLOT, host);
  recordFn.dispose();
  isPromiseFn.dispose();
  host.dispose();
}

function failure(message: string, stack = ""): Step {
  return {
    ok: false,
    failure: { reason: "error", phase: "test", error: { name: "Error", message, stack, isError: true } },
  };
}

/**
 * Runs the sandbox's pending jobs until none is left or time runs out, then judges what the test
 * evaluated to: a genuine promise by its state as QuickJS holds it, anything else as done unless it
 * has a `then` (the host never calls a guest `then`). Consumes `value`.
 */
function settle(session: Session, value: QuickJSHandle): Step {
  const { rt, ctx, guard, record } = session;
  const first = ctx.getPromiseState(value);
  const isPromise = !(first.type === "fulfilled" && first.notAPromise);
  if (isPromise) disposeState(first);
  try {
    while (rt.hasPendingJob() && !guard.expired) {
      const jobs = rt.executePendingJobs(JOB_BATCH);
      if (jobs.error) return failed(session, "test", jobs.error);
    }
    if (guard.expired && guard.tripped === undefined) guard.tripped = "timeout";
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
    return { ok: true };
  } finally {
    value.dispose();
  }
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
