import { EventEmitter } from "node:events";
import { readdirSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { DescribeTableCommand, DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { createTable } from "../functions/lib/dynamo-store.js";

/** The part of dynalite's options redraft uses (the package ships no types). */
interface DynaliteOptions {
  path?: string;
  createTableMs?: number;
  deleteTableMs?: number;
  updateTableMs?: number;
}
const require = createRequire(import.meta.url);

interface DynaliteStore {
  /** The abstract-level database, whose `get` dynalite has replaced by a callback version. */
  db: LevelDatabase;
}
interface LevelDatabase {
  status: string;
  get(key: string, callback?: (error: Error | null, value?: unknown) => void): unknown;
  getSync?(key: string): unknown;
  open(): Promise<void>;
}

/**
 * Starts dynalite's server and returns it with the database it serves. dynalite is loaded here, by
 * the process that serves a folder, not by those that reach it over HTTP. Its store module's
 * `create`, which `dynalite(options)` calls once to open the LevelDB (or in-memory) database it
 * serves, is wrapped for that one call so that the database can be reached.
 */
function createDynalite(options: DynaliteOptions): { server: Server; db: LevelDatabase } {
  guardActions();
  const dynalite = require("dynalite") as (options: DynaliteOptions) => Server;
  const dynaliteStore = require("dynalite/db") as { create(options: DynaliteOptions): DynaliteStore };
  const create = dynaliteStore.create;
  let store: DynaliteStore | undefined;
  dynaliteStore.create = (o) => {
    store = create(o);
    return store;
  };
  try {
    const server = dynalite(options);
    if (!store) throw new Error("dynalite did not open its store through dynalite/db");
    return { server, db: store.db };
  } finally {
    dynaliteStore.create = create;
  }
}

type ActionCallback = (error: (Error & { statusCode?: number }) | null, data?: unknown) => void;
type Action = (store: unknown, data: unknown, callback: ActionCallback) => void;
let guarded = false;

/**
 * dynalite answers an action's error as a DynamoDB error when it carries a status code; any other
 * (a LevelDB write on a full disk, a read of a damaged table file) it throws from the callback, out
 * of every try, and the process dies with a stack. So each action, before dynalite's server module
 * captures them, is wrapped to answer such an error as DynamoDB does a fault of its own: a 500
 * `InternalServerError` whose message carries the store's own words (LevelDB's "IO error: … No space
 * left on device", "Corruption: …"), which the client reports and local/data-dir.ts explains.
 */
function guardActions(): void {
  if (guarded) return;
  guarded = true;
  const folder = dirname(require.resolve("dynalite/actions/putItem"));
  for (const file of readdirSync(folder)) {
    if (!file.endsWith(".js")) continue;
    const path = join(folder, file);
    require(path);
    const module = require.cache[path];
    if (!module || typeof module.exports !== "function") continue;
    const action = module.exports as Action;
    module.exports = ((store, data, callback) => {
      let answered = false;
      const answer: ActionCallback = (error, out) => {
        if (answered) return;
        answered = true;
        if (error && !error.statusCode) callback(storeFault(error));
        else callback(error, out);
      };
      try {
        action(store, data, answer);
      } catch (error) {
        answer(error as Error);
      }
    }) satisfies Action;
  }
}

/** A store error as dynalite sends DynamoDB's own errors: a status and a body the SDK parses. */
function storeFault(error: Error & { cause?: unknown }): Error & { statusCode: number; body: unknown } {
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return Object.assign(new Error(error.message), {
    statusCode: 500,
    body: {
      __type: "com.amazonaws.dynamodb.v20120810#InternalServerError",
      message: `local store failure: ${(error as { code?: string }).code ?? error.name}: ${error.message}${cause}`,
    },
  });
}

/**
 * Reads answered on the spot. dynalite reads the table's description and the item before every
 * request, each through LevelDB's asynchronous `get`, a round trip to libuv's thread pool; a
 * LevelDB read is a lookup in memory or the page cache, cheaper than the hand-over itself. So a read
 * of an open database goes through `getSync` (classic-level, memory-level) and its callback is
 * still called later (setImmediate, as dynalite's own wrapper does); anything else (a database
 * opening or closed, a value that does not decode, a backend without `getSync`) takes dynalite's
 * own path, which reports it as dynalite always has. Writes are untouched.
 */
function readInline(db: LevelDatabase): void {
  const viaPool = db.get;
  const getSync = db.getSync;
  if (typeof getSync !== "function") return;
  db.get = function get(key, callback) {
    if (typeof callback !== "function" || db.status !== "open") return viaPool.call(db, key, callback);
    let value: unknown;
    try {
      value = getSync.call(db, key);
    } catch {
      return viaPool.call(db, key, callback);
    }
    setImmediate(callback, null, value);
  };
}

/** An SDK request handler: the transport under the client's middleware, typed from the client's own config. */
export type RequestHandler = Extract<
  NonNullable<DynamoDBClientConfig["requestHandler"]>,
  { handle: (...args: never[]) => unknown }
>;
/** The parts of the serialized, signed request (smithy's HttpRequest) that dynalite reads. */
interface SdkRequest {
  method: string;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: unknown;
}
/** An HTTP response as smithy's deserializers read it (HttpResponse). */
interface SdkResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

export interface LocalDynamo {
  /** `http://127.0.0.1:<port>`: where other processes reach this database. */
  endpoint: string;
  /** A client of this process that reaches the database without a socket (see {@link directHandler}). */
  client: DynamoDBClient;
  /** The in-process transport itself, for a client that picks its transport per request. */
  direct: RequestHandler;
  /** Destroys the client and stops the server (flushing the data folder, when there is one). */
  close(): Promise<void>;
}

/**
 * The SDK's logger, minus `info`. The client's logger middleware calls `logger?.info?.({ input,
 * output })` after every request, and builds those arguments first by walking the whole input and
 * output against the operation's schema to mask sensitive members: a listing's 100 index entries,
 * a BatchGet's 50 runs, every time, for the default logger to drop. Without an `info` method the
 * optional call is skipped with its arguments. Nothing else changes: the default logger logs nothing
 * at any level, and errors still reach `error` (a no-op, as by default).
 */
const QUIET_LOGGER = { debug() {}, warn() {}, error() {} } as unknown as NonNullable<
  DynamoDBClientConfig["logger"]
>;

type AuthScheme = NonNullable<DynamoDBClientConfig["httpAuthSchemes"]>[number];

/**
 * SigV4 as far as dynalite looks at it. dynalite checks that a request carries an Authorization
 * header of SigV4's form and a date; it verifies no signature (nor does anything else on the way to
 * it). The real signer computes a canonical request, a hash of the body and a chain of HMACs for
 * every request: a tenth of the client's time per request, for nobody. This one writes a header
 * of the same form with a signature of zeros. Only clients that talk to redraft's own dynalite use
 * it; a client of any other endpoint (DynamoDB Local in `npm run test:fidelity`) signs for real.
 */
const DYNALITE_AUTH: AuthScheme = {
  schemeId: "aws.auth#sigv4",
  identityProvider: (config) => config.getIdentityProvider("aws.auth#sigv4"),
  signer: {
    sign: async (request) => {
      const stamp = `${new Date().toISOString().replace(/[-:]|\.\d{3}/g, "")}`;
      request.headers["x-amz-date"] = stamp;
      request.headers.authorization =
        `AWS4-HMAC-SHA256 Credential=local/${stamp.slice(0, 8)}/local/dynamodb/aws4_request, ` +
        `SignedHeaders=host;x-amz-date, Signature=${"0".repeat(64)}`;
      return request;
    },
  },
};

/**
 * A client of a local DynamoDB: any credentials and region do; the SDK only insists that there are
 * some. `dynalite`: the endpoint is redraft's own dynalite, which checks no signature (see
 * {@link DYNALITE_AUTH}); `requestHandler`: the transport to it.
 */
export function localDynamoClient(
  endpoint: string,
  options: { requestHandler?: RequestHandler; dynalite?: boolean } = {},
): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: "local",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    logger: QUIET_LOGGER,
    ...(options.requestHandler && { requestHandler: options.requestHandler }),
    ...(options.dynalite && { httpAuthSchemes: [DYNALITE_AUTH] }),
  });
}

const encoder = new TextEncoder();

function queryString(query: SdkRequest["query"]): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(query ?? {}))
    for (const one of Array.isArray(value) ? value : [value ?? null])
      pairs.push(
        one === null ? encodeURIComponent(key) : `${encodeURIComponent(key)}=${encodeURIComponent(one)}`,
      );
  return pairs.length > 0 ? `?${pairs.join("&")}` : "";
}

/**
 * The SDK client's transport to a dynalite of this process, without HTTP: the request the client
 * serialized and signed is handed to dynalite's own request listener (the function its HTTP server
 * calls) as a stand-in for the incoming message, and the listener's answer goes back to the client
 * as the HTTP response it would have read from the socket. Both ends are unchanged: the SDK still
 * serializes, signs, retries, parses errors into `ConditionalCheckFailedException` and the rest;
 * dynalite still parses, validates and answers with the same status codes and bodies. What goes is
 * the loopback socket, the HTTP framing on both sides and the connection pool.
 */
function directHandler(listener: (req: IncomingMessage, res: ServerResponse) => void): RequestHandler {
  const handle = (request: SdkRequest): Promise<{ response: SdkResponse }> =>
    new Promise<{ response: SdkResponse }>((resolve, reject) => {
      // The JSON protocol's body is bytes (a Uint8Array subclass whose valueOf is its text): viewed, not converted.
      const body =
        request.body instanceof Uint8Array
          ? Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength)
          : typeof request.body === "string"
            ? Buffer.from(request.body)
            : undefined;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
      const incoming = Object.assign(new EventEmitter(), {
        method: request.method,
        url: `${request.path}${queryString(request.query)}`,
        headers,
      });
      const answer: Record<string, string> = {};
      const outgoing = {
        statusCode: 200,
        setHeader(name: string, value: unknown) {
          answer[name.toLowerCase()] = String(value);
        },
        end(chunk?: string) {
          const bytes = encoder.encode(chunk ?? "");
          answer["content-length"] ??= String(bytes.length);
          const response: SdkResponse = { statusCode: outgoing.statusCode, headers: answer, body: bytes };
          resolve({ response });
        },
      };
      try {
        listener(incoming as unknown as IncomingMessage, outgoing as unknown as ServerResponse);
        if (body) incoming.emit("data", body);
        incoming.emit("end");
      } catch (error) {
        reject(error);
      }
    });
  return { handle };
}

/**
 * Starts dynalite in this process on 127.0.0.1 and a free port, for other processes; this process
 * reaches it through `client` without a socket. Tables are created (and deleted) at once rather
 * than after dynalite's default half second.
 *
 * @param options.path folder that keeps the data between runs; in memory when absent
 */
export async function startDynalite(options: { path?: string } = {}): Promise<LocalDynamo> {
  if (options.path) await mkdir(options.path, { recursive: true });
  const { server, db } = createDynalite({
    ...(options.path && { path: options.path }),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  await db.open();
  readInline(db);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const listener = server.listeners("request")[0] as Parameters<typeof directHandler>[0];
  const direct = directHandler(listener);
  const client = localDynamoClient(endpoint, { requestHandler: direct, dynalite: true });
  const requests = countRequests(server, listener);
  return {
    endpoint,
    client,
    direct,
    close: async () => {
      client.destroy();
      // dynalite closes its database once the HTTP server has closed and no single LevelDB operation
      // is pending, but an action is several operations (a put, then its index updates): closing
      // between two of them made the next one throw "Database is closed" out of dynalite's callback
      // and took the process down. So: refuse new requests, let the ones in flight be answered, and
      // only then close the connections (keep-alive sockets would hold close() open) and the server.
      requests.refuseNew();
      const closed = new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
      server.closeIdleConnections();
      await requests.drained(IN_FLIGHT_WAIT_MS);
      server.closeAllConnections();
      await closed;
    },
  };
}

/** How long closing waits for the requests in flight before it closes their connections anyway. */
const IN_FLIGHT_WAIT_MS = 30_000;

/**
 * Puts dynalite's request listener behind a counter of requests in flight (a request counts until its
 * response is ended, which dynalite does when the action's last database operation is done). Once
 * `refuseNew` is called, a request that arrives on a kept-alive connection has that connection
 * dropped: its client reconnects to whoever serves the folder next.
 */
function countRequests(server: Server, listener: (req: IncomingMessage, res: ServerResponse) => void) {
  let inFlight = 0;
  let refusing = false;
  let onDrained: (() => void) | undefined;
  server.removeListener("request", listener);
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    if (refusing) {
      req.socket.destroy();
      return;
    }
    inFlight += 1;
    let ended = false;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.end = ((...args: unknown[]) => {
      if (!ended) {
        ended = true;
        inFlight -= 1;
        if (inFlight === 0) onDrained?.();
      }
      return end(...args);
    }) as ServerResponse["end"];
    listener(req, res);
  });
  return {
    refuseNew: () => {
      refusing = true;
    },
    drained: (boundMs: number) =>
      inFlight === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const bound = setTimeout(resolve, boundMs);
            onDrained = () => {
              clearTimeout(bound);
              resolve();
            };
          }),
  };
}

/**
 * Creates the table (with its indexes) unless it exists, then waits until it and its indexes are
 * active. Safe to call on every start: a table found active costs one request.
 */
export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  options: { timeoutMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  const active = async () => {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    return (
      Table?.TableStatus === "ACTIVE" &&
      (Table.GlobalSecondaryIndexes ?? []).every((index) => index.IndexStatus === "ACTIVE")
    );
  };
  const found = await active().catch((error: Error) => {
    if (error.name === "ResourceNotFoundException") return false;
    throw error;
  });
  if (found) return;
  await createTable(client, tableName);
  while (!(await active())) {
    if (Date.now() > deadline) throw new Error(`table ${tableName} is not active after waiting`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
