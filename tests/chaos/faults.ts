/**
 * Faults for the in-process scenarios of the fault-injection suite, injected only through doubles
 * around what the local runtime calls (as tests/workflow/faults.ts does): the run store and blob
 * store its handlers get, the DynamoDB client its status states use, and the model.
 */

import { DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import type { LocalRuntime } from "../../local/runtime.js";
import { SqliteRunStore } from "../../local/sqlite-store.js";
import {
  ModelOverloadedError,
  ModelRateLimitedError,
  ModelTimeoutError,
  StoreUnavailableError,
} from "../../shared/errors.js";
import { sha256 } from "../../shared/hash.js";
import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../shared/model/types.js";

const slowDown = () =>
  Object.assign(new Error("Please reduce your request rate."), {
    name: "ThrottlingException",
    $metadata: { httpStatusCode: 400 },
  });

/** Counts the faults injected, by where they were injected. */
export class FaultLog {
  readonly counts: Record<string, number> = {};
  readonly #seen = new Set<string>();
  /** True (and counted) the first time `key` is seen. */
  first(where: string, key: string): boolean {
    if (this.#seen.has(key)) return false;
    this.#seen.add(key);
    this.counts[where] = (this.counts[where] ?? 0) + 1;
    return true;
  }
  get total(): number {
    return Object.values(this.counts).reduce((a, b) => a + b, 0);
  }
}

const RUN_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

/** The run a store write belongs to, from its arguments. */
const runOf: Record<string, (args: unknown[]) => string | undefined> = {
  createRun: ([run]) => (run as { runId: string }).runId,
  claimContent: ([, runId]) => String(runId),
  setStatus: ([runId]) => String(runId),
  updateRun: ([runId]) => String(runId),
  putAttempt: ([attempt]) => (attempt as { runId: string }).runId,
  addUsage: ([runId]) => String(runId),
  put: ([key]) => RUN_ID.exec(String(key))?.[0],
  putIfAbsent: ([key]) => RUN_ID.exec(String(key))?.[0],
};

/**
 * The first store write of each step is applied, then answered with StoreUnavailableError (its
 * response lost on the way back, the harshest case), and so is the first write of each attempt's
 * record and of its tokens; the state machine's Retry runs the step again. The retried step must
 * find its own writes in place: no attempt recorded twice, no tokens counted twice.
 *
 * A step is one handler invocation: the local runtime hands each invocation `runtime.deps`, so a
 * getter there gives each invocation its own stores. Invocations of one run are sequential, so the
 * one after a failed invocation of that run is its retry. Returns the function that restores deps.
 */
export function firstWriteOfEachStepLost(runtime: LocalRuntime, log: FaultLog): () => void {
  const base = runtime.deps;
  const retrying = new Set<string>();
  const lose = <T>(runId: string, where: string, write: () => Promise<T>): Promise<T> => {
    retrying.add(runId);
    return write().then(() => {
      throw new StoreUnavailableError(where, slowDown());
    });
  };
  const invocation = () => {
    let wrote = false;
    return <T>(name: string, args: unknown[], write: () => Promise<T>): Promise<T> => {
      const runId = runOf[name]?.(args);
      if (runId === undefined) return write();
      if (!wrote) {
        wrote = true;
        if (retrying.delete(runId)) return write();
        log.first(
          `${name === "put" || name === "putIfAbsent" ? "blob" : "run store"} ${name}`,
          `${runId}:${log.total}`,
        );
        return lose(runId, name, write);
      }
      // Each attempt's record and its tokens are also lost once, wherever they fall in the step.
      if (name === "putAttempt" || name === "addUsage") {
        const attempt = name === "putAttempt" ? (args[0] as { attempt: number }).attempt : args[1];
        if (log.first(`run store ${name}`, `${name}:${runId}:${String(attempt)}`))
          return lose(runId, name, write);
      }
      return write();
    };
  };
  const wrap = <S extends object>(store: S, fault: ReturnType<typeof invocation>): S =>
    new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        if (!(String(property) in runOf)) return value.bind(target);
        return (...args: unknown[]) => fault(String(property), args, () => value.apply(target, args));
      },
    });
  Object.defineProperty(runtime, "deps", {
    configurable: true,
    get: (): LoopDeps => {
      const fault = invocation();
      return { ...base, runs: wrap(base.runs, fault), blobs: wrap(base.blobs, fault) };
    },
  });
  return () => Object.defineProperty(runtime, "deps", { value: base, writable: false, configurable: true });
}

/**
 * The first status UpdateItem of each run and status (the Mark* / Record* states' direct
 * integration) is applied, then its response is lost (a timeout): the state's Retry sends it again.
 * Stubs the DynamoDB client's `send`, as aws-sdk-client-mock does; returns the restore function.
 */
export function firstStatusUpdatesLost(log: FaultLog): () => void {
  type Send = (this: DynamoDBClient, command: unknown, ...rest: unknown[]) => Promise<unknown>;
  const proto = DynamoDBClient.prototype as unknown as { send: Send };
  const own = Object.getOwnPropertyDescriptor(proto, "send");
  const original = proto.send;
  // The SQLite store has no DynamoDB client: its status UpdateItem is one `finishActive`.
  type Finish = SqliteRunStore["finishActive"];
  const sqlite = SqliteRunStore.prototype as { finishActive: Finish };
  const finishActive = sqlite.finishActive;
  sqlite.finishActive = async function (runId, status, ...rest) {
    const result = await finishActive.call(this, runId, status, ...rest);
    if (log.first("status update", `${JSON.stringify({ pk: { S: `RUN#${runId}` } })}:${status}`))
      throw Object.assign(new Error("socket hang up after the request was sent"), {
        name: "TimeoutError",
        $metadata: {},
      });
    return result;
  };
  proto.send = async function (command, ...rest) {
    const status =
      command instanceof UpdateItemCommand && command.input.ExpressionAttributeValues?.[":status"]?.S;
    const result = await original.call(this, command, ...rest);
    if (status && log.first("status update", `${JSON.stringify(command.input.Key)}:${status}`))
      throw Object.assign(new Error("socket hang up after the request was sent"), {
        name: "TimeoutError",
        $metadata: {},
      });
    return result;
  };
  return () => {
    sqlite.finishActive = finishActive;
    if (own) Object.defineProperty(proto, "send", own);
    else delete (proto as { send?: Send }).send;
  };
}

/**
 * A model that fails `rate` of its calls, chosen by `random`, with a 429, a timeout or an overload
 * (in turn), before the inner model sees them; the other calls go through.
 */
export class FlakyModel implements ModelClient {
  readonly provider: string;
  readonly model: string;
  readonly counts = { rateLimited: 0, timeout: 0, overloaded: 0, answered: 0 };
  #n = 0;
  constructor(
    readonly inner: ModelClient,
    readonly rate: number,
    readonly random: () => number,
  ) {
    this.provider = inner.provider;
    this.model = inner.model;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (this.random() < this.rate) {
      switch (this.#n++ % 3) {
        case 0:
          this.counts.rateLimited++;
          throw new ModelRateLimitedError("injected 429");
        case 1:
          this.counts.timeout++;
          throw new ModelTimeoutError("injected timeout");
        default:
          this.counts.overloaded++;
          throw new ModelOverloadedError("injected overload");
      }
    }
    this.counts.answered++;
    return this.inner.complete(request);
  }
}

/**
 * A model that answers the same prompt of a run the same way. A step retried after a store fault
 * calls the model again; a replay cassette would hand that call the run's next answer, a real model
 * would answer again. `repeats` counts those repeated calls (each a real model's extra spend).
 */
export class SteadyModel implements ModelClient {
  readonly provider: string;
  readonly model: string;
  repeats = 0;
  readonly #answers = new Map<string, Promise<ModelResponse>>();
  constructor(readonly inner: ModelClient) {
    this.provider = inner.provider;
    this.model = inner.model;
  }

  complete(request: ModelRequest): Promise<ModelResponse> {
    const key = sha256(
      JSON.stringify([request.runId, request.purpose, request.system.map((b) => b.text), request.user]),
    );
    const known = this.#answers.get(key);
    if (known) {
      this.repeats++;
      return known;
    }
    const answer = this.inner.complete(request);
    this.#answers.set(key, answer);
    return answer;
  }
}
