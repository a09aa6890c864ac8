import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { batchMatching, idsMatching, MIN_PREFIX, shortIds } from "../../app/ids.js";
import { LocalRuntime } from "../../local/runtime.js";
import { loadAsl } from "../../local/state-machine.js";
import { buildRunResult } from "../../shared/loop/run.js";
import { startViewer } from "../../ui/server.js";
import { CASSETTE, jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

const BATCH_A = `b-${"611b40".padEnd(24, "a")}`;
const BATCH_B = `b-${"611b40".padEnd(24, "b")}`;

describe("short ids", () => {
  it("are the shortest prefix unique among every known id, never under the minimum", () => {
    const known = [
      "3f2c9a1e-0000-4000-8000-000000000001",
      "3f2c9a1e-0000-4000-8000-000000000002",
      "77aa0000-1",
    ];
    const short = shortIds(["77aa0000-1", known[0] ?? ""], known);
    expect(short.get("77aa0000-1")).toBe("77aa0000");
    expect(short.get(known[0] ?? "")).toBe(known[0]);
    // A run not shown still counts: the prefix printed must not name it as well.
    expect(shortIds(["abcdefgh-1"], ["abcdefgh-2"]).get("abcdefgh-1")).toBe("abcdefgh-1");
    expect(shortIds(["abcdefgh-1"], ["abcdefzz"]).get("abcdefgh-1")).toHaveLength(MIN_PREFIX);
    // An id shorter than the minimum is printed whole.
    expect(shortIds(["abc"]).get("abc")).toBe("abc");
  });

  it("print a batch item as its batch's unique prefix and its line, and read that form back", () => {
    const known = [`${BATCH_A}-1`, `${BATCH_A}-12`, `${BATCH_B}-1`, "b611b40a-uuid"];
    const short = shortIds(known, known);
    expect(short.get(`${BATCH_A}-1`)).toBe("b-611b40a-1");
    expect(short.get(`${BATCH_A}-12`)).toBe("b-611b40a-12");
    expect(short.get(`${BATCH_B}-1`)).toBe("b-611b40b-1");
    expect(new Set(short.values()).size).toBe(known.length);
    for (const [id, printed] of short) expect(idsMatching(printed, known)).toEqual([id]);
    // Line 1 is not line 12, and a shared batch prefix names both batches' items.
    expect(idsMatching("b-611b40-1", known).sort()).toEqual([`${BATCH_A}-1`, `${BATCH_B}-1`]);
    expect(idsMatching("B-611B40A-12", known)).toEqual([`${BATCH_A}-12`]);
    expect(idsMatching("", known)).toEqual([]);
  });

  it("name a batch by a unique prefix of its id", () => {
    const known = [`${BATCH_A}-1`, `${BATCH_B}-1`, "b-not-a-batch"];
    expect(batchMatching("b-611b40a", known)).toBe(BATCH_A);
    expect(batchMatching("b-611b40", known)).toBeUndefined();
    expect(batchMatching("b-611b40a-1", known)).toBeUndefined();
  });
});

/** A GET on the viewer, answered as status and parsed JSON body. */
function get(port: number, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path }, (res) => {
      let text = "";
      res.on("data", (chunk) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("every id a table prints works in every command that takes one", () => {
  let work: string;
  let dataDir: string;
  const cli = (...args: string[]) => redraft(["--data-dir", dataDir, ...args]);
  /** The cell in column `runColumn` of each row of a table. */
  const rows = (table: string, runColumn: string) => {
    // A row is one line.
    const lines = table.split("\n").filter((l) => l.startsWith("│"));
    const heads = (lines[0] ?? "").split("│").map((c) => c.trim());
    const at = heads.indexOf(runColumn);
    return lines.slice(1).map((l) => {
      const cells = l.split("│").map((c) => c.trim());
      return { id: cells[at] ?? "" };
    });
  };

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "redraft-ids-"));
    dataDir = join(work, "data");
    const ran = await cli("--llm", `replay:${CASSETTE}`, "run", join(ROOT, "examples", "drafts"), "--json");
    expect(ran.code).toBe(0);
    // Two batches of the same three drafts: nine runs share `b-`, each batch's three its 26 characters.
    const drafts = await Promise.all(
      ["mcq-clean", "mcq-breaker", "json-stuck"].map(async (name) =>
        JSON.stringify(JSON.parse(await readFile(join(ROOT, "examples", "drafts", `${name}.json`), "utf8"))),
      ),
    );
    for (const name of ["one.jsonl", "two.jsonl"]) {
      // The second in another order: another manifest, so another batch.
      const lines = name === "one.jsonl" ? drafts : [...drafts].reverse();
      await writeFile(join(work, name), `${lines.join("\n")}\n`);
      const batch = await cli("--llm", `replay:${CASSETTE}`, "batch", join(work, name), "--json");
      expect(batch.code).toBe(0);
    }
  }, 240_000);

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it("show, export and review take each id `runs` prints, batch items included, and the viewer's URL too", async () => {
    const table = await cli("runs");
    const printed = rows(table.stdout, "run");
    const all = jsonLines((await cli("runs", "--json")).stdout);
    expect(printed).toHaveLength(all.length);
    expect(new Set(printed.map((r) => r.id)).size).toBe(printed.length);
    const items = printed.filter((r) => r.id.startsWith("b-"));
    expect(items).toHaveLength(6);
    // The table lists the runs in the order --json does: row i is run i.
    for (const [i, { id }] of printed.entries()) {
      const run = all[i] ?? {};
      const shown = await cli("show", id, "--json");
      expect(shown.code, `${id}: ${shown.stderr}`).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({ runId: run.runId, draftId: run.draftId });
      const exported = await cli("export", id);
      if (run.status === "rejected") continue;
      expect(exported.code, `${id}: ${exported.stderr}`).toBe(0);
      expect(JSON.parse(exported.stdout)).toMatchObject({ id: run.draftId });
    }

    const runtime = await LocalRuntime.open({ dataDir, asl: await loadAsl(), retryDelayMs: 0 });
    try {
      const viewer = await startViewer({
        runtime,
        asl: await loadAsl(),
        reviewer: "tester",
        port: 0,
        submit: async () => buildRunResult("none", runtime.deps),
      });
      try {
        const list = await get(viewer.port, "/api/runs");
        const listed = list.body.runs as { runId: string; shortId: string }[];
        expect(listed.map((r) => r.shortId).sort()).toEqual(printed.map((r) => r.id).sort());
        for (const { runId, shortId } of listed) {
          const detail = await get(viewer.port, `/api/runs/${encodeURIComponent(shortId)}`);
          expect(detail.status).toBe(200);
          expect((detail.body.run as { runId: string }).runId).toBe(runId);
        }
        expect((await get(viewer.port, "/api/runs/zzzz")).status).toBe(404);
        expect((await get(viewer.port, "/api/runs/b-")).status).toBe(400);
        const malformed = await get(viewer.port, "/api/runs/%E0%A4%A");
        expect(malformed.status).toBe(400);
        expect(String(malformed.body.error)).toMatch(/percent-encoding/);
      } finally {
        await viewer.close();
      }
    } finally {
      await runtime.close();
    }

    // Review takes the printed ids too: a batch item and a plain run waiting for review.
    const waiting = jsonLines((await cli("runs", "--json", "--status", "needs_manual_review")).stdout);
    const ids = rows((await cli("runs", "--status", "needs_manual_review")).stdout, "run").map((r) => r.id);
    expect(ids.some((id) => id.startsWith("b-"))).toBe(true);
    expect(ids.some((id) => !id.startsWith("b-"))).toBe(true);
    for (const id of ids) {
      const reviewed = await cli("review", id, "approve", "--override", "--json");
      expect(reviewed.code, `${id}: ${reviewed.stderr}`).toBe(0);
      const outcome = JSON.parse(reviewed.stdout) as Record<string, unknown>;
      expect(outcome).toMatchObject({ decision: "approve", status: "validated", reason: "approved" });
      expect(waiting.map((r) => r.runId)).toContain(outcome.runId);
    }
  }, 240_000);

  it("show takes a batch by the prefix of its id, and lists its items by ids show takes back", async () => {
    const batches = rows((await cli("batches")).stdout, "batch").map((r) => r.id);
    expect(batches).toHaveLength(2);
    const [first = "", second = ""] = batches;
    let length = 3;
    while (first.slice(0, length) === second.slice(0, length)) length++;
    const shown = await cli("show", first.slice(0, length + 1));
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`Batch ${first}:`);
    const items = shown.stdout.match(/b-[0-9a-f]+-\d+/g) ?? [];
    expect(items).toHaveLength(3);
    for (const id of items) expect((await cli("show", id)).code).toBe(0);
  }, 120_000);

  it("an ambiguous id is one line listing the runs it could mean", async () => {
    const { code, stderr } = await cli("show", "b-");
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/run id b- is ambiguous: 6 runs start with it/);
  });
});
