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
import { prepareBatch } from "../../shared/batch/steps.js";
import { InvalidDraftError } from "../../shared/errors.js";
import type { LoopState } from "../../shared/loop/state.js";
import { PackRegistry } from "../../shared/registry.js";
import { BATCHES_PREFIX, DRAFTS_PREFIX, SOURCES_PREFIX } from "../../shared/store/bucket-layout.js";
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
  // As functions/lib/deps.ts builds it for the deployed handlers.
  blobs = new S3BlobStore({
    client: s3.client,
    bucket: BUCKET,
    uploads: { prefix: DRAFTS_PREFIX, maxBytes: 1 << 20 },
    textPrefixes: [SOURCES_PREFIX, BATCHES_PREFIX],
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

describe("a source under sources/ and a manifest under batches/ in another encoding", () => {
  const SOURCE = "Zoë was seen at the Café Noir.";
  const put = (key: string, body: Buffer) =>
    s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  const marked = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]);

  it("a Latin-1 source: the draft that names it is rejected invalid_input, naming the key; a marked UTF-16 one is read exactly", async () => {
    await put("sources/latin1.txt", Buffer.from(SOURCE, "latin1"));
    await put("sources/utf16.txt", marked(SOURCE));
    await expect(blobs.get("sources/latin1.txt")).rejects.toThrow(
      /^sources\/latin1\.txt is not UTF-8 text \(byte 0xEB at offset 2: Latin-1/,
    );
    expect(await blobs.get("sources/utf16.txt")).toBe(SOURCE);

    const draft = (ref: string) => ({ ...DRAFT, context: { schema: {}, source: { ref } } });
    await put("drafts/with-latin1-source.json", Buffer.from(JSON.stringify(draft("sources/latin1.txt"))));
    const state = await validateUpload("drafts/with-latin1-source.json");
    expect(state).toMatchObject({ decision: "rejected", reason: "invalid_input" });
    const [run] = await runs.listRuns({ limit: 10 });
    expect(run?.message).toMatch(/sources\/latin1\.txt is not UTF-8 text/);
  });

  it("a Latin-1 manifest is refused (ManifestRefused) naming the key; a marked UTF-16 one is prepared", async () => {
    const line = `${JSON.stringify(DRAFT)}\n`;
    await put("batches/latin1.jsonl", Buffer.from(line, "latin1"));
    await put("batches/utf16.jsonl", marked(line));
    const deps = { blobs, runs: new MemoryRunStore(), bucketName: BUCKET };
    const input = (key: string) => ({
      batchId: `b-${key.length.toString(16).padStart(24, "0")}`,
      manifestRef: { bucket: BUCKET, key },
    });
    const refused = await prepareBatch(input("batches/latin1.jsonl") as never, deps).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(refused?.name).toBe("ManifestRefused");
    expect(refused?.message).toMatch(
      /^batches\/latin1\.jsonl is not UTF-8 text \(byte 0xEB at offset \d+: Latin-1/,
    );
    await expect(prepareBatch(input("batches/utf16.jsonl") as never, deps)).resolves.toMatchObject({
      items: 1,
    });
    const [item] = (await blobs.get(`batch-items/${input("batches/utf16.jsonl").batchId}/line-1.json`)).split(
      "\n",
    );
    expect(JSON.parse(item ?? "")).toEqual(DRAFT);
  });
});
