import { spawn } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CASSETTE, examplesDataDir, ROOT, type Served, serve, UNPRICED_DRAFT } from "./harness.js";

/** Debian's chromium; CI installs it (see .ci/run). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** `npm run screenshots` rewrites the README's pictures; the plain test run leaves them alone. */
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
  // Offline: nothing but the viewer itself may be asked for anything.
  await page.route("**/*", (route) =>
    route.request().url().startsWith(served.viewer.url) || route.request().url().startsWith("data:")
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
    await page.getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => page.locator("h1 .status").innerText()).toBe("validated");
    expect(await page.locator("[data-review]").innerText()).toContain("homogeneity is fine here");
    expect(await page.locator(".review").count()).toBe(0);
    // The same record `redraft review … approve` writes.
    const run = await served.runtime.runs.getRun(runId);
    expect(run).toMatchObject({
      status: "validated",
      reason: "approved",
      review: { decision: "approve", reviewer: "tester", note: "homogeneity is fine here" },
    });
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

  it("logged no console errors", () => {
    expect(consoleErrors).toEqual([]);
  });
});
