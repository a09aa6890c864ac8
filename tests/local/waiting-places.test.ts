import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { clearWaiting, markWaiting, waitingPlaces } from "../../local/waiting.js";

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("waitingPlaces: the runs waiting for a model slot and their places", () => {
  it("numbers each process's waiting runs first come first served, and forgets a run a slot took", async () => {
    dir = await mkdtemp(join(tmpdir(), "redraft-waiting-"));
    const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    markWaiting(dir, "r-second", t(20));
    markWaiting(dir, "r-first", t(10));
    markWaiting(dir, "r-third", t(30));
    // Another process's queue (another `redraft run` on the same folder): places of its own.
    await writeFile(
      join(dir, "waiting", "r-other.json"),
      JSON.stringify({ since: t(15).toISOString(), pid: process.pid + 1 }),
    );
    // A note half written (or not JSON) is skipped, not an error.
    await writeFile(join(dir, "waiting", "r-torn.json"), '{"since": "2026-');
    const places = await waitingPlaces(dir);
    expect(Object.fromEntries([...places].map(([runId, p]) => [runId, p.position]))).toEqual({
      "r-first": 1,
      "r-second": 2,
      "r-third": 3,
      "r-other": 1,
    });
    expect(places.get("r-first")?.since).toBe(t(10).toISOString());
    clearWaiting(dir, "r-first");
    expect((await waitingPlaces(dir)).get("r-third")?.position).toBe(2);
  });

  it("is empty for a folder where nothing ever waited", async () => {
    dir = await mkdtemp(join(tmpdir(), "redraft-waiting-"));
    expect((await waitingPlaces(dir)).size).toBe(0);
  });
});
