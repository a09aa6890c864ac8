/**
 * Cloud mode end to end, with no AWS account: runs the tests under tests/cloud (dynalite holding the
 * table as the synthesized template defines it, s3rver, mocked CloudFormation, Step Functions
 * history and EventBridge; the deployed state machine in-process over the handlers' own stores) and
 * prints each test's result. The last line is `cloud mode: N/N`; the exit code is 1 below N/N.
 *
 *   npm run -s test:cloud
 */
import { startVitest } from "vitest/node";

const out = (line = "") => process.stdout.write(`${line}\n`);

const vitest = await startVitest("test", ["tests/cloud"], { watch: false, reporters: [{}] });
const tests = [...(vitest?.state.getTestModules() ?? [])].flatMap((module) => [
  ...module.children.allTests(),
]);
let passed = 0;
for (const test of tests) {
  const state = test.result().state;
  if (state === "passed") passed++;
  out(
    `${state === "passed" ? "ok  " : "FAIL"} ${test.module.moduleId.replace(`${process.cwd()}/`, "")} > ${test.fullName}`,
  );
  for (const error of test.result().errors ?? []) out(`       ${error.message.split("\n")[0]}`);
}
await vitest?.close();
if (tests.length === 0 || passed < tests.length) process.exitCode = 1;
out(`cloud mode: ${passed}/${tests.length}`);
