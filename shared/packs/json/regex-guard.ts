/**
 * Patterns RE2 cannot read (lookarounds, back-references) run on ECMAScript's backtracking RegExp, which
 * nothing can interrupt: the static check (regex-safety.ts) is their fast first filter and misses some
 * (`^(?=a)(\w|\d)+$`). So they are never matched on the validating thread: each test goes to a worker
 * thread, the validating thread waits for the answer at most PATTERN_BUDGET_MS, and a worker still
 * matching by then is terminated and the draft rejected (`invalid_schema`, `too_slow`). The wait is
 * synchronous (Atomics.wait on a shared flag, the answer read with receiveMessageOnPort) because
 * validation is: one hostile draft holds the others for at most the budget, never for ever. Inside a
 * deferral (shared/deferred.ts: how the validate and revalidate steps check a draft) the test is not
 * waited for in place: it is noted, answered by a worker of a small pool while the thread goes on with
 * other drafts, and the draft is checked again with the answer; a hostile draft then holds nothing but
 * itself.
 *
 * The budget is wall time, so it is set far above any benign match (microseconds; a thousand times
 * that on a machine under heavy load is still a millisecond), and the worker's start-up is not counted.
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { activeDeferral } from "../../deferred.js";
import { InvalidSchemaError } from "../../errors.js";

/** The word a rejection's message starts with when a schema took too long to check a draft. */
export const TOO_SLOW = "too_slow";

/** How long one pattern test may run in the worker before it is stopped. */
const PATTERN_BUDGET_MS = 500;
/** How long the worker may take to start: not part of any draft's budget (a loaded machine is slow to spawn). */
const START_TIMEOUT_MS = 30_000;

/** A schema whose pattern did not finish within the budget on a draft's string: the run is rejected. */
export class SchemaTooSlowError extends InvalidSchemaError {
  readonly detail = TOO_SLOW;
  constructor(pattern: string, characters: number, budgetMs: number) {
    super(
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
  port.on("message", (m: { source: string; flags: string; text: string }) => {
    let reply: { matched: boolean } | { error: string };
    try {
      const key = `${m.flags}/${m.source}`;
      let re = compiled.get(key);
      if (re === undefined) {
        if (compiled.size >= 1000) compiled.clear();
        re = new RegExp(m.source, m.flags);
        compiled.set(key, re);
      }
      re.lastIndex = 0;
      reply = { matched: re.test(m.text) };
    } catch (error) {
      reply = { error: String(error) };
    }
    port.postMessage(reply);
    Atomics.store(state, 0, 1);
    Atomics.notify(state, 0);
  });
  if (announce) port.postMessage({ ready: true });
  Atomics.store(state, 0, 1);
  Atomics.notify(state, 0);
}

interface Guard {
  readonly worker: Worker;
  readonly port: MessagePort;
  readonly state: Int32Array;
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
      () => guardedTestOffThread(pattern, flags, text, budgetMs),
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
 * Workers testing at once for deferrals: each hostile test holds one for its budget, and the machine's
 * cores are shared with the validating thread, so more would slow every other draft.
 */
const MAX_OFF_THREAD = 2;
const idleGuards: Guard[] = [];
let busyGuards = 0;
const waitingForGuard: (() => void)[] = [];
const TIMED_OUT = Symbol("timed out");

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

async function acquireGuard(): Promise<Guard> {
  while (busyGuards >= MAX_OFF_THREAD) await new Promise<void>((wake) => waitingForGuard.push(wake));
  busyGuards += 1;
  const idle = idleGuards.pop();
  if (idle) return idle;
  const guard = spawnGuard(true);
  if ((await nextMessage(guard.port, START_TIMEOUT_MS)) === TIMED_OUT) {
    releaseGuard(undefined);
    void guard.worker.terminate();
    throw new Error(`the pattern worker did not start within ${START_TIMEOUT_MS} ms`);
  }
  return guard;
}

/** Returns a worker to the pool (undefined: it was stopped) and wakes the next test waiting for one. */
function releaseGuard(guard: Guard | undefined): void {
  busyGuards -= 1;
  if (guard) idleGuards.push(guard);
  waitingForGuard.shift()?.();
}

/** guardedTest's answer from a worker of the pool, awaited: the thread serves other work meanwhile. */
async function guardedTestOffThread(
  pattern: string,
  flags: string,
  text: string,
  budgetMs: number,
): Promise<boolean> {
  const guard = await acquireGuard();
  guard.port.postMessage({ source: pattern, flags, text });
  const reply = await nextMessage(guard.port, budgetMs);
  if (reply === TIMED_OUT) {
    releaseGuard(undefined);
    void guard.worker.terminate();
    throw new SchemaTooSlowError(pattern, text.length, budgetMs);
  }
  releaseGuard(guard);
  return matchedOf(reply, pattern);
}
