/**
 * Path coverage of the synthesized state machine: runs the workflow scenario corpus
 * (tests/workflow/scenarios.ts) through the local runtime and prints, from the execution histories,
 * how often each state was entered and each transition (Next, Choice rule, Default, Catch, Retry)
 * was taken. The last line is `states N/N, transitions M/M`; the exit code is 1 below 100 %.
 *
 *   npm run -s coverage:asl
 */
import "../../cli/quiet.js";
import { loadAsl } from "../../local/state-machine.js";
import { coverageOf } from "./asl-coverage.js";
import { historiesOf, outcomeMismatch, runCorpus } from "./scenarios.js";

const out = (line = "") => process.stdout.write(`${line}\n`);
const mark = (n: number) => (n > 0 ? `${String(n).padStart(4)}` : "   -");

const asl = await loadAsl();
let mismatches = 0;
const results = await runCorpus(asl, (result) => {
  const problems = outcomeMismatch(result);
  mismatches += problems.length;
  out(`${problems.length === 0 ? "ok  " : "FAIL"} ${result.scenario.name}`);
  for (const p of problems) out(`       ${p}`);
});
const report = await coverageOf(asl, historiesOf(results));

out();
out("states (times entered)");
for (const s of report.states) out(`${mark(s.entered)}  ${s.name}`);
out();
out("transitions (times taken)");
for (const t of report.transitions) out(`${mark(t.taken)}  ${t.id}`);
out();
if (report.missingStates.length > 0) out(`never entered: ${report.missingStates.join(", ")}`);
for (const id of report.missingTransitions) out(`never taken: ${id}`);
if (!report.complete || mismatches > 0) process.exitCode = 1;
out(report.summary);
