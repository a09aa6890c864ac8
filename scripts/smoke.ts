/**
 * The post-deploy smoke test: submits a handful of drafts to a deployed stack through both of its
 * triggers (an upload under drafts/ — one whose key holds spaces, `+` and letters outside ASCII —
 * and a `Draft Submitted` event), a 3-line batch, waits for each outcome, approves the run that
 * awaits review, and checks every status, reason and token total against what the same drafts give
 * offline (the same state machine in-process, with `--llm`'s model). Prints one table, removes
 * every object and item it created, and exits 1 on any difference.
 *
 *   npm run smoke -- --stack redraft-dev
 *   npm run smoke -- --stack redraft-dev --llm replay:examples/example.cassette.json
 *
 * The drafts that make up the default set need no model call (validated as given, validated after a
 * repair, sent to review with a correction budget of 0, rejected): their outcomes and token totals
 * (0) are the same whatever model the stack uses. `--llm replay:<cassette>` adds drafts the model
 * corrects, whose outcomes match only when the stack answers from that cassette too (as the emulated
 * stack of `npm run test:cloud` does).
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  DeleteObjectsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  type ObjectIdentifier,
} from "@aws-sdk/client-s3";
import { DeleteCommand, DynamoDBDocumentClient, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { UsageError } from "../app/inputs.js";
import { reviewRun } from "../app/review.js";
import { openCloud } from "../cli/cloud/commands.js";
import type { CloudOptions } from "../cli/cloud/resources.js";
import type { CloudRuntime } from "../cli/cloud/runtime.js";
import {
  followRun,
  POLL_MS,
  type Submitted,
  submitBatch,
  submitDraft,
  type Via,
} from "../cli/cloud/submit.js";
import { chooseModel, liveModelFactory } from "../cli/model.js";
import { renderTable, stdoutStyle } from "../cli/output.js";
import {
  BATCH_KEY_PREFIX,
  BATCH_SORT_KEY,
  claimKey,
  PARTITION_KEY,
  RUN_KEY_PREFIX,
  SORT_KEY,
} from "../contracts/table.js";
import { correctDraft } from "../local/in-process.js";
import { type BatchRecord, childRunId } from "../shared/batch/record.js";
import type { ModelClient } from "../shared/model/types.js";
import { PackRegistry } from "../shared/registry.js";
import { BATCH_ITEMS_PREFIX, BATCH_RESULTS_PREFIX, RUNS_PREFIX } from "../shared/store/bucket-layout.js";
import { MemoryBlobStore, MemoryRunStore } from "../shared/store/memory.js";

const ROOT = join(import.meta.dirname, "..");
/** How long one draft or the batch is followed before the smoke test calls it a difference. */
const FOLLOW_MS = 15 * 60 * 1000;

export interface SmokeOptions extends CloudOptions {
  /** The offline side's model (`--llm`): `none`, `replay:<file>`, `anthropic`, `bedrock`. */
  llm?: string;
  /** Where the table and the verdict go. @default stdout */
  out?: (line: string) => void;
}

interface Case {
  name: string;
  via: Via;
  /** The file name the draft is uploaded as (its key under drafts/). */
  file: string;
  /** The draft, or text that is not one. */
  draft: unknown;
}

interface Outcome {
  status: string;
  reason: string;
  tokens: number;
}

const outcomeOf = (r: {
  status: string;
  reason?: string | null | undefined;
  tokens: { total: number };
}): Outcome => ({
  status: r.status,
  reason: r.reason ?? "",
  tokens: r.tokens.total,
});
const same = (a: Outcome | undefined, b: Outcome | undefined) =>
  a !== undefined &&
  b !== undefined &&
  a.status === b.status &&
  a.reason === b.reason &&
  a.tokens === b.tokens;
const show = (o: Outcome | undefined) =>
  o ? `${o.status}${o.reason ? ` (${o.reason})` : ""} · ${o.tokens} tok` : "—";

async function example(name: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(ROOT, "examples", "drafts", `${name}.json`), "utf8"));
}

/**
 * The drafts, each made unique to this smoke run by its metadata (so a second run within the
 * deployment's dedupe window is not a duplicate) and kept out of the judge, which would call a model.
 */
async function cases(nonce: string, withModel: boolean): Promise<{ single: Case[]; batch: unknown[] }> {
  const mark = (d: Record<string, unknown>, options: Record<string, unknown> = {}) => ({
    ...d,
    metadata: { ...(d.metadata as object), smoke: nonce },
    options: { ...(d.options as object), skipJudge: true, ...options },
  });
  const [clean, repaired, stuck] = await Promise.all([
    example("mcq-clean"),
    example("json-repaired"),
    example("json-stuck"),
  ]);
  const single: Case[] = [
    {
      name: "validated as given",
      via: "upload",
      file: `smoke fête + ñandú ${nonce}.json`,
      draft: mark(clean),
    },
    {
      name: "validated after a repair",
      via: "event",
      file: `smoke-repaired-${nonce}.json`,
      draft: mark(repaired),
    },
    {
      name: "review, no correction budget",
      via: "upload",
      file: `smoke-review-${nonce}.json`,
      draft: mark(stuck, { maxAttempts: 0 }),
    },
    {
      name: "unknown kind",
      via: "event",
      file: `smoke-kind-${nonce}.json`,
      draft: { id: `smoke-kind-${nonce}`, kind: "no-such-kind", content: {} },
    },
    { name: "not JSON", via: "upload", file: `smoke-text-${nonce}.json`, draft: `{ not json ${nonce}` },
  ];
  if (withModel) {
    const [seed, corrected] = await Promise.all([example("mcq-seed004"), example("json-corrected")]);
    single.push(
      { name: "corrected by the model", via: "event", file: `smoke-seed-${nonce}.json`, draft: mark(seed) },
      {
        name: "corrected by the model",
        via: "upload",
        file: `smoke-corrected-${nonce}.json`,
        draft: mark(corrected),
      },
    );
  }
  const batch = [
    mark(clean, { maxAttempts: 0 }),
    mark(stuck, { maxAttempts: 0 }),
    { id: `smoke-batch-kind-${nonce}`, kind: "no-such-kind", content: {} },
  ];
  return { single, batch };
}

const bodyOf = (draft: unknown) => (typeof draft === "string" ? draft : JSON.stringify(draft));

/** The offline side: the same state machine in-process, over memory stores, with the same model. */
async function offline(
  draft: unknown,
  model: ModelClient | undefined,
  submissionId?: string,
): Promise<Outcome> {
  const result = await correctDraft(draft, {
    registry: new PackRegistry(),
    runs: new MemoryRunStore(),
    blobs: new MemoryBlobStore(),
    model,
    ...(submissionId && { submissionId }),
  });
  return outcomeOf(result);
}

/** Polls the batch record until it is no longer running. */
async function followBatch(cloud: CloudRuntime, batchIds: string[]): Promise<BatchRecord> {
  const deadline = Date.now() + FOLLOW_MS;
  for (;;) {
    for (const id of batchIds) {
      const record = await cloud.batches.get(id);
      if (record && record.status !== "running") return record;
    }
    if (Date.now() > deadline) throw new Error(`batch ${batchIds.join(" or ")} has not ended`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Everything the smoke run wrote: object keys and prefixes, run ids, the batch. */
interface Created {
  keys: string[];
  prefixes: string[];
  runIds: string[];
  batchIds: string[];
}

/** Removes what the smoke run created: every version of its objects, its run, attempt, claim and batch items. */
async function cleanUp(cloud: CloudRuntime, created: Created): Promise<void> {
  const doc = DynamoDBDocumentClient.from(cloud.dynamo);
  const table = cloud.resources.table;
  const prefixes = [...created.prefixes];
  for (const runId of created.runIds) {
    const run = await cloud.runs.getRun(runId);
    if (!run) continue;
    prefixes.push(`${RUNS_PREFIX}${runId}/`);
    if (run.resultRef) created.keys.push(run.resultRef);
    if (run.contentHash)
      await doc.send(new DeleteCommand({ TableName: table, Key: claimKey(run.contentHash) }));
    const { Items } = await doc.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: "#pk = :pk",
        ExpressionAttributeNames: { "#pk": PARTITION_KEY, "#sk": SORT_KEY },
        ExpressionAttributeValues: { ":pk": `${RUN_KEY_PREFIX}${runId}` },
        ProjectionExpression: "#pk, #sk",
      }),
    );
    for (const item of Items ?? []) await doc.send(new DeleteCommand({ TableName: table, Key: item }));
  }
  for (const batchId of created.batchIds) {
    await doc.send(
      new DeleteCommand({
        TableName: table,
        Key: { [PARTITION_KEY]: `${BATCH_KEY_PREFIX}${batchId}`, [SORT_KEY]: BATCH_SORT_KEY },
      }),
    );
    prefixes.push(`${BATCH_ITEMS_PREFIX}${batchId}/`, `${BATCH_RESULTS_PREFIX}${batchId}/`);
  }
  const bucket = cloud.resources.bucket;
  const objects: ObjectIdentifier[] = [];
  for (const prefix of [...prefixes, ...created.keys]) {
    const exact = created.keys.includes(prefix);
    try {
      // The stack's bucket is versioned: a plain delete would leave every version behind a marker.
      const page = await cloud.s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: prefix }));
      for (const v of [...(page.Versions ?? []), ...(page.DeleteMarkers ?? [])])
        if (v.Key && (!exact || v.Key === prefix)) objects.push({ Key: v.Key, VersionId: v.VersionId });
    } catch (error) {
      // A store that keeps no versions (an emulator) does not list them.
      if (!/NotImplemented|MethodNotAllowed/i.test((error as Error).name)) throw error;
      const page = await cloud.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
      for (const o of page.Contents ?? [])
        if (o.Key && (!exact || o.Key === prefix)) objects.push({ Key: o.Key });
    }
  }
  for (let i = 0; i < objects.length; i += 1000)
    await cloud.s3.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: objects.slice(i, i + 1000), Quiet: true },
      }),
    );
}

/** Runs the smoke test; returns the exit code (0: every outcome as offline, 1: a difference). */
export async function runSmoke(options: SmokeOptions): Promise<number> {
  const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const choice = chooseModel(options.llm ?? "none", {}, process.env, await liveModelFactory(options.llm));
  const withModel = (options.llm ?? "none") !== "none";
  const cloud = await openCloud(options);
  const nonce = randomUUID().slice(0, 8);
  const { single, batch } = await cases(nonce, withModel);
  const created: Created = { keys: [], prefixes: [], runIds: [], batchIds: [] };
  const rows: string[][] = [];
  let differences = 0;
  const row = (
    what: string,
    via: string,
    runId: string,
    cloudSide: Outcome | undefined,
    local: Outcome | undefined,
  ) => {
    const ok = same(cloudSide, local);
    if (!ok) differences++;
    rows.push([what, via, runId, show(cloudSide), show(local), ok ? "ok" : "DIFFERENT"]);
  };
  try {
    const submitted = await Promise.all(
      single.map(async (c) => {
        const s: Submitted = await submitDraft(cloud, { label: c.file, body: bodyOf(c.draft) }, c.via);
        created.runIds.push(...s.runIds);
        if (c.via === "upload") created.keys.push(s.to);
        return s;
      }),
    );
    const manifest = batch.map((d) => JSON.stringify(d)).join("\n");
    const sentBatch = await submitBatch(cloud, { file: `smoke-${nonce}.jsonl`, text: `${manifest}\n` });
    created.batchIds.push(...sentBatch.batchIds);
    created.keys.push(sentBatch.manifestKey);
    for (const id of sentBatch.batchIds)
      for (let line = 1; line <= batch.length; line++) created.runIds.push(childRunId(id, line));

    const results = await Promise.all(
      submitted.map((s) => followRun(cloud, s, FOLLOW_MS).then(outcomeOf, (error: Error) => error)),
    );
    for (const [i, c] of single.entries()) {
      const result = results[i];
      const local = await offline(c.draft, choice.model);
      const runId = submitted[i]?.runIds.find((id) => id) ?? "";
      if (result instanceof Error) {
        differences++;
        rows.push([c.name, c.via, runId, `no outcome: ${result.message}`, show(local), "DIFFERENT"]);
      } else row(c.name, c.via, runId, result, local);
    }

    const record = await followBatch(cloud, sentBatch.batchIds);
    const localBatch: Outcome[] = [];
    for (const [i, d] of batch.entries()) {
      const run = await cloud.runs.getRun(childRunId(record.batchId, i + 1));
      const local = await offline(d, choice.model, record.batchId);
      localBatch.push(local);
      row(`batch line ${i + 1}`, "upload", run?.runId ?? "—", run && outcomeOf(run), local);
    }
    const counts: Record<string, number> = {};
    for (const o of localBatch) counts[o.status] = (counts[o.status] ?? 0) + 1;
    const batchOk =
      record.status === "completed" &&
      record.items === batch.length &&
      JSON.stringify(
        Object.entries(record.counts ?? {})
          .filter(([, n]) => n)
          .sort(),
      ) === JSON.stringify(Object.entries(counts).sort()) &&
      (record.tokens?.total ?? 0) === localBatch.reduce((sum, o) => sum + o.tokens, 0);
    if (!batchOk) differences++;
    rows.push([
      "batch record",
      "upload",
      record.batchId,
      `${record.status} · ${JSON.stringify(record.counts ?? {})} · ${record.tokens?.total ?? 0} tok`,
      `completed · ${JSON.stringify(counts)}`,
      batchOk ? "ok" : "DIFFERENT",
    ]);

    // One decision: the run that awaits review is approved, exactly as `redraft --stack … review` does.
    const awaiting = single.findIndex((_, i) => {
      const r = results[i];
      return !(r instanceof Error) && r?.status === "needs_manual_review";
    });
    const reviewed = submitted[awaiting];
    if (reviewed) {
      const runId = (
        await Promise.all(reviewed.runIds.map(async (id) => ((await cloud.runs.getRun(id)) ? id : undefined)))
      ).find(Boolean) as string;
      await reviewRun(cloud, runId, "approve", {
        reviewer: "redraft-smoke",
        note: "smoke test",
        // The run awaits review because errors remain: approving it says so, as a person must.
        override: true,
        submit: () => Promise.reject(new Error("an approval submits nothing")),
      });
      const after = await cloud.runs.getRun(runId);
      row("review approve", "—", runId, after && outcomeOf(after), {
        status: "validated",
        reason: "approved",
        tokens: 0,
      });
    } else {
      differences++;
      rows.push(["review approve", "—", "—", "no run awaited review", "one run awaits review", "DIFFERENT"]);
    }
  } finally {
    await cleanUp(cloud, created);
  }
  out(
    renderTable(
      [
        { head: "draft" },
        { head: "via" },
        { head: "run" },
        { head: "stack" },
        { head: "offline" },
        { head: "" },
      ],
      rows,
      stdoutStyle(),
    ),
  );
  out(`${choice.description} Objects and items the smoke test created were removed.`);
  out(`smoke: ${rows.length - differences}/${rows.length} as offline${differences ? " — DIFFERENCES" : ""}`);
  return differences ? 1 : 0;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const { values } = parseArgs({
    options: {
      stack: { type: "string" },
      table: { type: "string" },
      bucket: { type: "string" },
      bus: { type: "string" },
      "state-machine": { type: "string" },
      llm: { type: "string" },
    },
  });
  try {
    process.exitCode = await runSmoke({
      ...(values.stack && { stack: values.stack }),
      ...(values.table && { table: values.table }),
      ...(values.bucket && { bucket: values.bucket }),
      ...(values.bus && { bus: values.bus }),
      ...(values["state-machine"] && { stateMachine: values["state-machine"] }),
      ...(values.llm && { llm: values.llm }),
    });
  } catch (error) {
    process.stderr.write(
      `smoke: ${error instanceof UsageError ? "" : `${(error as Error).name}: `}${(error as Error).message}\n`,
    );
    process.exitCode = error instanceof UsageError ? 2 : 1;
  }
}
