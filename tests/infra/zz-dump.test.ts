import { it } from "vitest";
import { getAsl } from "/work/main/tests/infra/asl.js";
import { synthesize } from "/work/main/tests/infra/synth.js";
it("dump", () => {
  const asl = getAsl(synthesize("dev").template);
  for (const n of ["JudgeEnabled?", "Judge", "HasCriticalFindings?", "CorrectLogic", "CountLogicAttempt", "RevalidateLogic", "LogicUnresolved", "ClassifyFailure?", "RecordModelFailure", "CorrectExecution", "PublishBestDraft", "MarkValidated"]) console.log(n, JSON.stringify(asl.States[n], null, 1));
});
