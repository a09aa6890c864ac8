/**
 * What the fault-injection suite checks after each scenario, read through the store the way
 * `redraft show --json` reads a run: the run records, their attempts, and the judge rounds' blobs.
 */

import type { JudgeReport } from "../../shared/loop/steps/judge.js";
import { blobKeys } from "../../shared/store/bucket-layout.js";
import type { BlobStore, RunRecord, RunStatus, RunStore } from "../../shared/store/types.js";

const TERMINAL: readonly RunStatus[] = ["validated", "needs_manual_review", "rejected", "failed"];

export interface Audit {
  runs: number;
  terminal: number;
  /** Drafts that ran to an end more than once (an interrupted run does not count). */
  duplicated: number;
  /** Drafts of the corpus with no run that ran to an end. */
  lost: number;
  /** Runs whose token totals differ from their attempts' tokens plus their judge rounds'. */
  tokenMismatches: number;
  /** Runs finished as failed/interrupted (their process was killed). */
  interrupted: number;
  /** Those runs, one line each: a problem wherever no process was killed. */
  interruptedRuns: string[];
  /** Final statuses (reason after a slash when there is one) and how many runs have each. */
  outcomes: Record<string, number>;
  /** One line per problem found, for the report. */
  problems: string[];
}

const ranToEnd = (run: RunRecord) => TERMINAL.includes(run.status) && run.reason !== "interrupted";

async function judgeUsage(blobs: BlobStore, runId: string) {
  const sum = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  // Rounds are numbered from 1 with no gaps, as `redraft show` reads them.
  for (let round = 1; ; round++) {
    let report: JudgeReport;
    try {
      report = JSON.parse(await blobs.get(blobKeys.judgeReport(runId, round))) as JudgeReport;
    } catch {
      break;
    }
    sum.input += report.usage.input;
    sum.output += report.usage.output;
    sum.cacheRead += report.usage.cacheRead;
    sum.cacheWrite += report.usage.cacheWrite;
  }
  return sum;
}

/**
 * Every run, as `redraft runs` lists them. A listing that fails or names a run twice is a problem
 * to report; the audit then goes on with the runs found draft by draft.
 */
async function everyRun(
  runs: RunStore,
  draftIds: readonly string[],
  problems: string[],
): Promise<RunRecord[]> {
  let listed: RunRecord[];
  try {
    listed = await runs.listRuns();
  } catch (error) {
    problems.push(`listing every run failed: ${(error as Error).name}: ${(error as Error).message}`);
    listed = (await Promise.all(draftIds.map((draftId) => runs.listRuns({ draftId })))).flat();
  }
  const byId = new Map<string, RunRecord>();
  for (const run of listed) {
    if (byId.has(run.runId)) problems.push(`run ${run.runId} (${run.draftId}) is listed twice`);
    byId.set(run.runId, run);
  }
  return [...byId.values()];
}

/** Audits every run in the store against the corpus's draft ids. */
export async function audit(runs: RunStore, blobs: BlobStore, draftIds: readonly string[]): Promise<Audit> {
  const problems: string[] = [];
  const all = await everyRun(runs, draftIds, problems);
  const ended = new Map<string, number>();
  const outcomes: Record<string, number> = {};
  let tokenMismatches = 0;
  const interrupted: string[] = [];
  for (const run of all) {
    const outcome = run.reason ? `${run.status}/${run.reason}` : run.status;
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    if (!TERMINAL.includes(run.status))
      problems.push(`run ${run.runId} (${run.draftId}) is still ${run.status}`);
    if (run.reason === "interrupted")
      interrupted.push(`run ${run.runId} (${run.draftId}) finished as interrupted: ${run.message ?? ""}`);
    if (ranToEnd(run)) ended.set(run.draftId, (ended.get(run.draftId) ?? 0) + 1);
    const attempts = await runs.listAttempts(run.runId);
    const judge = await judgeUsage(blobs, run.runId);
    const expected = { ...judge };
    for (const a of attempts) {
      expected.input += a.tokens.input;
      expected.output += a.tokens.output;
      expected.cacheRead += a.tokens.cacheRead;
      expected.cacheWrite += a.tokens.cacheWrite;
    }
    const total = expected.input + expected.output + expected.cacheRead + expected.cacheWrite;
    const t = run.tokens;
    if (
      t.input !== expected.input ||
      t.output !== expected.output ||
      t.cacheRead !== expected.cacheRead ||
      t.cacheWrite !== expected.cacheWrite ||
      t.total !== total
    ) {
      tokenMismatches++;
      problems.push(`run ${run.runId} (${run.draftId}): tokens ${t.total}, attempts and judge ${total}`);
    }
    const numbers = attempts.map((a) => a.attempt);
    if (new Set(numbers).size !== numbers.length)
      problems.push(`run ${run.runId} (${run.draftId}): attempt numbers ${numbers.join(",")} repeat`);
  }
  let duplicated = 0;
  let lost = 0;
  for (const id of draftIds) {
    const n = ended.get(id) ?? 0;
    if (n > 1) {
      duplicated++;
      problems.push(`draft ${id} ran to an end ${n} times`);
    }
    if (n === 0) {
      lost++;
      problems.push(`draft ${id} has no run that ran to an end`);
    }
  }
  return {
    runs: all.length,
    terminal: all.filter((r) => TERMINAL.includes(r.status)).length,
    duplicated,
    lost,
    tokenMismatches,
    interrupted: interrupted.length,
    interruptedRuns: interrupted,
    outcomes,
    problems,
  };
}
