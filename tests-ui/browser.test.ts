import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadAsl } from "../local/state-machine.js";
import { clearWaiting, markWaiting } from "../local/waiting.js";
import { newRunRecord } from "../shared/store/types.js";
import type { RunDetail } from "../ui/api-types.js";
import { startViewer, type Viewer } from "../ui/server.js";
import {
  batchDataDir,
  CASSETTE,
  examplesDataDir,
  manyRunsDataDir,
  ROOT,
  redraft,
  type Served,
  serve,
  UNPRICED_DRAFT,
} from "./harness.js";

/** Debian's chromium; CI installs it (see .ci/run). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** `npm run screenshots` rewrites the pictures the docs show; the plain test run leaves them alone. */
const SCREENSHOTS = process.env.REDRAFT_SCREENSHOTS === "1";
const SHOTS = join(ROOT, "docs", "screenshots");

let dataDir: string;
let served: Served;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];

beforeAll(async () => {
  dataDir = await examplesDataDir();
  served = await serve(dataDir);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => consoleErrors.push(error.message));
  // Offline: nothing but the viewers themselves (this file starts several) may be asked for anything.
  await page.route("**/*", (route) =>
    route.request().url().startsWith("http://127.0.0.1:") || route.request().url().startsWith("data:")
      ? route.continue()
      : route.abort(),
  );
});

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const runIdOf = async (draftId: string) => {
  const [run] = await served.runtime.runs.listRuns({ draftId });
  if (!run) throw new Error(`no run of ${draftId}`);
  return run.runId;
};

describe("the viewer in a browser", () => {
  it("lists the runs with totals, the failing rules and unpriced costs", async () => {
    await page.goto(served.viewer.url);
    await expect.poll(() => page.locator("table.runs tbody tr").count()).toBe(9);
    const cards = await page.locator(".cards").innerText();
    expect(cards).toMatch(/Drafts\s+9/i);
    expect(cards).toMatch(/Needs review\s+2/i);
    expect(cards).toMatch(/Validated by the loop\s+78%/i);
    expect(await page.locator(".card .outcomes").innerText()).toContain("7 validated · 2 sent to review");
    expect(await page.locator(".card .decisions").innerText()).toContain("0 approved");
    expect(cards).toContain("unpriced");
    expect(cards).not.toContain("$0.00");
    expect(await page.locator("svg.bars rect").count()).toBeGreaterThan(0);
    const row = (draftId: string) => page.locator("table.runs tbody tr", { hasText: draftId });
    expect(await row(UNPRICED_DRAFT).innerText()).toContain("unpriced");
    expect(await row("mcq-seed004").innerText()).toMatch(/\$\d/);
    await page.selectOption("select[name=status]", "needs_manual_review");
    await expect.poll(() => page.locator("table.runs tbody tr").count()).toBe(2);
    await page.selectOption("select[name=status]", "");
    await page.fill("input[name=q]", "seed");
    await expect.poll(() => page.locator("table.runs tbody tr").count()).toBe(1);
    await page.fill("input[name=q]", "");
    await expect.poll(() => page.locator("table.runs tbody tr").count()).toBe(9);
    await page.locator("input[name=q]").blur();
    if (SCREENSHOTS) await page.screenshot({ path: join(SHOTS, "runs.png") });
  });

  it("draws a corrected run's path on the state machine and shows a state's input and output", async () => {
    await page.getByRole("link", { name: "mcq-seed004" }).click();
    await page.waitForSelector(".graph svg g.node[data-state]");
    // Every state entered is highlighted, with its count; CorrectExecution ran twice.
    const detail = await fetch(`${served.viewer.url}api/runs/${await runIdOf("mcq-seed004")}`).then((r) =>
      r.json(),
    );
    const entered = Object.keys(detail.graph.entered);
    expect(entered).toContain("CorrectExecution");
    expect(await page.locator(".graph g.node.visited").count()).toBe(entered.length);
    expect(await page.locator('.graph g.node[data-state="CorrectExecution"]').textContent()).toContain("×2");
    expect(await page.locator('.graph g.node[data-state="InputRejected"].visited').count()).toBe(0);
    // Passed states in the console's green (failed red and caught orange: tests/ui/graph.test.ts).
    const fill = await page
      .locator('.graph g.node[data-state="Validate"]')
      .locator("rect, polygon, path")
      .first()
      .evaluate((shape) => getComputedStyle(shape).fill);
    expect(fill).toBe("rgb(211, 249, 216)");
    await page.locator('.graph g.node[data-state="CorrectExecution"]').click();
    const inspector = page.locator("#inspector");
    await expect.poll(() => inspector.innerText()).toContain("Entry 2 of 2");
    expect(await inspector.locator("pre.state-input").first().innerText()).toContain("runId");
    expect(await inspector.locator("pre.state-output").first().innerText()).toContain("counters");
    // Keyboard: a state in the picture is a focusable button.
    await page.locator('.graph g.node[data-state="Validate"]').focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => inspector.locator("h3").innerText()).toBe("Validate");
  });

  it("shows each attempt's violations, diff old → new, analysis and cost; the final draft downloads", async () => {
    const first = page.locator('article[data-attempt="1"]');
    const diff = await first.locator("table.diff").innerText();
    expect(diff).toContain("/content/rationale");
    expect(diff).toContain("Aspirin and PCI");
    expect(await first.locator("td.old").first().innerText()).toBe('""');
    expect(await first.innerText()).toContain("Violations before");
    expect(await first.innerText()).toMatch(/claude-sonnet-5-5, .*\$\d/);
    expect(await page.locator('article[data-attempt="0"]').innerText()).toContain("initial validation");
    expect(await page.locator("table.purposes").innerText()).toMatch(/correct\s+2/);
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Download final draft" }).click(),
    ]);
    const saved = await download.path();
    expect(JSON.parse(await readFile(saved, "utf8")).id).toBe("mcq-seed004");
    // The picture: the path on the state machine, a state's input and output beside it.
    await page.locator('.graph g.node[data-state="CorrectExecution"]').click();
    await page.evaluate(() => {
      document.getElementById("graph-title")?.scrollIntoView();
    });
    if (SCREENSHOTS) await page.screenshot({ path: join(SHOTS, "run.png") });
    await page.locator("article[data-attempt='1']").scrollIntoViewIfNeeded();
    if (SCREENSHOTS) await page.screenshot({ path: join(SHOTS, "attempt.png") });
  });

  it("shows the judge's findings with confidence and whether they blocked", async () => {
    await page.goto(`${served.viewer.url}#/run/${await runIdOf("mcq-judged")}`);
    await page.waitForSelector("article.judge");
    const judge = await page.locator("article.judge").first().innerText();
    expect(judge).toMatch(/Judge round 1/);
    expect(judge).toMatch(/blocked|kept as warning|No findings/);
  });

  it("approves a run that needs review, and the page shows its new status", async () => {
    const runId = await runIdOf("mcq-breaker");
    await page.goto(`${served.viewer.url}#/?status=needs_manual_review`);
    await page.getByRole("link", { name: "mcq-breaker" }).click();
    await page.waitForSelector(".review");
    await page.fill("#review-note", "homogeneity is fine here");
    await page.getByRole("button", { name: "Approve…" }).click();
    // Asked first, naming the draft and the decision; its errors must be said to be overridden.
    const dialog = page.getByRole("dialog");
    expect(await dialog.innerText()).toContain("Approve draft mcq-breaker?");
    const approve = dialog.getByRole("button", { name: "Approve", exact: true });
    expect(await approve.isDisabled()).toBe(true);
    await dialog.getByRole("checkbox").check();
    await approve.click();
    await expect.poll(() => page.locator("h1 .status").innerText()).toBe("validated");
    expect(await page.locator("[data-review]").innerText()).toContain("homogeneity is fine here");
    // What is left is the way back, for a stated time.
    expect(await page.locator(".review").innerText()).toMatch(/can be taken back by them until/);
    expect(await page.getByRole("button", { name: "Approve…" }).count()).toBe(0);
    // The same record `redraft review … approve` writes.
    const run = await served.runtime.runs.getRun(runId);
    expect(run).toMatchObject({
      status: "validated",
      reason: "approved",
      review: { decision: "approve", reviewer: "tester", note: "homogeneity is fine here" },
    });
    expect(run?.review?.overriddenRules?.length).toBeGreaterThan(0);
    // An approval is a person's decision: the loop's validated count does not grow, the review queue
    // shows no rate ("Validated 0 %" would be false), and the decision is counted apart.
    await page.goto(`${served.viewer.url}#/?status=needs_manual_review`);
    await expect.poll(() => page.locator(".card .decisions").innerText()).toContain("1 awaiting");
    expect(await page.locator(".cards").innerText()).not.toMatch(/Validated by the loop|\d\s*%/i);
    await page.goto(served.viewer.url);
    await expect.poll(() => page.locator(".card .decisions").innerText()).toContain("1 approved");
    expect(await page.locator(".card .outcomes").innerText()).toContain("7 validated · 2 sent to review");
    expect(await page.locator(".cards").innerText()).toMatch(/Validated by the loop\s+78%/i);
  });

  it("asks before a rejection, and takes it back on Undo", async () => {
    const [waiting] = await served.runtime.runs.listRuns({ status: "needs_manual_review" });
    if (!waiting) throw new Error("no run waits for review");
    await page.goto(`${served.viewer.url}#/run/${waiting.runId}`);
    await page.waitForSelector(".review");
    // Cancel: nothing is written.
    await page.getByRole("button", { name: "Reject…" }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.innerText()).toContain(`Reject draft ${waiting.draftId}?`);
    expect(await dialog.innerText()).toContain(`Run ${waiting.runId} is closed`);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect((await served.runtime.runs.getRun(waiting.runId))?.status).toBe("needs_manual_review");
    // Confirmed: rejected, and Undo offered.
    await page.getByRole("button", { name: "Reject…" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Reject", exact: true }).click();
    await expect.poll(() => page.locator("h1 .status").innerText()).toBe("rejected");
    expect(await served.runtime.runs.getRun(waiting.runId)).toMatchObject({
      status: "rejected",
      reason: "rejected_by_reviewer",
    });
    await page.getByRole("button", { name: "Undo rejection" }).click();
    await expect.poll(() => page.locator("h1 .status").innerText()).toBe("needs manual review");
    const after = await served.runtime.runs.getRun(waiting.runId);
    expect(after).toMatchObject({ status: "needs_manual_review", reason: waiting.reason });
    expect(after?.review).toBeUndefined();
    // Waiting again: the review box is back.
    await expect.poll(() => page.getByRole("button", { name: "Reject…" }).count()).toBe(1);
  });

  it("shows a run started by `redraft run` in another process without a reload, and its progress", async () => {
    await page.goto(served.viewer.url);
    await expect.poll(() => page.locator("table.runs tbody tr").count()).toBe(9);
    await page.evaluate(() => Object.assign(window, { notReloaded: true }));
    const body = JSON.parse(await readFile(join(ROOT, "examples", "drafts", "mcq-clean.json"), "utf8"));
    // A draft is data: markup in it must reach the page as text.
    const hostile = `${body.content.rationale} <img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`;
    const file = join(dataDir, "live.json");
    await writeFile(
      file,
      JSON.stringify({ ...body, id: "live-draft", content: { ...body.content, rationale: hostile } }),
    );
    const child = spawn(
      process.execPath,
      [join(ROOT, "bin", "redraft.js"), "run", file, "--llm", `replay:${CASSETTE}`, "--data-dir", dataDir],
      { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      const row = page.locator("table.runs tbody tr", { hasText: "live-draft" });
      await expect.poll(() => row.count(), { timeout: 30_000 }).toBe(1);
      expect(await exited, stderr).toBe(0);
      await expect.poll(() => row.locator(".status").innerText(), { timeout: 10_000 }).toBe("validated");
      expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(
        true,
      );
      await row.getByRole("link", { name: "live-draft" }).click();
      await expect
        .poll(() => page.locator("pre.final").innerText())
        .toContain('<img src=x onerror=\\"window.pwned=1\\">');
      expect(await page.locator("main img, main script").count()).toBe(0);
      expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("shows the execution's summary, each state entry's duration and the event history, filterable", async () => {
    const runId = await runIdOf("mcq-seed004");
    await page.goto(`${served.viewer.url}#/run/${runId}`);
    await page.waitForSelector("table.events tbody tr");
    const stored = await served.runtime.history(runId);
    if (!stored) throw new Error("no stored history");
    // One row per event of the stored history, in order, with its type and step.
    const rows = page.locator("table.events tbody tr");
    expect(await rows.count()).toBe(stored.history.length);
    expect(await rows.first().innerText()).toContain("ExecutionStarted");
    expect(await rows.nth(1).innerText()).toMatch(/StateEntered\s+Validate/);
    expect(await rows.last().innerText()).toMatch(/ExecutionSucceeded/);
    // Elapsed since start: the first event is the start.
    const elapsed = await rows.evaluateAll((trs) => trs.map((tr) => tr.children[4]?.textContent ?? ""));
    expect(elapsed[0]).toBe("0 ms");
    // The filter narrows the rows to those naming a step, and says how many it shows.
    await page.fill("input[name=event-filter]", "CorrectExecution");
    const entered = stored.history.filter((e) => e.state === "CorrectExecution").length;
    await expect.poll(() => page.locator("table.events tbody tr:not([hidden])").count()).toBe(entered);
    expect(await page.locator(".event-filter").innerText()).toContain(
      `${entered} of ${stored.history.length}`,
    );
    // The filter keeps its text when the page polls again.
    await page.waitForTimeout(1500);
    expect(await page.inputValue("input[name=event-filter]")).toBe("CorrectExecution");
    await page.fill("input[name=event-filter]", "");
    await expect
      .poll(() => page.locator("table.events tbody tr:not([hidden])").count())
      .toBe(stored.history.length);
    // Durations: one row per state entry; CorrectExecution twice, each with a measured duration.
    const durations = page.locator('table.durations tbody tr[data-state="CorrectExecution"]');
    expect(await durations.count()).toBe(2);
    expect(await durations.first().innerText()).toMatch(/\d+(\.\d+)? (ms|s)/);
    expect(await durations.first().getAttribute("data-outcome")).toBe("succeeded");
    // The summary: start, end, duration, as the console's.
    const summary = await page.locator(".execution-summary").innerText();
    expect(summary).toMatch(/Started/);
    expect(summary).toMatch(/Ended/);
    expect(await page.locator('.execution-summary [data-field="duration"]').innerText()).toMatch(
      /^\d+(\.\d+)? (ms|s)$|min/,
    );
    expect(await page.locator('.execution-summary [data-field="status"]').innerText()).toBe("SUCCEEDED");
    await page.locator("table.events").scrollIntoViewIfNeeded();
    if (SCREENSHOTS) await page.screenshot({ path: join(SHOTS, "history.png") });
  });

  it("shows each run's status and reason first on a 390 px window", async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    try {
      await page.goto(served.viewer.url);
      await page.waitForSelector("table.runs tbody tr");
      // A run the loop sent to review: it has a reason.
      const row = page.locator("table.runs tbody tr", { hasText: "paper-stuck" });
      const box = async (selector: string) => {
        const b = await row.locator(selector).boundingBox();
        if (!b) throw new Error(`${selector} is not shown`);
        return b;
      };
      const status = await box("td.c-status");
      const reason = await box("td.c-reason");
      const draft = await box("td.c-draft");
      // Status and reason on the row's first line, inside the window; the draft id below them.
      expect(status.x).toBeGreaterThanOrEqual(0);
      expect(reason.x + reason.width).toBeLessThanOrEqual(390);
      expect(Math.abs(status.y - reason.y)).toBeLessThan(status.height);
      expect(draft.y).toBeGreaterThan(status.y);
      expect(await row.locator("td.c-reason").innerText()).not.toBe("");
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(1);
      if (SCREENSHOTS) await page.screenshot({ path: join(SHOTS, "runs-narrow.png") });
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it("is readable on a narrow window", async () => {
    await page.setViewportSize({ width: 400, height: 800 });
    await page.goto(`${served.viewer.url}#/run/${await runIdOf("mcq-seed004")}`);
    await page.waitForSelector(".graph svg");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("opens the flowchart on the run's path: every state of it inside the window, its labels 10 px or more", async () => {
    await page.goto(`${served.viewer.url}#/run/${await runIdOf("mcq-seed004")}`);
    await page.waitForSelector(".graph svg g.node[data-state]");
    await page.evaluate(() => document.getElementById("graph-title")?.scrollIntoView());
    const view = page.viewportSize() ?? { width: 1280, height: 800 };
    const picture = await page.locator(".graph").boundingBox();
    if (!picture) throw new Error("no picture");
    const states = page.locator(".graph g.node.visited, .graph g.node.failed, .graph g.node.caught");
    const detail = await fetch(`${served.viewer.url}api/runs/${await runIdOf("mcq-seed004")}`).then((r) =>
      r.json(),
    );
    expect(await states.count()).toBe(Object.keys(detail.graph.entered).length);
    for (const box of await states.evaluateAll((nodes) =>
      nodes.map((n) => {
        const r = n.getBoundingClientRect();
        return {
          state: (n as HTMLElement).dataset.state,
          top: r.top,
          left: r.left,
          bottom: r.bottom,
          right: r.right,
        };
      }),
    )) {
      // Inside the picture's box and inside the window, without scrolling either.
      expect(box.top, box.state).toBeGreaterThanOrEqual(Math.max(0, picture.y));
      expect(box.left, box.state).toBeGreaterThanOrEqual(Math.max(0, picture.x));
      expect(box.bottom, box.state).toBeLessThanOrEqual(Math.min(view.height, picture.y + picture.height));
      expect(box.right, box.state).toBeLessThanOrEqual(Math.min(view.width, picture.x + picture.width));
    }
    // The size a label is drawn at on the screen: its font size times the picture's scale (Mermaid
    // writes labels as HTML in a foreignObject, or as SVG text).
    const rendered = await page.locator(".graph svg").evaluate((svg) => {
      const scale = svg.getBoundingClientRect().width / (svg as SVGSVGElement).viewBox.baseVal.width;
      return Array.from(svg.querySelectorAll("g.node .nodeLabel, g.node text")).map(
        (t) => Number.parseFloat(getComputedStyle(t).fontSize) * scale,
      );
    });
    expect(rendered.length).toBeGreaterThan(0);
    expect(Math.min(...rendered)).toBeGreaterThanOrEqual(10);
    // Only the path: a state the run did not enter is not drawn until the whole machine is asked for.
    expect(await page.locator('.graph g.node[data-state="InputRejected"]').count()).toBe(0);
  });

  it("shows the whole state machine, and its Catch edges not taken, on demand", async () => {
    await page.getByRole("button", { name: /Whole state machine/ }).click();
    await expect
      .poll(() => page.locator('.graph[data-view="all"] g.node[data-state]').count())
      .toBeGreaterThan(20);
    expect(await page.locator('.graph g.node[data-state="InputRejected"]').count()).toBe(1);
    // Still coloured: the path's states keep their class in the whole picture.
    expect(await page.locator('.graph g.node.visited[data-state="CorrectExecution"]').count()).toBe(1);
    const edges = () => page.locator(".graph .edgePaths path").count();
    const without = await edges();
    await page.getByLabel("Catch edges not taken").check();
    await expect.poll(edges).toBeGreaterThan(without);
    await page.getByRole("button", { name: "This run's path" }).click();
    await expect.poll(() => page.locator('.graph[data-view="path"]').count()).toBe(1);
  });

  it("says `validated · 3 repairs` for a repaired run, and lists its repairs before and after", async () => {
    await page.goto(served.viewer.url);
    const row = page.locator("table.runs tbody tr", { hasText: "paper-repaired" });
    await expect.poll(() => row.locator("td.c-status").innerText()).toMatch(/validated\s*· 3 repairs/);
    expect(await page.locator("table.runs tbody tr", { hasText: "mcq-seed004" }).innerText()).not.toContain(
      "repair",
    );
    await row.getByRole("link", { name: "paper-repaired" }).click();
    await page.waitForSelector("table.repairs");
    expect(await page.locator("h1").innerText()).toMatch(/validated\s*· 3 repairs/);
    const rows = page.locator("table.repairs tbody tr");
    expect(await rows.count()).toBe(3);
    const notes = page.locator('table.repairs tr[data-path="/notes"]');
    expect(await notes.locator("td.old").innerText()).toBe('"extracted by the model"');
    expect(await notes.locator("td.new").innerText()).toBe("(removed)");
  });

  it("links a run of a deployed stack to its execution in the Step Functions console", async () => {
    const runtime = served.runtime;
    const arn = (runId: string) => `arn:aws:states:eu-west-3:123456789012:execution:redraft-dev:${runId}`;
    const cloud: Viewer = await startViewer({
      runtime: {
        runs: runtime.runs,
        blobs: runtime.blobs,
        deps: runtime.deps,
        history: (runId: string) => runtime.history(runId),
        publish: (type: string, detail: Record<string, unknown>) => runtime.publish(type, detail),
        executionArn: arn,
      },
      asl: await loadAsl(),
      submit: () => Promise.reject(new Error("no submissions here")),
      reviewer: "tester",
      port: 0,
    });
    try {
      const runId = await runIdOf("mcq-seed004");
      await page.goto(`${cloud.url}#/run/${runId}`);
      const link = page.locator(".execution-summary a.console-link");
      await expect.poll(() => link.count()).toBe(1);
      expect(await link.getAttribute("href")).toBe(
        `https://eu-west-3.console.aws.amazon.com/states/home?region=eu-west-3#/v2/executions/details/${arn(runId)}`,
      );
      expect(await link.getAttribute("rel")).toContain("noopener");
      expect(await page.locator('.execution-summary [data-field="execution-arn"]').innerText()).toContain(
        arn(runId),
      );
      // A local run has no execution in the cloud, and no link.
      await page.goto(`${served.viewer.url}#/run/${runId}`);
      await page.waitForSelector(".execution-summary");
      expect(await page.locator("a.console-link").count()).toBe(0);
    } finally {
      await cloud.close();
    }
  });

  it("shows a batch: counts by status and reason, its items linked to their runs, the manifest's rejected lines", async () => {
    const { dir, batchId } = await batchDataDir();
    const batch = await serve(dir);
    try {
      await page.goto(batch.viewer.url);
      await page.getByRole("link", { name: "Batches" }).click();
      const listed = page.locator("table.batches tbody tr");
      await expect.poll(() => listed.count()).toBe(1);
      expect(await listed.innerText()).toMatch(/completed\s+4\s+validated 3 · rejected 1/);
      await listed.getByRole("link", { name: batchId }).click();
      await page.waitForSelector("table.items tbody tr");
      const counts = await page.locator(".batch-counts").innerText();
      expect(counts).toMatch(/Items\s+4/i);
      // The date the batch started, as the record has it (it said "Invalid Date" on SQLite).
      const record = await batch.runtime.batches.get(batchId);
      expect(Date.parse(record?.startedAt ?? "")).toBeGreaterThan(Date.parse("2020-01-01"));
      expect(await page.locator('[data-field="started"]').innerText()).toBe(
        await page.evaluate((iso) => new Date(iso).toLocaleString(), record?.startedAt ?? ""),
      );
      expect(counts).toMatch(/validated\s+3/i);
      expect(counts).toMatch(/rejected\s+1/i);
      expect(await page.locator('table.reasons tr[data-reason="invalid_input"]').innerText()).toMatch(
        /invalid_input\s+1/,
      );
      const rejected = page.locator("table.rejected tbody tr");
      expect(await rejected.count()).toBe(1);
      expect(await rejected.innerText()).toMatch(/^4\s+invalid_input\s+.*not valid JSON/);
      const items = page.locator("table.items tbody tr");
      expect(await items.count()).toBe(4);
      expect(await items.nth(1).innerText()).toContain("paper-repaired");
      if (SCREENSHOTS) await page.screenshot({ path: join(SHOTS, "batch.png"), fullPage: true });
      // On a phone-width window the page does not scroll sideways (long keys and messages wrap).
      await page.setViewportSize({ width: 390, height: 800 });
      try {
        await expect
          .poll(() => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth))
          .toBeLessThanOrEqual(1);
      } finally {
        await page.setViewportSize({ width: 1280, height: 800 });
      }
      // An item's link opens its run, which links back to its batch.
      await items.nth(2).getByRole("link").click();
      await page.waitForSelector("h1 .status");
      expect(await page.locator("h1").innerText()).toContain("mcq-seed004");
      await page.getByRole("link", { name: `Batch ${batchId}` }).click();
      await page.waitForSelector("table.items");
      // The runs list links each item to its batch.
      await page.goto(batch.viewer.url);
      await page.waitForSelector("table.runs tbody tr");
      expect(await page.locator("table.runs a.batch-link").count()).toBe(4);
    } finally {
      await batch.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("shows a draft's source beside its grounded fields: the unsupported value marked where the source differs", async () => {
    const dir = await mkdtemp(join(tmpdir(), "redraft-ui-grounding-"));
    const fixtures = join(ROOT, "tests", "fixtures", "grounding");
    const run = await redraft(
      "run",
      join(fixtures, "case14.json"),
      "--llm",
      `replay:${join(fixtures, "case14.cassette.json")}`,
      "--data-dir",
      dir,
      "--no-progress",
    );
    expect(run.code).toBe(0);
    const grounded = await serve(dir);
    try {
      const [listed] = await grounded.runtime.runs.listRuns({ draftId: "case14-q1" });
      await page.goto(`${grounded.viewer.url}#/run/${listed?.runId}`);
      await page.waitForSelector("ul.grounded-fields");
      const panel = page.locator('section[aria-labelledby="source-title"]');
      expect(await panel.locator("p.muted").first().innerText()).toContain(
        "1 of 2 grounded field(s) not supported",
      );
      const unsupported = panel.locator('li.field.unsupported[data-path="/vignette"]');
      expect(await unsupported.innerText()).toContain("quotes the draft, not the source");
      // The source near the closest match is marked apart from the quote that supports the rationale.
      expect(await panel.locator('mark.unsupported[data-path="/vignette"]').innerText()).toContain(
        "63-year-old man",
      );
      expect(await panel.locator('mark.supported[data-path="/rationale"]').innerText()).toBe(
        "Aspirin and PCI are first-line treatments for acute MI when a PCI-capable centre can be reached within 120 minutes",
      );
      await panel.scrollIntoViewIfNeeded();
      await page.evaluate(() => document.getElementById("source-title")?.scrollIntoView());
      if (SCREENSHOTS) await page.screenshot({ path: join(SHOTS, "grounding.png") });
    } finally {
      await grounded.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("says the true totals of 2,500 runs (250 awaiting review) and pages through them", async () => {
    const dir = await manyRunsDataDir(2500, 250);
    const many = await serve(dir);
    try {
      await page.goto(many.viewer.url);
      const rows = page.locator("table.runs tbody tr");
      await expect.poll(() => rows.count()).toBe(100);
      const cards = await page.locator(".cards").innerText();
      expect(cards).toMatch(/Drafts\s+2,500/i);
      expect(cards).toMatch(/2,500 runs/);
      expect(cards).toMatch(/Needs review\s+250/i);
      expect(await page.locator(".card .decisions").innerText()).toContain("250 awaiting");
      // The list is cut, and says so.
      expect(await page.locator("table.runs caption").innerText()).toBe("100 of 2,500 runs, newest first");
      await page.getByRole("button", { name: "Show 100 more" }).click();
      await expect.poll(() => rows.count()).toBe(200);
      expect(await page.locator("table.runs caption").innerText()).toBe("200 of 2,500 runs, newest first");
      // The review queue: 250 in the card and the caption, whatever the page holds.
      await page.goto(`${many.viewer.url}#/?status=needs_manual_review`);
      await expect
        .poll(() => page.locator("table.runs caption").innerText())
        .toBe("100 of 250 runs, newest first");
      expect(await page.locator(".cards").innerText()).toMatch(/Needs review\s+250/i);
    } finally {
      await many.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("says a run waits for a model slot, since when and how long, in its page and in the list", async () => {
    // A run under way whose model work waits in the process's model queue: the runtime notes it in
    // the data folder (local/waiting.ts), which the viewer reads as `redraft show` does.
    const runId = "r-waits-for-a-slot";
    const behind = "r-waits-behind-it";
    const since = new Date(Date.now() - 95_000);
    await served.runtime.runs.createRun(
      newRunRecord(behind, "waiting-draft-2", "mcq", new Date().toISOString(), "draft"),
    );
    markWaiting(dataDir, behind, new Date(Date.now() - 30_000));
    await served.runtime.runs.createRun(
      newRunRecord(runId, "waiting-draft", "mcq", since.toISOString(), "correcting"),
    );
    markWaiting(dataDir, runId, since);
    try {
      const api = await page.request.get(`${served.viewer.url}api/runs/${runId}`);
      const detail = (await api.json()) as RunDetail;
      expect(detail.waiting?.since).toBe(since.toISOString());
      expect(detail.waiting?.ageSeconds).toBeGreaterThanOrEqual(95);
      // First come, first served in the process's queue: the run noted later is second.
      expect(detail.waiting?.position).toBe(1);
      const second = (await (
        await page.request.get(`${served.viewer.url}api/runs/${behind}`)
      ).json()) as RunDetail;
      expect(second.waiting?.position).toBe(2);
      await page.goto(`${served.viewer.url}#/run/${runId}`);
      const line = page.locator('[data-field="waiting"]');
      await expect
        .poll(() => line.innerText())
        .toMatch(/Waiting for a model slot since .+ \((\d+) s, number 1 in the queue\)/);
      const age = Number(/\((\d+) s,/.exec(await line.innerText())?.[1]);
      expect(age).toBeGreaterThanOrEqual(95);
      await page.goto(served.viewer.url);
      const row = page.locator(`table.runs tbody tr[data-run="${runId}"]`);
      await expect.poll(() => row.locator(".waiting-badge").innerText()).toBe("waiting");
      // A slot took its work: the page and the list stop saying it waits, without a reload.
      clearWaiting(dataDir, runId);
      await expect.poll(() => row.locator(".waiting-badge").count()).toBe(0);
      await page.goto(`${served.viewer.url}#/run/${runId}`);
      await expect.poll(() => page.locator("h1").innerText()).toContain("waiting-draft");
      expect(await line.count()).toBe(0);
      // Its place is taken by the run behind it.
      const moved = (await (
        await page.request.get(`${served.viewer.url}api/runs/${behind}`)
      ).json()) as RunDetail;
      expect(moved.waiting?.position).toBe(1);
      // Only a run under way can wait: a note left behind by a run that ended is not believed.
      markWaiting(dataDir, runId, since);
      await served.runtime.runs.setStatus(runId, "failed", new Date().toISOString(), {
        reason: "system_error",
      });
      const ended = (await (
        await page.request.get(`${served.viewer.url}api/runs/${runId}`)
      ).json()) as RunDetail;
      expect(ended.waiting).toBeUndefined();
    } finally {
      clearWaiting(dataDir, runId);
      clearWaiting(dataDir, behind);
      await served.runtime.runs.setStatus(behind, "failed", new Date().toISOString(), {
        reason: "system_error",
      });
    }
  });

  it("logged no console errors", () => {
    expect(consoleErrors).toEqual([]);
  });
});
