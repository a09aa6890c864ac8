/**
 * `npm run bench:coldstart [-- --runs N] [-- --write-docs] [-- --smoke]`: what a Lambda cold start pays
 * for each function's bundle.
 *
 * Synthesizes the CDK app WITH bundling (`npx cdk synth -c env=<env> --quiet -o <dir>`, the same esbuild
 * settings a deploy uses), finds every redraft function's bundle (index.mjs) through the template's
 * `aws:asset:path` metadata (all of dev's, whose model is the Anthropic API; prod's functions that call
 * the model, which carry the Bedrock client instead), and for each reports:
 * - the size in bytes of the bundle (index.mjs), of its source map, and of the other files deployed
 *   beside it (the QuickJS WebAssembly module and the sandbox harness, read only by the code pack);
 * - whether it carries a model SDK (`@anthropic-ai/…`): in the bundle's text, or among its source
 *   map's `sources` (minified text rarely names its packages; the map always does);
 * - the CPU time (`process.cpuUsage()`, user + system) of `await import(bundle)` in a fresh `node`, the
 *   median of `--runs` processes (5 by default), with the function's own environment from the
 *   template (references replaced by placeholders) and `AWS_LAMBDA_FUNCTION_NAME` set, as in Lambda:
 *   once as deployed, and once with `NODE_OPTIONS=--enable-source-maps` (the `-c sourceMaps=true`
 *   setting, for reading stack traces);
 * - what its bytes are made of: each byte of index.mjs attributed, through the deployed source map, to
 *   the file it came from, summed per part (the AWS SDK, the model SDK, zod…), with why each part stays;
 *   a bundle above the goal says by how much, and what it carries that validate's bundle does not.
 *
 * The synth output goes under `.cache/` inside the repository.
 *
 * `--write-docs` rewrites this bench's section of docs/BENCHMARKS.md with the output verbatim.
 *
 * The goal is what a cold start pays for the code, its import CPU (≤ GOAL_IMPORT_MS as deployed), and
 * that no function which never calls a model carries a model SDK. The bundle's bytes are reported, with
 * what they are made of, but are no longer a goal of their own (it was 1 MiB, 1.3 MB for the model
 * steps): Lambda pays for bytes only through the import (the package is fetched once per instance and
 * the limits are 50 MB zipped, 250 MB unzipped), and the bytes that pushed validate past 1 MiB, re2js
 * (the linear-time matcher that keeps a schema's pattern from holding the process: issue 22), are
 * bytes the step needs. An import that grows is what a person waits for; it is what is held to a goal.
 *
 * `--smoke`: no synth (too slow for a smoke run): the validate step is bundled directly with esbuild,
 * with the deploy's options (STANDARD_BUNDLING, no model SDK), imported once; the run fails if that
 * bundle carries a model SDK, so CI notices the day an import brings one back.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { loadavg } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { commitId, writeSections } from "./lib/docs.js";
import { machine, median, table } from "./lib/stats.js";

/** prod refuses to synthesize without an alarm destination (infra/stack.ts): a topic no one reads here. */
const SYNTH_ALARMS = ["-c", "alarmTopicArn=arn:aws:sns:us-east-1:123456789012:redraft-synth-check"];

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const runsAt = process.argv.indexOf("--runs");
const RUNS = runsAt >= 0 ? Number(process.argv[runsAt + 1]) : SMOKE ? 1 : 5;
/**
 * The functions that call a model (built with the provider's `modelSdk` in infra/): the only ones whose
 * bundle may carry a model SDK. rounds answers the model steps of batch-priced runs.
 */
const MODEL_FUNCTIONS: ReadonlySet<string> = new Set(["correct", "judge", "rounds"]);
/** The function every other bundle is compared with: the core every step shares, and no model. */
const REFERENCE = "validate";
/** The size the bundles were once held to: reported (a size above it says what it carries), no longer a goal. */
const GOAL_BYTES = 1024 * 1024;
const GOAL_IMPORT_MS = 150;
const OUT = resolve(".cache/bench-coldstart");
const SOURCE_MAPS = "--enable-source-maps";

interface Bundle {
  /** The function's name (its construct id): validate, correct, outcome… */
  name: string;
  /** The function, the environment and its model provider, as the tables show it. */
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
 * The bundles to measure: every redraft function of dev (Anthropic), and prod's functions that call the
 * model, whose model is on Bedrock (another SDK, in those bundles only; prod's other bundles are dev's).
 */
const TARGETS: readonly { env: string; provider: string; only?: ReadonlySet<string> }[] = [
  { env: "dev", provider: "anthropic" },
  { env: "prod", provider: "bedrock", only: MODEL_FUNCTIONS },
];

function synthesize(
  env: string,
  provider: string,
  only: ReadonlySet<string> | undefined,
): { bundles: Bundle[]; seconds: number } {
  const dir = join(OUT, `cdk.out-${env}`);
  rmSync(dir, { recursive: true, force: true });
  const started = performance.now();
  try {
    execFileSync("npx", ["cdk", "synth", "-c", `env=${env}`, ...SYNTH_ALARMS, "--quiet", "-o", dir], {
      stdio: ["ignore", "ignore", "pipe"],
      encoding: "utf8",
    });
  } catch (error) {
    // The synth's own report (cdk-nag findings, a bundling error), not a buffer of bytes.
    throw new Error(`npx cdk synth -c env=${env} failed:\n${(error as { stderr?: string }).stderr ?? error}`);
  }
  const seconds = (performance.now() - started) / 1000;
  const template = JSON.parse(readFileSync(join(dir, `Redraft-${env}.template.json`), "utf8")) as Template;
  const bundles: Bundle[] = [];
  for (const fn of Object.values(template.Resources)) {
    const asset = fn.Metadata?.["aws:asset:path"];
    const path = fn.Metadata?.["aws:cdk:path"];
    // redraftFunction's bundles are ESM (index.mjs); CDK's own handlers (custom resources) are not.
    if (fn.Type !== "AWS::Lambda::Function" || !asset || !path) continue;
    if (!existsSync(join(dir, asset, "index.mjs"))) continue;
    const name = path.split("/").at(-2) ?? path;
    if (only && !only.has(name)) continue;
    bundles.push({
      name,
      label: `${name} (${env}, ${provider})`,
      file: join(dir, asset, "index.mjs"),
      env: envOf(fn.Properties?.Environment?.Variables),
    });
  }
  if (!bundles.some((b) => b.name === REFERENCE) && !only) {
    throw new Error(`no bundled ${REFERENCE} function in the ${env} template`);
  }
  bundles.sort((a, b) => order(a.name) - order(b.name) || a.name.localeCompare(b.name));
  return { bundles, seconds };
}

/** The four steps first, in the state machine's order, then the other functions by name. */
function order(name: string): number {
  const at = ["validate", "correct", "revalidate", "judge"].indexOf(name);
  return at < 0 ? 4 : at;
}

/**
 * One step bundled by esbuild alone with the deploy's options (no synth), its side files beside it.
 * `awsSdkExternal` leaves `@aws-sdk/*` out, to be loaded from node_modules as from the Lambda
 * runtime's copy: the comparison rows, which show what bundling the AWS SDK trades.
 */
async function bundleOne(
  name: string,
  label: string,
  modelSdk: "anthropic" | "none",
  awsSdkExternal: boolean,
): Promise<Bundle> {
  const [{ build }, { BUNDLE_SIDE_FILES, esbuildOptions }] = await Promise.all([
    import("esbuild"),
    import("../infra/bundling.js"),
  ]);
  const dir = join(OUT, `${name}-${awsSdkExternal ? "external" : "bundled"}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "index.mjs");
  const options = esbuildOptions(modelSdk);
  await build({
    ...options,
    ...(awsSdkExternal && { external: [...options.external, "@aws-sdk/*"] }),
    entryPoints: [`functions/${name}.ts`],
    outfile: file,
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
  return { name, label, file, env: { TABLE_NAME: "bench", BUCKET_NAME: "bench", ...model } };
}

/**
 * The parts a bundle's bytes are counted in, by the npm package (or redraft folder) they come from,
 * and why each stays in a bundle. The first part whose test matches a package takes it.
 */
const PARTS: readonly { part: string; test: RegExp; why: string }[] = [
  {
    part: "AWS SDK",
    // The clients and the packages only they import (DynamoDB's endpoint cache, the Bedrock signer's tslib).
    test: /^(@aws-sdk|@smithy|@aws-crypto)\/|^(bowser|tslib|mnemonist|obliterator)$/,
    why: "the clients the function calls (DynamoDB and S3 in the steps; Secrets Manager reads the Anthropic key; rounds on Bedrock, the control-plane client of batch inference jobs), ES modules tree-shaken to the commands sent, the runtime's copy costing import CPU (the trade table); on Bedrock also the signer's own @smithy/signature-v4 3.x and SHA-256, which the Bedrock SDK pins apart from the clients' 5.x",
  },
  {
    part: "model SDK",
    test: /^@anthropic-ai\/|^@opentelemetry\/api$/,
    why: "the model client of the functions that call a model, already the SDK's BaseAnthropic with the Messages resource only (on Bedrock, with the Bedrock SDK's SigV4 signer); the rest is code its client and methods reference (retries, errors, credential lookup, streaming, OpenTelemetry tracing), which goes only with a model client written without the SDK",
  },
  {
    part: "JSON Schema",
    test: /^(ajv|ajv-formats|fast-uri|json-schema-traverse|fast-deep-equal)$/,
    why: "the json pack's Ajv (drafts 07, 2019-09, 2020-12, formats): CommonJS, kept whole; every step builds the pack registry",
  },
  {
    part: "zod",
    test: /^zod$/,
    why: "every event, state and stored record is parsed; zod 4 classic, what the schemas use",
  },
  {
    part: "X-Ray SDK",
    test: /^(aws-xray-sdk-core|cls-hooked|emitter-listener|shimmer|atomic-batcher|async-hook-jl|stack-chain|semver)$/,
    why: "Powertools Tracer is built on it: CommonJS, kept whole (of semver, gte only)",
  },
  {
    part: "Powertools",
    test: /^@aws-lambda-powertools\/|^@aws\/lambda-invoke-store$/,
    why: "logger, metrics and tracer; parameters reads the Anthropic key",
  },
  {
    part: "QuickJS",
    test: /^(quickjs-emscripten|quickjs-emscripten-core)$|^@jitl\//,
    why: "the code pack's sandbox (its WebAssembly is a side file)",
  },
  { part: "fast-json-patch", test: /^fast-json-patch$/, why: "the draft diffs of attempts" },
  { part: "redraft", test: /^redraft$/, why: "the handler and the shared core" },
];
const OTHER = "other";

/** The part a source file of the map belongs to: by its package, or redraft's own code. */
function partOf(source: string): string {
  const packages = [...source.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)];
  // A package nested in another's node_modules is that package, not its host.
  const pkg = packages.at(-1)?.[1] ?? "redraft";
  return PARTS.find((p) => p.test.test(pkg))?.part ?? OTHER;
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * Bytes of the bundle per part: each mapped segment of the source map runs to the next segment (or
 * the end of its line), and its UTF-8 bytes count for the file the segment maps to. What no segment
 * maps (esbuild's helpers, the banner, newlines) is counted as "unmapped".
 */
function bytesPerPart(file: string): Map<string, number> {
  const code = readFileSync(file, "utf8");
  const map = JSON.parse(readFileSync(`${file}.map`, "utf8")) as { sources: string[]; mappings: string };
  const parts = map.sources.map(partOf);
  const totals = new Map<string, number>();
  const add = (part: string, text: string) =>
    totals.set(part, (totals.get(part) ?? 0) + Buffer.byteLength(text, "utf8"));
  const lines = code.split("\n");
  const mappingLines = map.mappings.split(";");
  let source = 0;
  for (const [index, line] of lines.entries()) {
    // [column, source or -1]: a segment of one field maps nothing.
    const segments: [number, number][] = [];
    let column = 0;
    for (const segment of (mappingLines[index] ?? "").split(",")) {
      if (segment === "") continue;
      const fields = decodeVlq(segment);
      column += fields[0] ?? 0;
      if (fields.length >= 4) source += fields[1] ?? 0;
      segments.push([column, fields.length >= 4 ? source : -1]);
    }
    add("unmapped", line.slice(0, segments[0]?.[0] ?? line.length));
    for (const [i, [start, src]] of segments.entries()) {
      const text = line.slice(start, segments[i + 1]?.[0] ?? line.length);
      add(src < 0 ? "unmapped" : (parts[src] ?? OTHER), text);
    }
    if (index < lines.length - 1) add("unmapped", "\n");
  }
  return totals;
}

/** One segment's fields (Base64 VLQ, as source maps encode them). */
function decodeVlq(segment: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = BASE64.indexOf(char);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    values.push(value & 1 ? -(value >>> 1) : value >>> 1);
    value = 0;
    shift = 0;
  }
  return values;
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
    AWS_LAMBDA_FUNCTION_NAME: `bench-${bundle.name}`,
    ...deployed,
    ...(options !== undefined && { NODE_OPTIONS: options }),
  };
  const child = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", PROBE, pathToFileURL(bundle.file).href],
    { env, encoding: "utf8" },
  );
  if (child.status !== 0)
    throw new Error(`importing the ${bundle.name} bundle failed: ${child.stderr.trim()}`);
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
  for (const [name, modelSdk] of [
    ["validate", "none"],
    ["correct", "anthropic"],
  ] as const) {
    const cells: string[] = [];
    for (const external of [false, true]) {
      const b = await bundleOne(name, name, modelSdk, external);
      const cpu = median(Array.from({ length: RUNS }, () => importCpuMs(b, undefined)));
      cells.push(bytes(statSync(b.file).size), ms(cpu));
    }
    rows.push([`${name} (${modelSdk === "none" ? "no model SDK" : "Anthropic SDK"})`, ...cells]);
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
}

/** What the bundles are made of, in KiB per part, and why each part stays. */
function sayParts(bundles: readonly Bundle[], parts: ReadonlyMap<Bundle, Map<string, number>>): void {
  const names = [...PARTS.map((p) => p.part), OTHER, "unmapped"];
  const why = new Map<string, string>([
    ...PARTS.map((p): [string, string] => [p.part, p.why]),
    [OTHER, "packages no part above names"],
    ["unmapped", "esbuild's module helpers, the banner, line ends"],
  ]);
  const present = names.filter((n) => bundles.some((b) => (parts.get(b)?.get(n) ?? 0) > 0));
  say(
    "\nwhat each bundle is made of (KiB of index.mjs, each byte counted for the file its source map maps it to)",
  );
  say(
    table(
      ["part", ...bundles.map((b) => shortLabel(b))],
      present.map((n) => [n, ...bundles.map((b) => ((parts.get(b)?.get(n) ?? 0) / 1024).toFixed(0))]),
    ),
  );
  say("why each part stays:");
  for (const n of present) say(`- ${n}: ${why.get(n) ?? ""}`);
}

/** `correct (prod, bedrock)` as a column header: `correct/bedrock`. */
function shortLabel(b: Bundle): string {
  const provider = /, (\w+)\)$/.exec(b.label)?.[1];
  return MODEL_FUNCTIONS.has(b.name) && provider ? `${b.name}/${provider}` : b.name;
}

/**
 * Why a bundle above the goal is there: the parts by which it exceeds the reference bundle (the core
 * every step shares, without a model), when the reference itself meets the goal, and the reason the
 * largest of them stays when it alone is more than the excess.
 */
function beyondReference(
  bundle: Bundle,
  parts: ReadonlyMap<Bundle, Map<string, number>>,
  reference: Bundle | undefined,
  explained: Set<string>,
): string {
  const own = parts.get(bundle);
  const ref = reference && parts.get(reference);
  if (!own || !ref || reference === bundle || statSync(reference.file).size > GOAL_BYTES) return "";
  const extra = [...own]
    .map(([part, n]): [string, number] => [part, n - (ref.get(part) ?? 0)])
    .filter(([, n]) => n >= 1024)
    .sort((a, b) => b[1] - a[1]);
  if (extra.length === 0) return "";
  const size = statSync(bundle.file).size;
  const total = size - statSync(reference.file).size;
  const [largest, largestBytes] = extra[0] ?? ["", 0];
  // The one part whose absence alone would meet the goal, and why it cannot go.
  let decisive = "";
  if (largestBytes >= size - GOAL_BYTES) {
    decisive = `; its ${largest} alone is more than the excess, and stays: `;
    decisive += explained.has(largest) ? "as above" : (PARTS.find((p) => p.part === largest)?.why ?? "");
    explained.add(largest);
  }
  return (
    `; it carries ${kib(total)} more than ${reference.name} (which is within 1 MiB): ` +
    extra.map(([part, n]) => `${part} +${kib(n)}`).join(", ") +
    decisive
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
    for (const { env, provider, only } of TARGETS) {
      const synth = synthesize(env, provider, only);
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
  const large: string[] = [];
  const parts = new Map(bundles.map((b) => [b, bytesPerPart(b.file)]));
  const reference = bundles.find((b) => b.name === REFERENCE);
  // Parts whose reason a "not met" line already gave: the next ones say "as above".
  const explained = new Set<string>();
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
    const sdkOk = MODEL_FUNCTIONS.has(b.name) || !hasSdk;
    if (!sdkOk) sdkRegression = true;
    if (size > GOAL_BYTES)
      large.push(
        `${b.label}: bundle ${bytes(size)} B > 1 MiB (${bytes(GOAL_BYTES)} B) by ${bytes(size - GOAL_BYTES)} B ` +
          `(${kib(size - GOAL_BYTES)}, ${(((size - GOAL_BYTES) / GOAL_BYTES) * 100).toFixed(1)} %)` +
          beyondReference(b, parts, reference, explained),
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
      sdkOk && deployed <= GOAL_IMPORT_MS ? "met" : "NOT met",
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
    `\ngoals: import CPU <= ${GOAL_IMPORT_MS} ms as deployed; only the functions that call a model (${[...MODEL_FUNCTIONS].join(", ")}) carry a model SDK` +
      "\n(the bundle's bytes are no goal of their own: Lambda pays for them through the import, which is)",
  );
  say(misses.length === 0 ? "every goal met" : `not met:\n${misses.map((m) => `- ${m}`).join("\n")}`);
  if (large.length > 0)
    say(`bundles above 1 MiB, and what they carry (no goal):\n${large.map((m) => `- ${m}`).join("\n")}`);
  sayParts(bundles, parts);
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
