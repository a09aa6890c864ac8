import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import { startFor } from "../../functions/start.js";
import { createValidateHandler } from "../../functions/steps/validate.js";
import { BlobNotFoundError } from "../../shared/errors.js";
import type { LoopState } from "../../shared/loop/state.js";
import { PackRegistry } from "../../shared/registry.js";
import { decodedKey, getByEventKey } from "../../shared/store/event-key.js";
import { MemoryRunStore } from "../../shared/store/memory.js";
import { DRAFT_WITH_ERRORS } from "../fixtures/seed004.js";
import { type LocalS3, startS3 } from "./s3.js";

const BUCKET = "redraft-object-keys";

/** How S3 event notifications write a key: form encoding (space as `+`), `/` kept. */
const notificationKey = (key: string) =>
  key
    .split("/")
    .map((part) => encodeURIComponent(part).replace(/%20/g, "+"))
    .join("/");

/** Keys a person really uploads: spaces, a literal `+`, a literal `%`, letters outside ASCII, all at once. */
const KEYS = [
  "drafts/red flower.json",
  "drafts/a+b.json",
  "drafts/100%.json",
  "drafts/fête d'été ñ 草稿.json",
  "drafts/50% off + more é.json",
];
/** A raw key that is also the notification form of `drafts/100%.json`: the one ambiguity of the rule. */
const AMBIGUOUS = "drafts/100%25.json";

let s3: LocalS3;
let blobs: S3BlobStore;

beforeAll(async () => {
  s3 = await startS3(BUCKET);
  blobs = new S3BlobStore({
    client: s3.client,
    bucket: BUCKET,
    uploads: { prefix: "drafts/", maxBytes: 1 << 20 },
  });
  for (const key of [...KEYS, AMBIGUOUS])
    await s3.client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: key,
        Body: JSON.stringify({
          ...DRAFT_WITH_ERRORS,
          id: key === AMBIGUOUS ? "draft-ambiguous" : `draft-${KEYS.indexOf(key)}`,
        }),
      }),
    );
});

afterAll(async () => {
  await s3?.close();
});

describe("an object named by an event, raw or URL-encoded, in a real S3-compatible server", () => {
  it.each(KEYS.filter((key) => notificationKey(key) !== AMBIGUOUS))(
    "finds %s under its raw key and under its notification key",
    async (key) => {
      const body = JSON.stringify({ ...DRAFT_WITH_ERRORS, id: `draft-${KEYS.indexOf(key)}` });
      await expect(getByEventKey(blobs, key)).resolves.toEqual({ text: body, key });
      const encoded = notificationKey(key);
      expect(encoded).not.toBe(key);
      await expect(getByEventKey(blobs, encoded)).resolves.toEqual({ text: body, key });
    },
  );

  it("reads the raw key first: where `100%.json` and `100%25.json` both exist, `100%25.json` is itself", async () => {
    const found = await getByEventKey(blobs, AMBIGUOUS);
    expect(found.key).toBe(AMBIGUOUS);
    expect(JSON.parse(found.text).id).toBe("draft-ambiguous");
  });

  it("names the key as given when neither form is there, and never decodes what is no encoding", async () => {
    const missing = await getByEventKey(blobs, "drafts/no+such.json").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(BlobNotFoundError);
    expect((missing as Error).message).toContain("drafts/no+such.json");
    expect(decodedKey("drafts/100%.json")).toBeUndefined();
    expect(decodedKey("drafts/plain.json")).toBeUndefined();
    expect(decodedKey("drafts/a+b%C3%A9.json")).toBe("drafts/a bé.json");
  });
});

describe("Validate reads the upload whichever form its S3 event carries", () => {
  // A store per upload: the raw and the encoded event of one object would otherwise be duplicates.
  const validate = (event: unknown) =>
    createValidateHandler(async () => ({
      registry: new PackRegistry(),
      runs: new MemoryRunStore(),
      blobs,
      modelAvailable: false,
    }))(event);
  /** What λ start makes of an upload's `Object Created`, handed to Validate under its execution name. */
  const uploadEvent = (key: string) => {
    const { name, input } = startFor({
      id: "evt",
      source: "aws.s3",
      detail: { bucket: { name: BUCKET }, object: { key, "version-id": "v1" } },
    } as never);
    return { runId: name, input };
  };

  it.each(KEYS.flatMap((key) => [[key], [notificationKey(key)]]).filter(([key]) => key !== AMBIGUOUS))(
    "registers the draft uploaded as %s",
    async (eventKey) => {
      const state = (await validate(uploadEvent(eventKey))) as LoopState;
      expect(state.decision, JSON.stringify(state)).toBe("correct");
      expect(state.draftId).toBe(
        `draft-${KEYS.findIndex((k) => k === eventKey || notificationKey(k) === eventKey)}`,
      );
    },
  );

  it("rejects an upload that is under neither form as invalid_input, naming the key it was given", async () => {
    const state = (await validate(uploadEvent("drafts/gone+away.json"))) as LoopState;
    expect(state).toMatchObject({ decision: "rejected", reason: "invalid_input" });
  });
});

describe("an upload is matched by its exact key outside an S3 event", () => {
  const validate = (event: unknown) =>
    createValidateHandler(async () => ({
      registry: new PackRegistry(),
      runs: new MemoryRunStore(),
      blobs,
      modelAvailable: false,
    }))(event);
  /** A client's `Draft Submitted`, through λ start as EventBridge delivers it. */
  const submitted = (detail: Record<string, unknown>) => {
    const { name, input } = startFor({
      id: `evt-${JSON.stringify(detail).length}-${Math.random()}`,
      source: "my.app",
      "detail-type": "Draft Submitted",
      detail,
    } as never);
    return { runId: name, input };
  };

  it.each([
    ["its form encoding", "drafts/red+flower.json", {}],
    ["its percent encoding", "drafts/fête%20d'été%20ñ%20草稿.json", {}],
    [
      "its encoding, with a version and a keyForm the client set",
      "drafts/red+flower.json",
      { versionId: "v1", keyForm: "notification" },
    ],
  ])(
    "a Draft Submitted whose key is another upload's key in %s is rejected, the other upload not read",
    async (_name, key, extra) => {
      const event = submitted({ draftRef: { bucket: BUCKET, key, ...extra } });
      expect(JSON.stringify(event.input)).not.toContain("keyForm");
      const state = (await validate(event)) as LoopState;
      expect(state, JSON.stringify(state)).toMatchObject({ decision: "rejected", reason: "invalid_input" });
      expect(state.draftId).not.toMatch(/^draft-\d$/);
    },
  );

  it("a Draft Submitted naming the upload's own key reads it", async () => {
    const state = (await validate(
      submitted({ draftRef: { bucket: BUCKET, key: "drafts/red flower.json" } }),
    )) as LoopState;
    expect(state).toMatchObject({ decision: "correct", draftId: "draft-0" });
  });

  it("an upload event without a version id is matched exactly too (its decoded form may be another upload)", async () => {
    const { name, input } = startFor({
      id: "evt-nov",
      source: "aws.s3",
      detail: { bucket: { name: BUCKET }, object: { key: "drafts/red+flower.json" } },
    } as never);
    const state = (await validate({ runId: name, input })) as LoopState;
    expect(state).toMatchObject({ decision: "rejected", reason: "invalid_input" });
  });
});

describe("λ start passes the key on exactly as the event gave it", () => {
  it.each(KEYS.flatMap((key) => [[key], [notificationKey(key)]]))("%s", (key) => {
    const event = {
      id: "evt-1",
      source: "aws.s3",
      detail: { bucket: { name: BUCKET }, object: { key, "version-id": "v1" } },
    };
    const started = startFor(event as never);
    expect(started.machine).toBe("draft");
    expect(started.input).toEqual({
      draftRef: { bucket: BUCKET, key, versionId: "v1", keyForm: "notification" },
    });
    expect(started.name).toMatch(/^u-[0-9a-f]{64}$/);
  });

  it("sends a manifest under batches/ to the batch machine whatever its key's encoding", () => {
    const key = notificationKey("batches/my batch é.jsonl");
    const started = startFor({
      id: "evt-2",
      source: "aws.s3",
      detail: { bucket: { name: BUCKET }, object: { key, "version-id": "v1" } },
    } as never);
    expect(started.machine).toBe("batch");
    expect(started.input).toMatchObject({ manifestRef: { key } });
  });
});
