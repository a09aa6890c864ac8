import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CODE_SETTINGS } from "../../shared/packs/code/code.js";
import { QuickJSSandbox, type SandboxLimits, type SuiteResult } from "../../shared/packs/code/sandbox.js";
import { besideBusyProcesses } from "../helpers/busy.js";

/**
 * Work inside a native call counts (issue 34): QuickJS never polls its interrupt handler inside a
 * built-in, so before the budgets were CPU time these tests ran for seconds (one never returned)
 * and were charged nothing. Each bomb must fail `too_slow`, the test after it must still run and
 * pass, and the verdicts must be the same on an idle machine and beside four busy processes.
 * Nothing here reads a clock: CPU time is the sandbox thread's, as the kernel counts it. Each
 * bomb costs several times the 100 ms budget (QuickJS's BigInt stops at about a million bits), and
 * the tests after them a few ms.
 */
const BOMBS = [
  { name: "prints a huge BigInt", code: "assert.ok(String(2n ** 1000000n).length > 0);" },
  { name: "parses a huge BigInt", code: 'assert.ok(BigInt("9".repeat(290000)) > 0n);' },
  {
    name: "indexOf with a long needle",
    code: 'assert.equal("a".repeat(100000).indexOf("a".repeat(50000) + "b"), -1);',
  },
  {
    name: "split with a long needle",
    code: 'assert.equal("a".repeat(100000).split("a".repeat(50000) + "b").length, 1);',
  },
  {
    name: "a generic array method over a huge length",
    code: "assert.equal(Array.prototype.indexOf.call({ length: 2 ** 30 }, 1), -1);",
  },
  {
    name: "stringifies a shared sub-object graph",
    code: "let o = [1]; for (let i = 0; i < 24; i++) o = [o, o]; assert.ok(JSON.stringify(o).length > 0);",
  },
];

const tests = BOMBS.flatMap((bomb, i) => [bomb, { name: `after ${i}`, code: "assert.equal(1 + 1, 2);" }]);
const limits: SandboxLimits = { ...DEFAULT_CODE_SETTINGS, timeoutMs: 100, suiteTimeoutMs: 60_000 };
const sandbox = new QuickJSSandbox();

beforeAll(async () => {
  await sandbox.ready();
});

function verdicts(result: SuiteResult): string[] {
  if (result.kind !== "ran") throw new Error("the bombs did not compile");
  return result.outcomes.map((o) => `${o.name}: ${o.passed ? "passed" : o.failure?.reason}`);
}

describe("a budget of CPU time counts work inside native calls", () => {
  it("stops every bomb too_slow, runs the test after it, and gives the same verdicts beside four busy processes", async () => {
    const idle = sandbox.runSuite(BOMBS.map((b) => `// ${b.name}`).join("\n"), tests, limits);
    const expected = BOMBS.flatMap((bomb, i) => [`${bomb.name}: too_slow`, `after ${i}: passed`]);
    expect(verdicts(idle)).toEqual(expected);
    if (idle.kind === "ran") {
      // Charged: each bomb used (at least) its budget, where the count of polls charged none.
      for (const outcome of idle.outcomes.filter((o) => !o.passed))
        expect(outcome.cpuMs).toBeGreaterThanOrEqual(limits.timeoutMs);
    }
    const loaded = await besideBusyProcesses(4, () =>
      sandbox.runSuite(`${BOMBS.map((b) => `// ${b.name}`).join("\n")}\n// loaded`, tests, limits),
    );
    expect(verdicts(loaded)).toEqual(expected);
  }, 300_000);

  it("counts the suite's budget in CPU time too: a suite of bombs ends suite_too_slow, then suite_not_run", () => {
    const result = sandbox.runSuite("// suite", tests, { ...limits, suiteTimeoutMs: 250 });
    expect(verdicts(result).slice(0, 4)).toEqual([
      "prints a huge BigInt: too_slow",
      "after 0: passed",
      "parses a huge BigInt: too_slow",
      "after 1: passed",
    ]);
    expect(verdicts(result)[4]).toMatch(/: suite_too_slow$/);
    expect(verdicts(result).at(-1)).toMatch(/: suite_not_run$/);
  }, 300_000);
});
