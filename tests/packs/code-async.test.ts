/**
 * Issue 34, "no input holds another draft", for the code pack: a suite runs asynchronously inside a
 * deferral (validateDraft, the loop's validate and revalidate steps), on a pool of sandbox threads
 * shared in turns of one test, and its outside stop reads the thread's CPU time with Node's
 * `worker.cpuUsage()`, /proc not needed. Nothing here reads a clock: the assertions are on the order
 * in which drafts finish and on verdicts.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { inspectWithPack, inspectWithPackAsync, resolvePack } from "../../shared/engine.js";
import { type CodeContent, codePack, DEFAULT_CODE_SETTINGS } from "../../shared/packs/code/code.js";
import {
  QuickJSSandbox,
  type SandboxLimits,
  type SandboxTest,
  type SuiteResult,
} from "../../shared/packs/code/sandbox.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";
import { HUMANEVAL_X_JS, mutantsOf, packTestOf, programOf } from "../fixtures/humaneval-x-js.js";
import { besideBusyProcesses } from "../helpers/busy.js";
import { jsonLines, spawnCli } from "../helpers/run-cli.js";

/**
 * A test that burns CPU inside one native call of QuickJS, where it never polls its budget: a needle
 * of `n` characters searched in a haystack of 2n (about n² comparisons; seconds at n = 100,000).
 */
const bomb = (name: string, n = 100_000): SandboxTest => ({
  name,
  code: `assert.equal("a".repeat(${2 * n}).indexOf("a".repeat(${n}) + "b"), -1);`,
});

/** What a verdict is made of: every outcome without its times (which are information only). */
function verdictOf(result: SuiteResult): unknown {
  if (result.kind !== "ran") return result;
  return {
    ...result,
    outcomes: result.outcomes.map(({ durationMs: _d, cpuMs: _c, ...rest }) => rest),
  };
}

const limits: SandboxLimits = { ...DEFAULT_CODE_SETTINGS, timeoutMs: 100, suiteTimeoutMs: 60_000 };

afterEach(() => {
  vi.restoreAllMocks();
});

/** The sandboxes this file makes, their threads terminated at its end (the test files share a process). */
const sandboxes: QuickJSSandbox[] = [];
function made(options?: ConstructorParameters<typeof QuickJSSandbox>[0]): QuickJSSandbox {
  const sandbox = new QuickJSSandbox(options);
  sandboxes.push(sandbox);
  return sandbox;
}
afterAll(() => {
  for (const sandbox of sandboxes) sandbox.dispose();
});

describe("the outside stop reads worker.cpuUsage, not /proc", () => {
  it("stops a native-call bomb too_slow with /proc taken away, and runs the test after it", async () => {
    let procReads = 0;
    let workerReads = 0;
    const sandbox = made({
      threads: 1,
      clocks: {
        proc: () => {
          procReads += 1;
          return undefined;
        },
        worker: async (worker) => {
          workerReads += 1;
          const usage = await worker.cpuUsage();
          return usage.user + usage.system;
        },
      },
    });
    await sandbox.ready();
    const result = await sandbox.runSuiteAsync(
      "// worker clock",
      [bomb("bomb"), { name: "after", code: "assert.equal(1 + 1, 2);" }],
      limits,
    );
    expect(result.kind).toBe("ran");
    if (result.kind !== "ran") return;
    expect(result.outcomes.map((o) => `${o.name}: ${o.passed ? "passed" : o.failure?.reason}`)).toEqual([
      "bomb: too_slow",
      "after: passed",
    ]);
    // Only the watchdog outside the thread words it so: the thread's own polls never ran in the call.
    expect(result.outcomes[0]?.failure?.error.message).toMatch(
      /inside one call of a built-in, and its thread was stopped/,
    );
    expect(workerReads).toBeGreaterThan(0);
    expect(procReads).toBe(0);
  }, 120_000);
});

describe("a source that burns CPU in a native call at its top level", () => {
  it("fails every test too_slow while loading the source, stopped once, on either path", async () => {
    const sandbox = made();
    await sandbox.ready();
    const source = 'const found = "a".repeat(200000).indexOf("a".repeat(100000) + "b");';
    const tests = [0, 1, 2, 3].map((i) => ({ name: `t${i}`, code: "assert.equal(found, -1);" }));
    for (const result of [
      sandbox.runSuite(source, tests, limits),
      await sandbox.runSuiteAsync(`${source} // async`, tests, limits),
    ]) {
      expect(result.kind).toBe("ran");
      if (result.kind !== "ran") continue;
      expect(result.outcomes.map((o) => `${o.failure?.phase} ${o.failure?.reason}`)).toEqual(
        tests.map(() => "source too_slow"),
      );
      // Only the first test ran the source: the tests after it fail the same way without running
      // (before, each ran it again and was stopped again, a budget each, up to the suite's).
      expect(result.outcomes.slice(1).map((o) => o.cpuMs)).toEqual([0, 0, 0]);
    }
  }, 120_000);
});

describe("where Node has no worker.cpuUsage, the asynchronous path reads /proc", () => {
  it.runIf(existsSync("/proc/thread-self"))(
    "stops the same bomb from /proc",
    async () => {
      let procReads = 0;
      const sandbox = made({
        threads: 1,
        clocks: {
          worker: undefined,
          proc: (tid) => {
            procReads += 1;
            try {
              return Number(readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1000;
            } catch {
              return undefined;
            }
          },
        },
      });
      await sandbox.ready();
      const result = await sandbox.runSuiteAsync("// proc clock", [bomb("bomb")], limits);
      expect(result.kind === "ran" && result.outcomes[0]?.failure?.error.message).toMatch(
        /inside one call of a built-in, and its thread was stopped/,
      );
      expect(procReads).toBeGreaterThan(0);
    },
    120_000,
  );
});

describe("suites take turns on the pool's threads", () => {
  it("with one thread, a small suite started after a suite of slow tests ends before it", async () => {
    const sandbox = made({ threads: 1 });
    await sandbox.ready();
    const order: string[] = [];
    // Loops of bytecode, stopped by the thread's own polls: the thread lives on, so only a turn
    // handed over between two tests lets the quick suite in before the slow one ends.
    const loops = [0, 1, 2, 3].map((i) => ({ name: `loop ${i}`, code: "for (;;) {}" }));
    const slow = sandbox.runSuiteAsync("// slow", loops, limits).then((result) => {
      order.push("slow");
      return result;
    });
    const quick = sandbox
      .runSuiteAsync(
        "function add(a, b) { return a + b; }",
        [{ name: "adds", code: "assert.equal(add(2, 3), 5);" }],
        limits,
      )
      .then((result) => {
        order.push("quick");
        return result;
      });
    const [slowResult, quickResult] = await Promise.all([slow, quick]);
    // Without turns, the quick suite waited for all four loops.
    expect(order).toEqual(["quick", "slow"]);
    expect(quickResult.kind === "ran" && quickResult.outcomes.map((o) => o.passed)).toEqual([true]);
    expect(slowResult.kind === "ran" && slowResult.outcomes.map((o) => o.failure?.reason)).toEqual([
      "too_slow",
      "too_slow",
      "too_slow",
      "too_slow",
    ]);
  }, 120_000);
});

describe("twice, at once, and disposed", () => {
  it("runs the same content validated twice at once one time", async () => {
    const spy = vi.spyOn(QuickJSSandbox.prototype, "runSuiteAsync");
    const draft = (id: string): Draft => ({
      id,
      kind: "code",
      content: {
        language: "javascript",
        source: "function sq(x) { return x * x; } // twice at once",
        tests: [{ name: "squares", code: "assert.equal(sq(3), 9);" }],
      },
    });
    const registry = new PackRegistry();
    const [a, b] = await Promise.all([
      validateDraft(draft("a"), { registry }),
      validateDraft(draft("b"), { registry }),
    ]);
    expect([a.passed, b.passed]).toEqual([true, true]);
    expect(spy).toHaveBeenCalledTimes(1);
  }, 120_000);

  it("a suite running or waiting when its sandbox is disposed fails with SandboxSetupError, never a verdict", async () => {
    const sandbox = made({ threads: 1 });
    await sandbox.ready();
    const loops = [{ name: "loop", code: "for (;;) {}" }];
    const running = sandbox.runSuiteAsync("// disposed while running", loops, {
      ...limits,
      timeoutMs: 60_000,
    });
    const waiting = sandbox.runSuiteAsync("// disposed while waiting", loops, limits);
    const settled = Promise.allSettled([running, waiting]);
    // Let the first suite reach its thread, then take the sandbox down.
    await new Promise((resolve) => setImmediate(resolve));
    sandbox.dispose();
    const ended = await settled;
    expect(ended.map((e) => e.status === "rejected" && (e.reason as Error).name)).toEqual([
      "SandboxSetupError",
      "SandboxSetupError",
    ]);
    await expect(sandbox.runSuiteAsync("// after", loops, limits)).rejects.toMatchObject({
      name: "SandboxSetupError",
    });
  }, 120_000);
});

describe("the synchronous and the asynchronous path give the same verdicts", () => {
  const problems = HUMANEVAL_X_JS.slice(0, 6);
  const suites = problems.flatMap((problem) => {
    const tests = [{ name: problem.task_id, code: packTestOf(problem) }];
    const mutant = mutantsOf(problem)[0];
    return [
      { source: programOf(problem, problem.canonical_solution), tests },
      ...(mutant ? [{ source: programOf(problem, mutant.body), tests }] : []),
    ];
  });

  it("on a HumanEval-X slice (canonical solutions and mutants), a bomb and a syntax error, idle and beside four busy processes", async () => {
    const sync = made();
    const async = made();
    await Promise.all([sync.ready(), async.ready()]);
    const all = [
      ...suites,
      { source: "// bombs", tests: [bomb("bomb"), { name: "after", code: "assert.ok(true);" }] },
      { source: "function (", tests: [{ name: "t", code: "assert.ok(true);" }] },
    ];
    const fromSync = all.map(({ source, tests }) => verdictOf(sync.runSuite(source, tests, limits)));
    const fromAsync = await Promise.all(
      all.map(async ({ source, tests }) => verdictOf(await async.runSuiteAsync(source, tests, limits))),
    );
    expect(fromAsync).toEqual(fromSync);
    // And beside four busy processes: the budgets are CPU time, and the turns fall otherwise.
    const loaded = await besideBusyProcesses(4, () =>
      Promise.all(
        all.map(async ({ source, tests }) =>
          verdictOf(await async.runSuiteAsync(`${source}\n// loaded`, tests, limits)),
        ),
      ),
    );
    expect(loaded).toEqual(
      all.map(({ source, tests }) => verdictOf(sync.runSuite(`${source}\n// loaded`, tests, limits))),
    );
    // Not trivially equal: some pass, some fail, one is a syntax error.
    const kinds = fromSync.map((v) => JSON.stringify(v));
    expect(kinds.some((k) => k.includes('"passed":true'))).toBe(true);
    expect(kinds.some((k) => k.includes('"passed":false'))).toBe(true);
    expect(kinds.some((k) => k.includes("syntax_error"))).toBe(true);
  }, 300_000);

  it("through the code pack: inspectWithPack and inspectWithPackAsync report alike, and share one cache", async () => {
    // A fresh copy of the code pack for the synchronous path, so that neither reads the other's cache.
    vi.resetModules();
    const first = (await import("../../shared/packs/code/code.js")).codePack;
    const second = codePack;
    await Promise.all([first.ready?.(), second.ready?.()]);
    const drafts: Draft[] = suites.map(({ source, tests }, i) => ({
      id: `same-${i}`,
      kind: "code",
      content: { language: "javascript", source: `${source}\n// same`, tests } satisfies CodeContent,
    }));
    const bySync = drafts.map((d) => inspectWithPack(resolvePack(first), d).report);
    const byAsync = await Promise.all(drafts.map((d) => inspectWithPackAsync(resolvePack(second), d)));
    expect(byAsync.map((i) => i.report)).toEqual(bySync);
    expect(bySync.some((r) => r.passed) && bySync.some((r) => !r.passed)).toBe(true);
    // The asynchronous runs filled the cache the synchronous path reads: no suite runs again.
    const runSuite = vi.spyOn(QuickJSSandbox.prototype, "runSuite");
    const again = drafts.map((d) => inspectWithPack(resolvePack(second), d).report);
    expect(again).toEqual(bySync);
    expect(runSuite).not.toHaveBeenCalled();
  }, 300_000);
});

describe("a code draft whose suite burns CPU in native calls, beside benign drafts (validateDraft)", () => {
  it("the benign json, mcq and code drafts finish before it, and it ends with its tests too_slow", async () => {
    const registry = new PackRegistry();
    const order: string[] = [];
    const track = (id: string, draft: Draft) =>
      validateDraft(draft, { registry }).then((report) => {
        order.push(id);
        return report;
      });
    const hostile = track("hostile", {
      id: "hostile",
      kind: "code",
      content: {
        language: "javascript",
        source: "// hostile beside benign",
        // Four tests, each past the pack's 1 s budget inside one native call.
        tests: [0, 1, 2, 3].map((i) => bomb(`bomb ${i}`, 150_000)),
      },
    });
    const benign = [
      track("json", {
        id: "json",
        kind: "json",
        context: { schema: { type: "object", required: ["a"], properties: { a: { type: "integer" } } } },
        content: { a: 1 },
      }),
      track("mcq", {
        id: "mcq",
        kind: "mcq",
        content: {
          stem: "Which planet is closest to the Sun?",
          options: [
            { key: "A", text: "Mercury" },
            { key: "B", text: "Venus" },
          ],
          correct_answer: "A",
          rationale: "Mercury orbits nearest the Sun.",
        },
      }),
      ...[0, 1, 2].map((i) =>
        track(`code-${i}`, {
          id: `code-${i}`,
          kind: "code",
          content: {
            language: "javascript",
            source: `function add(a, b) { return a + b + ${i}; }`,
            tests: [{ name: "adds", code: `assert.equal(add(2, 3), ${5 + i});` }],
          },
        }),
      ),
    ];
    const [hostileReport, ...benignReports] = await Promise.all([hostile, ...benign]);
    expect(order.at(-1)).toBe("hostile");
    expect(order).toHaveLength(6);
    // Each benign draft got its verdict (json and code ones pass; the mcq's rules judge the rest).
    expect(benignReports.filter((_, i) => i !== 1).map((r) => r.passed)).toEqual([true, true, true, true]);
    expect(hostileReport.passed).toBe(false);
    expect(hostileReport.violations.map((v) => [v.ruleId, v.message])).toEqual(
      [0, 1, 2, 3].map((i) => [
        `test:bomb ${i}`,
        `test "bomb ${i}" used up its budget of ${DEFAULT_CODE_SETTINGS.timeoutMs} ms of CPU time and was interrupted`,
      ]),
    );
  }, 300_000);
});

describe("the same in one redraft run (the bin, --json writes each result as it ends)", () => {
  it("the benign drafts' lines come before the hostile draft's, which is not validated", async () => {
    const work = await mkdtemp(join(tmpdir(), "redraft-suiteasync-"));
    try {
      const hostile = {
        id: "hostile",
        kind: "code",
        content: {
          language: "javascript",
          source: "// hostile in redraft run",
          tests: [0, 1, 2, 3].map((i) => bomb(`bomb ${i}`, 150_000)),
        },
      };
      const benign = [
        { id: "json", kind: "json", context: { schema: { type: "integer" } }, content: 7 },
        ...[0, 1, 2].map((i) => ({
          id: `code-${i}`,
          kind: "code",
          content: {
            language: "javascript",
            source: `function twice(x) { return 2 * x + ${i} - ${i}; } // redraft run`,
            tests: [{ name: "twice", code: "assert.equal(twice(4), 8);" }],
          },
        })),
      ];
      const file = join(work, "mixed.json");
      await writeFile(file, JSON.stringify([hostile, ...benign]));
      const run = spawnCli([
        "run",
        file,
        "--json",
        "--llm",
        "none",
        "--concurrency",
        "8",
        "--data-dir",
        join(work, "data"),
      ]);
      const finished = await run.done;
      const lines = jsonLines(finished.stdout);
      expect(lines.map((l) => l.draftId)).toHaveLength(5);
      // Written as each draft ends: before, the hostile draft's suite held the thread, and it ended first.
      expect(lines.at(-1)?.draftId).toBe("hostile");
      expect(lines.at(-1)?.status).not.toBe("validated");
      expect(Object.fromEntries(lines.slice(0, 4).map((l) => [l.draftId, l.status]))).toEqual({
        json: "validated",
        "code-0": "validated",
        "code-1": "validated",
        "code-2": "validated",
      });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }, 300_000);
});
