import { basename } from "node:path";
import { PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { DraftSource } from "../../app/inputs.js";
import { UsageError } from "../../app/inputs.js";
import { BatchEvents, SubmissionEvent } from "../../contracts/events.js";
import { startFor } from "../../functions/start.js";
import { batchIdFor } from "../../shared/batch/record.js";
import { buildRunResult, type RunResult } from "../../shared/loop/run.js";
import { BATCHES_PREFIX, DRAFTS_PREFIX } from "../../shared/store/bucket-layout.js";
import { isActiveStatus } from "../../shared/store/types.js";
import type { CloudRuntime } from "./runtime.js";

/**
 * How `run`, `batch` and `review … edit` hand drafts to a deployed stack, the two ways its triggers
 * take them: an object under `drafts/` / `batches/` (the `DraftUploaded` / `BatchUploaded` rules), or
 * an event on the project bus (`Draft Submitted` / `Batch Submitted`). Either way the client knows
 * the run id before the run exists: it is the execution name λ start gives that delivery
 * (`startFor`), computed here from the upload's version id or from the event id PutEvents returns.
 */

export type Via = "upload" | "event";

/** How often a submitted run or batch is read again while it is followed. */
export const POLL_MS = 2000;

/**
 * The notification form of an object key: what S3 event notifications write (form encoding, space
 * as `+`, `/` kept). Whether EventBridge's `Object Created` writes keys so is not confirmed by any
 * document this project read, so a client follows the run of either spelling (README, Deploying).
 */
export function notificationKey(key: string): string {
  return key
    .split("/")
    .map((part) =>
      encodeURIComponent(part)
        .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
        .replace(/%20/g, "+"),
    )
    .join("/");
}

/** The key a draft is uploaded under: its file's name (a line of a file gets the line's number). */
function uploadKeyOf(source: DraftSource): string {
  const name = basename(source.label).replace(/(?:\[(\d+)\]|:(\d+))$/, (_, a, b) => `-${a ?? b}`);
  const file = /\.json$/i.test(name) ? name : `${name.replace(/\.(jsonl|ndjson)(-\d+)$/i, "$2")}.json`;
  return `${DRAFTS_PREFIX}${file}`;
}

/** Puts an object as a submitter may (PutObject only: no tagging, which that policy does not grant). */
async function upload(cloud: CloudRuntime, key: string, body: string): Promise<string | undefined> {
  const { VersionId } = await cloud.s3.send(
    new PutObjectCommand({
      Bucket: cloud.resources.bucket,
      Key: key,
      Body: body,
      ContentType: "application/json",
    }),
  );
  return VersionId;
}

/** Puts one event on the project's bus and returns its id (the name λ start derives from it). */
async function putEvent(cloud: CloudRuntime, detailType: string, detail: object): Promise<string> {
  const bus = cloud.resources.bus;
  if (!bus) throw new UsageError("the stack's bus is not known: pass --bus (or --stack)");
  const { Entries, FailedEntryCount } = await cloud.events.send(
    new PutEventsCommand({
      Entries: [
        {
          Source: SubmissionEvent.source,
          DetailType: detailType,
          Detail: JSON.stringify(detail),
          EventBusName: bus,
        },
      ],
    }),
  );
  const eventId = Entries?.[0]?.EventId;
  if (FailedEntryCount || !eventId)
    throw new Error(`${detailType} was not put on ${bus}: ${Entries?.[0]?.ErrorCode ?? "no event id"}`);
  return eventId;
}

/** A submitted draft: the run ids it may be running under (one, or one per spelling of its key). */
export interface Submitted {
  label: string;
  runIds: string[];
  /** Where it went: the object key, or the bus. */
  to: string;
}

const uploadRunId = (bucket: string, key: string, versionId: string) =>
  startFor({
    id: "client",
    source: "aws.s3",
    detail: { bucket: { name: bucket }, object: { key, "version-id": versionId } },
  } as never).name;

/**
 * Submits one draft: uploaded under `drafts/` (its key from its file's name), or as a `Draft
 * Submitted` event with the draft inline. An upload needs the bucket's version id to know its run,
 * as the stack's bucket is versioned; a bucket that returns none is said to be unfollowable.
 */
export async function submitDraft(
  cloud: CloudRuntime,
  source: DraftSource,
  via: Via,
  extra: { parentRunId?: string } = {},
): Promise<Submitted> {
  if (via === "upload" && !extra.parentRunId) {
    const key = uploadKeyOf(source);
    const version = await upload(cloud, key, source.body);
    if (!version)
      throw new Error(
        `${source.label} was uploaded as ${key}, but the bucket returned no version id, so its run cannot be named; the stack's bucket is versioned (use --via event for another bucket)`,
      );
    const bucket = cloud.resources.bucket;
    const keys = [...new Set([key, notificationKey(key)])];
    return { label: source.label, runIds: keys.map((k) => uploadRunId(bucket, k, version)), to: key };
  }
  // Text that does not parse goes as text: Validate rejects it with its reason, as it would an upload.
  let draft: unknown = source.body;
  try {
    draft = JSON.parse(source.body);
  } catch {
    // kept as text
  }
  const detail = { draft, ...extra };
  const eventId = await putEvent(cloud, SubmissionEvent.detailType, detail);
  const { name } = startFor({
    id: eventId,
    source: SubmissionEvent.source,
    "detail-type": SubmissionEvent.detailType,
    detail,
  } as never);
  return { label: source.label, runIds: [name], to: cloud.resources.bus ?? "" };
}

/**
 * Submits a draft already uploaded to the stack's bucket as a `Draft Submitted` naming it
 * (`draftRef`: its key under drafts/ and the version the first run read), so that no size limit of
 * an event applies; `uploadRef` is the run record's `drafts/…[?versionId=…]`.
 */
export async function submitUploadedDraft(
  cloud: CloudRuntime,
  label: string,
  uploadRef: string,
  extra: { parentRunId?: string } = {},
): Promise<Submitted> {
  const [key, versionId] = uploadRef.split("?versionId=") as [string, string | undefined];
  const detail = {
    draftRef: { bucket: cloud.resources.bucket, key, ...(versionId && { versionId }) },
    ...extra,
  };
  const eventId = await putEvent(cloud, SubmissionEvent.detailType, detail);
  const { name } = startFor({
    id: eventId,
    source: SubmissionEvent.source,
    "detail-type": SubmissionEvent.detailType,
    detail,
  } as never);
  return { label, runIds: [name], to: cloud.resources.bus ?? "" };
}

/** Polls a submitted draft's run until it has an outcome (or `wait` ms passed), then reads it as `redraft run` prints it. */
export async function followRun(cloud: CloudRuntime, submitted: Submitted, wait: number): Promise<RunResult> {
  const deadline = Date.now() + wait;
  for (;;) {
    for (const runId of submitted.runIds) {
      const run = await cloud.runs.getRun(runId);
      if (run && !isActiveStatus(run.status)) return buildRunResult(runId, cloud.deps, run);
    }
    if (Date.now() > deadline)
      throw new Error(
        `${submitted.label} (${submitted.to}): its run ${submitted.runIds.join(" or ")} has no outcome after ${Math.round(wait / 60000)} min`,
      );
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** A submitted batch: its id (the batch execution's name, which its items' run ids start with). */
export interface SubmittedBatch {
  batchIds: string[];
  manifestKey: string;
}

/**
 * Submits a manifest: uploaded under `batches/` (the upload's trigger starts it at the deployment's
 * pricing), or, with `--via event`, a `Batch Submitted` naming a manifest already under `batches/`
 * in the bucket (`manifestKey`) with the pricing asked for: the event is a batch of its own, so
 * uploading the file as well would start a second one.
 */
export async function submitBatch(
  cloud: CloudRuntime,
  manifest: { file: string; text: string } | { key: string },
  pricing?: string,
): Promise<SubmittedBatch> {
  const bucket = cloud.resources.bucket;
  if ("text" in manifest) {
    const key = `${BATCHES_PREFIX}${basename(manifest.file)}`;
    const version = await upload(cloud, key, manifest.text);
    if (!version)
      throw new Error(
        `${manifest.file} was uploaded as ${key}, but the bucket returned no version id, so its batch cannot be named; the stack's bucket is versioned`,
      );
    const keys = [...new Set([key, notificationKey(key)])];
    return { batchIds: keys.map((k) => batchIdFor(["upload", bucket, k, version])), manifestKey: key };
  }
  const eventId = await putEvent(cloud, BatchEvents.submitted, {
    manifestRef: { bucket, key: manifest.key },
    ...(pricing && { pricing }),
  });
  return { batchIds: [batchIdFor(["event", eventId])], manifestKey: manifest.key };
}
