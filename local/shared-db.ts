import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SelfCorrectionError } from "../shared/errors.js";
import { type LocalDynamo, localDynamoClient, type RequestHandler, startDynalite } from "./dynalite.js";
import {
  answers,
  createExclusive,
  isAlive,
  type ProcessIdentity,
  readIfExists,
  removeIfUnchanged,
  SELF,
  sameProcess,
  writeAtomic,
} from "./lock.js";

/** The database of a data folder could not be reached within the bound. */
class DatabaseUnavailableError extends SelfCorrectionError {
  override readonly name = "DatabaseUnavailableError";
  constructor(message: string) {
    super(message, "database_unavailable");
  }
}

/** What `<dataDir>/dynamodb.lock` holds: the serving process and its port (absent while it starts). */
interface LockInfo extends ProcessIdentity {
  port?: number;
  at: string;
}

export const LOCK_FILE = "dynamodb.lock";
/** A live holder that does not answer for this long (hung, or not the holder any more) is taken over. */
const SILENT_HOLDER_MS = 10_000;
const POLL_MS = 100;
const CONNECTION_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ECONNABORTED"]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function parseLock(text: string): LockInfo | undefined {
  try {
    const lock = JSON.parse(text) as Partial<LockInfo>;
    if (typeof lock.pid !== "number" || typeof lock.boot !== "string" || typeof lock.start !== "string")
      return undefined;
    return lock as LockInfo;
  } catch {
    return undefined;
  }
}

function isConnectionError(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  return (
    CONNECTION_ERRORS.has(String(e.code)) ||
    /socket hang up|Database is (closed|not open)/i.test(String(e.message))
  );
}

export interface SharedDynamoOptions {
  /** How long a command waits for the database before it gives up. @default 60_000 */
  timeoutMs?: number;
  /** Told once per holder when this process has to wait for it. */
  onWait?: (message: string) => void;
}

/**
 * The DynamoDB of one data folder, shared by every redraft process that uses the folder.
 *
 * dynalite keeps its data with LevelDB, which only one process may open. So the first process
 * serves the folder's dynalite on 127.0.0.1 and writes `<dataDir>/dynamodb.lock` (created with
 * `wx`, then completed with the port by an atomic rename) naming its pid and port; the others
 * read the lock, check the pid lives and the port answers, and send their requests there. A lock
 * whose pid is dead, or whose live pid stays silent, is an orphan and is taken over.
 *
 * When the serving process is done it hands over instead of lingering: it stops its server (after
 * the requests in flight), then removes the lock; a client whose next request finds nobody
 * listening reads the lock again and, finding none, serves the folder itself. Lingering until the
 * others finish would keep a `redraft runs` that happened to start first alive for the whole length
 * of someone else's long `run`; and since a serving process can be killed anyway, clients need
 * this takeover path regardless: handing over reuses it rather than adding a second one. Requests
 * that straddle a handover are retried, which is safe because every store write is conditional.
 *
 * The serving process itself sends its requests to its dynalite without a socket (the direct
 * transport of local/dynalite.ts); the others use HTTP. The transport is chosen per request, so a
 * client that takes over the folder switches to the direct one with its next request.
 */
export class SharedDynamo {
  readonly client: DynamoDBClient;
  readonly #dataDir: string;
  readonly #lockFile: string;
  readonly #timeoutMs: number;
  readonly #onWait: (message: string) => void;
  readonly #told = new Set<number>();
  #endpoint = "";
  #served: LocalDynamo | undefined;
  #reconnecting: Promise<void> | undefined;
  #closed = false;

  private constructor(dataDir: string, options: SharedDynamoOptions) {
    this.#dataDir = dataDir;
    this.#lockFile = join(dataDir, LOCK_FILE);
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#onWait = options.onWait ?? (() => {});
    // The endpoint here is a placeholder: every request is pointed at the current holder below.
    // The SDK's own HTTP transport, for requests to a database another process serves: made by the
    // first such request (a process that serves the folder itself may never need one).
    let http: RequestHandler | undefined;
    const overHttp = () =>
      (http ??= localDynamoClient("http://127.0.0.1:9").config.requestHandler as RequestHandler);
    type Handle = RequestHandler["handle"];
    const transport: RequestHandler = {
      handle: (request: Parameters<Handle>[0], options?: Parameters<Handle>[1]) =>
        (this.#served?.direct ?? overHttp()).handle(request, options),
      destroy: () => http?.destroy?.(),
    };
    this.client = localDynamoClient("http://127.0.0.1:9", { requestHandler: transport, dynalite: true });
    this.client.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { hostname: string; port?: number; headers: Record<string, string> };
        const url = new URL(this.#endpoint);
        request.hostname = url.hostname;
        request.port = Number(url.port);
        request.headers.host = url.host;
        return next(args);
      },
      { step: "finalizeRequest", priority: "low", name: "redraftSharedEndpoint" },
    );
    this.client.middlewareStack.add(
      (next) => async (args) => {
        const deadline = Date.now() + this.#timeoutMs;
        for (;;) {
          const endpoint = this.#endpoint;
          try {
            return await next(args);
          } catch (error) {
            if (this.#closed || !isConnectionError(error) || Date.now() > deadline) throw error;
            await this.#reconnect(endpoint);
          }
        }
      },
      { step: "initialize", priority: "high", name: "redraftReconnect" },
    );
  }

  /** Connects to the folder's database, serving it when nobody does. */
  static async open(dataDir: string, options: SharedDynamoOptions = {}): Promise<SharedDynamo> {
    const db = new SharedDynamo(dataDir, options);
    await db.#acquire();
    return db;
  }

  /** Whether this process serves the folder's database (for tests and messages). */
  get serving(): boolean {
    return this.#served !== undefined;
  }

  get endpoint(): string {
    return this.#endpoint;
  }

  /** One reconnection at a time; requests that failed on the old endpoint all wait for it. */
  async #reconnect(failed: string): Promise<void> {
    if (this.#endpoint !== failed) return;
    this.#reconnecting ??= this.#acquire().finally(() => {
      this.#reconnecting = undefined;
    });
    await this.#reconnecting;
  }

  async #acquire(): Promise<void> {
    const deadline = Date.now() + this.#timeoutMs;
    let silentSince: number | undefined;
    for (;;) {
      const text = await readIfExists(this.#lockFile);
      if (text === undefined) {
        if (
          await createExclusive(this.#lockFile, JSON.stringify({ ...SELF, at: new Date().toISOString() }))
        ) {
          await this.#serve();
          return;
        }
        continue;
      }
      const lock = parseLock(text);
      if (lock?.port !== undefined && isAlive(lock)) {
        // This process may hold the lock through another runtime of its own: the port tells.
        const mine = this.#served && sameProcess(lock, SELF) ? this.#served.endpoint : undefined;
        if (mine || (await answers(lock.port))) {
          this.#endpoint = mine ?? `http://127.0.0.1:${lock.port}`;
          return;
        }
      }
      // Starting, closing, half-written, or silent: wait a little before calling it an orphan.
      const alive = lock !== undefined && isAlive(lock);
      const young = lock === undefined && (await this.#lockAgeMs()) < SILENT_HOLDER_MS;
      silentSince ??= Date.now();
      if ((alive || young) && Date.now() - silentSince < SILENT_HOLDER_MS) {
        if (lock && !this.#told.has(lock.pid)) {
          this.#told.add(lock.pid);
          this.#onWait(
            `redraft: waiting for the database in ${this.#dataDir}: redraft process ${lock.pid} holds it and is not answering yet`,
          );
        }
        if (Date.now() > deadline)
          throw new DatabaseUnavailableError(
            `the database in ${this.#dataDir} is held by process ${lock?.pid ?? "unknown"}, which did not answer within ${Math.round(this.#timeoutMs / 1000)} s`,
          );
        await sleep(POLL_MS);
        continue;
      }
      // Dead holder, or silent for too long: an orphan.
      await removeIfUnchanged(this.#lockFile, text);
      silentSince = undefined;
    }
  }

  async #lockAgeMs(): Promise<number> {
    return stat(this.#lockFile).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    );
  }

  /** Holding a fresh lock without a port: start dynalite on the folder, then publish the port. */
  async #serve(): Promise<void> {
    try {
      this.#served = await startDynalite({ path: join(this.#dataDir, "dynamodb") });
      const port = Number(new URL(this.#served.endpoint).port);
      await writeAtomic(this.#lockFile, JSON.stringify({ ...SELF, port, at: new Date().toISOString() }));
      this.#endpoint = this.#served.endpoint;
    } catch (error) {
      await this.#served?.close().catch(() => undefined);
      this.#served = undefined;
      await this.#releaseLock();
      throw error;
    }
  }

  async #releaseLock(): Promise<void> {
    const text = await readIfExists(this.#lockFile);
    const lock = text === undefined ? undefined : parseLock(text);
    if (text !== undefined && lock && sameProcess(lock, SELF)) await removeIfUnchanged(this.#lockFile, text);
  }

  /**
   * Destroys the client; a serving process stops its server once the requests in flight are done,
   * closes the database, and only then removes the lock, so that the next holder never opens the
   * LevelDB folder while this one still has it open.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#reconnecting?.catch(() => undefined);
    this.client.destroy();
    const served = this.#served;
    this.#served = undefined;
    if (served) {
      await served.close();
      await this.#releaseLock();
    }
  }
}
