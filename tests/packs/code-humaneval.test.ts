import vm from "node:vm";
import { beforeAll, describe, expect, it } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { inspectWithPack, type ResolvedPack, resolvePack } from "../../shared/engine.js";
import { type CodeContent, type CodeSettings, codePack } from "../../shared/packs/code/code.js";
import {
  HUMANEVAL_X_JS,
  type HumanEvalXProblem,
  mutantsOf,
  packTestOf,
  programOf,
  WRONG_CANONICAL,
} from "../fixtures/humaneval-x-js.js";
import { besideBusyProcesses } from "../helpers/busy.js";

/**
 * Real data nobody here wrote: 41 problems of the public HumanEval-X JavaScript dataset (every 4th
 * task, tests/fixtures/humaneval-x-js/). Each canonical solution and each mechanical mutant of it is
 * a `code` draft whose one test is the dataset's check; redraft's verdict is held against plain
 * Node's, computed here with node:vm (so the ground truth does not come from redraft): canonical
 * solutions are validated, mutants the dataset's tests catch in Node fail, idle and beside four busy
 * processes.
 */

/** What plain Node says of a program followed by the dataset's check, `console.assert` throwing. */
type NodeVerdict = "passes" | "fails" | "does not parse" | "runs past 2 s";

function inNode(program: string, test: string): NodeVerdict {
  let script: vm.Script;
  try {
    script = new vm.Script(`${program}\n${test}`);
  } catch {
    return "does not parse";
  }
  const context = vm.createContext({
    console: {
      assert(condition: unknown) {
        if (!condition) throw new Error("console.assert failed");
      },
    },
  });
  try {
    script.runInContext(context, { timeout: 2000 });
    return "passes";
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") return "runs past 2 s";
    return "fails";
  }
}

interface Candidate {
  readonly label: string;
  readonly problem: HumanEvalXProblem;
  readonly body: string;
  readonly expected: "validated" | "fails";
}

/**
 * The drafts: every canonical solution (Node must pass it, save the few WRONG_CANONICAL lists, which
 * it must fail), and every mutant Node's run of the
 * dataset's tests fails. Mutants the tests do not catch (equivalent or untested changes), that do not
 * parse, or that run past Node's 2 s (a wall-clock cut on a shared machine is no verdict) are left
 * out, and counted.
 */
const nodeCanonical = new Map<string, NodeVerdict>();
const leftOut: Record<string, number> = {};
const candidates: Candidate[] = HUMANEVAL_X_JS.flatMap((problem) => {
  const canonical = inNode(programOf(problem, problem.canonical_solution), problem.test);
  nodeCanonical.set(problem.task_id, canonical);
  const wrong = WRONG_CANONICAL.has(problem.task_id);
  const kept: Candidate[] = [
    {
      label: `${problem.task_id} canonical${wrong ? " (wrong in the dataset)" : ""}`,
      problem,
      body: problem.canonical_solution,
      expected: wrong ? "fails" : "validated",
    },
  ];
  if (wrong) return kept;
  for (const mutant of mutantsOf(problem)) {
    const verdict = inNode(programOf(problem, mutant.body), problem.test);
    if (verdict === "fails")
      kept.push({
        label: `${problem.task_id} ${mutant.operator}`,
        problem,
        body: mutant.body,
        expected: "fails",
      });
    else leftOut[verdict] = (leftOut[verdict] ?? 0) + 1;
  }
  return kept;
});

function draftOf({ problem, body }: Candidate, index: number): Draft {
  const content: CodeContent = {
    language: "javascript",
    source: programOf(problem, body),
    tests: [{ name: problem.task_id, code: packTestOf(problem) }],
  };
  return { id: `humaneval-x-js.${index}`, kind: "code", content };
}

function verdicts(resolved: ResolvedPack<CodeContent, CodeSettings>): string[] {
  return candidates.map((candidate, index) => {
    const { report } = inspectWithPack(resolved, draftOf(candidate, index));
    return `${candidate.label}: ${report.passed ? "validated" : "fails"}`;
  });
}

beforeAll(async () => {
  // The code pack defines ready() (it loads the sandbox); Pack types it as optional.
  await codePack.ready?.();
});

describe("HumanEval-X JavaScript (41 real problems) through the code pack", () => {
  it("plain Node passes every canonical solution with the dataset's tests, and its tests catch mutants", () => {
    const failing = [...nodeCanonical].filter(([, v]) => v !== "passes").map(([task]) => task);
    expect(failing).toEqual([...WRONG_CANONICAL.keys()]);
    expect(nodeCanonical.size).toBe(41);
    const mutants = candidates.filter((c) => !c.label.includes(" canonical")).length;
    console.log(
      `HumanEval-X JS slice: ${candidates.length - mutants} canonical, ${mutants} mutants kept; left out: ${JSON.stringify(leftOut)}`,
    );
    expect(mutants).toBeGreaterThanOrEqual(41);
  });

  it("validates every canonical solution (fails the dataset's wrong one) and fails every kept mutant, idle and beside four busy processes", async () => {
    const expected = candidates.map((c) => `${c.label}: ${c.expected}`);
    expect(verdicts(resolvePack(codePack))).toEqual(expected);
    // The code pack keeps a suite's result by its content and limits: the second pass gets a suite
    // budget one millisecond lower, so it runs again rather than reading the first pass's results.
    const loaded = resolvePack(codePack, { settings: { suiteTimeoutMs: 19_999 } });
    expect(await besideBusyProcesses(4, () => verdicts(loaded))).toEqual(expected);
  }, 600_000);
});
