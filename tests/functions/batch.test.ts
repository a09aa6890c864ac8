import { describe, expect, it } from "vitest";
import { checkManifest, ManifestRefusedError, splitManifest } from "../../shared/batch/manifest.js";
import { batchIdFor, batchItem, childRunId, summarize } from "../../shared/batch/record.js";
import { prepareBatch, readMapItems } from "../../shared/batch/steps.js";
import { batchKeys } from "../../shared/store/bucket-layout.js";
import { MemoryBlobStore, MemoryRunStore } from "../../shared/store/memory.js";

/** λ batch's core: the manifest split, refused as a whole only for what no item could fix. */

const deps = () => ({ blobs: new MemoryBlobStore(), runs: new MemoryRunStore(), bucketName: "ours" });

describe("splitManifest", () => {
  it("numbers JSONL items by their line, skipping blank lines, and JSON array items by position", () => {
    expect(splitManifest('{"a":1}\n\n  \n{"b":2}\r\n').map((i) => i.line)).toEqual([1, 4]);
    expect(splitManifest('[{"a":1}, {"b":[1,2]}, 3]').map((i) => [i.line, i.body])).toEqual([
      [1, '{"a":1}'],
      [2, '{"b":[1,2]}'],
      [3, "3"],
    ]);
    expect(splitManifest('\uFEFF{"a":1}')[0]?.body).toBe('{"a":1}');
    // A broken element inside a well-formed array is one item, rejected later on its own.
    expect(splitManifest('[{"a":1}, {"b":}, {"c":3}]').map((i) => i.body)).toEqual([
      '{"a":1}',
      '{"b":}',
      '{"c":3}',
    ]);
  });

  it("holds a manifest to the limits while splitting it: millions of blank lines or tiny elements are refused, not collected", () => {
    const limits = { maxManifestBytes: 64 * 1024 * 1024, maxItems: 1_000 };
    // 20 million blank lines around two drafts: 2 items, line numbers as an editor counts them.
    const blank = `${"\n".repeat(10_000_000)}{"a":1}${"\n".repeat(10_000_000)}{"b":2}\n`;
    expect(splitManifest(blank, limits).map((i) => i.line)).toEqual([10_000_001, 20_000_001]);
    // One item over the limit is refused as soon as it is met, whatever follows.
    const lines = `${'{"a":1}\n'.repeat(1_001)}${"\n".repeat(5_000_000)}`;
    expect(() => splitManifest(lines, limits)).toThrow(/more than 1000 items; a batch takes at most 1000/);
    const tiny = `[${"1,".repeat(5_000_000)}1]`;
    expect(() => splitManifest(tiny, limits)).toThrow(/more than 1000 items/);
    // Exactly at the limit is fine, in both forms.
    expect(splitManifest('{"a":1}\n'.repeat(1_000), limits)).toHaveLength(1_000);
    expect(splitManifest(`[${"1,".repeat(999)}1]`, limits)).toHaveLength(1_000);
    // Bytes are checked before anything is split.
    expect(() => splitManifest(blank, { maxManifestBytes: 1_000, maxItems: 10 })).toThrow(
      /bytes; a batch takes at most 1000/,
    );
  });

  it("reads a JSONL file whose first line is an array as JSONL", () => {
    expect(splitManifest('[1,2]\n{"a":1}\n').map((i) => [i.line, i.body])).toEqual([
      [1, "[1,2]"],
      [2, '{"a":1}'],
    ]);
  });

  it("refuses an array broken as a whole, saying where, instead of making each line an item", () => {
    const pretty = '[\n  {"id":"a","kind":"mcq"},\n  {"id":"b","kind":"mcq",\n  {"id":"c"}\n]\n';
    for (const [text, where] of [
      ['[{"a":1},\n{"b":2}', /on line 2/],
      [pretty, /on line 4/],
      ['[{"a":1},,{"b":2}]', /Unexpected token ','/],
    ] as const) {
      const refusal = (() => {
        try {
          splitManifest(text);
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(refusal).toBeInstanceOf(ManifestRefusedError);
      expect(String((refusal as Error).message)).toMatch(where);
      expect(String((refusal as Error).message)).toMatch(/not a well-formed JSON array .*send JSONL/);
      // The drafts' text stays out of the message (V8 quotes it after the reason).
      expect(String((refusal as Error).message)).not.toContain('{"b":2}');
    }
  });
});

describe("prepareBatch", () => {
  it("writes one object per item and the Map's item list, pointing into this bucket only", async () => {
    const d = deps();
    await d.blobs.put("batches/m.jsonl", '{"id":"a"}\nnot json\n');
    const prepared = await prepareBatch(
      { batchId: "b-1", manifestRef: { bucket: "ours", key: "batches/m.jsonl" } },
      d,
    );
    expect(prepared).toEqual({ itemsKey: batchKeys.items("b-1"), items: 2 });
    const items = await readMapItems(d.blobs, prepared.itemsKey);
    // Each item names its run and its batch too: a batch-priced round's Map reads the same list.
    expect(items).toEqual([
      {
        line: 1,
        runId: "b-1-1",
        batchId: "b-1",
        draftRef: { bucket: "ours", key: batchKeys.item("b-1", 1) },
      },
      {
        line: 2,
        runId: "b-1-2",
        batchId: "b-1",
        draftRef: { bucket: "ours", key: batchKeys.item("b-1", 2) },
      },
    ]);
    expect(await d.blobs.get(batchKeys.item("b-1", 2))).toBe("not json");
    // Run again (a retried step): the same objects, nothing else.
    expect(
      await prepareBatch({ batchId: "b-1", manifestRef: { bucket: "ours", key: "batches/m.jsonl" } }, d),
    ).toEqual(prepared);
  });

  it("refuses a manifest in another bucket or outside batches/, a missing one, an empty one, and one beyond the limits", async () => {
    const d = deps();
    const run = (key: string, bucket = "ours", limits?: Parameters<typeof prepareBatch>[2]) =>
      prepareBatch({ batchId: "b-2", manifestRef: { bucket, key } }, d, limits);
    await expect(run("batches/x.jsonl", "theirs")).rejects.toThrow(/not this deployment's bucket/);
    await expect(run("batches/missing.jsonl")).rejects.toThrow(/does not exist/);
    // Another batch's item list or results, though readable, are no manifest.
    await d.blobs.put("batch-results/b-1/items.jsonl", "{}\n{}\n");
    await expect(run("batch-results/b-1/items.jsonl")).rejects.toThrow(/is not under batches\//);
    await d.blobs.put("batches/empty.jsonl", "\n \n");
    await expect(run("batches/empty.jsonl")).rejects.toBeInstanceOf(ManifestRefusedError);
    await d.blobs.put("batches/three.jsonl", "{}\n{}\n{}");
    await expect(run("batches/three.jsonl", "ours", { maxManifestBytes: 1000, maxItems: 2 })).rejects.toThrow(
      /holds more than 2 items; a batch takes at most 2/,
    );
    await expect(run("batches/three.jsonl", "ours", { maxManifestBytes: 4, maxItems: 10 })).rejects.toThrow(
      /is 8 bytes; a batch takes at most 4/,
    );
    // Nothing was written for a refused manifest.
    expect(await d.blobs.get(batchKeys.items("b-2")).catch(() => undefined)).toBeUndefined();
  });

  it("names errors the state machine can match", () => {
    expect(() => checkManifest(0, 0)).toThrow(expect.objectContaining({ name: "ManifestRefused" }));
  });
});

describe("batch ids and sums", () => {
  it("derives one id per delivery and one child per line, within Step Functions' 80 characters", () => {
    const id = batchIdFor(["upload", "bucket", "batches/m.jsonl", "v1"]);
    expect(id).toBe(batchIdFor(["upload", "bucket", "batches/m.jsonl", "v1"]));
    expect(id).not.toBe(batchIdFor(["upload", "bucket", "batches/m.jsonl", "v2"]));
    expect(childRunId(id, 100_000).length).toBeLessThanOrEqual(80);
    expect(childRunId(id, 7)).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it("sums counts, reasons, tokens and cost once per item, an item never run counted as not_run", () => {
    const items = [batchItem(1, "r1", undefined), batchItem(2, "r2", undefined)];
    const summary = summarize(items);
    expect(summary).toMatchObject({ items: 2, counts: { not_run: 2 }, costUsd: 0, rejected: [] });
    expect(summary.tokens.total).toBe(0);
  });
});
