/**
 * `npm run bench:coldstart`: what a Lambda cold start pays for each step's bundle.
 *
 * Synthesizes the CDK app WITH bundling (`npx cdk synth -c env=dev --quiet -o <dir>`, the same esbuild
 * settings a deploy uses), finds the four step functions' bundles (validate, correct, revalidate, judge)
 * through the template's `aws:asset:path` metadata, and for each reports:
 * - the bundle's size and its source map's size;
 * - whether it carries a model SDK: `@anthropic-ai/sdk` in the bundle text, or among its source map's sources;
 * - the CPU time (`process.cpuUsage()`, user + system) of `await import(bundle)` in a fresh `node`,
 *   the median of `--runs` processes (5 by default), with the function's own environment from the
 *   template (references replaced by placeholders) and again without `NODE_OPTIONS=--enable-source-maps`.
 *
 * The synth output goes under `.cache/` inside the repository, so the bundles' external `@aws-sdk/*`
 * imports resolve from `node_modules` as the Lambda runtime's own copy would.
 *
 * `--smoke`: no synth (too slow for a smoke run): the validate step is bundled directly with esbuild and
 * imported once, which proves the measuring path works.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { machine, median, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const runsAt = process.argv.indexOf("--runs");
const RUNS = runsAt >= 0 ? Number(process.argv[runsAt + 1]) : SMOKE ? 1 : 5;
const STEPS = ["validate", "correct", "revalidate", "judge"] as const;
type Step = (typeof STEPS)[number];
/** Steps that never call a model: their bundles should not carry a model SDK. */
const NO_MODEL_SDK: ReadonlySet<Step> = new Set(["validate", "revalidate"]);
const GOAL_BYTES = 1024 * 1024;
const GOAL_IMPORT_MS = 150;
const OUT = resolve(".cache/bench-coldstart");

interface Bundle {
  step: Step;
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

/** The function's environment as deployed; a CloudFormation reference becomes a placeholder string. */
function envOf(variables: Record<string, unknown> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(variables)) {
    env[k] = typeof v === "string" ? v : `arn:aws:secretsmanager:us-east-1:123456789012:secret:bench-${k}`;
  }
  return env;
}

function synthesize(): { bundles: Bundle[]; seconds: number } {
  const dir = join(OUT, "cdk.out");
  rmSync(dir, { recursive: true, force: true });
  const started = performance.now();
  execFileSync("npx", ["cdk", "synth", "-c", "env=dev", "--quiet", "-o", dir], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const seconds = (performance.now() - started) / 1000;
  const template = JSON.parse(readFileSync(join(dir, "Redraft-dev.template.json"), "utf8")) as Template;
  const bundles: Bundle[] = [];
  for (const step of STEPS) {
    const fn = Object.values(template.Resources).find(
      (r) =>
        r.Type === "AWS::Lambda::Function" &&
        r.Metadata?.["aws:cdk:path"] === `Redraft-dev/Functions/${step}/Resource`,
    );
    const asset = fn?.Metadata?.["aws:asset:path"];
    if (!fn || !asset)
      throw new Error(`no bundled asset for the ${step} function in the synthesized template`);
    bundles.push({
      step,
      file: join(dir, asset, "index.mjs"),
      env: envOf(fn.Properties?.Environment?.Variables),
    });
  }
  return { bundles, seconds };
}

/** Smoke: one step bundled by esbuild with the deploy's main settings, no synth. */
async function bundleValidateOnly(): Promise<Bundle[]> {
  const { build } = await import("esbuild");
  const file = join(OUT, "smoke", "index.mjs");
  mkdirSync(join(OUT, "smoke"), { recursive: true });
  await build({
    entryPoints: ["functions/validate.ts"],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    mainFields: ["module", "main"],
    minify: true,
    sourcemap: true,
    external: ["@aws-sdk/*"],
    banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
    outfile: file,
    logLevel: "error",
  });
  return [
    {
      step: "validate",
      file,
      env: { TABLE_NAME: "bench", BUCKET_NAME: "bench", MODEL_PROVIDER: "none" },
    },
  ];
}

const PROBE =
  "const t = process.cpuUsage(); await import(process.argv[1]); const d = process.cpuUsage(t); " +
  "process.stdout.write(String((d.user + d.system) / 1000));";

/** CPU milliseconds of one `await import(bundle)` in a fresh node. */
function importCpuMs(bundle: Bundle, sourceMaps: boolean): number {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    AWS_REGION: "us-east-1",
    AWS_LAMBDA_FUNCTION_NAME: `bench-${bundle.step}`,
    ...bundle.env,
  };
  if (sourceMaps) env.NODE_OPTIONS = "--enable-source-maps";
  else delete env.NODE_OPTIONS;
  const child = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", PROBE, pathToFileURL(bundle.file).href],
    {
      env,
      encoding: "utf8",
    },
  );
  if (child.status !== 0)
    throw new Error(`importing the ${bundle.step} bundle failed: ${child.stderr.trim()}`);
  return Number(child.stdout);
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const ms = (x: number) => `${x.toFixed(0)} ms`;

async function main(): Promise<void> {
  console.log("redraft bench:coldstart");
  console.log(machine());
  let bundles: Bundle[];
  if (SMOKE) {
    bundles = await bundleValidateOnly();
    console.log("smoke: validate bundled by esbuild alone (no synth), imported once");
  } else {
    const synth = synthesize();
    bundles = synth.bundles;
    console.log(`npx cdk synth -c env=dev --quiet (bundling included) took ${synth.seconds.toFixed(1)} s`);
  }
  console.log(
    `import CPU: user + system of \`await import(bundle)\` in a fresh node, median of ${RUNS} processes; ` +
      '"as deployed" keeps the function\'s NODE_OPTIONS (--enable-source-maps)\n',
  );
  const rows: string[][] = [];
  const misses: string[] = [];
  for (const b of bundles) {
    const size = statSync(b.file).size;
    const mapSize = statSync(`${b.file}.map`).size;
    const text = readFileSync(b.file, "utf8");
    // Minified text rarely names its packages; the source map's `sources` always do.
    const inText = text.includes("@anthropic-ai/sdk");
    const sources = (JSON.parse(readFileSync(`${b.file}.map`, "utf8")) as { sources: string[] }).sources;
    const inMap = sources.some((s) => s.includes("@anthropic-ai/sdk/"));
    const hasSdk = inText || inMap;
    const deployed = median(
      Array.from({ length: RUNS }, () => importCpuMs(b, b.env.NODE_OPTIONS !== undefined)),
    );
    const plain = median(Array.from({ length: RUNS }, () => importCpuMs(b, false)));
    const sdkOk = !(NO_MODEL_SDK.has(b.step) && hasSdk);
    if (size > GOAL_BYTES) misses.push(`${b.step}: bundle ${kb(size)} > 1 MiB`);
    if (!sdkOk) misses.push(`${b.step}: carries @anthropic-ai/sdk although it never calls a model`);
    if (deployed > GOAL_IMPORT_MS)
      misses.push(`${b.step}: import CPU ${ms(deployed)} as deployed > ${GOAL_IMPORT_MS} ms`);
    rows.push([
      b.step,
      kb(size),
      kb(mapSize),
      `${inText ? "yes" : "no"} / ${inMap ? "yes" : "no"}`,
      ms(deployed),
      ms(plain),
      size <= GOAL_BYTES && sdkOk && deployed <= GOAL_IMPORT_MS ? "met" : "NOT met",
    ]);
  }
  console.log(
    table(
      [
        "bundle",
        "size",
        "source map",
        "model SDK (text / map)",
        "import CPU as deployed",
        "without source maps",
        "goals",
      ],
      rows,
    ),
  );
  console.log(
    `\ngoals: bundle <= 1 MiB; validate and revalidate carry no model SDK; import CPU <= ${GOAL_IMPORT_MS} ms as deployed`,
  );
  console.log(misses.length === 0 ? "every goal met" : `not met:\n${misses.map((m) => `- ${m}`).join("\n")}`);
}

await main();
