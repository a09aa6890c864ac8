import { randomBytes, timingSafeEqual } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import pLimit from "p-limit";
import * as z from "zod";
import { localRunIds, type RunIdLister } from "../app/ids.js";
import { UsageError } from "../app/inputs.js";
import {
  REVIEW_DECISIONS,
  type ReviewOptions,
  type ReviewRuntime,
  reviewRun,
  UNDO_MS,
  undoReview,
} from "../app/review.js";
import { resolveRun } from "../app/run-id.js";
import type { AslDefinition } from "../contracts/asl.js";
import { describeZodError } from "../shared/draft.js";
import { listRunsView, RunsQuerySchema, runDetailView, type ViewerData } from "./api.js";
import type { ApiError, ReviewAnswer, UndoAnswer } from "./api-types.js";
import { type BatchReader, batchDetailView, findBatch, listBatchesView } from "./batches.js";
import { writeJsonStream } from "./stream-json.js";

/** The only interface the viewer listens on: it shows drafts and takes review decisions, for this machine alone. */
const VIEWER_HOST = "127.0.0.1";
const DEFAULT_VIEWER_PORT = 4321;
/** An edited draft sent from the page; drafts past the runtime's own size limit are refused there anyway. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;
/** The header the page sends its token in: a cross-origin form cannot set it. */
export const TOKEN_HEADER = "x-redraft-token";

export interface ViewerOptions {
  /** The data dir's stores and histories, and what a review writes with (a LocalRuntime is both). */
  runtime: ViewerData & ReviewRuntime;
  asl: AslDefinition;
  /** Starts the run of an edited draft, as `redraft review … edit` does. */
  submit: ReviewOptions["submit"];
  /** Who decides the reviews made in the page, unless the page names someone. */
  reviewer: string;
  /** @default DEFAULT_VIEWER_PORT; 0 picks a free port */
  port?: number;
  /**
   * Every run id of the store, so that short ids are unique among all of them. @default a local
   * runtime's, read from its table's index; none for any other store
   */
  listIds?: RunIdLister;
}

export interface Viewer {
  /** `http://127.0.0.1:<port>/` */
  url: string;
  port: number;
  /** The same-origin token the page sends with every POST. */
  token: string;
  close(): Promise<void>;
}

const RunIdSchema = z.string().regex(/^[A-Za-z0-9-]{1,100}$/, "not a run id");
const BatchIdSchema = z.string().regex(/^b-[0-9a-f]{1,64}$/i, "not a batch id (b-<hex>)");

const ReviewBodySchema = z
  .strictObject({
    decision: z.enum(REVIEW_DECISIONS),
    note: z.string().max(2000).optional(),
    reviewer: z.string().trim().min(1).max(100).optional(),
    /** Approve a draft that still has error violations: the page's checkbox, ticked. */
    override: z.boolean().optional(),
    /** The edited draft's JSON text (edit only). */
    draft: z.string().min(1).optional(),
  })
  .refine((body) => (body.decision === "edit") === (body.draft !== undefined), {
    message: "an edit needs the edited draft, and only an edit takes one",
    path: ["draft"],
  });

const UndoBodySchema = z.strictObject({ reviewer: z.string().trim().min(1).max(100).optional() });

/**
 * Every run id of the store: as the options list them (a stack's runtime), or a local runtime's data
 * dir, read from its index. A runtime with neither lists none (the list shows full ids).
 */
const viewerRunIds = ({ runtime, listIds }: Pick<ViewerOptions, "runtime" | "listIds">) =>
  listIds ?? (isLocal(runtime) ? localRunIds(runtime) : undefined);

/** A local runtime: a data dir and the embedded table inside it. */
const isLocal = (runtime: object): runtime is { dataDir: string; runIds(): Promise<string[]> } =>
  "dataDir" in runtime && "runIds" in runtime;

/**
 * The full id of the run an address names: the id itself, or any short id a table prints (a unique
 * prefix, a batch item's `b-<batch>-<line>`), as the command line takes them. None is a 404, an
 * ambiguous one a 400 listing the candidates.
 */
async function viewerRunId(options: ViewerOptions, given: string): Promise<string> {
  const { runtime } = options;
  if (await runtime.runs.getRun(given)) return given;
  try {
    return (await resolveRun(runtime.runs, given, "this data folder", viewerRunIds(options))).runId;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    throw new HttpError(error.message.startsWith("no run") ? 404 : 400, error.message);
  }
}

/** The batch records the viewer reads: the runtime's own (the data dir's, or a stack's). */
const batchReader = (runtime: ViewerOptions["runtime"]): BatchReader | undefined => runtime.batches;

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** The page's script when run from the sources: bundled in memory once per process (ui/bundle.ts). */
let sourceBundle: Promise<Buffer> | undefined;

/**
 * Page assets, read once at start: every file of ui/assets/ with a known type (the page, its CSS
 * and, in dist/, the bundled script `npm run build` wrote there), the page's script, and Mermaid.
 * Nothing else on disk is reachable.
 */
async function loadAssets(): Promise<Map<string, { body: Buffer; type: string }>> {
  const here = new URL("./assets/", import.meta.url);
  const assets = new Map<string, { body: Buffer; type: string }>();
  for (const name of (await readdir(here)).sort()) {
    const type = CONTENT_TYPES[extname(name)];
    if (!type || !/^[a-z0-9-]+\.[a-z]+$/.test(name)) continue;
    const body = await readFile(new URL(name, here));
    assets.set(name === "index.html" ? "/" : `/${name}`, { body, type });
  }
  // Run from the sources there is no built bundle: esbuild (a devDependency, there with the
  // sources) bundles ui/web/ in memory, once for every viewer this process starts.
  if (!assets.has("/app.js")) {
    sourceBundle ??= import("./bundle.js").then(async ({ bundleViewer }) =>
      Buffer.from((await bundleViewer(join(import.meta.dirname, ".."))).code),
    );
    assets.set("/app.js", { body: await sourceBundle, type: CONTENT_TYPES[".js"] as string });
  }
  const mermaid = createRequire(import.meta.url).resolve("mermaid/dist/mermaid.min.js");
  assets.set("/mermaid.min.js", { body: await readFile(mermaid), type: CONTENT_TYPES[".js"] as string });
  return assets;
}

/** A path segment decoded; a malformed percent-encoding is the client's mistake, a 400. */
function decodedSegment(segment: string, what: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `the ${what} id in the address is not valid percent-encoding`);
  }
}

class HttpError extends Error {
  override readonly name = "HttpError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** How many run pages are built and written at once; the others wait their turn (see route). */
const RUN_PAGES_AT_ONCE = 2;

const SECURITY_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  // Mermaid writes a <style> into each SVG it draws; scripts come from this server only.
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

function send(res: ServerResponse, status: number, body: string | Buffer, type: string, extra = {}) {
  res.writeHead(status, {
    "content-type": type,
    ...SECURITY_HEADERS,
    ...extra,
  });
  res.end(body);
}

const sendJson = (res: ServerResponse, status: number, value: unknown) =>
  send(res, status, JSON.stringify(value), "application/json; charset=utf-8");

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `the request is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  try {
    return JSON.parse(await readBody(req));
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, "the body is not JSON");
  }
}

const sameToken = (given: string | undefined, token: string) =>
  given !== undefined &&
  given.length === token.length &&
  timingSafeEqual(Buffer.from(given), Buffer.from(token));

/**
 * Serves the viewer on 127.0.0.1: the page, its assets, and JSON APIs over the data dir (runs list,
 * run detail, review). Requests naming another Host are refused (DNS rebinding), and a review must
 * come as JSON with the page's token from the page's own origin.
 */
export async function startViewer(options: ViewerOptions): Promise<Viewer> {
  const assets = await loadAssets();
  const token = randomBytes(24).toString("hex");
  const { runtime, asl } = options;
  const batches = batchReader(runtime);
  let origins: Set<string> = new Set();
  const runPages = pLimit(RUN_PAGES_AT_ONCE);
  // One review at a time: a double click must not approve twice or race an edit.
  let reviews: Promise<unknown> = Promise.resolve();

  /** A write must come as JSON from the page itself: its origin, and its token. */
  function checkWrite(req: IncomingMessage): void {
    if (!/^application\/json(;|$)/i.test(req.headers["content-type"] ?? ""))
      throw new HttpError(415, "a review is sent as application/json");
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin))
      throw new HttpError(403, "cross-origin request refused");
    const given = req.headers[TOKEN_HEADER];
    if (!sameToken(typeof given === "string" ? given : undefined, token))
      throw new HttpError(403, "missing or wrong page token");
  }

  /** Takes back the page's reviewer's approval or rejection (app/review.ts undoReview). */
  async function undo(runId: string, req: IncomingMessage): Promise<UndoAnswer> {
    checkWrite(req);
    const parsed = UndoBodySchema.safeParse(await readJsonBody(req));
    if (!parsed.success) throw new HttpError(400, describeZodError(parsed.error));
    try {
      const outcome = await undoReview(runtime, runId, {
        reviewer: parsed.data.reviewer ?? options.reviewer,
      });
      return { message: outcome.message, status: outcome.status };
    } catch (error) {
      if (error instanceof UsageError) throw new HttpError(409, error.message);
      throw error;
    }
  }

  async function review(runId: string, req: IncomingMessage): Promise<ReviewAnswer> {
    checkWrite(req);
    const json = await readJsonBody(req);
    const parsed = ReviewBodySchema.safeParse(json);
    if (!parsed.success) throw new HttpError(400, describeZodError(parsed.error));
    const body = parsed.data;
    const dir = body.draft !== undefined ? await mkdtemp(join(tmpdir(), "redraft-edit-")) : undefined;
    const file = dir ? join(dir, "edited.json") : undefined;
    try {
      if (file) await writeFile(file, body.draft ?? "");
      const message = await reviewRun(runtime, runId, body.decision, {
        ...(file && { file }),
        ...(body.note && { note: body.note }),
        ...(body.override && { override: true }),
        reviewer: body.reviewer ?? options.reviewer,
        submit: options.submit,
      });
      const run = await runtime.runs.getRun(runId);
      // An approval or a rejection may be taken back by its reviewer for a while: the page offers it.
      const undoUntil =
        run?.review && body.decision !== "edit"
          ? new Date(Date.parse(run.review.at) + UNDO_MS).toISOString()
          : undefined;
      return { message, status: run?.status ?? "unknown", ...(undoUntil && { undoUntil }) };
    } catch (error) {
      // The review's own refusals (not under review, a bad edit, another reviewer's decision first,
      // errors left that the approval did not say it overrides) are the person's to read, not a
      // server fault.
      if (
        error instanceof UsageError ||
        (error as Error).name === "ReviewConflictError" ||
        (error as Error).name === "OverrideRequiredError"
      ) {
        const { message } = error as Error;
        const text = file ? message.replaceAll(file, "the edited draft") : message;
        throw new HttpError(409, text);
      }
      throw error;
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!origins.has(`http://${req.headers.host ?? ""}`))
      throw new HttpError(421, "this server answers only to 127.0.0.1 and localhost");
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const asset = assets.get(url.pathname);
    if (req.method === "GET" && asset) {
      const body =
        url.pathname === "/"
          ? Buffer.from(asset.body.toString("utf8").replace("__TOKEN__", token))
          : asset.body;
      return send(res, 200, body, asset.type);
    }
    if (req.method === "GET" && url.pathname === "/api/runs") {
      const query = RunsQuerySchema.safeParse(
        Object.fromEntries([...url.searchParams].filter(([, value]) => value !== "")),
      );
      if (!query.success) throw new HttpError(400, describeZodError(query.error));
      const listed = await listRunsView(runtime, query.data, (await viewerRunIds(options)?.()) ?? []).catch(
        (error: unknown) => {
          // A page after a run the store no longer has (or never had): the page asks from the start.
          if (error instanceof RangeError) throw new HttpError(404, error.message);
          throw error;
        },
      );
      return sendJson(res, 200, listed);
    }
    if (url.pathname === "/api/batches" || url.pathname.startsWith("/api/batches/")) {
      if (req.method !== "GET") throw new HttpError(405, "method not allowed");
      if (!batches) throw new HttpError(404, "this viewer has no batches");
      if (url.pathname === "/api/batches") return sendJson(res, 200, await listBatchesView(batches));
      const given = BatchIdSchema.safeParse(
        decodedSegment(url.pathname.slice("/api/batches/".length), "batch"),
      );
      if (!given.success) throw new HttpError(400, describeZodError(given.error, "batchId"));
      const found = await findBatch(batches, given.data);
      if (!found) throw new HttpError(404, `no batch ${given.data}`);
      if ("ambiguous" in found)
        throw new HttpError(
          400,
          `ambiguous: ${found.ambiguous.length} batches start with ${given.data} (${found.ambiguous.slice(0, 5).join(", ")})`,
        );
      return sendJson(
        res,
        200,
        await batchDetailView(runtime, found, (await viewerRunIds(options)?.()) ?? []),
      );
    }
    const match = /^\/api\/runs\/([^/]+)(\/final\.json|\/review|\/undo)?$/.exec(url.pathname);
    if (match) {
      const runId = RunIdSchema.safeParse(decodedSegment(match[1] ?? "", "run"));
      if (!runId.success) throw new HttpError(400, describeZodError(runId.error, "runId"));
      const id = await viewerRunId(options, runId.data);
      if (match[2] === "/review" || match[2] === "/undo") {
        if (req.method !== "POST") throw new HttpError(405, "a review is a POST");
        const write = match[2] === "/review" ? review : undo;
        const done = reviews.then(() => write(id, req));
        reviews = done.catch(() => undefined);
        return sendJson(res, 200, await done);
      }
      if (req.method !== "GET") throw new HttpError(405, "method not allowed");
      // A run page holds the run's drafts, reports and history: megabytes for a large draft. At
      // most RUN_PAGES_AT_ONCE are built and written at a time, each written in pieces, so twenty
      // large pages asked at once neither hold the memory of twenty nor a small request behind them.
      return runPages(async () => {
        // Reading a large run is one long turn (its draft parsed whole): the requests that came in
        // meanwhile are let in first, so a small one never waits for more than the page in hand.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const detail = await runDetailView(runtime, asl, id);
        if (!detail) throw new HttpError(404, `no run ${id}`);
        if (match[2] === "/final.json") {
          if (!detail.finalDraft) throw new HttpError(404, `run ${id} has no final draft`);
          const name = `${detail.run.draftId.replace(/[^A-Za-z0-9._-]+/g, "_")}.final.json`;
          return send(res, 200, `${JSON.stringify(detail.finalDraft, null, 2)}\n`, "application/json", {
            "content-disposition": `attachment; filename="${name}"`,
          });
        }
        res.writeHead(200, { ...SECURITY_HEADERS, "content-type": "application/json; charset=utf-8" });
        await writeJsonStream(res, detail);
      });
    }
    throw new HttpError(404, "not found");
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      const status = error instanceof HttpError ? error.status : 500;
      const message =
        error instanceof HttpError ? error.message : `${(error as Error).name}: ${(error as Error).message}`;
      if (!res.headersSent) sendJson(res, status, { error: message } satisfies ApiError);
      else res.end();
    });
  });
  const wanted = options.port ?? DEFAULT_VIEWER_PORT;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        // Another viewer, or another program, has the port: the person picks another.
        error.code === "EADDRINUSE"
          ? new UsageError(
              `port ${wanted} on ${VIEWER_HOST} is in use: choose another with --port <n> (--port 0 picks a free one)`,
            )
          : error,
      ),
    );
    server.listen(wanted, VIEWER_HOST, () => {
      server.removeAllListeners("error");
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  origins = new Set([`http://${VIEWER_HOST}:${port}`, `http://localhost:${port}`]);
  return {
    url: `http://${VIEWER_HOST}:${port}/`,
    port,
    token,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
    },
  };
}

/** `redraft ui`: serves the viewer, prints its address, and stops on Ctrl-C or SIGTERM. */
export async function serveUntilStopped(options: ViewerOptions, say: (line: string) => void): Promise<void> {
  const viewer = await startViewer(options);
  process.stdout.write(`${viewer.url}\n`);
  say("Serving the viewer on 127.0.0.1 only (Ctrl-C to stop).");
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await viewer.close();
}
