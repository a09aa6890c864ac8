import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { type BatchRecord, BatchRecordSchema } from "../shared/batch/record.js";
import type { RoundRecord } from "../shared/batch/rounds.js";
import { BlobNotFoundError, RunFinishedError, RunNotFoundError } from "../shared/errors.js";
import { claimTerms, mayTakeClaim } from "../shared/store/claim.js";
import {
  DECISION_REASONS,
  FINAL_STATUSES,
  type RunFacets,
  type RunFilter,
  type RunTotals,
} from "../shared/store/totals.js";
import {
  type AttemptRecord,
  addTotals,
  type BlobStore,
  isActiveStatus,
  type Review,
  type RunOutcome,
  type RunQuery,
  type RunRecord,
  type RunStatus,
  type RunStore,
  type TokenTotals,
} from "../shared/store/types.js";

/** The data folder's database file: runs, attempts, claims, blobs, execution histories and batches. */
export const SQLITE_FILE = "redraft.db";

/**
 * node:sqlite, loaded on first use. Node 22 announces it as experimental on stderr when it is first
 * loaded; that warning is not the user's business on every `redraft runs`, so it alone is dropped
 * while the module loads (a synchronous require: no other warning can be emitted in between).
 */
let sqlite: typeof import("node:sqlite") | undefined;
function loadSqlite(): typeof import("node:sqlite") {
  if (sqlite) return sqlite;
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (/SQLite is an experimental feature/.test(String(warning))) return;
    return (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    sqlite = createRequire(import.meta.url)("node:sqlite") as typeof import("node:sqlite");
  } finally {
    process.emitWarning = emit;
  }
  return sqlite;
}

/** What went wrong with the database file, as the data folder's fault messages need it. */
export type StoreFaultKind = "full" | "damaged" | "busy" | "readonly" | "unopenable" | "io" | "foreign";

/**
 * A SQLite failure said as the data folder's fault: `kind` from SQLite's primary result code
 * (SQLITE_FULL, SQLITE_CORRUPT / SQLITE_NOTADB, SQLITE_BUSY / SQLITE_LOCKED, …), `message` with
 * SQLite's own words. local/data-dir.ts turns it into the one line a person reads.
 */
export class LocalStoreError extends Error {
  override readonly name = "LocalStoreError";
  constructor(
    readonly kind: StoreFaultKind,
    readonly file: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_READONLY = 8;
const SQLITE_IOERR = 10;
const SQLITE_CORRUPT = 11;
const SQLITE_FULL = 13;
const SQLITE_CANTOPEN = 14;
const SQLITE_NOTADB = 26;

/** A SQLite error as a {@link LocalStoreError}; anything else (a bug, a zod failure) unchanged. */
function storeFault(error: unknown, file: string): unknown {
  const e = error as { code?: unknown; errcode?: unknown; errstr?: unknown; message?: unknown };
  if (e?.code !== "ERR_SQLITE_ERROR" || typeof e.errcode !== "number") return error;
  const primary = e.errcode & 0xff;
  const kind: StoreFaultKind =
    primary === SQLITE_FULL
      ? "full"
      : primary === SQLITE_CORRUPT || primary === SQLITE_NOTADB
        ? "damaged"
        : primary === SQLITE_BUSY || primary === SQLITE_LOCKED
          ? "busy"
          : primary === SQLITE_READONLY
            ? "readonly"
            : primary === SQLITE_CANTOPEN
              ? "unopenable"
              : primary === SQLITE_IOERR
                ? "io"
                : "io";
  return new LocalStoreError(kind, file, `${String(e.message)} (${String(e.errstr ?? e.errcode)})`, {
    cause: error,
  });
}

/** How long a write waits for another process's write transaction before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 30_000;
/** The schema this code reads and writes (PRAGMA user_version). */
const SCHEMA_VERSION = 1;
/**
 * PRAGMA application_id of a file redraft made ("RDRF"), written with its tables: a SQLite file of
 * another program's found where redraft's should be is known for what it is before anything is
 * written to it.
 */
const APPLICATION_ID = 0x52445246;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, status TEXT NOT NULL, draft_id TEXT NOT NULL,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_at, run_id);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, updated_at, run_id);
CREATE INDEX IF NOT EXISTS runs_by_draft ON runs (draft_id, created_at);
CREATE TABLE IF NOT EXISTS attempts (
  run_id TEXT NOT NULL, attempt INTEGER NOT NULL, record TEXT NOT NULL,
  PRIMARY KEY (run_id, attempt)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_counted (
  run_id TEXT NOT NULL, attempt INTEGER NOT NULL, PRIMARY KEY (run_id, attempt)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claims (
  content_hash TEXT PRIMARY KEY, run_id TEXT NOT NULL, claimed_at_ms INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, body BLOB NOT NULL, deflated INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS executions (name TEXT PRIMARY KEY, summary BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS batches (
  batch_id TEXT PRIMARY KEY, started_key TEXT NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS batches_by_started ON batches (started_key);
`;

/** Bodies at least this long are kept deflated: JSON drafts and reports shrink to a third or less. */
const DEFLATE_FROM_BYTES = 256;
/**
 * A body as stored: always bytes (UTF-8), never SQLite text, which a NUL character would cut short
 * (an upload is whatever was uploaded, binary included).
 */
const pack = (text: string): { body: Uint8Array; deflated: number } => {
  const bytes = Buffer.from(text, "utf8");
  return bytes.length >= DEFLATE_FROM_BYTES
    ? { body: deflateRawSync(bytes, { level: 1 }), deflated: 1 }
    : { body: bytes, deflated: 0 };
};
const unpack = (body: unknown, deflated: unknown): string =>
  deflated === 1
    ? inflateRawSync(body as Uint8Array).toString("utf8")
    : typeof body === "string"
      ? body
      : Buffer.from(body as Uint8Array).toString("utf8");

/** A step {@link SqliteDb.write} queued for the end of the turn, and whom to tell how it went. */
interface QueuedWrite {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * One data folder's SQLite database, opened by each process that uses the folder. WAL mode lets
 * readers go on while one process writes, and several processes write in turn: a write transaction
 * (`BEGIN IMMEDIATE`) waits up to {@link BUSY_TIMEOUT_MS} for another's to end. Every read-check-
 * write of the stores is one such transaction, so a conditional write is decided atomically across
 * processes, as DynamoDB decides a condition expression. A process killed mid-transaction leaves
 * nothing of it: SQLite rolls the WAL's uncommitted frames back when the file is next opened.
 *
 * `synchronous = NORMAL`: a commit is in the WAL (the operating system's) before it returns, so a
 * killed process loses nothing it committed; only a power cut may lose the last commits, never
 * consistency.
 */
export class SqliteDb {
  readonly file: string;
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();
  #open = true;
  /** The writes {@link write} queued in this turn of the event loop, committed together by {@link flush}. */
  #queued: QueuedWrite[] = [];

  private constructor(file: string, db: DatabaseSync) {
    this.file = file;
    this.#db = db;
  }

  /** Opens (creating when missing) `<dataDir>/redraft.db`. Throws LocalStoreError for a bad file. */
  static open(dataDir: string, options: { busyTimeoutMs?: number } = {}): SqliteDb {
    const file = join(dataDir, SQLITE_FILE);
    const { DatabaseSync } = loadSqlite();
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(file);
      db.exec(`PRAGMA busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? BUSY_TIMEOUT_MS)}`);
      const store = new SqliteDb(file, db);
      store.#prepareSchema();
      return store;
    } catch (error) {
      try {
        db?.close();
      } catch {
        // Already failing: the first error is the one to report.
      }
      throw storeFault(error, file);
    }
  }

  #prepareSchema(): void {
    const version = Number(
      (this.#db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version,
    );
    // Read before the first write (auto_vacuum, journal_mode, the tables): a file that is not
    // redraft's is refused as it was found.
    const foreign = foreignFile(this.#db, version);
    if (foreign)
      throw new LocalStoreError("foreign", this.file, `${this.file} is not redraft's database: ${foreign}`);
    if (version > SCHEMA_VERSION)
      throw new LocalStoreError(
        "unopenable",
        this.file,
        `${this.file} was written by a newer redraft (schema ${version}, this one reads ${SCHEMA_VERSION})`,
      );
    // Only a new file takes auto_vacuum, before anything is written to it (WAL mode writes its
    // header): freed pages can then be given back to the file system by `compact` without
    // rewriting the whole file.
    if (version === 0) this.#db.exec("PRAGMA auto_vacuum = INCREMENTAL");
    // WAL is a property of the file, kept once set; setting it again is a no-op read.
    this.#db.exec("PRAGMA journal_mode = WAL");
    this.#db.exec("PRAGMA synchronous = NORMAL");
    if (version === SCHEMA_VERSION) return;
    this.transaction(() => {
      // Two processes may create a new folder's tables at once: the second finds them made.
      const now = this.#db.prepare("PRAGMA user_version").get() as { user_version: number };
      if (Number(now.user_version) >= SCHEMA_VERSION) return;
      this.#db.exec(SCHEMA);
      this.#db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
      this.#db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    });
  }

  /** One PRAGMA's value (page_count, freelist_count, auto_vacuum), for tests and `redraft doctor`. */
  pragma(name: "page_count" | "freelist_count" | "auto_vacuum" | "page_size"): number {
    return this.#pragma(name);
  }

  #pragma(name: string): number {
    const row = this.#db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown> | undefined;
    return Number(Object.values(row ?? {})[0]);
  }

  /** A prepared statement, prepared once per connection. */
  statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * `fn`'s reads and writes as one atomic step (a savepoint: a throw undoes `fn`'s writes alone),
   * resolved with its result once committed. The steps asked for in one turn of the event loop (the
   * drafts in flight each write, then wait) run together at the end of the turn in one `BEGIN
   * IMMEDIATE` transaction and one commit, instead of one commit (its WAL frames, file locks and
   * checksums) each. Nothing is said done before its commit: a process killed before it loses only
   * writes nobody was told of. `fn` runs inside the transaction, so a read-check-write is decided
   * atomically across processes as with {@link transaction}; the write lock is held only while the
   * queued steps run and commit, not across the turn, so other processes' writers get their turn.
   * `fn` reads and writes with `get`, `all` and `run`, never {@link transaction} (it is in one).
   */
  write<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.#queued.length === 0) setImmediate(() => this.flush());
      this.#queued.push({ fn, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /**
   * Runs and commits the queued {@link write} steps now, in the order they were asked for. Called at
   * the end of the turn, and before any write that does not wait for it (a synchronous statement or
   * transaction, a compaction, the close), so that writes keep their order.
   */
  flush(): void {
    const queued = this.#queued;
    if (queued.length === 0) return;
    this.#queued = [];
    const results: { ok: boolean; value: unknown }[] = [];
    try {
      this.#db.exec("BEGIN IMMEDIATE");
      for (const step of queued) {
        this.#db.exec("SAVEPOINT step");
        try {
          results.push({ ok: true, value: step.fn() });
          this.#db.exec("RELEASE step");
        } catch (error) {
          // SQLite undoes a whole transaction on some faults (a full disk, an I/O error): then every
          // step of it failed with that fault.
          if (!this.#db.isTransaction) throw error;
          this.#db.exec("ROLLBACK TO step");
          this.#db.exec("RELEASE step");
          results.push({ ok: false, value: storeFault(error, this.file) });
        }
      }
      this.#db.exec("COMMIT");
    } catch (error) {
      try {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      } catch {
        // The first error says what happened; a failed rollback is SQLite's to undo at the next open.
      }
      const fault = storeFault(error, this.file);
      for (const step of queued) step.reject(fault);
      return;
    }
    queued.forEach((step, i) => {
      const result = results[i] as { ok: boolean; value: unknown };
      if (result.ok) step.resolve(result.value);
      else step.reject(result.value);
    });
  }

  /** Runs one statement's `get`, faults translated. */
  get(sql: string, ...params: SQLInputValue[]): Record<string, unknown> | undefined {
    try {
      return this.statement(sql).get(...params) as Record<string, unknown> | undefined;
    } catch (error) {
      throw storeFault(error, this.file);
    }
  }

  all(sql: string, ...params: SQLInputValue[]): Record<string, unknown>[] {
    try {
      return this.statement(sql).all(...params) as Record<string, unknown>[];
    } catch (error) {
      throw storeFault(error, this.file);
    }
  }

  /** Runs one statement; outside a {@link write} step it commits on its own, after the queued steps. */
  run(sql: string, ...params: SQLInputValue[]): number {
    if (!this.#db.isTransaction) this.flush();
    try {
      return Number(this.statement(sql).run(...params).changes);
    } catch (error) {
      throw storeFault(error, this.file);
    }
  }

  /**
   * `fn` as one write transaction: taken at once (`BEGIN IMMEDIATE`, so two processes' read-then-
   * write never interleave), committed when `fn` returns, rolled back when it throws. Synchronous:
   * nothing else of this process runs in between either.
   */
  transaction<T>(fn: () => T): T {
    this.flush();
    try {
      this.#db.exec("BEGIN IMMEDIATE");
    } catch (error) {
      throw storeFault(error, this.file);
    }
    let result: T;
    try {
      result = fn();
      this.#db.exec("COMMIT");
    } catch (error) {
      try {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      } catch {
        // The first error says what happened; a failed rollback is SQLite's to undo at the next open.
      }
      throw storeFault(error, this.file);
    }
    return result;
  }

  /**
   * Gives the file system back what the database no longer uses: the write-ahead log is copied into
   * the file and truncated (when no other process is reading an older snapshot), and free pages are
   * released. Returns whether the log could be truncated; a busy one is left to the next compaction.
   */
  compact(): boolean {
    this.flush();
    // A truncating checkpoint waits for other processes' readers through the busy handler: here
    // it does not wait at all (a busy log is the next compaction's), then the handler is restored.
    const timeout = this.#pragma("busy_timeout");
    try {
      this.#db.exec("PRAGMA incremental_vacuum");
      this.#db.exec("PRAGMA busy_timeout = 0");
      const row = this.#db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get() as { busy: number } | undefined;
      return row?.busy === 0;
    } catch (error) {
      throw storeFault(error, this.file);
    } finally {
      this.#db.exec(`PRAGMA busy_timeout = ${timeout}`);
    }
  }

  /** Rewrites the whole file without free space (`VACUUM`): what `redraft doctor --repair` does. */
  vacuum(): void {
    this.flush();
    try {
      this.#db.exec("VACUUM");
      this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch (error) {
      throw storeFault(error, this.file);
    }
  }

  /** SQLite's own check of every page and index: "ok", or what is wrong. */
  integrityCheck(): string[] {
    return this.all("PRAGMA integrity_check").map((row) => String(Object.values(row)[0]));
  }

  close(): void {
    if (!this.#open) return;
    this.flush();
    this.#open = false;
    try {
      this.#db.close();
    } catch (error) {
      throw storeFault(error, this.file);
    }
  }
}

const parseRun = (row: Record<string, unknown> | undefined): RunRecord | undefined =>
  row ? (JSON.parse(String(row.record)) as RunRecord) : undefined;

/**
 * A filter as SQL. The part of the draft id is matched case-insensitively by lower() (ASCII letters,
 * as SQLite folds them), the kind and reason read from the record.
 */
function filterSql(filter: RunFilter): { where: string; params: SQLInputValue[] } {
  const clauses: string[] = [];
  const params: SQLInputValue[] = [];
  if (filter.status) clauses.push("status = ?") && params.push(filter.status);
  if (filter.reason) clauses.push("json_extract(record, '$.reason') = ?") && params.push(filter.reason);
  if (filter.kind) clauses.push("json_extract(record, '$.kind') = ?") && params.push(filter.kind);
  const needle = filter.q?.trim().toLowerCase();
  if (needle) clauses.push("instr(lower(draft_id), ?) > 0") && params.push(needle);
  return { where: clauses.length ? ` WHERE ${clauses.join(" AND ")}` : "", params };
}

/** A listing's position: the last run of the previous page, as `redraft runs --after` takes it. */
export interface RunCursor {
  at: string;
  runId: string;
}

/**
 * The RunStore on the data folder's SQLite database. A run is one row: its record as JSON, plus the
 * columns its listings are ordered and filtered by. Each conditional write reads and writes in one
 * transaction, with the MemoryRunStore's semantics (the contract in tests/stores/).
 */
export class SqliteRunStore implements RunStore {
  constructor(readonly db: SqliteDb) {}

  async createRun(run: RunRecord): Promise<boolean> {
    const record = JSON.stringify(run);
    return this.db.write(
      () =>
        this.db.run(
          "INSERT INTO runs (run_id, status, draft_id, created_at, updated_at, record) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING",
          run.runId,
          run.status,
          run.draftId,
          run.createdAt,
          run.updatedAt,
          record,
        ) === 1,
    );
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return parseRun(this.db.get("SELECT record FROM runs WHERE run_id = ?", runId));
  }

  async claimContent(
    contentHash: string,
    runId: string,
    now: string,
    windowMs: number,
    replaceHolder?: string,
  ): Promise<string> {
    const terms = claimTerms(runId, now, windowMs, replaceHolder);
    return this.db.write(() => {
      const row = this.db.get("SELECT run_id, claimed_at_ms FROM claims WHERE content_hash = ?", contentHash);
      const held = row && { runId: String(row.run_id), claimedAtMs: Number(row.claimed_at_ms) };
      if (held && !mayTakeClaim(held, terms)) return held.runId;
      this.db.run(
        "INSERT INTO claims (content_hash, run_id, claimed_at_ms) VALUES (?, ?, ?) ON CONFLICT (content_hash) DO UPDATE SET run_id = excluded.run_id, claimed_at_ms = excluded.claimed_at_ms",
        contentHash,
        terms.claim.runId,
        terms.claim.claimedAtMs,
      );
      return runId;
    });
  }

  /** Reads a run, changes it with `change`, and writes it back, in one atomic step. */
  #update<T>(runId: string, change: (run: RunRecord) => { write: boolean; result: T }): Promise<T> {
    return this.db.write(() => {
      const run = parseRun(this.db.get("SELECT record FROM runs WHERE run_id = ?", runId));
      if (!run) throw new RunNotFoundError(runId);
      const { write, result } = change(run);
      if (write)
        this.db.run(
          "UPDATE runs SET status = ?, updated_at = ?, record = ? WHERE run_id = ?",
          run.status,
          run.updatedAt,
          JSON.stringify(run),
          runId,
        );
      return result;
    });
  }

  async setStatus(
    runId: string,
    status: RunStatus,
    at: string,
    fields: Partial<RunOutcome> = {},
  ): Promise<void> {
    // Copied now: the step runs at the end of the turn, after the caller may have changed its object.
    const copy = structuredClone(fields);
    await this.#update(runId, (run) => {
      if (run.status === status) return { write: false, result: undefined };
      // An outcome stands: a step that outlived its execution cannot put the run back under way.
      if (isActiveStatus(status) && !isActiveStatus(run.status))
        throw new RunFinishedError(runId, run.status, status);
      Object.assign(run, copy, { status, updatedAt: at });
      run.transitions.push({ status, at });
      return { write: true, result: undefined };
    });
  }

  /**
   * Moves the run to `status` only when it exists and is in one of `from` (or, with no `from`, is
   * not in `status` already): the finalizer's and the status UpdateItem's conditional write. False
   * when the condition fails, where DynamoDB answers ConditionalCheckFailedException.
   */
  async finishActive(
    runId: string,
    status: RunStatus,
    from: readonly string[],
    at: string,
    fields: Partial<RunOutcome> = {},
  ): Promise<boolean> {
    const copy = structuredClone(fields);
    const allowed = [...from];
    try {
      return await this.#update(runId, (run) => {
        if (run.status === status || (allowed.length > 0 && !allowed.includes(run.status)))
          return { write: false, result: false };
        Object.assign(run, copy, { status, updatedAt: at });
        run.transitions.push({ status, at });
        return { write: true, result: true };
      });
    } catch (error) {
      if (error instanceof RunNotFoundError) return false;
      throw error;
    }
  }

  async updateRun(runId: string, fields: Partial<RunOutcome>): Promise<void> {
    const copy = structuredClone(fields);
    await this.#update(runId, (run) => {
      Object.assign(run, copy);
      return { write: true, result: undefined };
    });
  }

  async putAttempt(attempt: AttemptRecord): Promise<boolean> {
    const record = JSON.stringify(attempt);
    return this.db.write(
      () =>
        this.db.run(
          "INSERT INTO attempts (run_id, attempt, record) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
          attempt.runId,
          attempt.attempt,
          record,
        ) === 1,
    );
  }

  async addUsage(runId: string, attempt: number, usage: TokenTotals, costUsd: number): Promise<boolean> {
    const added = { ...usage };
    return this.#update(runId, (run) => {
      const counted =
        this.db.run(
          "INSERT INTO usage_counted (run_id, attempt) VALUES (?, ?) ON CONFLICT DO NOTHING",
          runId,
          attempt,
        ) === 1;
      if (counted) {
        run.tokens = addTotals(run.tokens, added);
        run.costUsd += costUsd;
      }
      return { write: counted, result: counted };
    });
  }

  async listAttempts(runId: string): Promise<AttemptRecord[]> {
    return this.db
      .all("SELECT record FROM attempts WHERE run_id = ? ORDER BY attempt", runId)
      .map((row) => JSON.parse(String(row.record)) as AttemptRecord);
  }

  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    return this.listPage(query);
  }

  /**
   * Newest first, like {@link listRuns}; `after` starts after a run of an earlier page (its
   * `createdAt`, or `updatedAt` for a listing by status, and its id), so that a long listing is read
   * a page at a time instead of whole.
   */
  listPage(query: RunQuery & { after?: RunCursor | undefined } = {}): RunRecord[] {
    // The review queue orders by when a run entered its status; other listings by creation.
    const time = query.status ? "updated_at" : "created_at";
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    if (query.status) where.push("status = ?") && params.push(query.status);
    if (query.draftId) where.push("draft_id = ?") && params.push(query.draftId);
    if (query.after)
      where.push(`(${time}, run_id) < (?, ?)`) && params.push(query.after.at, query.after.runId);
    const sql = `SELECT record FROM runs${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY ${time} DESC, run_id DESC LIMIT ?`;
    return this.db.all(sql, ...params, query.limit ?? -1).map((row) => parseRun(row) as RunRecord);
  }

  /**
   * Totals over every run `filter` matches, counted by SQLite in one pass over the table (the
   * viewer's cards: true however many runs there are, and nothing held but the counts), and the
   * kinds and reasons of all runs. Counted as {@link TotalsFold} counts, which tests hold it to.
   */
  totals(filter: RunFilter): { totals: RunTotals; facets: RunFacets } {
    const { where, params } = filterSql(filter);
    const decided = DECISION_REASONS.map((r) => `'${r}'`).join(", ");
    const final = FINAL_STATUSES.map((s) => `'${s}'`).join(", ");
    const row = this.db.get(
      `WITH r AS (SELECT status, draft_id, coalesce(json_extract(record, '$.reason'), '') AS reason,
         json_extract(record, '$.tokens.total') AS tokens, json_extract(record, '$.costUsd') AS cost
         FROM runs${where})
       SELECT count(*) AS runs, count(DISTINCT draft_id) AS drafts,
         total(status IN (${final})) AS finished, total(status = 'validated') AS validated,
         total(status = 'needs_manual_review') AS needs_review,
         total(status = 'validated' AND reason NOT IN (${decided})) AS loop_validated,
         total(status = 'needs_manual_review' OR reason IN (${decided})) AS sent_to_review,
         total(status = 'rejected' AND reason NOT IN (${decided})) AS loop_rejected,
         total(status = 'failed') AS failed, total(reason = 'approved') AS approved,
         total(reason = 'rejected_by_reviewer') AS rejected_by_reviewer,
         total(reason = 'superseded_by_edit') AS edited, total(tokens) AS tokens,
         total(CASE WHEN tokens = 0 OR cost > 0 THEN cost ELSE 0 END) AS usd,
         total(NOT (tokens = 0 OR cost > 0)) AS unpriced
       FROM r`,
      ...params,
    ) as Record<string, number>;
    const n = (name: string) => Number(row[name] ?? 0);
    const outcomes = {
      validated: n("loop_validated"),
      sentToReview: n("sent_to_review"),
      rejected: n("loop_rejected"),
      failed: n("failed"),
    };
    const strings = (sql: string) =>
      this.db
        .all(sql)
        .map((r) => r.v)
        .filter((v): v is string => typeof v === "string")
        .sort();
    return {
      totals: {
        runs: n("runs"),
        drafts: n("drafts"),
        finished: n("finished"),
        validated: n("validated"),
        needsReview: n("needs_review"),
        outcomes: {
          finished: outcomes.validated + outcomes.sentToReview + outcomes.rejected + outcomes.failed,
          ...outcomes,
        },
        decisions: {
          approved: n("approved"),
          rejected: n("rejected_by_reviewer"),
          edited: n("edited"),
          awaiting: n("needs_review"),
        },
        tokens: n("tokens"),
        cost: { usd: n("usd"), priced: n("unpriced") === 0 },
        unpricedRuns: n("unpriced"),
      },
      facets: {
        kinds: strings("SELECT DISTINCT json_extract(record, '$.kind') AS v FROM runs"),
        reasons: strings("SELECT DISTINCT json_extract(record, '$.reason') AS v FROM runs"),
      },
    };
  }

  /**
   * A page of the runs `filter` matches, newest first (by creation; by entering the status for a
   * listing by status, as {@link listPage}), after `after`: the viewer's list, a page at a time.
   */
  filteredPage(filter: RunFilter, limit: number, after?: RunCursor): RunRecord[] {
    const time = filter.status ? "updated_at" : "created_at";
    const { where, params } = filterSql(filter);
    const clauses = where ? [where.slice(" WHERE ".length)] : [];
    if (after) clauses.push(`(${time}, run_id) < (?, ?)`) && params.push(after.at, after.runId);
    const sql = `SELECT record FROM runs${clauses.length ? ` WHERE ${clauses.join(" AND ")}` : ""} ORDER BY ${time} DESC, run_id DESC LIMIT ?`;
    return this.db.all(sql, ...params, limit).map((row) => parseRun(row) as RunRecord);
  }

  /** Every run id, for resolving a prefix the user typed: the index alone is read, not the records. */
  runIds(): string[] {
    return this.db.all("SELECT run_id FROM runs").map((row) => String(row.run_id));
  }

  async setReview(runId: string, review: Review): Promise<void> {
    const copy = structuredClone(review);
    await this.#update(runId, (run) => {
      run.review = copy;
      return { write: true, result: undefined };
    });
  }

  async claimReview(
    runId: string,
    from: readonly RunStatus[],
    review: Review,
    staleBefore: string,
  ): Promise<boolean> {
    const copy = structuredClone(review);
    return this.#update(runId, (run) => {
      if (!from.includes(run.status) || (run.review && run.review.at >= staleBefore))
        return { write: false, result: false };
      run.review = copy;
      return { write: true, result: true };
    });
  }

  async releaseReview(runId: string, review: Review): Promise<void> {
    const { at, reviewer } = review;
    await this.#update(runId, (run) => {
      const mine = run.review?.at === at && run.review.reviewer === reviewer;
      if (mine) delete run.review;
      return { write: mine, result: undefined };
    });
  }
}

/**
 * The BlobStore in the data folder's database: one row per key, bodies of a few hundred bytes and
 * more deflated. A put is one statement, atomic like any SQLite write: no temporary files.
 */
export class SqliteBlobStore implements BlobStore {
  constructor(readonly db: SqliteDb) {}

  async put(key: string, body: string): Promise<void> {
    const { body: bytes, deflated } = pack(body);
    await this.db.write(() =>
      this.db.run(
        "INSERT INTO blobs (key, body, deflated) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET body = excluded.body, deflated = excluded.deflated",
        key,
        bytes,
        deflated,
      ),
    );
  }

  async get(key: string): Promise<string> {
    const row = this.db.get("SELECT body, deflated FROM blobs WHERE key = ?", key);
    if (!row) throw new BlobNotFoundError(key);
    return unpack(row.body, row.deflated);
  }

  async putIfAbsent(key: string, body: string): Promise<boolean> {
    const { body: bytes, deflated } = pack(body);
    return this.db.write(
      () =>
        this.db.run(
          "INSERT INTO blobs (key, body, deflated) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
          key,
          bytes,
          deflated,
        ) === 1,
    );
  }
}

/** Execution histories (what `redraft show` prints under the run), deflated JSON, by execution name. */
export class SqliteExecutions {
  constructor(readonly db: SqliteDb) {}

  async put(name: string, summary: unknown): Promise<void> {
    const body = deflateRawSync(JSON.stringify(summary), { level: 1 });
    await this.db.write(() =>
      this.db.run(
        "INSERT INTO executions (name, summary) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET summary = excluded.summary",
        name,
        body,
      ),
    );
  }

  get(name: string): unknown {
    const row = this.db.get("SELECT summary FROM executions WHERE name = ?", name);
    return row ? JSON.parse(unpack(row.summary, 1)) : undefined;
  }
}

/** What a batch's `finish` writes (functions/lib/batch-store.ts's BatchFinish). */
type BatchFinish = Parameters<import("../functions/lib/batch-store.js").DynamoBatchStore["finish"]>[1];

/**
 * Batch records in the data folder's database, with DynamoBatchStore's methods and semantics; the
 * batch state machine's CreateBatch (a conditional PutItem) becomes {@link create}.
 */
export class SqliteBatchStore {
  constructor(readonly db: SqliteDb) {}

  /** CreateBatch: false when the batch exists already (DynamoDB's ConditionalCheckFailed). */
  create(record: BatchRecord, startedKey: string): boolean {
    return (
      this.db.run(
        "INSERT INTO batches (batch_id, started_key, record) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        record.batchId,
        startedKey,
        JSON.stringify(record),
      ) === 1
    );
  }

  async get(batchId: string): Promise<BatchRecord | undefined> {
    const row = this.db.get("SELECT record FROM batches WHERE batch_id = ?", batchId);
    return row ? BatchRecordSchema.parse(JSON.parse(String(row.record))) : undefined;
  }

  /** Newest first. */
  async list(limit = 100): Promise<BatchRecord[]> {
    return this.db
      .all("SELECT record FROM batches ORDER BY started_key DESC LIMIT ?", limit)
      .map((row) => BatchRecordSchema.parse(JSON.parse(String(row.record))));
  }

  #change(batchId: string, change: (record: Record<string, unknown>) => boolean): Promise<boolean> {
    return this.db.write(() => {
      const row = this.db.get("SELECT record FROM batches WHERE batch_id = ?", batchId);
      if (!row) throw new RunNotFoundError(`batch ${batchId}`);
      const record = JSON.parse(String(row.record)) as Record<string, unknown>;
      if (!change(record)) return false;
      this.db.run("UPDATE batches SET record = ? WHERE batch_id = ?", JSON.stringify(record), batchId);
      return true;
    });
  }

  async finish(
    batchId: string,
    finish: BatchFinish,
    options: { onlyIfRunning?: boolean } = {},
  ): Promise<boolean> {
    const { summary, mapResultsRef, error, ...rest } = structuredClone(finish);
    return this.#change(batchId, (record) => {
      if (options.onlyIfRunning && record.status !== "running") return false;
      // As the DynamoDB update: pricing, rounds and price classes only when given, the rest always.
      for (const [key, value] of Object.entries(rest)) if (value !== undefined) record[key] = value;
      Object.assign(record, {
        items: summary.items,
        counts: summary.counts,
        reasons: summary.reasons,
        tokens: summary.tokens,
        costUsd: summary.costUsd,
        rejected: summary.rejected,
      });
      if (mapResultsRef) record.mapResultsRef = mapResultsRef;
      else delete record.mapResultsRef;
      if (error) record.error = error;
      else delete record.error;
      return true;
    });
  }

  async recordRounds(batchId: string, rounds: readonly RoundRecord[]): Promise<void> {
    const copy = structuredClone(rounds);
    await this.#change(batchId, (record) => {
      Object.assign(record, { rounds: copy, pricing: "batch" });
      return true;
    });
  }
}

/** The tables of the schema, in the order a salvage copies them (runs first: their ids key attempts). */
const TABLES = ["runs", "attempts", "usage_counted", "claims", "blobs", "executions", "batches"] as const;
type Table = (typeof TABLES)[number];
/** The tables made WITHOUT ROWID, and the first column of their key: read in ranges of it, not by rowid. */
const KEYED: Partial<Record<Table, string>> = {
  attempts: "run_id",
  usage_counted: "run_id",
  claims: "content_hash",
};

/**
 * Why a SQLite file is not redraft's, or undefined when it is: marked with redraft's application
 * id, new (no table, no version), or made by a redraft from before the mark (schema version 1 and
 * exactly redraft's tables). Reads only: nothing of the file is changed to decide.
 */
function foreignFile(db: DatabaseSync, version: number): string | undefined {
  const appId = Number(
    (db.prepare("PRAGMA application_id").get() as { application_id: number }).application_id,
  );
  if (appId === APPLICATION_ID) return undefined;
  const tables = (
    db
      .prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
      )
      .all() as { name: string }[]
  ).map((row) => String(row.name));
  if (appId === 0) {
    if (tables.length === 0 && version === 0) return undefined;
    if (
      version === SCHEMA_VERSION &&
      tables.length === TABLES.length &&
      TABLES.every((table) => tables.includes(table))
    )
      return undefined;
  }
  const held =
    tables.length === 0
      ? "no table of redraft's"
      : `the tables ${tables.slice(0, 5).join(", ")}${tables.length > 5 ? `, … (${tables.length})` : ""}`;
  return `it holds ${held}${appId === 0 ? "" : `, application id ${appId}`}, another program's file, left as it was: give --data-dir a folder of redraft's own`;
}

/** What `redraft doctor --repair` finds a data folder's database file to be, read without changing it. */
export type SqliteFileState =
  | { state: "missing" }
  | { state: "whole" }
  | { state: "damaged"; problem: string }
  | { state: "foreign"; reason: string };

/**
 * Reads the data folder's database file read-only: redraft's and whole (SQLite's integrity check of
 * every page and index), redraft's and damaged (or no database at all), or another program's.
 */
export function inspectSqliteFile(dataDir: string): SqliteFileState {
  const file = join(dataDir, SQLITE_FILE);
  if (!existsSync(file)) return { state: "missing" };
  const { DatabaseSync } = loadSqlite();
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(file, { readOnly: true });
    const version = Number(
      (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version,
    );
    const foreign = foreignFile(db, version);
    if (foreign) return { state: "foreign", reason: `${file} is not redraft's database: ${foreign}` };
    const problems = (db.prepare("PRAGMA integrity_check").all() as Record<string, unknown>[])
      .map((row) => String(Object.values(row)[0]))
      .filter((line) => line !== "ok");
    return problems.length === 0
      ? { state: "whole" }
      : { state: "damaged", problem: problems.slice(0, 3).join("; ") };
  } catch (error) {
    return { state: "damaged", problem: String((error as Error).message) };
  } finally {
    try {
      db?.close();
    } catch {
      // Read-only: nothing to keep.
    }
  }
}

/**
 * The rowid of the first row at or after `from`, null when none, "damaged" when the seek fails.
 * Prepared each time: a statement that met a damaged page keeps answering with that error.
 */
function seek(old: DatabaseSync, table: Table, from: number): number | null | "damaged" {
  try {
    const row = old
      .prepare(`SELECT rowid AS id FROM ${table} WHERE rowid >= ? ORDER BY rowid LIMIT 1`)
      .get(from) as { id: number } | undefined;
    return row ? Number(row.id) : null;
  } catch {
    return "damaged";
  }
}

/**
 * Every rowid of `table` that can be reached, in order. A seek that fails (a damaged page on its
 * way) is retried further on, at twice the distance each time, until one gets past the damage;
 * the boundary is then found by halving, so the rows of the readable pages after a damaged one are
 * kept, not only those before the first fault.
 */
function readableRowids(old: DatabaseSync, table: Table): number[] {
  const ids: number[] = [];
  let from = Number.MIN_SAFE_INTEGER;
  for (;;) {
    try {
      // Prepared anew after each fault: a statement that met a damaged page keeps its error.
      const scan = old.prepare(`SELECT rowid AS id FROM ${table} WHERE rowid >= ? ORDER BY rowid`);
      for (const row of scan.iterate(from) as Iterable<{ id: number }>) {
        ids.push(Number(row.id));
        from = Number(row.id) + 1;
      }
      return ids;
    } catch {
      // A damaged page at or after `from`: find where reading can go on.
    }
    // Doubling the distance until a seek gets past the damage (or past the last rowid there is)…
    let lo = from;
    let found: number | undefined;
    for (let step = 1; from + step <= Number.MAX_SAFE_INTEGER; step *= 2) {
      if (seek(old, table, from + step) !== "damaged") {
        found = from + step;
        break;
      }
      lo = from + step;
    }
    if (found === undefined) return ids;
    // …then halving between the last seek that failed and the first that did not: the rows from
    // the boundary on are reached by a seek, the ones before it (after `from`) are on the damaged page.
    let hi: number = found;
    while (hi - lo > 1) {
      const mid: number = lo + Math.floor((hi - lo) / 2);
      if (seek(old, table, mid) === "damaged") lo = mid;
      else hi = mid;
    }
    from = hi;
  }
}

/**
 * Rebuilds the data folder's database from what can be read of it: the file (and its write-ahead
 * log) is moved aside to `copy` first, untouched, then every row SQLite can still read goes into a
 * new file, in one transaction. A table with rowids is read row by row, past damaged pages (see
 * {@link readableRowids}); a table keyed WITHOUT ROWID is read in ranges of its key (each run's
 * attempts, each leading hex digit pair of a content hash), each range from its front and from its
 * back, so a damaged page loses only what is on it. A file that is no database at all gives an
 * empty new one. Returns how many rows were saved.
 */
export function salvageInto(dataDir: string, copy: string): number {
  const { DatabaseSync } = loadSqlite();
  let saved = 0;
  let old: DatabaseSync | undefined;
  try {
    old = new DatabaseSync(copy, { readOnly: true });
  } catch {
    old = undefined;
  }
  const fresh = SqliteDb.open(dataDir);
  try {
    fresh.transaction(() => {
      if (!old) return;
      const insert = (table: Table, row: Record<string, SQLInputValue>) => {
        const names = Object.keys(row);
        saved += fresh.run(
          `INSERT OR IGNORE INTO ${table} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
          ...names.map((name) => row[name] as SQLInputValue),
        );
      };
      for (const table of TABLES) {
        const key = KEYED[table];
        if (key === undefined) {
          let ids: number[];
          try {
            ids = readableRowids(old, table);
          } catch {
            continue; // The table's root cannot be read: nothing of it can.
          }
          const sql = `SELECT * FROM ${table} WHERE rowid = ?`;
          let one: StatementSync | undefined;
          for (const id of ids) {
            try {
              one ??= old.prepare(sql);
              const row = one.get(id) as Record<string, SQLInputValue> | undefined;
              if (row) insert(table, row);
            } catch {
              // This row's own content (an overflow page) is damaged: the others are read on, by a
              // statement prepared anew (this one keeps its error).
              one = undefined;
            }
          }
          continue;
        }
        const ranges: [string, SQLInputValue[]][] = [["", []]];
        if (key === "run_id")
          for (const runId of fresh.all("SELECT run_id FROM runs"))
            ranges.push(["WHERE run_id = ?", [String(runId.run_id)]]);
        else
          for (let i = 0; i < 256; i++) {
            const prefix = i.toString(16).padStart(2, "0");
            ranges.push([`WHERE ${key} >= ? AND ${key} < ?`, [prefix, `${prefix}g`]]);
          }
        const order = key === "run_id" ? ["run_id", "attempt"] : [key];
        for (const [where, params] of ranges)
          for (const direction of ["ASC", "DESC"]) {
            try {
              const rows = old.prepare(
                `SELECT * FROM ${table} ${where} ORDER BY ${order.map((c) => `${c} ${direction}`).join(", ")}`,
              );
              for (const row of rows.iterate(...params) as Iterable<Record<string, SQLInputValue>>)
                insert(table, row);
              break; // The whole range read from its front: no need for its back.
            } catch {
              // The rest of this range, in this direction, is on a damaged page: the other direction reads on.
            }
          }
      }
    });
  } finally {
    try {
      old?.close();
    } catch {
      // Read-only and damaged: nothing to keep.
    }
    fresh.compact();
    fresh.close();
  }
  return saved;
}
