import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { storeOf } from "../../local/backend.js";
import { LocalRuntime } from "../../local/runtime.js";
import { SQLITE_FILE } from "../../local/sqlite-store.js";
import { makeRun } from "../stores/fixtures.js";

const folders: string[] = [];
async function tempFolder(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), "redraft-backend-"));
  folders.push(folder);
  return folder;
}
afterEach(async () => {
  delete process.env.REDRAFT_LOCAL_STORE;
  await Promise.all(folders.splice(0).map((f) => rm(f, { recursive: true, force: true })));
});

describe("which store keeps a data folder", () => {
  it("a new folder is SQLite: one redraft.db, no dynalite folder, lock or blob files", async () => {
    const dataDir = await tempFolder();
    const runtime = await LocalRuntime.open({ dataDir, readOnly: true });
    try {
      expect(runtime.store).toBe("sqlite");
      await runtime.runs.createRun(makeRun("r1"));
      await runtime.blobs.put("runs/r1/original.json", "{}");
    } finally {
      await runtime.close();
    }
    expect(existsSync(join(dataDir, SQLITE_FILE))).toBe(true);
    for (const name of ["dynamodb", "dynamodb.lock", "blobs", "executions"])
      expect(existsSync(join(dataDir, name)), name).toBe(false);
  });

  it("a folder made before SQLite keeps dynalite, with its runs, blobs and histories where they are", async () => {
    const dataDir = await tempFolder();
    const before = await LocalRuntime.open({ dataDir, readOnly: true, store: "dynalite" });
    try {
      await before.runs.createRun(makeRun("old-run"));
      await before.blobs.put("runs/old-run/original.json", '{"kept":true}');
    } finally {
      await before.close();
    }
    expect(storeOf(dataDir)).toBe("dynalite");
    const after = await LocalRuntime.open({ dataDir, readOnly: true });
    try {
      expect(after.store).toBe("dynalite");
      expect((await after.runs.getRun("old-run"))?.runId).toBe("old-run");
      await expect(after.blobs.get("runs/old-run/original.json")).resolves.toBe('{"kept":true}');
      expect(await after.runIds()).toEqual(["old-run"]);
    } finally {
      await after.close();
    }
    expect(existsSync(join(dataDir, SQLITE_FILE)), "no second store made beside it").toBe(false);
  }, 60_000);

  it("REDRAFT_LOCAL_STORE chooses the store of a new folder, and a wrong value is refused", async () => {
    const dataDir = await tempFolder();
    process.env.REDRAFT_LOCAL_STORE = "dynalite";
    expect(storeOf(dataDir)).toBe("dynalite");
    process.env.REDRAFT_LOCAL_STORE = "leveldb";
    expect(() => storeOf(dataDir)).toThrow(/"sqlite" or "dynalite"/);
  });

  it("lists a page after a run on either store alike", async () => {
    for (const store of ["sqlite", "dynalite"] as const) {
      const runtime = await LocalRuntime.open({ dataDir: await tempFolder(), readOnly: true, store });
      try {
        for (let i = 0; i < 5; i++)
          await runtime.runs.createRun(makeRun(`r${i}`, { createdAt: `2026-01-0${i + 1}T00:00:00.000Z` }));
        const page = await runtime.listPage({
          limit: 2,
          after: { at: "2026-01-04T00:00:00.000Z", runId: "r3" },
        });
        expect(
          page.map((r) => r.runId),
          store,
        ).toEqual(["r2", "r1"]);
      } finally {
        await runtime.close();
      }
    }
  }, 60_000);
});
