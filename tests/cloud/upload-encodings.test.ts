/**
 * Issue 34, "inputs keep their meaning", in the cloud: an upload under `drafts/` is read as a draft
 * file is offline (shared/text-encoding.ts), by the real S3 client against s3rver and the real
 * Validate handler. A Latin-1 upload with a few accents used to be read with U+FFFD in their place and
 * validated (fewer than looksBinary's nine replacement characters); it is now rejected `invalid_input`
 * naming the key and its first byte that is not UTF-8. UTF-16 with a byte-order mark is read as such.
 */
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import { startFor } from "../../functions/start.js";
import { createValidateHandler } from "../../functions/steps/validate.js";
import { InvalidDraftError } from "../../shared/errors.js";
import type { LoopState } from "../../shared/loop/state.js";
import { PackRegistry } from "../../shared/registry.js";
import { MemoryRunStore } from "../../shared/store/memory.js";
import { type LocalS3, startS3 } from "./s3.js";

const BUCKET = "redraft-upload-encodings";
const DRAFT = {
  id: "zoe",
  kind: "json",
  content: { name: "Zoë", city: "Café Noir" },
  context: { schema: {} },
};
const TEXT = JSON.stringify(DRAFT);

const UPLOADS: Record<string, Buffer> = {
  "drafts/latin1.json": Buffer.from(TEXT, "latin1"),
  "drafts/utf16-no-mark.json": Buffer.from(TEXT, "utf16le"),
  "drafts/invalid.json": Buffer.concat([
    Buffer.from(TEXT.slice(0, 10)),
    Buffer.from([0xc3, 0x28]),
    Buffer.from(TEXT.slice(10)),
  ]),
  "drafts/utf16le-mark.json": Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(TEXT, "utf16le")]),
  "drafts/utf16be-mark.json": Buffer.concat([
    Buffer.from([0xfe, 0xff]),
    Buffer.from(TEXT, "utf16le").swap16(),
  ]),
  "drafts/utf8.json": Buffer.from(TEXT),
};

let s3: LocalS3;
let blobs: S3BlobStore;
let runs: MemoryRunStore;

beforeAll(async () => {
  s3 = await startS3(BUCKET);
  blobs = new S3BlobStore({
    client: s3.client,
    bucket: BUCKET,
    uploads: { prefix: "drafts/", maxBytes: 1 << 20 },
  });
  for (const [key, body] of Object.entries(UPLOADS))
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
});
afterAll(async () => {
  await s3?.close();
});

/** The upload's own S3 notification, through λ start, into the Validate handler. */
async function validateUpload(key: string): Promise<LoopState> {
  runs = new MemoryRunStore();
  const { name, input } = startFor({
    id: `evt-${key}`,
    source: "aws.s3",
    detail: { bucket: { name: BUCKET }, object: { key } },
  } as never);
  const handler = createValidateHandler(
    async () => ({ registry: new PackRegistry(), runs, blobs, modelAvailable: false }),
    { bucketName: BUCKET },
  );
  return (await handler({ runId: name, input })) as LoopState;
}

describe("an upload under drafts/ in another encoding", () => {
  it.each([
    ["drafts/latin1.json", /^drafts\/latin1\.json is not UTF-8 text \(byte 0xEB at offset 47: Latin-1/],
    [
      "drafts/utf16-no-mark.json",
      /^drafts\/utf16-no-mark\.json is not UTF-8 text \(a NUL byte at offset 1: UTF-16 without a byte-order mark\?\)/,
    ],
    ["drafts/invalid.json", /^drafts\/invalid\.json is not UTF-8 text \(byte 0xC3 at offset 10/],
  ])("%s: rejected invalid_input, naming the key and the byte", async (key, said) => {
    await expect(blobs.get(key)).rejects.toThrow(InvalidDraftError);
    await expect(blobs.get(key)).rejects.toThrow(said);

    const state = await validateUpload(key);
    expect(state).toMatchObject({ decision: "rejected", reason: "invalid_input" });
    const [run] = await runs.listRuns({ limit: 10 });
    expect(run?.message).toMatch(said);
  });

  it.each(["drafts/utf16le-mark.json", "drafts/utf16be-mark.json", "drafts/utf8.json"])(
    "%s: read exactly as its bytes say, and checked",
    async (key) => {
      expect(JSON.parse(await blobs.get(key))).toEqual(DRAFT);
      const state = await validateUpload(key);
      expect(state).toMatchObject({ draftId: "zoe" });
      expect(state.decision).not.toBe("rejected");
    },
  );

  it("redraft's own objects (outside drafts/) are read as before", async () => {
    await blobs.put("runs/r-1/original.json", TEXT);
    expect(await blobs.get("runs/r-1/original.json")).toBe(TEXT);
  });
});
