/**
 * Faults for the workflow scenarios, injected only through test doubles around what the local
 * runtime calls: the blob store the handlers get, the DynamoDB client its UpdateItem states use,
 * and its data folder. Production code is never told it is under test.
 */

import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { DynamoDBClient, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { finalizeExecution } from "../../functions/lib/finalizer.js";
import { FsBlobStore } from "../../local/fs-blobs.js";
import type { LocalRuntime } from "../../local/runtime.js";
import { SqliteBlobStore, SqliteRunStore } from "../../local/sqlite-store.js";
import { StoreRequestFailedError, StoreUnavailableError } from "../../shared/errors.js";
import { RESULTS_PREFIX } from "../../shared/store/bucket-layout.js";
import type { BlobStore, RunStore } from "../../shared/store/types.js";

/** An SDK-shaped error, as S3 or DynamoDB throws it. */
function awsError(name: string, message: string, httpStatusCode: number): Error {
  return Object.assign(new Error(message), { name, $metadata: { httpStatusCode } });
}

/** One blob fault: writes of `key` fail `times` times (every time when omitted). */
export interface BlobFault {
  key: string;
  /** `unavailable`: S3 slowed down (StoreUnavailableError, retried); `refused`: access denied (terminal). */
  kind: "unavailable" | "refused";
  times?: number;
}

/**
 * A blob store that fails the writes it is told to, then behaves: what the S3 adapter throws when S3
 * answers SlowDown (retried by the state machine) or AccessDenied (caught). Installed as the store the
 * runtime's Lambda handlers get; the runtime's own S3 adapter (Publish) keeps the folder.
 */
export class FaultyBlobStore implements BlobStore {
  readonly #left: Map<string, number>;
  constructor(
    readonly inner: BlobStore,
    readonly faults: readonly BlobFault[],
  ) {
    this.#left = new Map(faults.map((f) => [f.key, f.times ?? Number.POSITIVE_INFINITY]));
  }

  static install(runtime: LocalRuntime, faults: readonly BlobFault[]): void {
    runtime.deps.blobs = new FaultyBlobStore(runtime.deps.blobs, faults);
  }

  #fail(operation: string, key: string): void {
    const fault = this.faults.find((f) => f.key === key);
    const left = this.#left.get(key) ?? 0;
    if (!fault || left <= 0) return;
    this.#left.set(key, left - 1);
    if (fault.kind === "unavailable")
      throw new StoreUnavailableError(
        operation,
        awsError("SlowDown", "Please reduce your request rate.", 503),
      );
    throw new StoreRequestFailedError(operation, awsError("AccessDenied", "Access Denied", 403));
  }

  async put(key: string, body: string, contentType?: string): Promise<void> {
    this.#fail("put", key);
    return this.inner.put(key, body, contentType);
  }

  get(key: string, version?: string): Promise<string> {
    return this.inner.get(key, version);
  }

  async putIfAbsent(key: string, body: string, contentType?: string): Promise<boolean> {
    this.#fail("putIfAbsent", key);
    return this.inner.putIfAbsent(key, body, contentType);
  }
}

/** How a status UpdateItem goes wrong. */
export type UpdateFault =
  /** DynamoDB is down: every matching update fails with a 500. */
  | "down"
  /** The update is applied but its response is lost once (a timeout): the retry finds the status in place. */
  | "response-lost"
  /** The state machine's role may not update the table: every matching update is refused (permanent). */
  | "denied";

/**
 * Makes the UpdateItem calls of the state machine's status states (Mark*, Record*) that set one of
 * `statuses` go wrong, the way aws-sdk-client-mock stubs a client: on the DynamoDB client's `send`.
 * Only the plain client is affected (the runtime's UpdateItem adapter); the run store speaks through
 * a document client and is left alone. Returns the function that restores the client.
 */
export function faultyStatusUpdates(statuses: readonly string[], fault: UpdateFault): () => void {
  type Send = (this: DynamoDBClient, command: unknown, ...rest: unknown[]) => Promise<unknown>;
  const proto = DynamoDBClient.prototype as unknown as { send: Send };
  const own = Object.getOwnPropertyDescriptor(proto, "send");
  const original = proto.send;
  let lost = 0;
  // The SQLite store has no DynamoDB client: its UpdateItem adapter moves the run through
  // `finishActive`, whose errors it names as DynamoDB's (engine.dynamoDbIntegrationError).
  type Finish = SqliteRunStore["finishActive"];
  const sqlite = SqliteRunStore.prototype as { finishActive: Finish };
  const finishActive = sqlite.finishActive;
  sqlite.finishActive = async function (runId, status, ...rest) {
    if (!statuses.includes(status)) return finishActive.call(this, runId, status, ...rest);
    if (fault === "down") throw awsError("InternalServerError", "Internal server error", 500);
    if (fault === "denied")
      throw awsError(
        "AccessDeniedException",
        "User: arn:aws:sts::000000000000:assumed-role/redraft-states/local is not authorized to perform: dynamodb:UpdateItem",
        400,
      );
    if (lost++ > 0) return finishActive.call(this, runId, status, ...rest);
    await finishActive.call(this, runId, status, ...rest);
    throw awsError("TimeoutError", "socket hang up after the request was sent", 0);
  };
  proto.send = async function (command, ...rest) {
    const status =
      command instanceof UpdateItemCommand && command.input.ExpressionAttributeValues?.[":status"]?.S;
    if (!status || !statuses.includes(status)) return original.call(this, command, ...rest);
    if (fault === "down") throw awsError("InternalServerError", "Internal server error", 500);
    if (fault === "denied")
      throw awsError(
        "AccessDeniedException",
        "User: arn:aws:sts::000000000000:assumed-role/redraft-states/local is not authorized to perform: dynamodb:UpdateItem",
        400,
      );
    if (lost++ > 0) return original.call(this, command, ...rest);
    await original.call(this, command, ...rest);
    throw awsError("TimeoutError", "socket hang up after the request was sent", 0);
  };
  return () => {
    sqlite.finishActive = finishActive;
    if (own) Object.defineProperty(proto, "send", own);
    else delete (proto as { send?: Send }).send;
  };
}

/**
 * The folder behind the bucket is out of file handles once (EMFILE) when Publish copies a draft to
 * `results/`: a copy that got no answer, which Publish retries. Stubbed on the folder store's `put`,
 * the way {@link faultyStatusUpdates} stubs the DynamoDB client. Returns the function that restores it.
 */
export function publishUnreachableOnce(): () => void {
  let failed = false;
  const restore = [FsBlobStore.prototype, SqliteBlobStore.prototype].map((proto: BlobStore) => {
    const own = Object.getOwnPropertyDescriptor(proto, "put");
    const original = proto.put;
    proto.put = async function (this: BlobStore, key, body) {
      if (failed || !key.startsWith(`${RESULTS_PREFIX}`)) return original.call(this, key, body);
      failed = true;
      throw Object.assign(new Error(`EMFILE: too many open files, open '${key}'`), {
        code: "EMFILE",
        errno: -24,
      });
    };
    return () => {
      if (own) Object.defineProperty(proto, "put", own);
    };
  });
  return () => {
    for (const undo of restore) undo();
  };
}

/**
 * The cloud finalizer fails run `runId` (its execution ABORTED) while Validate is still running: the
 * first time Validate moves the run to `correcting`, the finalizer's conditional write comes first.
 * Installed as the run store the runtime's handlers get; the finalizer writes to the real one.
 */
export function finalizedDuringValidate(runtime: LocalRuntime, runId: string): void {
  const runs = runtime.deps.runs;
  let raced = false;
  const setStatus: RunStore["setStatus"] = async (id, status, ...rest) => {
    if (!raced && id === runId && status === "correcting") {
      raced = true;
      await finalizeExecution(
        {
          executionArn: `arn:aws:states:local:000000000000:execution:redraft:${runId}`,
          name: runId,
          status: "ABORTED",
        },
        { runs: runtime.runs, announce: async () => {}, now: () => new Date().toISOString() },
      );
    }
    return runs.setStatus(id, status, ...rest);
  };
  // The store's methods keep their own `this` (its private fields); only setStatus is intercepted.
  const racing = new Proxy(runs, {
    get: (target, property) => {
      if (property === "setStatus") return setStatus;
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  runtime.deps.runs = racing;
}

/** The event bus is gone: the runtime's event log cannot be appended to (a folder stands in its way). */
export async function busDown(runtime: LocalRuntime): Promise<void> {
  await mkdir(join(runtime.dataDir, "events.jsonl"), { recursive: true });
}

/** Nothing can be published for `draftId`: a file stands where its `results/<draftId>/` folder goes. */
export async function resultsBlocked(runtime: LocalRuntime, draftId: string): Promise<void> {
  const { blobs } = runtime;
  if (!(blobs instanceof FsBlobStore)) {
    // The SQLite store has no folders: its put under that prefix fails as the folder store's does.
    const put = blobs.put.bind(blobs);
    blobs.put = async (key, body) => {
      if (!key.startsWith(`results/${draftId}/`)) return put(key, body);
      throw Object.assign(new Error(`ENOTDIR: not a directory, open '${key}'`), { code: "ENOTDIR" });
    };
    return;
  }
  const file = join(blobs.root, "results", draftId);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, "not a folder");
}
