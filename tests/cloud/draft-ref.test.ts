import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import { startFor } from "../../functions/start.js";
import { createValidateHandler } from "../../functions/steps/validate.js";
import type { LoopState } from "../../shared/loop/state.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryRunStore } from "../../shared/store/memory.js";
import { DRAFT_WITH_ERRORS } from "../fixtures/seed004.js";
import { type LocalS3, startS3 } from "./s3.js";

/**
 * A run reads as its draft only an upload under `drafts/`, or (a batch's child) an item of its own
 * batch: a `Draft Submitted` naming any other key of the stack's bucket is rejected with the reason,
 * and the object is never read with redraft's role.
 */

const BUCKET = "redraft-draft-refs";
const BATCH = "b-0123456789abcdef01234567";
const OTHER_BATCH = "b-fedcba9876543210fedcba98";

/** Objects of the bucket a client must not have a run read, each a valid draft (so reading it would succeed). */
const FORBIDDEN = [
  "results/q1/e-1234.json",
  "runs/e-1234/original.json",
  "runs/e-1234/attempts/1/draft.json",
  `batch-items/${OTHER_BATCH}/line-1.json`,
  `batch-items/${BATCH}/line-1.json`,
  `batch-results/${BATCH}/items.jsonl`,
  "batches/manifest.jsonl",
  "drafts/../results/q1/e-1234.json",
  "drafts/./x.json",
  "drafts/",
];

let s3: LocalS3;
let blobs: S3BlobStore;

beforeAll(async () => {
  s3 = await startS3(BUCKET);
  blobs = new S3BlobStore({
    client: s3.client,
    bucket: BUCKET,
    uploads: { prefix: "drafts/", maxBytes: 1 << 20 },
  });
  for (const key of [...FORBIDDEN.filter((k) => !k.endsWith("/")), "drafts/mine.json"])
    await s3.client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: key,
        Body: JSON.stringify({ ...DRAFT_WITH_ERRORS, id: "secret" }),
      }),
    );
});
afterAll(async () => {
  await s3?.close();
});

const validate = (event: unknown) =>
  createValidateHandler(
    async () => ({ registry: new PackRegistry(), runs: new MemoryRunStore(), blobs, modelAvailable: false }),
    { bucketName: BUCKET },
  )(event);

/** A client's `Draft Submitted`, through λ start as EventBridge delivers it. */
function submitted(detail: Record<string, unknown>, id: string) {
  const { name, input, machine } = startFor({
    id,
    source: "my.app",
    "detail-type": "Draft Submitted",
    detail,
  } as never);
  expect(machine).toBe("draft");
  return { runId: name, input };
}

describe("draftRef outside drafts/", () => {
  it.each(FORBIDDEN)(
    "a Draft Submitted naming %s is rejected with the reason, the object never read",
    async (key) => {
      const read = vi.spyOn(blobs, "get");
      try {
        const state = (await validate(
          submitted({ draftRef: { bucket: BUCKET, key } }, `evt-${key}`),
        )) as LoopState;
        expect(state, JSON.stringify(state)).toMatchObject({ decision: "rejected", reason: "invalid_input" });
        expect(state.draftId).not.toBe("secret");
        expect(read).not.toHaveBeenCalledWith(key, undefined);
        expect(read.mock.calls.map(([k]) => k)).not.toContain(key);
      } finally {
        read.mockRestore();
      }
    },
  );

  it("the reason says where a run may read from", async () => {
    const runs = new MemoryRunStore();
    const handler = createValidateHandler(
      async () => ({ registry: new PackRegistry(), runs, blobs, modelAvailable: false }),
      { bucketName: BUCKET },
    );
    const event = submitted({ draftRef: { bucket: BUCKET, key: "results/q1/e-1234.json" } }, "evt-reason");
    await handler(event);
    const run = await runs.getRun(event.runId);
    expect(run?.message).toMatch(
      /draftRef "results\/q1\/e-1234\.json" is outside drafts\/: a run reads only an upload under drafts\//,
    );
    const batchEvent = submitted(
      { draftRef: { bucket: BUCKET, key: `batch-items/${BATCH}/line-1.json` }, submissionId: BATCH },
      "evt-batch",
    );
    await handler(batchEvent);
    expect((await runs.getRun(batchEvent.runId))?.message).toMatch(
      /is a batch's item, and this run .* is not a child of that batch/,
    );
  });

  it("a draftRef given as a bare string is held to the same rule", async () => {
    const state = (await validate(
      submitted({ draftRef: "runs/e-1234/original.json" }, "evt-string"),
    )) as LoopState;
    expect(state).toMatchObject({ decision: "rejected", reason: "invalid_input" });
  });

  it("an upload under drafts/ is read, and a batch's child reads its own batch's items only", async () => {
    const mine = (await validate(
      submitted({ draftRef: { bucket: BUCKET, key: "drafts/mine.json" } }, "evt-mine"),
    )) as LoopState;
    expect(mine).toMatchObject({ decision: "correct", draftId: "secret" });
    // The batch machine names its children `<batchId>-<line>` and gives them their items' keys.
    const child = (await validate({
      runId: `${BATCH}-1`,
      input: { draftRef: { bucket: BUCKET, key: `batch-items/${BATCH}/line-1.json` }, submissionId: BATCH },
    })) as LoopState;
    expect(child).toMatchObject({ decision: "correct" });
    const stranger = (await validate({
      runId: `${BATCH}-2`,
      input: {
        draftRef: { bucket: BUCKET, key: `batch-items/${OTHER_BATCH}/line-1.json` },
        submissionId: BATCH,
      },
    })) as LoopState;
    expect(stranger).toMatchObject({ decision: "rejected", reason: "invalid_input" });
  });
});

describe("a batch manifest is matched by its exact key outside its upload's own event", () => {
  it("a Batch Submitted naming another manifest's key in its encoding is refused; its upload event reads it", async () => {
    const { prepareBatch } = await import("../../shared/batch/steps.js");
    const { DRAFT_WITH_ERRORS: draft } = await import("../fixtures/seed004.js");
    await s3.client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: "batches/their batch.jsonl",
        Body: `${JSON.stringify(draft)}\n`,
      }),
    );
    const deps = { blobs, runs: new MemoryRunStore(), bucketName: BUCKET };
    const client = startFor({
      id: "evt-manifest",
      source: "my.app",
      "detail-type": "Batch Submitted",
      detail: {
        manifestRef: {
          bucket: BUCKET,
          key: "batches/their+batch.jsonl",
          versionId: "v1",
          keyForm: "notification",
        },
      },
    } as never);
    expect(client.machine).toBe("batch");
    expect(JSON.stringify(client.input)).not.toContain("keyForm");
    const refused = await prepareBatch(client.input as never, deps).catch((error: unknown) => error);
    expect((refused as Error).name).toBe("ManifestRefused");
    expect((refused as Error).message).toMatch(/batches\/their\+batch\.jsonl does not exist/);
    // The upload's own event, its key in notification form with the upload's version: read.
    const upload = startFor({
      id: "evt-upload",
      source: "aws.s3",
      detail: { bucket: { name: BUCKET }, object: { key: "batches/their+batch.jsonl", "version-id": "v1" } },
    } as never);
    await expect(prepareBatch(upload.input as never, deps)).resolves.toMatchObject({ items: 1 });
  });
});
