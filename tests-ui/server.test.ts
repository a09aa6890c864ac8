import { spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNDO_MS } from "../app/review.js";
import { loadAsl } from "../local/state-machine.js";
import { executionConsoleUrl } from "../shared/console-url.js";
import type { RunRecord } from "../shared/store/types.js";
import { startViewer, TOKEN_HEADER } from "../ui/server.js";
import {
  BATCH_DRAFTS,
  batchDataDir,
  examplesDataDir,
  largeRunDataDir,
  manyRunsDataDir,
  ROOT,
  redraft,
  type Served,
  serve,
  UNPRICED_DRAFT,
} from "./harness.js";

let dataDir: string;
let served: Served;
let base: string;

/** A raw HTTP request, so that the Host and Origin headers are exactly what a test says. */
function http(
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: served.viewer.port,
        path,
        method: options.method ?? "GET",
        headers: options.headers,
      },
      (res) => {
        let body = "";
        res.on("data", (chunk) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

const json = { "content-type": "application/json" };
const post = (runId: string, body: unknown, headers: Record<string, string> = {}) =>
  http(`/api/runs/${runId}/review`, {
    method: "POST",
    headers: { ...json, [TOKEN_HEADER]: served.viewer.token, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

const byDraft = async (draftId: string): Promise<RunRecord> => {
  const [run] = await served.runtime.runs.listRuns({ draftId });
  if (!run) throw new Error(`no run of ${draftId}`);
  return run;
};

beforeAll(async () => {
  dataDir = await examplesDataDir();
  served = await serve(dataDir);
  base = served.viewer.url;
});

afterAll(async () => {
  await served?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe("the viewer's server", () => {
  it("listens on 127.0.0.1 and serves the page with its token and a strict CSP", async () => {
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await http("/", { headers: { host: `127.0.0.1:${served.viewer.port}` } });
    expect(page.status).toBe(200);
    expect(page.body).toContain(served.viewer.token);
    expect(String(page.headers["content-security-policy"])).toContain("script-src 'self'");
    const mermaid = await http("/mermaid.min.js", { headers: { host: `localhost:${served.viewer.port}` } });
    expect(mermaid.status).toBe(200);
  });

  it("lists runs newest first, filtered, with totals; an unpriced model is not $0", async () => {
    const all = JSON.parse((await http("/api/runs")).body);
    expect(all.runs).toHaveLength(9);
    const created = all.runs.map((r: { createdAt: string }) => r.createdAt);
    expect(created).toEqual([...created].sort().reverse());
    expect(all.totals).toMatchObject({ runs: 9, needsReview: 2, validated: 7, cost: { priced: false } });
    expect(all.totals.unpricedRuns).toBe(1);
    // The loop's outcomes and people's decisions are counted apart (no review has been made yet).
    expect(all.totals.outcomes).toEqual({
      finished: 9,
      validated: 7,
      sentToReview: 2,
      rejected: 0,
      failed: 0,
    });
    expect(all.totals.decisions).toEqual({ approved: 0, rejected: 0, edited: 0, awaiting: 2 });
    const cost = (draftId: string) => all.runs.find((r: { draftId: string }) => r.draftId === draftId).cost;
    expect(cost(UNPRICED_DRAFT)).toEqual({ usd: 0, priced: false });
    expect(cost("mcq-seed004")).toMatchObject({ priced: true });
    expect(cost("mcq-seed004").usd).toBeGreaterThan(0);
    expect(all.topRules.length).toBeGreaterThan(0);
    const queue = JSON.parse((await http("/api/runs?status=needs_manual_review")).body);
    expect(queue.runs.map((r: { status: string }) => r.status)).toEqual([
      "needs_manual_review",
      "needs_manual_review",
    ]);
    const search = JSON.parse((await http("/api/runs?q=SEED&kind=mcq")).body);
    expect(search.runs.map((r: { draftId: string }) => r.draftId)).toEqual(["mcq-seed004"]);
  });

  it("refuses bad filters and bad run ids", async () => {
    expect((await http("/api/runs?status=bogus")).status).toBe(400);
    expect((await http("/api/runs?reason=nope")).status).toBe(400);
    expect((await http("/api/runs?extra=1")).status).toBe(400);
    expect((await http("/api/runs/..%2F..%2Fetc%2Fpasswd")).status).toBe(400);
    expect((await http("/api/runs/00000000-0000-0000-0000-000000000000")).status).toBe(404);
    expect((await http("/../package.json")).status).toBe(404);
    expect((await http("/app.js/../../cli/main.ts")).status).toBe(404);
  });

  it("answers to no other Host (DNS rebinding)", async () => {
    for (const host of ["evil.example", `evil.example:${served.viewer.port}`, "127.0.0.1:1", "[::1]"]) {
      const res = await http("/api/runs", { headers: { host } });
      expect(res.status, host).toBe(421);
    }
  });

  it("takes a review only as JSON with the page's token from its own origin", async () => {
    const stuck = await byDraft("paper-stuck");
    const approve = { decision: "approve" };
    expect((await post(stuck.runId, approve, { [TOKEN_HEADER]: "" })).status).toBe(403);
    expect((await post(stuck.runId, approve, { [TOKEN_HEADER]: "0".repeat(48) })).status).toBe(403);
    expect((await post(stuck.runId, approve, { "content-type": "text/plain" })).status).toBe(415);
    expect(
      (await post(stuck.runId, approve, { "content-type": "application/x-www-form-urlencoded" })).status,
    ).toBe(415);
    expect((await post(stuck.runId, approve, { origin: "http://evil.example" })).status).toBe(403);
    expect((await post(stuck.runId, "{not json")).status).toBe(400);
    expect((await post(stuck.runId, { decision: "delete" })).status).toBe(400);
    expect((await post(stuck.runId, { decision: "approve", admin: true })).status).toBe(400);
    expect((await post(stuck.runId, { decision: "approve", draft: "{}" })).status).toBe(400);
    expect((await post(stuck.runId, { decision: "approve", note: "x".repeat(2001) })).status).toBe(400);
    expect((await http(`/api/runs/${stuck.runId}/review`)).status).toBe(405);
    expect((await byDraft("paper-stuck")).status).toBe("needs_manual_review");
  });

  it("refuses an approval over error violations unless it says so, and lets its reviewer take it back", async () => {
    const stuck = await byDraft("paper-stuck");
    const refused = await post(stuck.runId, { decision: "approve" });
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.body).error).toMatch(/still has error violations \(.+\).*--override/);
    expect((await byDraft("paper-stuck")).status).toBe("needs_manual_review");
    const approved = await post(stuck.runId, { decision: "approve", override: true });
    expect(approved.status).toBe(200);
    const decided = await byDraft("paper-stuck");
    expect(decided).toMatchObject({ status: "validated", review: { decision: "approve" } });
    expect(decided.review?.overriddenRules?.length).toBeGreaterThan(0);
    expect(Date.parse(JSON.parse(approved.body).undoUntil) - Date.parse(String(decided.review?.at))).toBe(
      UNDO_MS,
    );
    const undo = (headers: Record<string, string> = {}) =>
      http(`/api/runs/${stuck.runId}/undo`, {
        method: "POST",
        headers: { ...json, [TOKEN_HEADER]: served.viewer.token, ...headers },
        body: "{}",
      });
    expect((await undo({ [TOKEN_HEADER]: "" })).status).toBe(403);
    expect((await undo({ origin: "http://evil.example" })).status).toBe(403);
    expect((await http(`/api/runs/${stuck.runId}/undo`)).status).toBe(405);
    expect((await byDraft("paper-stuck")).status).toBe("validated");
    expect((await undo()).status).toBe(200);
    const back = await byDraft("paper-stuck");
    expect(back).toMatchObject({ status: "needs_manual_review", reason: stuck.reason });
    expect(back.review).toBeUndefined();
    const again = await undo();
    expect(again.status).toBe(409);
    expect(JSON.parse(again.body).error).toContain("no decision to take back");
  });

  it("refuses to review a run that is not waiting for review", async () => {
    const clean = await byDraft("mcq-clean");
    const res = await post(clean.runId, { decision: "reject" });
    expect(res.status).toBe(409);
    expect(JSON.parse(res.body).error).toContain("only a draft that needs review");
    expect((await byDraft("mcq-clean")).status).toBe("validated");
  });

  it("an edit that is not a valid draft leaves the run under review and names no temp file", async () => {
    const stuck = await byDraft("paper-stuck");
    const res = await post(stuck.runId, { decision: "edit", draft: '{"id":"paper-stuck"' });
    expect(res.status).toBe(409);
    expect(JSON.parse(res.body).error).not.toMatch(/redraft-edit-|\/tmp\//);
    const other = await post(stuck.runId, {
      decision: "edit",
      draft: JSON.stringify({ id: "someone-else", kind: "json", content: {} }),
    });
    expect(other.status).toBe(409);
    expect((await byDraft("paper-stuck")).status).toBe("needs_manual_review");
  });

  it("edit-and-resubmit writes the record redraft review writes and links the new run", async () => {
    const stuck = await byDraft("paper-stuck");
    const detail = JSON.parse((await http(`/api/runs/${stuck.runId}`)).body);
    const res = await post(stuck.runId, {
      decision: "edit",
      note: "fixed by hand",
      draft: JSON.stringify(detail.finalDraft),
    });
    expect(res.status, res.body).toBe(200);
    const after = await served.runtime.runs.getRun(stuck.runId);
    expect(after).toMatchObject({
      status: "rejected",
      reason: "superseded_by_edit",
      review: { decision: "edit", reviewer: "tester", note: "fixed by hand" },
    });
    const child = await served.runtime.runs.getRun(after?.review?.newRunId ?? "");
    expect(child?.parentRunId).toBe(stuck.runId);
  });

  it("serves a run's detail: path, attempts with old → new, cost by purpose, final draft download", async () => {
    const seed = await byDraft("mcq-seed004");
    const detail = JSON.parse((await http(`/api/runs/${seed.runId}`)).body);
    expect(detail.graph.entered.CorrectExecution).toBe(2);
    expect(detail.graph.mermaid).toContain("classDef visited");
    expect(detail.attempts[0].diff[0]).toMatchObject({
      op: "replace",
      old: expect.anything(),
      new: expect.anything(),
    });
    expect(detail.purposes.correct.calls).toBe(2);
    const judged = JSON.parse((await http(`/api/runs/${(await byDraft("mcq-judged")).runId}`)).body);
    expect(judged.judge.length).toBeGreaterThan(0);
    expect(judged.purposes.judge.calls).toBe(judged.judge.length);
    const download = await http(`/api/runs/${seed.runId}/final.json`);
    expect(download.status).toBe(200);
    expect(String(download.headers["content-disposition"])).toContain('filename="mcq-seed004.final.json"');
    expect(JSON.parse(download.body).id).toBe("mcq-seed004");
  });
});

describe("the viewer's page, repairs and console links", () => {
  it("serves the page's one bundled script as JavaScript under the same CSP, and nothing else from disk", async () => {
    const page = await http("/");
    const entry = /<script type="module" src="\/([a-z-]+\.js)"><\/script>/.exec(page.body)?.[1];
    expect(entry).toBe("app.js");
    const res = await http(`/${entry}`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(String(res.headers["content-security-policy"])).toContain("script-src 'self'");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    // ui/web/*.ts bundled by esbuild (ui/bundle.ts): one module that imports nothing, holding each
    // of the page's modules, as JavaScript (no TypeScript left to a browser).
    expect(res.body).not.toMatch(/^import /m);
    for (const module of ["app", "batch", "dom", "graph", "history", "run", "runs", "review", "source"])
      expect(res.body, module).toContain(`// ui/web/${module}.ts`);
    expect(res.body).not.toMatch(/\binterface \w+ \{|: HTMLElement\b/);
    // The browser's TypeScript sources and the old module paths are not served.
    for (const path of [
      "/graph.ts",
      "/server.ts",
      "/../package.json",
      "/assets/app.js",
      "/%2e%2e/api.ts",
      "/dom.js",
      "/web/app.ts",
      "/api-types.ts",
    ])
      expect((await http(path)).status, path).toBe(404);
  });

  it("counts a run's repairs in the list and lists them, before and after, on its page", async () => {
    const repaired = await byDraft("paper-repaired");
    const list = JSON.parse((await http("/api/runs?q=paper-repaired")).body);
    expect(list.runs[0]).toMatchObject({ draftId: "paper-repaired", status: "validated", repairs: 3 });
    expect(list.runs[0].repairs).toBe(repaired.repairs);
    const clean = JSON.parse((await http("/api/runs?q=mcq-clean")).body);
    expect(clean.runs[0].repairs).toBe(0);
    const detail = JSON.parse((await http(`/api/runs/${repaired.runId}`)).body);
    expect(detail.repairs).toHaveLength(3);
    expect(detail.repairs).toContainEqual(
      expect.objectContaining({ path: "/notes", before: "extracted by the model", action: "remove" }),
    );
    expect(detail.executionArn).toBeNull();
    expect(detail.consoleUrl).toBeNull();
    // The path alone: the states entered and nothing else.
    expect(detail.graph.views.path).toContain("Validate");
    expect(detail.graph.views.path).not.toContain("InputRejected");
    expect(detail.graph.mermaid).toContain("InputRejected");
  });

  it("gives a run of a deployed stack its execution ARN and console link", async () => {
    const runtime = served.runtime;
    const arnOf = (runId: string) => `arn:aws:states:eu-west-3:123456789012:execution:redraft-dev:${runId}`;
    // What cli/cloud's CloudRuntime offers the viewer: the stores, the history, and executionArn.
    const cloudLike = {
      runs: runtime.runs,
      blobs: runtime.blobs,
      deps: runtime.deps,
      history: (runId: string) => runtime.history(runId),
      publish: (type: string, detail: Record<string, unknown>) => runtime.publish(type, detail),
      executionArn: arnOf,
    };
    const viewer = await startViewer({
      runtime: cloudLike,
      asl: await loadAsl(),
      submit: () => Promise.reject(new Error("no submissions here")),
      reviewer: "tester",
      port: 0,
    });
    try {
      const seed = await byDraft("mcq-seed004");
      const detail = await fetch(`${viewer.url}api/runs/${seed.runId}`).then((r) => r.json());
      expect(detail.executionArn).toBe(arnOf(seed.runId));
      expect(detail.consoleUrl).toBe(
        `https://eu-west-3.console.aws.amazon.com/states/home?region=eu-west-3#/v2/executions/details/${arnOf(seed.runId)}`,
      );
      expect(detail.consoleUrl).toBe(executionConsoleUrl(arnOf(seed.runId)));
      // No batch store behind it: the batch pages say so rather than fail.
      expect((await fetch(`${viewer.url}api/batches`)).status).toBe(404);
    } finally {
      await viewer.close();
    }
    // A stack's runtime brings its own batch records (CloudRuntime.batches): the pages read those.
    const stackBatch = {
      batchId: "b-5eed",
      status: "running" as const,
      manifestRef: { bucket: "stack-bucket", key: "batches/q.jsonl" },
      startedAt: "2026-01-01T00:00:00.000Z",
    };
    const withBatches = await startViewer({
      runtime: {
        ...cloudLike,
        batches: {
          get: async (id: string) => (id === stackBatch.batchId ? stackBatch : undefined),
          list: async () => [stackBatch],
        },
      },
      asl: await loadAsl(),
      submit: () => Promise.reject(new Error("no submissions here")),
      reviewer: "tester",
      port: 0,
    });
    try {
      const list = await fetch(`${withBatches.url}api/batches`).then((r) => r.json());
      expect(list.batches.map((b: { batchId: string }) => b.batchId)).toEqual(["b-5eed"]);
      const one = await fetch(`${withBatches.url}api/batches/b-5e`).then((r) => r.json());
      expect(one.batch).toMatchObject({ batchId: "b-5eed", status: "running", manifest: "batches/q.jsonl" });
    } finally {
      await withBatches.close();
    }
  });
});

describe("the viewer's batches", () => {
  let batchDir: string;
  let batchId: string;
  let batchServed: Served;
  const get = async (path: string) => {
    const res = await fetch(`${batchServed.viewer.url}${path.replace(/^\//, "")}`);
    return { status: res.status, body: await res.json() };
  };

  beforeAll(async () => {
    ({ dir: batchDir, batchId } = await batchDataDir());
    batchServed = await serve(batchDir);
  });

  afterAll(async () => {
    await batchServed?.close();
    await rm(batchDir, { recursive: true, force: true });
  });

  it("lists the batches with their counts", async () => {
    const { status, body } = await get("/api/batches");
    expect(status).toBe(200);
    expect(body.batches).toHaveLength(1);
    expect(body.batches[0]).toMatchObject({
      batchId,
      status: "completed",
      items: 4,
      counts: { validated: 3, rejected: 1 },
      reasons: { invalid_input: 1 },
    });
  });

  it("serves a batch: counts by status and reason, its items with their runs, the manifest's rejected lines", async () => {
    const { status, body } = await get(`/api/batches/${batchId}`);
    expect(status).toBe(200);
    expect(body.batch).toMatchObject({ batchId, counts: { validated: 3, rejected: 1 }, items: 4 });
    expect(body.itemsTotal).toBe(4);
    expect(body.items.map((i: { line: number }) => i.line)).toEqual([1, 2, 3, 4]);
    expect(body.items.slice(0, 3).map((i: { draftId: string }) => i.draftId)).toEqual([
      "mcq-clean",
      "paper-repaired",
      "mcq-seed004",
    ]);
    expect(BATCH_DRAFTS).toHaveLength(3);
    for (const item of body.items) {
      expect(item.runId).toBe(`${batchId}-${item.line}`);
      // Each item's short id opens its run, as the command line takes it.
      const run = await get(`/api/runs/${item.shortId}`);
      expect(run.status).toBe(200);
      expect(run.body.run.runId).toBe(item.runId);
      expect(run.body.batchId).toBe(batchId);
    }
    expect(body.rejected).toEqual([
      expect.objectContaining({ line: 4, runId: `${batchId}-4`, reason: "invalid_input" }),
    ]);
    expect(body.rejected[0].message).toMatch(/not valid JSON/);
    // The runs list links each item's run to its batch.
    const runs = await get("/api/runs");
    expect(new Set(runs.body.runs.map((r: { batchId: string | null }) => r.batchId))).toEqual(
      new Set([batchId]),
    );
  });

  it("takes a batch's unique prefix, and refuses what names no batch", async () => {
    expect((await get(`/api/batches/${batchId.slice(0, 8)}`)).body.batch.batchId).toBe(batchId);
    expect((await get(`/api/batches/${batchId.slice(0, 8).toUpperCase()}`)).body.batch.batchId).toBe(batchId);
    expect((await get("/api/batches/b-0000")).status).toBe(404);
    expect((await get("/api/batches/nope")).status).toBe(400);
    expect((await get("/api/batches/b-%E0%A4%A")).status).toBe(400);
    expect((await get(`/api/batches/${"b-".padEnd(80, "a")}`)).status).toBe(400);
    const post = await fetch(`${batchServed.viewer.url}api/batches/${batchId}`, { method: "POST" });
    expect(post.status).toBe(405);
  });
});

describe("the runs list at 2,500 runs", () => {
  let manyDir: string;
  let many: Served;
  const get = async (path: string) => {
    const res = await fetch(`${many.viewer.url}${path.slice(1)}`);
    return { status: res.status, body: await res.json() };
  };
  beforeAll(async () => {
    manyDir = await manyRunsDataDir(2500, 250);
    many = await serve(manyDir);
  });
  afterAll(async () => {
    await many?.close();
    await rm(manyDir, { recursive: true, force: true });
  });

  it("counts every run in its totals, not the runs of a page", async () => {
    const first = await get("/api/runs");
    expect(first.body.runs).toHaveLength(100);
    expect(first.body.totals).toMatchObject({ runs: 2500, drafts: 2500, needsReview: 250, validated: 2250 });
    expect(first.body.totals.decisions.awaiting).toBe(250);
    expect(first.body.totalsCut).toBe(false);
    const queue = await get("/api/runs?status=needs_manual_review&limit=500");
    expect(queue.body.totals.runs).toBe(250);
    expect(queue.body.runs).toHaveLength(250);
    expect(queue.body.next).toBeNull();
  });

  it("pages through every run once, newest first, each page after the last one's run", async () => {
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page = await get(`/api/runs?limit=500${after ? `&after=${after}` : ""}`);
      expect(page.status).toBe(200);
      // Only the first page counts the totals (the others are the same list, further on).
      if (after) expect(page.body.totals).toBeUndefined();
      seen.push(...page.body.runs.map((r: { runId: string }) => r.runId));
      after = page.body.next;
      pages += 1;
    } while (after);
    expect(pages).toBe(5);
    expect(new Set(seen).size).toBe(2500);
    expect(seen).toEqual([...seen].sort().reverse());
    expect((await get("/api/runs?limit=501")).status).toBe(400);
    expect((await get("/api/runs?after=no-such-run")).status).toBe(404);
  });
});

describe("large run pages", () => {
  it("twenty large pages at once do not hold a small request behind them", async () => {
    const { dir, runId, draft } = await largeRunDataDir(4 * 1024 * 1024);
    // The viewer in a process of its own, as a person runs it: this process only asks and counts.
    const child = spawn(
      process.execPath,
      [join(ROOT, "bin", "redraft.js"), "ui", "--port", "0", "--data-dir", dir, "--llm", "none"],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (chunk) => {
          out += chunk;
          const line = /^(http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(out);
          if (line?.[1]) resolve(line[1]);
        });
        child.once("exit", (code) => reject(new Error(`redraft ui exited with ${code}`)));
      });
      const finished: string[] = [];
      const page = async (i: number) => {
        const res = await fetch(`${url}api/runs/${runId}`);
        expect(res.status).toBe(200);
        const text = await res.text();
        if (i === 0) expect(JSON.parse(text).finalDraft).toEqual(draft);
        expect(text.length).toBeGreaterThan(4_000_000);
        finished.push(`large ${i}`);
      };
      const pages = Array.from({ length: 20 }, (_, i) => page(i));
      // Asked once the large pages are on their way (the first has started to arrive).
      await new Promise((resolve) => setTimeout(resolve, 200));
      const small = fetch(`${url}api/runs?limit=1`).then(async (res) => {
        expect(res.status).toBe(200);
        expect((await res.json()).totals.runs).toBe(1);
        finished.push("small");
      });
      await Promise.all([...pages, small]);
      expect(finished).toHaveLength(21);
      // Two pages are built and written at a time: the small request waits behind none of the
      // eighteen others (it used to wait for all twenty).
      expect(finished.indexOf("small")).toBeLessThan(6);
    } finally {
      child.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("redraft ui", () => {
  it("prints its URL, serves on 127.0.0.1 over the data dir and stops on SIGTERM", async () => {
    // Its own data dir, so that this process holds no lock on it and the child serves it alone.
    const own = await examplesDataDir();
    const child = spawn(
      process.execPath,
      [join(ROOT, "bin", "redraft.js"), "ui", "--port", "0", "--data-dir", own, "--llm", "none"],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (chunk) => {
          out += chunk;
          const line = /^(http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(out);
          if (line?.[1]) resolve(line[1]);
        });
        child.once("exit", (code) => reject(new Error(`redraft ui exited with ${code}`)));
      });
      const runs = await fetch(`${url}api/runs`).then((r) => r.json());
      expect(runs.runs).toHaveLength(9);
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
      await rm(own, { recursive: true, force: true });
    }
  });

  it("has --help naming its port and its one interface", async () => {
    const help = await redraft("ui", "--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--port <n>");
    expect(help.stdout).toContain("127.0.0.1");
  });
});
