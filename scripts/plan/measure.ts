/**
 * Counts what one draft costs the cloud, by executing the committed state machine
 * (contracts/state-machine.asl.json) in aws-local-stepfunctions over the example corpus, with the real
 * Lambda handlers, the real DynamoRunStore on dynalite and the real S3BlobStore over an in-memory S3
 * client, model answers replayed from examples/example.cassette.json. Every request is counted where
 * it leaves for the service: DynamoDB at the SDK client (with the capacity dynalite reports and the
 * index writes DynamoDB would make), S3 at the S3 client, EventBridge at the PutEvents integration,
 * Step Functions from the engine's own event history. `npm run plan:counts` writes the result to
 * shared/plan/data/counts.json; tests/plan/counts.test.ts runs this again and compares.
 */

import { readFile } from "node:fs/promises";
import {
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import type { AslDefinition } from "../../contracts/asl.js";
import { INDEXES, PARTITION_KEY, SORT_KEY } from "../../contracts/table.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import {
  bindTasks,
  buildMachine,
  dynamoDbIntegrationError,
  ENTERED_TIME_MARKER,
  type HistoryEvent,
  type PutEventsInput,
  runExecution,
} from "../../local/asl-interpreter.js";
import { ensureTable, startDynalite } from "../../local/dynalite.js";
import { loadAsl } from "../../local/state-machine.js";
import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import { ReplayModelClient } from "../../shared/model/replay.js";
import { builtinPacks } from "../../shared/packs/index.js";
import {
  type CorpusDraftCounts,
  type InvocationCount,
  OUTCOME_PATHS,
  type OutcomePath,
  type PathCounts,
} from "../../shared/plan/counts.js";
import { PackRegistry } from "../../shared/registry.js";
import { DRAFTS_PREFIX } from "../../shared/store/bucket-layout.js";

const TABLE = "redraft-plan";
const BUCKET = "redraft-plan-bucket";
const EXAMPLES = new URL("../../examples/", import.meta.url);

/**
 * The corpus: every example draft (three kinds; the cassette holds their answers) and one upload
 * that is not JSON, which Validate rejects. Each draft is classified by how its run ended.
 */
const CORPUS = [
  "mcq-clean.json",
  "json-repaired.json",
  "json-corrected.json",
  "mcq-seed004.json",
  "code-add.json",
  "mcq-judged.json",
  "mcq-breaker.json",
  "json-stuck.json",
] as const;
const NOT_JSON = { name: "not-json", body: "{ not json" };

/** Which service a request went to, and who sent it. */
type Sender = "lambda" | "integration" | "client";

/** The requests counted while one draft runs; `lambda` is the invocation in flight, if any. */
class Tally {
  transitions = 0;
  readonly dynamo = { requests: {} as Record<string, number>, readUnits: 0, writeUnits: 0 };
  /** Write request units per partition kind (`table RUN#<runId>`, `byStatus STATUS#validated`…). */
  readonly partitionWrites: Record<string, number> = {};
  readonly s3 = { requests: {} as Record<string, number>, putClass: 0, getClass: 0 };
  /** PUT-class and GET-class requests per top-level prefix (`runs/`, `results/`, `drafts/`). */
  readonly prefixes: Record<string, { putClass: number; getClass: number }> = {};
  readonly events = { putEvents: 0, entries: 0 };
  readonly invocations: InvocationCount[] = [];
  current: InvocationCount | undefined;
  sender(): Sender {
    return this.current ? "lambda" : "integration";
  }
}

const bump = (counts: Record<string, number>, key: string, by = 1) => {
  counts[key] = (counts[key] ?? 0) + by;
};

/** A partition key with the part that differs per run or draft replaced by what it stands for. */
function partitionKind(value: string): string {
  return value
    .replace(/^RUN#.*/, "RUN#<runId>")
    .replace(/^CONTENT#.*/, "CONTENT#<sha256>")
    .replace(/^DRAFT#.*/, "DRAFT#<draftId>")
    .replace(/^BATCH#.*/, "BATCH#<batchId>")
    .replace(/^RUNS#\d+$/, "RUNS#<shard>");
}

const S3_PUT_CLASS = new Set(["PutObject", "CopyObject", "ListObjectsV2", "PutObjectTagging"]);

/**
 * An S3 client in memory, for S3BlobStore: the operations redraft sends, answering as S3 does
 * (412 for a taken `If-None-Match: *`, 404 for a missing key), each counted before it is answered.
 */
class CountingS3 {
  readonly objects = new Map<string, string>();
  tally: Tally | undefined;

  /** Counts one request of `sender`'s, against the draft being measured. */
  count(sender: Sender, op: string, key: string): void {
    const t = this.tally;
    if (!t) return;
    bump(t.s3.requests, `${sender} ${op}`);
    const cls = S3_PUT_CLASS.has(op) ? "putClass" : "getClass";
    t.s3[cls] += 1;
    const prefix = `${key.split("/")[0]}/`;
    t.prefixes[prefix] ??= { putClass: 0, getClass: 0 };
    t.prefixes[prefix][cls] += 1;
    if (t.current) t.current.s3 += 1;
  }

  async send(command: { constructor: { name: string }; input: Record<string, unknown> }): Promise<unknown> {
    const op = command.constructor.name.replace(/Command$/, "");
    const input = command.input;
    const key = String(input.Key ?? input.Prefix ?? "");
    if (this.tally) this.count(this.tally.sender(), op, key);
    const missing = (name: string) =>
      Object.assign(new Error(name), { name, $metadata: { httpStatusCode: 404 } });
    switch (op) {
      case "PutObject":
        if (input.IfNoneMatch === "*" && this.objects.has(key))
          throw Object.assign(new Error("PreconditionFailed"), {
            name: "PreconditionFailed",
            $metadata: { httpStatusCode: 412 },
          });
        this.objects.set(key, String(input.Body));
        return {};
      case "GetObject": {
        const body = this.objects.get(key);
        if (body === undefined) throw missing("NoSuchKey");
        // Both of the SDK's readers: S3BlobStore reads a person's upload as bytes (decoded as they say).
        return {
          Body: {
            transformToString: async () => body,
            transformToByteArray: async () => new Uint8Array(Buffer.from(body, "utf8")),
          },
        };
      }
      case "HeadObject": {
        const body = this.objects.get(key);
        if (body === undefined) throw missing("NotFound");
        return { ContentLength: Buffer.byteLength(body) };
      }
      case "CopyObject": {
        const from = decodeURIComponent(String(input.CopySource).split("/").slice(1).join("/"));
        const body = this.objects.get(from);
        if (body === undefined) throw missing("NoSuchKey");
        this.objects.set(key, body);
        return {};
      }
      case "ListObjectsV2":
        return {
          Contents: [...this.objects.keys()].filter((k) => k.startsWith(key)).map((Key) => ({ Key })),
        };
      case "PutObjectTagging":
        return {};
      default:
        throw new Error(`the counting S3 client has no ${op}`);
    }
  }
}

const WRITES = new Set(["PutItem", "UpdateItem", "DeleteItem"]);

/**
 * Counts every request the client sends: its operation, the read and write units dynalite reports
 * for the table (the larger of the item before and after, per started KB, as DynamoDB bills), and
 * the KEYS_ONLY index writes DynamoDB would add — one unit where an index entry appears or goes,
 * two where its key changes — read from the item before and after the write.
 */
function countDynamo(client: DynamoDBClient, raw: DynamoDBClient, tally: () => Tally | undefined): void {
  // Asked for at initialize (the document client marshals later, and leaves this field alone)…
  client.middlewareStack.add(
    (next) => async (args) => {
      if (tally()) (args.input as Record<string, unknown>).ReturnConsumedCapacity = "TOTAL";
      return next(args);
    },
    { step: "initialize", name: "redraftPlanCapacity" },
  );
  // …counted at build, where every command's input is in DynamoDB's own attribute form.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const t = tally();
      const op = String(context.commandName ?? "").replace(/Command$/, "");
      if (!t || op === "DescribeTable" || op === "CreateTable") return next(args);
      const input = args.input as Record<string, unknown>;
      bump(t.dynamo.requests, `${t.sender()} ${op}`);
      if (t.current) t.current.dynamo += 1;
      const key = WRITES.has(op)
        ? ((input.Key as Attributes | undefined) ?? pick(input.Item as Attributes, [PARTITION_KEY, SORT_KEY]))
        : undefined;
      const image = async (): Promise<Attributes | undefined> =>
        key
          ? ((
              await raw.send(
                new GetItemCommand({ TableName: TABLE, Key: key as never, ConsistentRead: true }),
              )
            ).Item as Attributes | undefined)
          : undefined;
      const before = await image();
      let output: unknown;
      let failure: unknown;
      try {
        output = await next(args);
      } catch (error) {
        failure = error;
      }
      const after = await image();
      const consumed = ((output as { output?: { ConsumedCapacity?: unknown } } | undefined)?.output
        ?.ConsumedCapacity ?? []) as { CapacityUnits?: number } | { CapacityUnits?: number }[];
      const units = (Array.isArray(consumed) ? consumed : [consumed]).reduce(
        (sum, c) => sum + (c?.CapacityUnits ?? 0),
        0,
      );
      if (WRITES.has(op)) {
        // A refused conditional write is billed too: one unit per KB of the item it found (at least one).
        const table = failure ? Math.max(1, kb(before, 1)) : units;
        t.dynamo.writeUnits += table;
        bump(t.partitionWrites, `table ${partitionKind(text(key?.[PARTITION_KEY]))}`, table);
        for (const [name, perPartition] of Object.entries(indexWrites(before, after)))
          for (const [partition, n] of Object.entries(perPartition)) {
            t.dynamo.writeUnits += n;
            bump(t.partitionWrites, `${name} ${partitionKind(partition)}`, n);
          }
      } else {
        // dynalite reports nothing for a read that found nothing; DynamoDB bills it at least one
        // unit, half of one when eventually consistent.
        t.dynamo.readUnits += Math.max(units, input.ConsistentRead === true ? 1 : 0.5);
      }
      if (failure) throw failure;
      return output as never;
    },
    { step: "build", name: "redraftPlanCounter" },
  );
}

/** An item or key in DynamoDB's attribute-value form. */
type Attributes = Record<string, { S?: string } | undefined>;
/** The string in a string attribute ("" when it is absent or not a string: redraft's keys are strings). */
const text = (value: { S?: string } | undefined): string => value?.S ?? "";

const pick = (item: Attributes | undefined, keys: string[]): Attributes =>
  Object.fromEntries(keys.map((k) => [k, item?.[k]]));

/** An item's size in started units of `unitKb` KB (DynamoDB's item size: names and values). */
function kb(item: Attributes | undefined, unitKb: number): number {
  if (!item) return 0;
  return Math.ceil(Buffer.byteLength(JSON.stringify(item)) / (1024 * unitKb));
}

/** The index writes one item change causes, per index and partition (`{ byStatus: { "STATUS#x": 1 } }`). */
function indexWrites(
  before: Attributes | undefined,
  after: Attributes | undefined,
): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const index of Object.values(INDEXES)) {
    const keyOf = (item: Attributes | undefined) =>
      item?.[index.partitionKey] && item[index.sortKey]
        ? [text(item[index.partitionKey]), text(item[index.sortKey])]
        : undefined;
    const old = keyOf(before);
    const now = keyOf(after);
    if (old?.join("\n") === now?.join("\n")) continue;
    const units: Record<string, number> = out[index.indexName] ?? {};
    out[index.indexName] = units;
    if (old) bump(units, old[0] as string);
    if (now) bump(units, now[0] as string);
  }
  return out;
}

/** Whole-number averages would hide a path's odd unit; three decimals keep the file readable. */
const round = (n: number) => Math.round(n * 1000) / 1000;

/** Step Functions' own event count for what the local history shows (its console lists these). */
function awsHistoryEvents(history: readonly HistoryEvent[], asl: AslDefinition): number {
  // ExecutionStarted and the final Execution* event, then per state: Entered and Exited, plus
  // Scheduled, Started and Succeeded/Failed for a Task; a retry schedules, starts and fails again.
  let events = 2;
  for (const h of history) {
    if (h.type === "StateEntered") {
      events += 2;
      if (asl.States[h.state ?? ""]?.Type === "Task") events += 3;
    }
    if (h.type === "StateRetried") events += 3;
  }
  return events;
}

async function corpusBodies(): Promise<{ name: string; body: string }[]> {
  const drafts = await Promise.all(
    CORPUS.map(async (file) => ({
      name: file.replace(/\.json$/, ""),
      body: await readFile(new URL(`drafts/${file}`, EXAMPLES), "utf8"),
    })),
  );
  return [...drafts, NOT_JSON];
}

/** Which outcome path a run took, from its record and the states it entered. */
function outcomePath(status: string | undefined, entered: Record<string, number>): OutcomePath {
  if (status === "rejected") return "rejected";
  if (status === "needs_manual_review") return "needs_review";
  if (status !== "validated") throw new Error(`a corpus draft ended ${status}: the corpus is broken`);
  if ((entered.Judge ?? 0) > 0) return "judge_loop";
  const corrections = entered.CorrectExecution ?? 0;
  if (corrections === 0) return "validated_at_once";
  if (corrections === 1) return "corrected_once";
  if (corrections === 2) return "corrected_twice";
  throw new Error(`a corpus draft was corrected ${corrections} times: no path counts that`);
}

/** Runs the corpus and returns each draft's counts and each path's mean. */
export async function measureCorpus(): Promise<{ drafts: CorpusDraftCounts[]; paths: PathCounts[] }> {
  const asl = await loadAsl();
  const machine = buildMachine(asl);
  const cassette = JSON.parse(await readFile(new URL("example.cassette.json", EXAMPLES), "utf8"));
  const dynalite = await startDynalite();
  let tally: Tally | undefined;
  try {
    const { localDynamoClient } = await import("../../local/dynalite.js");
    const raw = localDynamoClient(dynalite.endpoint, { requestHandler: dynalite.direct, dynalite: true });
    const client = localDynamoClient(dynalite.endpoint, { requestHandler: dynalite.direct, dynalite: true });
    await ensureTable(raw, TABLE);
    countDynamo(client, raw, () => tally);
    const s3 = new CountingS3();
    const runs = new DynamoRunStore({ client, tableName: TABLE, ttlDays: 90 });
    const blobs = new S3BlobStore({
      client: s3 as never,
      bucket: BUCKET,
      uploads: { prefix: DRAFTS_PREFIX, maxBytes: 8 * 1024 * 1024 },
    });
    const [{ createValidateHandler }, { createCorrectHandler }, { createRevalidateHandler }, judgeModule] =
      await Promise.all([
        import("../../functions/steps/validate.js"),
        import("../../functions/steps/correct.js"),
        import("../../functions/steps/revalidate.js"),
        import("../../functions/steps/judge.js"),
      ]);
    const { createOutcomeHandler } = await import("../../functions/outcome.js");
    const registry = new PackRegistry({}, builtinPacks);
    const drafts: CorpusDraftCounts[] = [];
    for (const [i, { name, body }] of (await corpusBodies()).entries()) {
      const t = new Tally();
      const replay = ReplayModelClient.fromCassette(cassette);
      const deps: LoopDeps = {
        registry,
        runs,
        blobs,
        // Every model call is counted against the invocation that made it.
        model: {
          provider: replay.provider,
          model: replay.model,
          complete: (request) => {
            if (t.current) t.current.modelCalls += 1;
            return replay.complete(request);
          },
        },
      };
      const getDeps = async () => deps;
      const counted =
        (fn: string, handler: (event: unknown) => Promise<unknown>) =>
        async (event: unknown): Promise<unknown> => {
          const invocation: InvocationCount = { fn, dynamo: 0, s3: 0, modelCalls: 0 };
          t.current = invocation;
          try {
            return await handler(event);
          } finally {
            t.current = undefined;
            t.invocations.push(invocation);
          }
        };
      const announced: PutEventsInput[] = [];
      const handlers = bindTasks(
        asl,
        {
          validate: counted("validate", createValidateHandler(getDeps, { bucketName: BUCKET })),
          correct: counted("correct", createCorrectHandler(getDeps)),
          revalidate: counted("revalidate", createRevalidateHandler(getDeps)),
          judge: counted("judge", judgeModule.createJudgeHandler(getDeps)),
        },
        {
          updateItem: async (input: UpdateItemCommandInput) => {
            const values = JSON.stringify(input.ExpressionAttributeValues ?? {}).replaceAll(
              ENTERED_TIME_MARKER,
              new Date().toISOString(),
            );
            try {
              const out = await client.send(
                new UpdateItemCommand({
                  ...input,
                  ExpressionAttributeValues: JSON.parse(values),
                  TableName: TABLE,
                }),
              );
              return { Attributes: out.Attributes };
            } catch (error) {
              throw dynamoDbIntegrationError(error);
            }
          },
          copyObject: async (input) => {
            const from = decodeURIComponent(input.CopySource.replace(/^\/?[^/]+\//, ""));
            await blobs.copy(from, input.Key);
            return {};
          },
          putEvents: async (input) => {
            t.events.putEvents += 1;
            t.events.entries += input.Entries.length;
            announced.push(input);
            return { FailedEntryCount: 0, Entries: input.Entries.map(() => ({ EventId: "local" })) };
          },
        },
      );
      tally = t;
      s3.tally = t;
      // The client's upload, then the execution as λ start would start it.
      const key = `${DRAFTS_PREFIX}${name}.json`;
      s3.objects.set(key, body);
      s3.count("client", "PutObject", key);
      const runId = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
      const execution = await runExecution(machine, { draftRef: { bucket: BUCKET, key } }, runId, {
        handlers,
        retryIntervals: undefined,
      });
      // λ outcome: invoked by the rule on each outcome event the Announce states put on the bus.
      const outcome = createOutcomeHandler(() => ({
        runs,
        blobs,
        announce: () => Promise.reject(new Error("the measured runs have no review to announce")),
      }));
      for (const entry of announced.flatMap((a) => a.Entries))
        await counted(
          "outcome",
          (event) => outcome(event) as Promise<unknown>,
        )({
          source: entry.Source,
          "detail-type": entry.DetailType,
          detail: typeof entry.Detail === "string" ? JSON.parse(entry.Detail) : entry.Detail,
        });
      s3.tally = undefined;
      tally = undefined;
      const run = await runs.getRun(runId);
      const entered: Record<string, number> = {};
      for (const h of execution.history) {
        if (h.type === "StateEntered") bump(entered, h.state ?? "");
        if (h.type === "StateEntered" || h.type === "StateRetried") t.transitions += 1;
      }
      drafts.push({
        draft: name,
        kind: run?.kind ?? "unknown",
        path: outcomePath(run?.status, entered),
        terminal: execution.terminalState,
        status: run?.status ?? "none",
        ...(run?.reason && { reason: run.reason }),
        transitions: t.transitions,
        awsHistoryEvents: awsHistoryEvents(execution.history, asl),
        statesEntered: entered,
        invocations: t.invocations,
        dynamo: {
          requests: t.dynamo.requests,
          readUnits: round(t.dynamo.readUnits),
          writeUnits: t.dynamo.writeUnits,
          partitionWrites: t.partitionWrites,
        },
        s3: {
          requests: t.s3.requests,
          putClass: t.s3.putClass,
          getClass: t.s3.getClass,
          prefixes: t.prefixes,
        },
        events: t.events,
      });
    }
    for (const c of [raw, client]) c.destroy();
    return { drafts, paths: meanPerPath(drafts) };
  } finally {
    await dynalite.close();
  }
}

/** The mean of each number over the drafts of each path, in the order of OUTCOME_PATHS. */
function meanPerPath(drafts: readonly CorpusDraftCounts[]): PathCounts[] {
  const paths: PathCounts[] = [];
  for (const path of OUTCOME_PATHS) {
    const of = drafts.filter((d) => d.path === path);
    if (of.length === 0) throw new Error(`no corpus draft takes the ${path} path`);
    const mean = (f: (d: CorpusDraftCounts) => number) => round(of.reduce((s, d) => s + f(d), 0) / of.length);
    const meanOf = (f: (d: CorpusDraftCounts) => Record<string, number>) => {
      const keys = [...new Set(of.flatMap((d) => Object.keys(f(d))))].sort();
      return Object.fromEntries(keys.map((k) => [k, mean((d) => f(d)[k] ?? 0)]));
    };
    const fns = [...new Set(of.flatMap((d) => d.invocations.map((i) => i.fn)))].sort();
    paths.push({
      path,
      drafts: of.map((d) => d.draft),
      transitions: mean((d) => d.transitions),
      awsHistoryEvents: mean((d) => d.awsHistoryEvents),
      invocations: Object.fromEntries(
        fns.map((fn) => {
          const mine = (d: CorpusDraftCounts) => d.invocations.filter((i) => i.fn === fn);
          return [
            fn,
            {
              count: mean((d) => mine(d).length),
              dynamo: mean((d) => mine(d).reduce((s, i) => s + i.dynamo, 0)),
              s3: mean((d) => mine(d).reduce((s, i) => s + i.s3, 0)),
              modelCalls: mean((d) => mine(d).reduce((s, i) => s + i.modelCalls, 0)),
            },
          ];
        }),
      ),
      dynamo: {
        requests: meanOf((d) => d.dynamo.requests),
        readUnits: mean((d) => d.dynamo.readUnits),
        writeUnits: mean((d) => d.dynamo.writeUnits),
        partitionWrites: meanOf((d) => d.dynamo.partitionWrites),
      },
      s3: {
        requests: meanOf((d) => d.s3.requests),
        putClass: mean((d) => d.s3.putClass),
        getClass: mean((d) => d.s3.getClass),
        prefixPutClass: meanOf((d) =>
          Object.fromEntries(Object.entries(d.s3.prefixes).map(([p, c]) => [p, c.putClass])),
        ),
        prefixGetClass: meanOf((d) =>
          Object.fromEntries(Object.entries(d.s3.prefixes).map(([p, c]) => [p, c.getClass])),
        ),
      },
      events: { putEvents: mean((d) => d.events.putEvents), entries: mean((d) => d.events.entries) },
    });
  }
  return paths;
}
