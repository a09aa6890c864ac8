/**
 * `npm run bench:coldstart [-- --runs N] [-- --write-docs] [-- --smoke]`: what a Lambda cold start pays
 * for each step's bundle.
 *
 * Synthesizes the CDK app WITH bundling (`npx cdk synth -c env=<env> --quiet -o <dir>`, the same esbuild
 * settings a deploy uses), finds the step functions' bundles through the template's `aws:asset:path`
 * metadata (dev's validate, correct, revalidate and judge, with the Anthropic SDK; prod's correct and
 * judge, with the Bedrock SDK), and for each reports:
 * - the size in bytes of the bundle (index.mjs), of its source map, and of the other files deployed
 *   beside it (the QuickJS WebAssembly module and the sandbox harness, read only by the code pack);
 * - whether it carries a model SDK (`@anthropic-ai/…`): in the bundle's text, or among its source
 *   map's `sources` (minified text rarely names its packages; the map always does);
 * - the CPU time (`process.cpuUsage()`, user + system) of `await import(bundle)` in a fresh `node`, the
 *   median of `--runs` processes (5 by default), with the function's own environment from the
 *   template (references replaced by placeholders) and `AWS_LAMBDA_FUNCTION_NAME` set, as in Lambda:
 *   once as deployed, and once with `NODE_OPTIONS=--enable-source-maps` (the `-c sourceMaps=true`
 *   setting, for reading stack traces).
 *
 * The synth output goes under `.cache/` inside the repository.
 *
 * `--write-docs` rewrites this bench's section of docs/BENCHMARKS.md with the output verbatim.
 *
 * `--smoke`: no synth (too slow for a smoke run): the validate step is bundled directly with esbuild,
 * with the deploy's options (STANDARD_BUNDLING, no model SDK), imported once; the run fails if that
 * bundle carries a model SDK, so CI notices the day an import brings one back.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { loadavg } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { commitId, writeSections } from "./lib/docs.js";
import { machine, median, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const runsAt = process.argv.indexOf("--runs");
const RUNS = runsAt >= 0 ? Number(process.argv[runsAt + 1]) : SMOKE ? 1 : 5;
const STEPS = ["validate", "correct", "revalidate", "judge"] as const;
type Step = (typeof STEPS)[number];
/** Steps that never call a model: their bundles should not carry a model SDK. */
const NO_MODEL_SDK: ReadonlySet<Step> = new Set(["validate", "revalidate"]);
const GOAL_BYTES = 1024 * 1024;
const GOAL_IMPORT_MS = 150;
const OUT = resolve(".cache/bench-coldstart");
const SOURCE_MAPS = "--enable-source-maps";

interface Bundle {
  step: Step;
  /** The step, the environment and its model provider, as the table shows it. */
  label: string;
  file: string;
  env: Record<string, string>;
}

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

/** Everything this run prints, kept for --write-docs. */
const output: string[] = [];
function say(text = ""): void {
  console.log(text);
  output.push(text);
}

/** The function's environment as deployed; a CloudFormation reference becomes a placeholder string. */
function envOf(variables: Record<string, unknown> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(variables)) {
    env[k] = typeof v === "string" ? v : `arn:aws:secretsmanager:us-east-1:123456789012:secret:bench-${k}`;
  }
  return env;
}

/**
 * The bundles to measure: the four steps of dev (Anthropic), and correct and judge of prod, whose
 * model is on Bedrock (another SDK, in those two bundles only).
 */
const TARGETS: readonly { env: string; provider: string; steps: readonly Step[] }[] = [
  { env: "dev", provider: "anthropic", steps: STEPS },
  { env: "prod", provider: "bedrock", steps: ["correct", "judge"] },
];

function synthesize(
  env: string,
  provider: string,
  steps: readonly Step[],
): { bundles: Bundle[]; seconds: number } {
  const dir = join(OUT, `cdk.out-${env}`);
  rmSync(dir, { recursive: true, force: true });
  const started = performance.now();
  execFileSync("npx", ["cdk", "synth", "-c", `env=${env}`, "--quiet", "-o", dir], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const seconds = (performance.now() - started) / 1000;
  const stack = `Redraft-${env}`;
  const template = JSON.parse(readFileSync(join(dir, `${stack}.template.json`), "utf8")) as Template;
  const bundles: Bundle[] = [];
  for (const step of steps) {
    const fn = Object.values(template.Resources).find(
      (r) =>
        r.Type === "AWS::Lambda::Function" &&
        r.Metadata?.["aws:cdk:path"] === `${stack}/Functions/${step}/Resource`,
    );
    const asset = fn?.Metadata?.["aws:asset:path"];
    if (!fn || !asset) throw new Error(`no bundled asset for the ${step} function in the ${env} template`);
    bundles.push({
      step,
      label: `${step} (${env}, ${provider})`,
      file: join(dir, asset, "index.mjs"),
      env: envOf(fn.Properties?.Environment?.Variables),
    });
  }
  return { bundles, seconds };
}

/**
 * One step bundled by esbuild alone with the deploy's options (no synth), its side files beside it.
 * `awsSdkExternal` leaves `@aws-sdk/*` out, to be loaded from node_modules as from the Lambda
 * runtime's copy: the comparison rows, which show what bundling the AWS SDK trades.
 */
async function bundleOne(
  step: Step,
  label: string,
  modelSdk: "anthropic" | "none",
  awsSdkExternal: boolean,
): Promise<Bundle & { parts: Map<string, number> }> {
  const [{ build }, { BUNDLE_SIDE_FILES, esbuildOptions }] = await Promise.all([
    import("esbuild"),
    import("../infra/constructs/functions.js"),
  ]);
  const dir = join(OUT, `${step}-${awsSdkExternal ? "external" : "bundled"}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "index.mjs");
  const options = esbuildOptions(modelSdk);
  const { metafile } = await build({
    ...options,
    ...(awsSdkExternal && { external: [...options.external, "@aws-sdk/*"] }),
    entryPoints: [`functions/${step}.ts`],
    outfile: file,
    metafile: true,
    logLevel: "error",
  });
  for (const side of BUNDLE_SIDE_FILES) copyFileSync(side, join(dir, basename(side)));
  const model =
    modelSdk === "anthropic"
      ? {
          MODEL_PROVIDER: "anthropic",
          ANTHROPIC_SECRET_ARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:bench",
        }
      : { MODEL_PROVIDER: "none" };
  const inputs = Object.values(metafile.outputs).find((o) => o.entryPoint)?.inputs ?? {};
  return {
    step,
    label,
    file,
    env: { TABLE_NAME: "bench", BUCKET_NAME: "bench", ...model },
    parts: partsOf(inputs),
  };
}

/** The AWS SDK's packages (clients, Smithy runtime, AWS crypto), counted as one part. */
const AWS_SDK_PART = /^@(aws-sdk|smithy|aws-crypto)\//;

/** Bytes of the bundle per package (the AWS SDK as one), and per top folder for redraft's own code. */
function partsOf(inputs: Record<string, { bytesInOutput: number }>): Map<string, number> {
  const parts = new Map<string, number>();
  for (const [path, { bytesInOutput }] of Object.entries(inputs)) {
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1];
    const part = pkg
      ? AWS_SDK_PART.test(pkg)
        ? "AWS SDK (@aws-sdk, @smithy, @aws-crypto)"
        : pkg
      : `redraft ${path.split("/")[0]}/`;
    parts.set(part, (parts.get(part) ?? 0) + bytesInOutput);
  }
  return parts;
}

const PROBE =
  "const t = process.cpuUsage(); await import(process.argv[1]); const d = process.cpuUsage(t); " +
  "process.stdout.write(String((d.user + d.system) / 1000));";

/** NODE_OPTIONS as deployed, or with source maps turned on (the debug setting). */
function nodeOptions(deployed: string | undefined, sourceMaps: boolean): string | undefined {
  const flags = (deployed ?? "").split(/\s+/).filter((flag) => flag !== "" && flag !== SOURCE_MAPS);
  if (sourceMaps) flags.push(SOURCE_MAPS);
  return flags.length > 0 ? flags.join(" ") : undefined;
}

/** CPU milliseconds of one `await import(bundle)` in a fresh node. */
function importCpuMs(bundle: Bundle, options: string | undefined): number {
  const { NODE_OPTIONS: _deployed, ...deployed } = bundle.env;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    AWS_REGION: "us-east-1",
    AWS_LAMBDA_FUNCTION_NAME: `bench-${bundle.step}`,
    ...deployed,
    ...(options !== undefined && { NODE_OPTIONS: options }),
  };
  const child = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", PROBE, pathToFileURL(bundle.file).href],
    { env, encoding: "utf8" },
  );
  if (child.status !== 0)
    throw new Error(`importing the ${bundle.step} bundle failed: ${child.stderr.trim()}`);
  return Number(child.stdout);
}

/** Bytes of the files deployed beside the bundle and its map. */
function sideBytes(bundle: Bundle): number {
  const dir = dirname(bundle.file);
  const own = new Set([basename(bundle.file), `${basename(bundle.file)}.map`]);
  return readdirSync(dir)
    .filter((name) => !own.has(name))
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

const bytes = (n: number) => n.toLocaleString("en-US");
const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
const ms = (x: number) => `${x.toFixed(0)} ms`;

/**
 * The trade the deploy makes: the AWS SDK bundled (tree-shaken ES modules) against left to the Lambda
 * runtime's copy (CommonJS, loaded from node_modules here). Not what deploys: built by esbuild alone,
 * both ways, from the same sources and options, so that the two columns differ in that one setting.
 */
async function compareAwsSdkExternal(): Promise<void> {
  const rows: string[][] = [];
  let validateParts = new Map<string, number>();
  for (const [step, modelSdk] of [
    ["validate", "none"],
    ["correct", "anthropic"],
  ] as const) {
    const cells: string[] = [];
    for (const external of [false, true]) {
      const b = await bundleOne(step, step, modelSdk, external);
      const cpu = median(Array.from({ length: RUNS }, () => importCpuMs(b, undefined)));
      cells.push(bytes(statSync(b.file).size), ms(cpu));
      if (step === "validate" && !external) validateParts = b.parts;
    }
    rows.push([`${step} (${modelSdk === "none" ? "no model SDK" : "Anthropic SDK"})`, ...cells]);
  }
  say(
    "\nthe trade: AWS SDK bundled (as deployed) or left to the Lambda runtime's copy (esbuild alone, same options)",
  );
  say(
    table(
      [
        "bundle",
        "bundled: index.mjs B",
        "bundled: import CPU",
        "runtime's SDK: index.mjs B",
        "runtime's SDK: import CPU",
      ],
      rows,
    ),
  );
  // Where the bytes of a bundle go, so that a size above the goal says what it is made of.
  const largest = [...validateParts].sort((a, b) => b[1] - a[1]).slice(0, 8);
  say("\nthe largest parts of validate's bundle (esbuild's metafile, bytes in the minified output)");
  say(
    table(
      ["part", "bytes"],
      largest.map(([part, n]) => [part, bytes(n)]),
    ),
  );
}

async function main(): Promise<void> {
  const date = new Date();
  const load = loadavg();
  const commit = commitId();
  say("redraft bench:coldstart");
  say(machine());
  let bundles: Bundle[];
  if (SMOKE) {
    bundles = [await bundleOne("validate", "validate (smoke)", "none", false)];
    say("smoke: validate bundled by esbuild alone (the deploy's options, no synth), imported once");
  } else {
    bundles = [];
    for (const { env, provider, steps } of TARGETS) {
      const synth = synthesize(env, provider, steps);
      bundles.push(...synth.bundles);
      say(`npx cdk synth -c env=${env} --quiet (bundling included) took ${synth.seconds.toFixed(1)} s`);
    }
  }
  say(
    `import CPU: user + system of \`await import(bundle)\` in a fresh node, median of ${RUNS} processes, ` +
      "with the function's environment and AWS_LAMBDA_FUNCTION_NAME set;",
  );
  say(
    `"as deployed" uses the function's own NODE_OPTIONS, "source maps on" adds ${SOURCE_MAPS} ` +
      "(the -c sourceMaps=true setting)",
  );
  say(
    "sizes in bytes; side files: deployed beside the bundle, read only when the code pack runs " +
      "(QuickJS WebAssembly, sandbox harness)\n",
  );
  const rows: string[][] = [];
  const misses: string[] = [];
  let sdkRegression = false;
  for (const b of bundles) {
    const size = statSync(b.file).size;
    const mapSize = statSync(`${b.file}.map`).size;
    const text = readFileSync(b.file, "utf8");
    const inText = text.includes("@anthropic-ai/");
    const sources = (JSON.parse(readFileSync(`${b.file}.map`, "utf8")) as { sources: string[] }).sources;
    const inMap = sources.some((s) => s.includes("@anthropic-ai/"));
    const hasSdk = inText || inMap;
    const deployedOptions = b.env.NODE_OPTIONS;
    const deployed = median(Array.from({ length: RUNS }, () => importCpuMs(b, deployedOptions)));
    const withMaps = median(
      Array.from({ length: RUNS }, () => importCpuMs(b, nodeOptions(deployedOptions, true))),
    );
    const sdkOk = !(NO_MODEL_SDK.has(b.step) && hasSdk);
    if (!sdkOk) sdkRegression = true;
    if (size > GOAL_BYTES)
      misses.push(
        `${b.label}: bundle ${bytes(size)} B > 1 MiB (${bytes(GOAL_BYTES)} B) by ${kib(size - GOAL_BYTES)}`,
      );
    if (!sdkOk) misses.push(`${b.label}: carries a model SDK although it never calls a model`);
    if (deployed > GOAL_IMPORT_MS)
      misses.push(`${b.label}: import CPU ${ms(deployed)} as deployed > ${GOAL_IMPORT_MS} ms`);
    rows.push([
      b.label,
      bytes(size),
      bytes(mapSize),
      bytes(sideBytes(b)),
      `${inText ? "yes" : "no"} / ${inMap ? "yes" : "no"}`,
      ms(deployed),
      ms(withMaps),
      size <= GOAL_BYTES && sdkOk && deployed <= GOAL_IMPORT_MS ? "met" : "NOT met",
    ]);
  }
  say(
    table(
      [
        "bundle",
        "index.mjs B",
        "source map B",
        "side files B",
        "model SDK (text / map)",
        "import CPU as deployed",
        "source maps on",
        "goals",
      ],
      rows,
    ),
  );
  say(
    `\ngoals: bundle (index.mjs) <= 1 MiB; validate and revalidate carry no model SDK; import CPU <= ${GOAL_IMPORT_MS} ms as deployed`,
  );
  say(misses.length === 0 ? "every goal met" : `not met:\n${misses.map((m) => `- ${m}`).join("\n")}`);
  if (!SMOKE) await compareAwsSdkExternal();
  if (SMOKE && sdkRegression) {
    console.error("bench:coldstart --smoke: the validate bundle carries a model SDK");
    process.exitCode = 1;
  }
  if (WRITE_DOCS) {
    writeSections([
      {
        bench: "coldstart",
        command: "npm run bench:coldstart",
        output: output.join("\n"),
        date,
        load,
        commit,
      },
    ]);
    console.error("wrote the bench:coldstart section of docs/BENCHMARKS.md");
  }
}

await main();
