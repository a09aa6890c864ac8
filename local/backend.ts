import { existsSync } from "node:fs";
import { join } from "node:path";
import type { DynamoDBClient, PutItemCommandInput, UpdateItemCommandInput } from "@aws-sdk/client-dynamodb";
import type { BatchRecord } from "../shared/batch/record.js";
import type { RoundRecord } from "../shared/batch/rounds.js";
import type { BatchFinisher } from "../shared/batch/steps.js";
import type { RunFacets, RunFilter, RunTotals } from "../shared/store/totals.js";
import type {
  BlobStore,
  RunOutcome,
  RunQuery,
  RunRecord,
  RunStatus,
  RunStore,
} from "../shared/store/types.js";
import type { Integrations } from "./asl-interpreter.js";
import {
  type RunCursor,
  SQLITE_FILE,
  SqliteBatchStore,
  SqliteBlobStore,
  SqliteDb,
  SqliteExecutions,
  SqliteRunStore,
} from "./sqlite-store.js";

/** The runs of a data folder: the RunStore, and the finalizer's conditional write (both stores have it). */
export interface LocalRunStore extends RunStore {
  /** Moves the run to `status` only when it is in one of `from`; false when it is not (or is missing). */
  finishActive(
    runId: string,
    status: RunStatus,
    from: readonly RunStatus[],
    at: string,
    fields?: Partial<RunOutcome>,
  ): Promise<boolean>;
}

/** The batch records of a data folder: what the batch runner, `redraft batches` and `show` use. */
export interface LocalBatchStore extends BatchFinisher {
  get(batchId: string): Promise<BatchRecord | undefined>;
  list(limit?: number): Promise<BatchRecord[]>;
  recordRounds(batchId: string, rounds: readonly RoundRecord[]): Promise<void>;
}

/** Which store keeps a data folder: SQLite (the default), or dynalite (LevelDB) and files. */
export type LocalStoreKind = "sqlite" | "dynalite";

/**
 * Everything the local runtime keeps in its data folder, behind one interface, so that the runtime,
 * the batch runner and the commands do not know which store it is. Two implementations: SQLite
 * (this module) and dynalite with a folder of blobs and one file per execution
 * (local/dynalite-backend.ts, loaded only for a folder that uses it).
 */
export interface LocalBackend {
  readonly kind: LocalStoreKind;
  readonly runs: LocalRunStore;
  readonly blobs: BlobStore;
  readonly batches: LocalBatchStore;
  /** The DynamoDB client of a dynalite folder (tests that reach into the table); none for SQLite. */
  readonly dynamo: DynamoDBClient | undefined;
  /** The state machines' status UpdateItem, errors named as Step Functions names DynamoDB's. */
  updateItem: Integrations["updateItem"];
  /** The batch state machine's CreateBatch PutItem; ConditionalCheckFailed when the batch exists. */
  putItem(input: PutItemCommandInput): Promise<unknown>;
  /** A page of runs, newest first, after `after` (see SqliteRunStore.listPage). */
  listPage(query: RunQuery & { after?: RunCursor | undefined }): Promise<RunRecord[]>;
  /** Totals over every run `filter` matches, and the kinds and reasons of all runs (the viewer's cards). */
  runTotals(filter: RunFilter): Promise<{ totals: RunTotals; facets: RunFacets }>;
  /** A page of the runs `filter` matches, newest first, after `after` (the viewer's list). */
  filteredPage(filter: RunFilter, limit: number, after?: RunCursor): Promise<RunRecord[]>;
  /** Every run id (to resolve a prefix the user typed). */
  runIds(): Promise<string[]>;
  saveHistory(name: string, summary: unknown): Promise<void>;
  history(name: string): Promise<unknown>;
  /** Reads the whole store, so that damage is found now; returns how many records it holds. */
  check(): Promise<number>;
  /** Closes the store; a writer first gives back the space the store no longer uses. */
  close(): Promise<void>;
}

/** Environment override of the store a new data folder gets (the bench compares both). */
const STORE_ENV = "REDRAFT_LOCAL_STORE";

/**
 * The store of `dataDir`: `requested`, else `$REDRAFT_LOCAL_STORE`, else the one the folder already
 * holds. A folder made before SQLite (a `dynamodb/` folder and no redraft.db) keeps dynalite, so
 * that its runs stay where they are; any other folder, new ones included, is SQLite.
 */
export function storeOf(dataDir: string, requested?: LocalStoreKind): LocalStoreKind {
  const wanted = requested ?? process.env[STORE_ENV];
  if (wanted === "sqlite" || wanted === "dynalite") return wanted;
  if (wanted !== undefined && wanted !== "")
    throw new Error(`${STORE_ENV}=${wanted}: the local store is "sqlite" or "dynalite"`);
  return !existsSync(join(dataDir, SQLITE_FILE)) && existsSync(join(dataDir, "dynamodb"))
    ? "dynalite"
    : "sqlite";
}

/** An error named as Step Functions names a DynamoDB error. */
function dynamoError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = `DynamoDB.${name}`;
  return error;
}

/** The SQLite backend: one database file, opened by every process that uses the folder. */
export async function openSqliteBackend(
  dataDir: string,
  options: { readOnly?: boolean } = {},
): Promise<LocalBackend> {
  const db = SqliteDb.open(dataDir);
  const runs = new SqliteRunStore(db);
  const blobs = new SqliteBlobStore(db);
  const batches = new SqliteBatchStore(db);
  const executions = new SqliteExecutions(db);
  let updateItem: Integrations["updateItem"] | undefined;
  return {
    kind: "sqlite",
    runs,
    blobs,
    batches,
    dynamo: undefined,
    updateItem: async (input: UpdateItemCommandInput) => {
      // The adapter and its imports (the table's field names) are what running needs, not listing.
      if (!updateItem) {
        const [{ statusUpdateIn }, engine] = await Promise.all([
          import("./update-item.js"),
          import("./asl-interpreter.js"),
        ]);
        const adapter = statusUpdateIn(runs);
        updateItem = async (i) => {
          try {
            return await adapter(i);
          } catch (error) {
            if ((error as Error).name.startsWith("DynamoDB.")) throw error;
            throw engine.dynamoDbIntegrationError(error);
          }
        };
      }
      return updateItem(input);
    },
    putItem: async (input) => {
      // CreateBatch writes string attributes only (contracts/batch-state-machine.asl.json). Its start
      // time is `$$.State.EnteredTime`, which the interpreter passes as a marker (one context per
      // execution): stamped here with the time of the write, as the dynalite path does.
      const [{ BatchRecordSchema }, { ENTERED_TIME_MARKER }] = await Promise.all([
        import("../shared/batch/record.js"),
        import("./asl-interpreter.js"),
      ]);
      const at = new Date().toISOString();
      const item = Object.fromEntries(
        Object.entries(input.Item ?? {}).map(([name, value]) => [
          name,
          "S" in value ? value.S?.replaceAll(ENTERED_TIME_MARKER, at) : undefined,
        ]),
      ) as Record<string, string | undefined>;
      const record = BatchRecordSchema.parse({
        batchId: item.batchId,
        status: item.status,
        manifestRef: JSON.parse(item.manifest ?? "null"),
        startedAt: item.startedAt,
        ...(item.pricing && { pricing: item.pricing }),
      });
      if (!batches.create(record, item.byCreatedSk ?? `${record.startedAt}#${record.batchId}`))
        throw dynamoError("ConditionalCheckFailedException", "The conditional request failed");
      return {};
    },
    listPage: async (query) => runs.listPage(query),
    runTotals: async (filter) => runs.totals(filter),
    filteredPage: async (filter, limit, after) => runs.filteredPage(filter, limit, after),
    runIds: async () => runs.runIds(),
    saveHistory: async (name, summary) => executions.put(name, summary),
    history: async (name) => executions.get(name),
    check: async () => {
      const problems = db.integrityCheck().filter((line) => line !== "ok");
      if (problems.length > 0) {
        const { LocalStoreError } = await import("./sqlite-store.js");
        throw new LocalStoreError("damaged", db.file, `integrity check: ${problems.slice(0, 3).join("; ")}`);
      }
      return Number(
        db.get(
          "SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM attempts) + (SELECT count(*) FROM blobs) + (SELECT count(*) FROM executions) + (SELECT count(*) FROM batches) AS n",
        )?.n ?? 0,
      );
    },
    close: async () => {
      // A writer gives back what it freed and folds the log into the file (skipped, not waited for,
      // while another process reads); a reader leaves the file as it found it.
      if (!options.readOnly) {
        try {
          db.compact();
        } catch {
          // Compaction is housekeeping: the next writer's close tries again.
        }
      }
      db.close();
    },
  };
}
