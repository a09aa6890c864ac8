/**
 * Patterns RE2 cannot read (lookarounds, back-references) run on ECMAScript's backtracking RegExp, which
 * nothing can interrupt: the static check (regex-safety.ts) is their fast first filter and misses some
 * (`^(?=a)(\w|\d)+$`). So they are never matched on the validating thread: each test goes to a worker
 * thread, the validating thread waits for the answer at most PATTERN_BUDGET_MS, and a worker still
 * matching by then is terminated and the draft rejected (`invalid_schema`, `too_slow`). The wait is
 * synchronous (Atomics.wait on a shared flag, the answer read with receiveMessageOnPort) because
 * validation is: one hostile draft holds the others for at most the budget, never for ever. Inside a
 * deferral (shared/deferred.ts: how the validate and revalidate steps check a draft) the test is not
 * waited for in place: it is noted, answered by a worker of a pool while the thread goes on with other
 * drafts, and the draft is checked again with the answer; a hostile draft then holds nothing but
 * itself. The pool (below) grows with demand up to a bound, keeps a core free of slow tests, takes the
 * drafts in turns, and decides by the CPU time each worker's thread used (issue 34): many hostile
 * drafts slow the benign ones by a bounded factor, and verdicts are the same idle and loaded.
 *
 * In place, the budget is wall time, so it is set far above any benign match (microseconds; a thousand
 * times that on a machine under heavy load is still a millisecond), and the worker's start-up is not
 * counted. In the pool, it is the worker thread's CPU time where the kernel tells it (/proc on Linux).
 */
import { readFileSync } from "node:fs";
import { availableParallelism, setPriority } from "node:os";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { activeDeferral, type DeferralLedger } from "../../deferred.js";
import { InvalidSchemaError } from "../../errors.js";
import { parkingSlot } from "../../slot.js";

/** The word a rejection's message starts with when a schema took too long to check a draft. */
export const TOO_SLOW = "too_slow";

/** How long one pattern test may run in the worker before it is stopped. */
const PATTERN_BUDGET_MS = 500;
/** How long the worker may take to start: not part of any draft's budget (a loaded machine is slow to spawn). */
const START_TIMEOUT_MS = 30_000;

/** A schema whose pattern did not finish within the budget on a draft's string: the run is rejected. */
export class SchemaTooSlowError extends InvalidSchemaError {
  readonly detail = TOO_SLOW;
  constructor(pattern: string, characters: number, budgetMs: number, message?: string) {
    super(
      message ??
        `${TOO_SLOW}: the pattern ${JSON.stringify(pattern)} did not finish matching a string of ${characters} characters within ${budgetMs} ms and was stopped (a backtracking pattern RE2 cannot read: write it without lookarounds or back-references, or so that each character has one way to match)`,
    );
  }
}

/**
 * The worker's whole program, run from its source text (a function here, so that it is linted, typed
 * and bundled with the rest; it uses nothing from this module's scope). It compiles each pattern once,
 * answers each test on the port, then raises the shared flag.
 */
function guest(): void {
  const { workerData } = require("node:worker_threads") as typeof import("node:worker_threads");
  const { port, flag, announce } = workerData as {
    port: MessagePort;
    flag: SharedArrayBuffer;
    announce: boolean;
  };
  const state = new Int32Array(flag);
  const compiled = new Map<string, RegExp>();
  // No named inner functions: the bundler would wrap them in a helper this source text does not carry.
  const perThread = typeof process.threadCpuUsage === "function";
  port.on("message", (m: { source: string; flags: string; text: string }) => {
    let reply: { matched: boolean; ms: number } | { error: string };
    try {
      const key = `${m.flags}/${m.source}`;
      let re = compiled.get(key);
      if (re === undefined) {
        if (compiled.size >= 1000) compiled.clear();
        re = new RegExp(m.source, m.flags);
        compiled.set(key, re);
      }
      re.lastIndex = 0;
      const wall = performance.now();
      const cpu = perThread ? process.threadCpuUsage() : undefined;
      const matched = re.test(m.text);
      const used = cpu ? process.threadCpuUsage(cpu) : undefined;
      // The match's own time, which the pool charges to the draft (not the wait for the message, nor
      // the time the thread waited for a core: CPU time where the platform counts it per thread).
      reply = { matched, ms: used ? (used.user + used.system) / 1000 : performance.now() - wall };
    } catch (error) {
      reply = { error: String(error) };
    }
    port.postMessage(reply);
    Atomics.store(state, 0, 1);
    Atomics.notify(state, 0);
  });
  if (announce) {
    // This thread's id, whose CPU time the pool reads from /proc (0 where there is none).
    let tid = 0;
    try {
      tid = Number(require("node:fs").readlinkSync("/proc/thread-self").split("/").pop()) || 0;
    } catch {
      tid = 0;
    }
    port.postMessage({ ready: true, tid });
  }
  Atomics.store(state, 0, 1);
  Atomics.notify(state, 0);
}

interface Guard {
  readonly worker: Worker;
  readonly port: MessagePort;
  readonly state: Int32Array;
  /** The worker's thread id, whose CPU time the pool reads (pool workers on Linux; else 0). */
  tid?: number;
  /** Whether its thread was lowered to SLOW_NICE (a slow-lane worker from then on). */
  niced?: boolean;
}

let guard: Guard | undefined;
let started = 0;

/** How many guard workers were started so far (one, plus one after each that was stopped): tests. */
export function guardWorkersStarted(): number {
  return started;
}

/** A guard worker, started: announcing itself on its port (for the pool) or only by the flag. */
function spawnGuard(announce: boolean): Guard {
  const flag = new SharedArrayBuffer(4);
  const state = new Int32Array(flag);
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(`(${guest.toString()})()`, {
    eval: true,
    workerData: { port: port2, flag, announce },
    transferList: [port2],
  });
  // Neither keeps a process alive that has nothing else to do.
  worker.unref();
  port1.unref();
  started += 1;
  return { worker, port: port1, state };
}

function startGuard(): Guard {
  const fresh = spawnGuard(false);
  if (Atomics.wait(fresh.state, 0, 0, START_TIMEOUT_MS) === "timed-out") {
    void fresh.worker.terminate();
    throw new Error(`the pattern worker did not start within ${START_TIMEOUT_MS} ms`);
  }
  return fresh;
}

/** What a worker's reply says: whether the pattern matched, or why it could not be run. */
function matchedOf(reply: unknown, pattern: string): boolean {
  const answer = reply as { matched: boolean } | { error: string } | undefined;
  if (answer === undefined) throw new Error("the pattern worker answered nothing");
  if ("error" in answer)
    throw new InvalidSchemaError(`the pattern ${JSON.stringify(pattern)} failed: ${answer.error}`);
  return answer.matched;
}

/**
 * Whether `pattern` (ECMAScript syntax, `flags` as Ajv passes them) matches somewhere in `text`, found by
 * the worker within PATTERN_BUDGET_MS; throws SchemaTooSlowError otherwise (the worker is then
 * terminated and the next test starts a fresh one). Inside a deferral, the test is noted and answered
 * off the thread, and this answers `true` for the round (which the deferral throws away).
 */
export function guardedTest(
  pattern: string,
  flags: string,
  text: string,
  budgetMs = PATTERN_BUDGET_MS,
): boolean {
  const deferral = activeDeferral();
  if (deferral)
    return deferral.answer(
      `${flags}/${pattern}/${budgetMs}\u0000${text}`,
      () => guardedTestOffThread({ pattern, flags, text, budgetMs, ledger: deferral.ledger }),
      true,
    );
  guard ??= startGuard();
  const { worker, port, state } = guard;
  Atomics.store(state, 0, 0);
  port.postMessage({ source: pattern, flags, text });
  if (Atomics.wait(state, 0, 0, budgetMs) === "timed-out") {
    guard = undefined;
    void worker.terminate();
    throw new SchemaTooSlowError(pattern, text.length, budgetMs);
  }
  return matchedOf(receiveMessageOnPort(port)?.message, pattern);
}

// ---- off the thread: the pool that answers a deferral's tests -----------------------------------

/**
 * Tests answered for deferrals (one draft's check each) go to a pool of workers in two lanes, so that
 * many hostile drafts cannot hold the benign ones:
 * - the quick lane: a draft's tests start here, the drafts taking turns (round-robin by draft), so a
 *   draft with hundreds of patterns delays each other draft by one test at a time. It grows with
 *   demand: a test waiting while every quick worker is busy starts another, up to MAX_QUICK (from the
 *   machine's cores); a worker idle for IDLE_RETIRE_MS beyond the MIN_IDLE kept is retired.
 * - the slow lane: a test still running after QUICK_MS is moved there, in its worker when a slow place
 *   is free, else stopped and queued to run again from its start with its whole budget; the draft is
 *   then a suspect, and its further tests go straight to the slow lane, so a hostile draft costs the
 *   quick lane QUICK_MS once, not once per test. At most MAX_SLOW tests run there at once (the cores
 *   but one: the event loop and the quick lane keep a core, on a 2-core machine too), the drafts taking
 *   turns: a crowd of hostile patterns costs the machine at most that many busy workers.
 * Each test keeps its budget (PATTERN_BUDGET_MS), and each draft has one for all its tests together
 * (DRAFT_PATTERN_BUDGET_MS): past either, the draft is rejected too_slow, alone, and a draft past its
 * budget has no further test run. Both are charged with the match's own time as the worker measured
 * it, not the time a test waited for its turn (a quick try stopped to run again from its start is not
 * charged: the run again is), so the verdict does not depend on the lane or on the machine's load: a
 * slow test that finishes within its budget answers as it would in place.
 * While a draft's test waits for or runs in the slow lane, the draft gives up the place it holds among
 * the caller's drafts in flight (shared/slot.ts: `redraft run --concurrency`), so hostile drafts parked
 * there do not keep the benign ones from starting.
 */
const CORES = availableParallelism();
/** Quick workers kept when idle, and the lane's size before it grows. */
const MIN_IDLE = 2;
/**
 * The quick lane's bound: a quick test takes microseconds, so a quick worker mostly waits; more of them
 * than cores only helps while some are held by a first test's QUICK_MS, hence twice the cores, 4 to 8.
 */
const MAX_QUICK = Math.min(8, Math.max(4, 2 * CORES));
/** The slow lane's bound: every core but one, 1 to 8 (a slow test keeps its core busy for its budget). */
const MAX_SLOW = Math.min(8, Math.max(1, CORES - 1));
/** How long a worker beyond MIN_IDLE may stay idle before it is retired. */
const IDLE_RETIRE_MS = 2_000;
/**
 * CPU time a test may use in the quick lane before it is moved: far above a benign match (microseconds),
 * and CPU time, so a benign test on a loaded machine is not moved for the time it waited for a core.
 */
const QUICK_MS = 10;
/** Worker time one draft's pattern tests may take in all (300 slow-but-under-budget patterns took 14 s). */
export const DRAFT_PATTERN_BUDGET_MS = 2_000;

interface Question {
  readonly pattern: string;
  readonly flags: string;
  readonly text: string;
  readonly budgetMs: number;
  /** The draft's check: whose turn it is, and what it has spent. */
  readonly ledger: DeferralLedger;
}

interface Pending extends Question {
  readonly resolve: (matched: boolean) => void;
  readonly reject: (error: unknown) => void;
  /** Gives back the draft's place among the caller's drafts in flight (once; see shared/slot.ts). */
  readonly park: () => void;
}

/** Idle workers, the most recently used last; each with the timer that retires it. */
const idleGuards: { guard: Guard; retire?: NodeJS.Timeout }[] = [];
let quickBusy = 0;
let slowBusy = 0;
/** Workers alive (busy or idle) and the most at once, with the lanes' peaks: for the tests' bounds. */
let live = 0;
const peaks = { live: 0, quick: 0, slow: 0 };
/** Tests waiting, by draft, in the order the drafts came; the front draft goes next. */
type Line = Map<DeferralLedger, Pending[]>;
const quickQueue: Line = new Map();
const slowQueue: Line = new Map();
/** Drafts a test of which ran past QUICK_MS: their further tests go straight to the slow lane. */
const suspects = new WeakSet<DeferralLedger>();
const TIMED_OUT = Symbol("timed out");

/** The pool's bounds, its workers now and the most it ran at once (tests: it grows, within bounds). */
export function patternPoolStats() {
  return { maxQuick: MAX_QUICK, maxSlow: MAX_SLOW, live, idle: idleGuards.length, peaks: { ...peaks } };
}

/**
 * The next message on `port`, or TIMED_OUT after `timeoutMs`. The timer keeps the process alive while
 * a test is out; the port is unreferenced again after, so an idle worker never does.
 */
function nextMessage(port: MessagePort, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve) => {
    const done = (value: unknown) => {
      clearTimeout(timer);
      port.off("message", done);
      port.unref();
      resolve(value);
    };
    const timer = setTimeout(() => done(TIMED_OUT), timeoutMs);
    port.on("message", done);
  });
}

/** The CPU time a worker's thread has used, in ms, as the kernel counts it; undefined where it cannot be read. */
function cpuOfGuard(guard: Guard): number | undefined {
  if (!guard.tid) return undefined;
  try {
    const ns = Number(readFileSync(`/proc/self/task/${guard.tid}/schedstat`, "utf8").split(" ")[0]);
    return Number.isFinite(ns) ? ns / 1e6 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How much longer than its CPU budget a test may take in wall time while its thread waits for a core
 * (a backstop: a machine so loaded that a worker gets less than this share of a core).
 */
const WALL_BACKSTOP = 60;

/**
 * The next message on the worker's port, or TIMED_OUT once its thread has used `cpuMs` of CPU time
 * since `cpuStart` (what cpuOfGuard read when the test was sent): a test is stopped or moved for the
 * work it did, not for the time a loaded machine kept it waiting, so the lanes and the verdicts are
 * the same idle and loaded. Where a thread's CPU time cannot be read, wall time since `wallStart`.
 */
async function nextMessageWithin(
  guard: Guard,
  cpuMs: number,
  cpuStart: number | undefined,
  wallStart: number,
): Promise<unknown> {
  for (;;) {
    const used = cpuStart === undefined ? undefined : (cpuOfGuard(guard) ?? Number.NaN) - cpuStart;
    const wall = performance.now() - wallStart;
    const left =
      used === undefined || Number.isNaN(used)
        ? cpuMs - wall
        : Math.min(cpuMs - used, cpuMs * WALL_BACKSTOP - wall);
    if (left <= 0) return TIMED_OUT;
    // A thread that waited for a core has used less than the wall time passed: it is looked at again
    // after what it has left (at least a millisecond, so the loop never spins).
    const reply = await nextMessage(guard.port, Math.max(1, left));
    if (reply !== TIMED_OUT) return reply;
  }
}

/** Stops a worker; one stopped past a time-out is replaced by a spare, started before it is needed. */
function stop(guard: Guard, replace = false): void {
  live -= 1;
  void guard.worker.terminate();
  if (replace) void spare();
}

/** A new worker, once it announced itself (and its thread id). */
async function spawnReady(): Promise<Guard> {
  const guard = spawnGuard(true);
  live += 1;
  peaks.live = Math.max(peaks.live, live);
  const ready = await nextMessage(guard.port, START_TIMEOUT_MS);
  if (ready === TIMED_OUT) {
    stop(guard);
    throw new Error(`the pattern worker did not start within ${START_TIMEOUT_MS} ms`);
  }
  guard.tid = Number((ready as { tid?: unknown }).tid) || 0;
  return guard;
}

/** The spare being started, if one is: a test that finds no idle worker waits for it before starting another. */
let spareReady: Promise<void> | undefined;

/**
 * Starts a spare worker when a time-out stopped one and few are idle: a worker takes a loaded machine
 * hundreds of milliseconds to start, which the next quick test would otherwise wait for.
 */
async function spare(): Promise<void> {
  if (spareReady || idleGuards.length >= MIN_IDLE || live >= MAX_QUICK + MAX_SLOW) return;
  spareReady = spawnReady().then(giveBack, () => {});
  await spareReady;
  spareReady = undefined;
  dispatch();
}

/**
 * The nice value of a slow-lane worker's thread (Linux sets it per thread): where the slow lane and the
 * event loop share a core, the scheduler gives the core to the event loop. Budgets are CPU time, so a
 * test run at this priority answers as it would at any other; it only takes longer in wall time. A
 * thread's priority cannot be raised again without privileges, so such a worker stays in the slow lane.
 */
const SLOW_NICE = 10;

/** Lowers the worker's thread to SLOW_NICE, where the platform allows it (elsewhere it stays as it was). */
function lowerPriority(guard: Guard): void {
  if (guard.niced) return;
  guard.niced = true;
  if (!guard.tid) return;
  try {
    setPriority(guard.tid, SLOW_NICE);
  } catch {
    // Not permitted, or not a thread id here: the worker runs at the process's priority.
  }
}

/** An idle worker for the lane (a slow-lane one for a slow test, else any, lowered; never a lowered one for a quick test), the spare being started, or a new one. */
async function takeGuard(slow: boolean): Promise<Guard> {
  const pick = () => {
    let at = -1;
    for (let i = idleGuards.length - 1; i >= 0; i--) {
      const niced = idleGuards[i]?.guard.niced === true;
      if (niced === slow) {
        at = i;
        break;
      }
      if (slow && at < 0) at = i;
    }
    return at < 0 ? undefined : idleGuards.splice(at, 1)[0];
  };
  let idle = pick();
  if (!idle && spareReady) {
    await spareReady;
    idle = pick();
  }
  const guard = idle ? idle.guard : await spawnReady();
  if (idle) clearTimeout(idle.retire);
  if (slow) lowerPriority(guard);
  return guard;
}

/** A worker done with its test: kept for the next, and retired after a while if more than MIN_IDLE wait. */
function giveBack(guard: Guard): void {
  const entry: { guard: Guard; retire?: NodeJS.Timeout } = { guard };
  if (idleGuards.length >= MIN_IDLE) {
    entry.retire = setTimeout(() => {
      const at = idleGuards.indexOf(entry);
      if (at >= 0) {
        idleGuards.splice(at, 1);
        stop(guard);
      }
    }, IDLE_RETIRE_MS);
    entry.retire.unref();
  }
  idleGuards.push(entry);
}

/** Puts `test` at the back of its draft's line in `queue` (the draft joins the back if it had none). */
function enqueue(queue: Line, test: Pending): void {
  const tests = queue.get(test.ledger);
  if (tests) tests.push(test);
  else queue.set(test.ledger, [test]);
}

/** The next test of `queue`, the drafts taking turns: the draft served goes to the back of the line. */
function next(queue: Line): Pending | undefined {
  for (const [ledger, tests] of queue) {
    queue.delete(ledger);
    const test = tests.shift();
    if (tests.length > 0) queue.set(ledger, tests);
    if (test) return test;
  }
  return undefined;
}

/** Starts what the free places allow; a test whose draft is past its budget is refused, not run. */
function dispatch(): void {
  while (slowBusy < MAX_SLOW) {
    const test = next(slowQueue);
    if (!test) break;
    if (!charge(test, 0)) continue;
    slowBusy += 1;
    peaks.slow = Math.max(peaks.slow, slowBusy);
    void runSlow(test);
  }
  while (quickBusy < MAX_QUICK) {
    const test = next(quickQueue);
    if (!test) break;
    if (!charge(test, 0)) continue;
    quickBusy += 1;
    peaks.quick = Math.max(peaks.quick, quickBusy);
    void runQuick(test);
  }
}

/** Adds worker time to the draft's account; past its budget the test ends the draft too_slow. */
function charge(test: Pending, ms: number): boolean {
  test.ledger.workerMs += ms;
  if (test.ledger.workerMs <= DRAFT_PATTERN_BUDGET_MS) return true;
  test.reject(
    new SchemaTooSlowError(
      test.pattern,
      test.text.length,
      test.budgetMs,
      `${TOO_SLOW}: the schema's patterns took more than ${DRAFT_PATTERN_BUDGET_MS} ms of matching on this draft in all (the last, ${JSON.stringify(test.pattern)}, on a string of ${test.text.length} characters) and were stopped; use fewer patterns RE2 cannot read, or make them match in linear time`,
    ),
  );
  return false;
}

/**
 * The time a reply says its match took, else `fallback`: the draft is charged for matching, not for
 * how long a loaded machine took to pass the messages, so its verdict is the same idle and loaded.
 */
const matchMs = (reply: unknown, fallback: number): number => {
  const ms = (reply as { ms?: unknown } | undefined)?.ms;
  return typeof ms === "number" ? ms : fallback;
};

/** What a finished test's reply means for it: its answer, or its error. */
function settleWith(test: Pending, reply: unknown): void {
  try {
    test.resolve(matchedOf(reply, test.pattern));
  } catch (error) {
    test.reject(error);
  }
}

function stopped(test: Pending): void {
  test.reject(new SchemaTooSlowError(test.pattern, test.text.length, test.budgetMs));
}

/** Queues `test` in the slow lane: its draft is a suspect, and gives up its place in flight meanwhile. */
function toSlowLane(test: Pending): void {
  suspects.add(test.ledger);
  test.park();
  enqueue(slowQueue, test);
}

async function runQuick(test: Pending): Promise<void> {
  let guard: Guard | undefined;
  let movedToSlow = false;
  try {
    guard = await takeGuard(false);
    const start = performance.now();
    const cpuStart = cpuOfGuard(guard);
    guard.port.postMessage({ source: test.pattern, flags: test.flags, text: test.text });
    const quickMs = Math.min(QUICK_MS, test.budgetMs);
    let reply = await nextMessageWithin(guard, quickMs, cpuStart, start);
    if (reply !== TIMED_OUT) {
      if (charge(test, matchMs(reply, performance.now() - start))) settleWith(test, reply);
      giveBack(guard);
      return;
    }
    suspects.add(test.ledger);
    if (slowBusy < MAX_SLOW && slowQueue.size === 0) {
      // A slow place is free: the test goes on in its worker, with what is left of its budget.
      movedToSlow = true;
      lowerPriority(guard);
      // It is a slow-lane worker now: an idle one goes, so the slow lane's workers stay within MAX_SLOW.
      const spareSlow = idleGuards.findIndex((entry) => entry.guard.niced);
      if (spareSlow >= 0) {
        const [entry] = idleGuards.splice(spareSlow, 1);
        if (entry) {
          clearTimeout(entry.retire);
          stop(entry.guard);
        }
      }
      test.park();
      slowBusy += 1;
      peaks.slow = Math.max(peaks.slow, slowBusy);
      quickBusy -= 1;
      dispatch();
      reply = await nextMessageWithin(guard, test.budgetMs, cpuStart, start);
      const spent = performance.now() - start;
      if (reply === TIMED_OUT) {
        stop(guard, true);
        if (charge(test, spent)) stopped(test);
      } else {
        if (charge(test, matchMs(reply, spent))) settleWith(test, reply);
        giveBack(guard);
      }
      return;
    }
    // Stopped here, and run again from its start, whole budget, when its turn in the slow lane comes;
    // only that run is charged (it measures the whole match).
    stop(guard, true);
    toSlowLane(test);
  } catch (error) {
    test.reject(error);
  } finally {
    if (movedToSlow) slowBusy -= 1;
    else quickBusy -= 1;
    dispatch();
  }
}

async function runSlow(test: Pending): Promise<void> {
  try {
    const guard = await takeGuard(true);
    const start = performance.now();
    const cpuStart = cpuOfGuard(guard);
    guard.port.postMessage({ source: test.pattern, flags: test.flags, text: test.text });
    const reply = await nextMessageWithin(guard, test.budgetMs, cpuStart, start);
    const spent = performance.now() - start;
    if (reply === TIMED_OUT) {
      stop(guard, true);
      if (charge(test, spent)) stopped(test);
      return;
    }
    giveBack(guard);
    if (charge(test, matchMs(reply, spent))) settleWith(test, reply);
  } catch (error) {
    test.reject(error);
  } finally {
    slowBusy -= 1;
    dispatch();
  }
}

/**
 * guardedTest's answer from the pool, awaited: the thread serves other work meanwhile. A draft already
 * past its budget is refused before its next test runs; a suspect's test goes to the slow lane.
 */
function guardedTestOffThread(question: Question): Promise<boolean> {
  const park = parkingSlot();
  return new Promise<boolean>((resolve, reject) => {
    const test: Pending = { ...question, resolve, reject, park };
    if (!charge(test, 0)) return;
    if (suspects.has(test.ledger)) toSlowLane(test);
    else enqueue(quickQueue, test);
    dispatch();
  });
}
