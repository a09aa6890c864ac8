import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CODE_SETTINGS } from "../../shared/packs/code.js";
import { QuickJSSandbox } from "../../shared/packs/sandbox.js";
import { HUMANEVAL_X_JS } from "../fixtures/humaneval-x-js.js";
import { besideBusyProcesses } from "../helpers/busy.js";

/**
 * HumanEval-X's JavaScript problems through the sandbox, with the values crossing into the tests as
 * copies and the budgets in CPU time: every canonical solution passes its checks, every mutant fails
 * them, and the verdicts are the same on an idle machine and beside four busy processes.
 */
const sandbox = new QuickJSSandbox();

beforeAll(async () => {
  await sandbox.ready();
});

function verdicts(): string[] {
  return HUMANEVAL_X_JS.flatMap((problem) =>
    (["canonical", "mutant"] as const).map((which) => {
      const result = sandbox.runSuite(
        problem[which],
        [{ name: problem.task, code: problem.check }],
        DEFAULT_CODE_SETTINGS,
      );
      const passed = result.kind === "ran" && result.outcomes.every((o) => o.passed);
      return `${problem.task} ${which}: ${passed ? "passes" : "fails"}`;
    }),
  );
}

describe("HumanEval-X JavaScript in the sandbox", () => {
  it("passes every canonical solution and fails every mutant, idle and beside four busy processes", async () => {
    const expected = HUMANEVAL_X_JS.flatMap((p) => [
      `${p.task} canonical: passes`,
      `${p.task} mutant: fails`,
    ]);
    expect(verdicts()).toEqual(expected);
    expect(await besideBusyProcesses(4, verdicts)).toEqual(expected);
  }, 300_000);
});
