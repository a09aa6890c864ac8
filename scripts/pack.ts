/**
 * `npm run packages [-- --out <dir>] [-- --only core,cli,cdk]`: builds (`npm run build`) and packs
 * the three published packages into tarballs in <dir> (default .cache/packs), printing one JSON line
 * `{ "core": "<tarball>", "cli": "<tarball>", "cdk": "<tarball>" }`. tests/package and bench:install
 * install these tarballs with plain npm.
 *
 * The workspaces in packages/ hold each package's manifest; the code stays in the root folders
 * (the layout contract), and each package is assembled in a staging folder at pack time:
 * - `redraft` (packages/core): the compiled modules that index.ts and models.ts reach (found by
 *   esbuild's import graph, so moved files need no list here), their declarations, and the files
 *   they read beside them. aws-local-stepfunctions (which runs the committed ASL) is vendored as one
 *   esbuild bundle whose AWS SDK imports (Lambda client, credential providers: the 78 MB the core
 *   must not carry or load) are replaced by a module that throws a named error, since redraft binds
 *   every Task of the machine to a local function and never invokes Lambda in-process.
 * - `@redraft/cli` (packages/cli): the bin and the whole compiled dist/, its own copy of the core's
 *   modules included (it imports internals the core does not export).
 * - `@redraft/cdk` (packages/cdk): the construct (infra/redraft.ts) bundled with its declarations,
 *   and the prebuilt Lambda bundles in lambda-bundles/<name>/index.mjs (beside dist/) from
 *   writeLambdaBundles() in infra/bundling.ts. Skipped, said so on stderr, while either is missing.
 */
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { parseArgs } from "node:util";
import { type BuildOptions, build, type Metafile } from "esbuild";
import { BUILD_ASSETS } from "./build-assets.js";

const ROOT = join(import.meta.dirname, "..");
const DIST = join(ROOT, "dist");
const { values } = parseArgs({
  options: { out: { type: "string" }, only: { type: "string" }, "no-build": { type: "boolean" } },
});
const OUT = values.out ?? join(ROOT, ".cache", "packs");
const ONLY = new Set((values.only ?? "core,cli,cdk").split(","));

/** The error the vendored state-machine runner throws if it ever tried to reach AWS Lambda. */
const LAMBDA_UNAVAILABLE = "redraft binds every Task locally; Lambda invocation is not available in the core";

const AWS_STUB = `
const message = ${JSON.stringify(LAMBDA_UNAVAILABLE)};
class LambdaInvocationUnavailableError extends Error {
  constructor() { super(message); this.name = "LambdaInvocationUnavailableError"; }
}
export class LambdaClient { constructor() { throw new LambdaInvocationUnavailableError(); } }
export class InvokeCommand { constructor() { throw new LambdaInvocationUnavailableError(); } }
export function fromCognitoIdentityPool() { throw new LambdaInvocationUnavailableError(); }
`;

function sh(command: string, args: string[], cwd = ROOT): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
}

/** Every file under `dir`, relative to it. */
function walk(dir: string, prefix = ""): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(dir, join(prefix, entry.name)) : [join(prefix, entry.name)],
  );
}

/** The source files (relative to the root) that the entries reach, and the packages they import. */
async function reached(entries: string[]): Promise<{ files: string[]; packages: Set<string> }> {
  const result = await build({
    entryPoints: entries.map((entry) => join(ROOT, entry)),
    absWorkingDir: ROOT,
    bundle: true,
    write: false,
    metafile: true,
    platform: "node",
    format: "esm",
    packages: "external",
    splitting: true,
    outdir: join(tmpdir(), "redraft-pack-graph"),
    logLevel: "error",
  });
  const inputs: Metafile["inputs"] = result.metafile.inputs;
  const packages = new Set<string>();
  for (const input of Object.values(inputs))
    for (const imported of input.imports)
      if (imported.external && !imported.path.startsWith("node:")) packages.add(imported.path);
  return { files: Object.keys(inputs), packages };
}

function stage(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `redraft-stage-${name}-`));
  const manifest = JSON.parse(readFileSync(join(ROOT, "packages", name, "package.json"), "utf8"));
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  cpSync(join(ROOT, "LICENSE"), join(dir, "LICENSE"));
  const readme = join(ROOT, "packages", name, "README.md");
  cpSync(existsSync(readme) ? readme : join(ROOT, "README.md"), join(dir, "README.md"));
  return dir;
}

function pack(dir: string): string {
  mkdirSync(OUT, { recursive: true });
  const [packed] = JSON.parse(sh("npm", ["pack", "--json", "--pack-destination", OUT], dir)) as {
    filename: string;
  }[];
  if (!packed) throw new Error(`npm pack in ${dir} printed no tarball`);
  rmSync(dir, { recursive: true, force: true });
  return join(OUT, packed.filename);
}

async function packCore(): Promise<string> {
  const dir = stage("core");
  const { files, packages } = await reached(["index.ts", "models.ts"]);
  const compiled: string[] = [];
  for (const file of files) {
    const js = file.replace(/\.ts$/, ".js");
    cpSync(join(DIST, js), join(dir, "dist", js));
    compiled.push(join(dir, "dist", js));
  }
  // The declarations tsconfig.lib.json emitted are exactly what the entries' types reach.
  for (const file of walk(DIST).filter((path) => path.endsWith(".d.ts")))
    cpSync(join(DIST, file), join(dir, "dist", file));
  // The files the reached modules read beside their code (the committed ASL, the sandbox's harness).
  const texts = compiled.map((file) => readFileSync(file, "utf8")).join("\n");
  for (const asset of BUILD_ASSETS) {
    const quoted = new RegExp(`["'\`/]${basename(asset).replace(/[.]/g, "\\.")}["'\`]`);
    if (quoted.test(texts)) cpSync(join(DIST, asset), join(dir, "dist", asset), { recursive: true });
  }
  // Every package a reached module imports must be a dependency or a peer of the core, or vendored.
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const declared = new Set([
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}),
  ]);
  const vendored = new Set(["aws-local-stepfunctions"]);
  const undeclared = [...packages]
    .map((path) => (path.startsWith("@") ? path.split("/").slice(0, 2).join("/") : path.split("/")[0]))
    .filter((pkg): pkg is string => pkg !== undefined && !declared.has(pkg) && !vendored.has(pkg));
  if (undeclared.length > 0)
    throw new Error(`packages/core/package.json does not declare ${[...new Set(undeclared)].join(", ")}`);
  await vendorStepFunctions(dir, compiled);
  return pack(dir);
}

/** aws-local-stepfunctions as one module in dist/vendor/, its AWS SDK imports replaced by AWS_STUB. */
async function vendorStepFunctions(dir: string, compiled: string[]): Promise<void> {
  const out = join(dir, "dist", "vendor", "aws-local-stepfunctions.js");
  const options: BuildOptions = {
    entryPoints: [join(ROOT, "node_modules", "aws-local-stepfunctions", "build", "main.node.esm.js")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    outfile: out,
    logLevel: "error",
    legalComments: "inline",
    // Its CommonJS dependencies call require() for Node's built-ins, which an ES module lacks.
    banner: {
      js: 'import { createRequire as __redraftRequire } from "node:module"; const require = __redraftRequire(import.meta.url);',
    },
    plugins: [
      {
        name: "no-aws-sdk",
        setup(builder) {
          builder.onResolve({ filter: /^@aws-sdk\// }, (args) => ({
            path: args.path,
            namespace: "aws-stub",
          }));
          builder.onLoad({ filter: /.*/, namespace: "aws-stub" }, () => ({
            contents: AWS_STUB,
            loader: "js",
          }));
        },
      },
    ],
  };
  await build(options);
  let rewritten = 0;
  for (const file of compiled) {
    const text = readFileSync(file, "utf8");
    if (!text.includes('"aws-local-stepfunctions"')) continue;
    let target = relative(dirname(file), out);
    if (!target.startsWith(".")) target = `./${target}`;
    writeFileSync(file, text.replaceAll('"aws-local-stepfunctions"', JSON.stringify(target)));
    rewritten += 1;
  }
  if (rewritten === 0) throw new Error("no compiled module of the core imports aws-local-stepfunctions");
}

async function packCli(): Promise<string> {
  const dir = stage("cli");
  for (const file of ["redraft.js", "check-node.js"]) cpSync(join(ROOT, "bin", file), join(dir, "bin", file));
  cpSync(DIST, join(dir, "dist"), { recursive: true, filter: (source) => !source.endsWith(".map") });
  return pack(dir);
}

async function packCdk(): Promise<string | undefined> {
  const entry = join(ROOT, "infra", "redraft.ts");
  const bundling = (await import("../infra/bundling.js")) as Record<string, unknown>;
  const writeLambdaBundles = bundling.writeLambdaBundles as
    | ((outDir: string) => Promise<void> | void)
    | undefined;
  if (!existsSync(entry) || typeof writeLambdaBundles !== "function") {
    process.stderr.write(
      "redraft pack: @redraft/cdk skipped: infra/redraft.ts (the construct) or writeLambdaBundles in infra/bundling.ts is not on this branch yet\n",
    );
    return undefined;
  }
  const dir = stage("cdk");
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    packages: "external",
    outfile: join(dir, "dist", "index.js"),
    loader: { ".json": "json" },
    logLevel: "error",
  });
  // The construct prices the alarm thresholds from the plan's data (infra/expected-cost.ts reads
  // ../shared/plan/data/ from its own URL, which in the bundle is dist/index.js's).
  cpSync(join(ROOT, "shared", "plan", "data"), join(dir, "shared", "plan", "data"), { recursive: true });
  // Beside dist/, where infra/bundling.ts looks from the bundled construct (dist/index.js): ../lambda-bundles/
  await writeLambdaBundles(join(dir, "lambda-bundles"));
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  const types = mkdtempSync(join(tmpdir(), "redraft-cdk-types-"));
  const config = join(types, "tsconfig.json");
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(ROOT, "tsconfig.json"),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        incremental: false,
        outDir: join(types, "out"),
        rootDir: ROOT,
        // The config lives in a temp folder: its `types` are looked up from the checkout, not from there.
        typeRoots: [join(ROOT, "node_modules", "@types")],
      },
      files: [entry],
      include: [],
    }),
  );
  sh(process.execPath, [tsc, "-p", config]);
  cpSync(join(types, "out"), join(dir, "dist", "types"), { recursive: true });
  writeFileSync(join(dir, "dist", "index.d.ts"), 'export * from "./types/infra/redraft.js";\n');
  rmSync(types, { recursive: true, force: true });
  return pack(dir);
}

if (!values["no-build"]) sh("npm", ["run", "-s", "build"]);
const tarballs: Record<string, string | undefined> = {};
if (ONLY.has("core")) tarballs.core = await packCore();
if (ONLY.has("cli")) tarballs.cli = await packCli();
if (ONLY.has("cdk")) tarballs.cdk = await packCdk();
process.stdout.write(`${JSON.stringify(tarballs)}\n`);
