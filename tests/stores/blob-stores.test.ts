import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsBlobStore, InvalidBlobKeyError } from "../../local/fs-blobs.js";
import { SqliteBlobStore, SqliteDb } from "../../local/sqlite-store.js";
import { BlobNotFoundError } from "../../shared/errors.js";
import { blobKeys } from "../../shared/store/bucket-layout.js";
import { MemoryBlobStore } from "../../shared/store/memory.js";
import type { BlobStore } from "../../shared/store/types.js";

const folders: string[] = [];
async function tempFolder(): Promise<string> {
  const folder = await mkdtemp(path.join(tmpdir(), "redraft-blobs-"));
  folders.push(folder);
  return folder;
}
afterEach(async () => {
  await Promise.all(folders.splice(0).map((f) => rm(f, { recursive: true, force: true })));
});

const implementations: [string, () => Promise<BlobStore>][] = [
  ["MemoryBlobStore", async () => new MemoryBlobStore()],
  ["FsBlobStore", async () => new FsBlobStore(path.join(await tempFolder(), "blobs"))],
  ["SqliteBlobStore", async () => new SqliteBlobStore(SqliteDb.open(await tempFolder()))],
];

describe.each(implementations)("%s: BlobStore contract", (_name, fresh) => {
  let blobs: BlobStore;
  beforeEach(async () => {
    blobs = await fresh();
  });

  it("reads back what was put, and put replaces", async () => {
    await blobs.put("runs/r1/attempts/1/draft.json", '{"v":1}');
    await blobs.put("runs/r1/attempts/1/draft.json", '{"v":2}');
    await expect(blobs.get("runs/r1/attempts/1/draft.json")).resolves.toBe('{"v":2}');
  });

  it("throws BlobNotFoundError for a missing key", async () => {
    await expect(blobs.get("runs/none.json")).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it("never overwrites with putIfAbsent", async () => {
    await expect(blobs.putIfAbsent("runs/r1/original.json", "first")).resolves.toBe(true);
    await expect(blobs.putIfAbsent("runs/r1/original.json", "second")).resolves.toBe(false);
    await expect(blobs.get("runs/r1/original.json")).resolves.toBe("first");
  });

  it("keeps text intact, including non-ASCII", async () => {
    const body = JSON.stringify({ stem: "Quelle est la capitale ? — 首都 🙂" });
    await blobs.put("k.json", body);
    await expect(blobs.get("k.json")).resolves.toBe(body);
  });
});

describe("FsBlobStore on a folder", () => {
  let root: string;
  let blobs: FsBlobStore;
  beforeEach(async () => {
    root = path.join(await tempFolder(), "blobs");
    blobs = new FsBlobStore(root);
  });

  it("maps keys to relative paths under the folder", async () => {
    const key = blobKeys.attemptDraft("r1", 2);
    await blobs.put(key, "{}");
    await expect(
      readFile(path.join(root, "runs", "r1", "attempts", "2", "draft.json"), "utf8"),
    ).resolves.toBe("{}");
  });

  it.each([
    "../outside.json",
    "runs/../../outside.json",
    "runs\\..\\..\\outside.json",
    "/etc/passwd",
    "C:\\Windows\\win.ini",
    "runs//r1.json",
    "./runs/r1.json",
    "runs/r1/",
    "",
    "runs/\0.json",
  ])("rejects the key %j and writes nothing", async (key) => {
    await expect(blobs.put(key, "x")).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(blobs.putIfAbsent(key, "x")).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(blobs.get(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    await expect(readdir(path.dirname(root))).resolves.toEqual([]);
  });

  it("answers BlobNotFoundError when the key names a folder", async () => {
    await blobs.put("runs/r1/original.json", "{}");
    await expect(blobs.get("runs/r1")).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it("lets exactly one of many concurrent putIfAbsent calls win, and leaves no temporary file", async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => blobs.putIfAbsent("runs/r1/original.json", `writer ${i}`)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.indexOf(true);
    await expect(blobs.get("runs/r1/original.json")).resolves.toBe(`writer ${winner}`);
    await expect(readdir(path.join(root, "runs", "r1"))).resolves.toEqual(["original.json"]);
  });

  it("never overwrites a file that was there before the store", async () => {
    await blobs.put("drafts/a.json", "placeholder");
    await writeFile(path.join(root, "drafts", "b.json"), "uploaded");
    await expect(blobs.putIfAbsent("drafts/b.json", "mine")).resolves.toBe(false);
    await expect(blobs.get("drafts/b.json")).resolves.toBe("uploaded");
  });

  it("replaces a file atomically on put: concurrent readers see one whole body or the other", async () => {
    const a = "a".repeat(500_000);
    const b = "b".repeat(500_000);
    await blobs.put("big.json", a);
    const reads: Promise<string>[] = [];
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      writes.push(blobs.put("big.json", i % 2 ? a : b));
      reads.push(blobs.get("big.json"));
    }
    await Promise.all(writes);
    for (const body of await Promise.all(reads)) expect(body === a || body === b).toBe(true);
    expect((await stat(path.join(root, "big.json"))).size).toBe(500_000);
    await expect(readdir(root)).resolves.toEqual(["big.json"]);
  });
});
