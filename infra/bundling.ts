import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type BundlingOptions, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";

/**
 * How a redraft handler is bundled (esbuild): the options every function is built with, as CDK's
 * `NodejsFunction` takes them (`lambdaBundling`) and as esbuild's own `build()` takes them
 * (`esbuildOptions`, for bundling without CDK as a deploy would: bench:coldstart's smoke mode, the
 * bundled-sandbox and bundle-alias tests), with the files a bundle needs beside it.
 */

/** The repository root: entries, lockfile and node_modules are resolved from here. */
const PROJECT_ROOT_URL = new URL("../", import.meta.url);
export const PROJECT_ROOT = fileURLToPath(PROJECT_ROOT_URL);

/** ESM bundles have no `require`; some dependencies still call it (Powertools, the Anthropic SDK). */
const ESM_REQUIRE_BANNER =
  "import { createRequire as __redraftCreateRequire } from 'node:module'; const require = __redraftCreateRequire(import.meta.url);";

/**
 * Files a bundle reads from beside itself at run time (`new URL(file, import.meta.url)`), which
 * esbuild does not copy: the WebAssembly module of the `code` pack's QuickJS sandbox, and the
 * script that sandbox evaluates in every guest context (shared/packs/code/sandbox-harness.guest.js).
 */
export const BUNDLE_SIDE_FILES = [
  "node_modules/@jitl/quickjs-wasmfile-release-sync/dist/emscripten-module.wasm",
  "shared/packs/code/sandbox-harness.guest.js",
] as const;

/** esbuild's target: the oldest Node that runs redraft (`engines` in package.json). */
export const BUNDLE_TARGET = "node22";
/**
 * Which model SDK a bundle carries (see `REDRAFT_MODEL_SDK` in functions/lib/deps.ts): `none` for a
 * step that never calls a model, or the deployment's provider.
 */
export type BundledModelSdk = "anthropic" | "bedrock" | "none";

/**
 * Packages replaced in every Lambda bundle by a stand-in (esbuild `alias`): code a bundle carries
 * but cannot use in Lambda, which esbuild cannot drop by itself because it is imported whatever
 * runs it. Each stand-in says why it is safe there:
 * - the AWS SDK's credential providers that read a developer's machine (config files, SSO, login,
 *   `credential_process`, web identity), with the STS, SSO and sign-in clients they call (about
 *   90 KiB): a function's credentials are in its environment, the default chain's first link;
 * - the index of `@aws-sdk/credential-providers`, which the Bedrock client's signer imports whole for
 *   three of its providers (about 90 KiB of prod's correct and judge);
 * - `semver`, of which the X-Ray SDK under Powertools Tracer calls `gte` only (about 20 KiB).
 * Paths from the project root, where CDK runs esbuild ({@link esbuildOptions} makes them absolute).
 * Tests, the CLI and the local runtime use the real packages.
 */
const LAMBDA_ALIASES: Readonly<Record<string, string>> = {
  "@aws-sdk/credential-provider-ini": "./functions/lib/aliases/credentials.ts",
  "@aws-sdk/credential-provider-login": "./functions/lib/aliases/credentials.ts",
  "@aws-sdk/credential-provider-process": "./functions/lib/aliases/credentials.ts",
  "@aws-sdk/credential-provider-sso": "./functions/lib/aliases/credentials.ts",
  "@aws-sdk/credential-provider-web-identity": "./functions/lib/aliases/credentials.ts",
  "@aws-sdk/credential-providers": "./functions/lib/aliases/credential-providers.mjs",
  semver: "./functions/lib/aliases/semver.cjs",
};

/**
 * The options every redraft handler is bundled with; {@link redraftFunction} adds the per-function
 * ones (the model SDK's `define`, the side files). bench:coldstart's smoke mode bundles with them too.
 */
const STANDARD_BUNDLING = {
  format: OutputFormat.ESM,
  target: BUNDLE_TARGET,
  // ESM builds first: esbuild can drop what is unused from them, not from CommonJS.
  mainFields: ["module", "main"],
  banner: ESM_REQUIRE_BANNER,
  minify: true,
  // Non-ASCII text (zod's locales, the packs' messages) as UTF-8, not \uXXXX escapes: about 70 KiB
  // less. An esbuild argument: this aws-cdk-lib accepts a `charset` option but never passes it on.
  esbuildArgs: {
    "--charset": "utf8",
    "--alias": Object.entries(LAMBDA_ALIASES).map(([name, path]) => `${name}=${path}`),
  },
  // The map names each bundled file and line, which is all a stack trace needs; without the
  // sources' text it is a fraction of the size.
  sourceMap: true,
  sourcesContent: false,
  // The AWS SDK is bundled, not taken from the runtime: bundled as ES modules it is tree-shaken to
  // the commands the handlers send and loads in a fraction of the time the runtime's CommonJS
  // copy takes (bench:coldstart), and the version that runs is the lockfile's, the one tested.
  externalModules: [],
  forceDockerBundling: false,
} as const;

/**
 * {@link STANDARD_BUNDLING} in esbuild's own terms (its `build()` options), for bundling a handler or
 * module without CDK as a deploy would: bench:coldstart's smoke mode and the bundled-sandbox test.
 */
export function esbuildOptions(modelSdk?: BundledModelSdk): EsbuildOptions {
  return {
    bundle: true,
    platform: "node",
    format: "esm",
    target: STANDARD_BUNDLING.target,
    mainFields: [...STANDARD_BUNDLING.mainFields],
    minify: STANDARD_BUNDLING.minify,
    charset: STANDARD_BUNDLING.esbuildArgs["--charset"],
    sourcemap: STANDARD_BUNDLING.sourceMap,
    sourcesContent: STANDARD_BUNDLING.sourcesContent,
    external: [...STANDARD_BUNDLING.externalModules],
    banner: { js: STANDARD_BUNDLING.banner },
    define: modelSdk ? { REDRAFT_MODEL_SDK: JSON.stringify(modelSdk) } : {},
    alias: Object.fromEntries(
      Object.entries(LAMBDA_ALIASES).map(([name, path]) => [
        name,
        fileURLToPath(new URL(path, PROJECT_ROOT_URL)),
      ]),
    ),
  };
}

/** The subset of esbuild's build options {@link esbuildOptions} sets (esbuild is a dev dependency). */
export interface EsbuildOptions {
  bundle: true;
  platform: "node";
  format: "esm";
  target: string;
  mainFields: string[];
  minify: boolean;
  charset: "utf8";
  sourcemap: boolean;
  sourcesContent: boolean;
  external: string[];
  banner: { js: string };
  define: Record<string, string>;
  alias: Record<string, string>;
}

/**
 * The `bundling` of one redraft function: {@link STANDARD_BUNDLING}, the model SDK of `modelSdk` only
 * (esbuild `define`, see `REDRAFT_MODEL_SDK` in functions/lib/deps.ts), and its side files
 * ({@link BUNDLE_SIDE_FILES}) copied beside the bundle.
 */
export function lambdaBundling(modelSdk?: BundledModelSdk): BundlingOptions {
  return {
    ...STANDARD_BUNDLING,
    mainFields: [...STANDARD_BUNDLING.mainFields],
    externalModules: [...STANDARD_BUNDLING.externalModules],
    esbuildArgs: {
      ...STANDARD_BUNDLING.esbuildArgs,
      "--alias": [...STANDARD_BUNDLING.esbuildArgs["--alias"]],
    },
    ...(modelSdk && { define: { REDRAFT_MODEL_SDK: JSON.stringify(modelSdk) } }),
    commandHooks: {
      beforeBundling: () => [],
      beforeInstall: () => [],
      afterBundling: (inputDir: string, outputDir: string) =>
        // A missing side file fails the bundling, not the first draft of the code pack.
        BUNDLE_SIDE_FILES.map((file) => `cp "${inputDir}/${file}" "${outputDir}/"`),
    },
  };
}

/**
 * Every bundle a deployment may need, by handler (`functions/<name>.ts`) and the model SDKs it is
 * bundled with (see `modelSdk` at each `redraftFunction` call; `undefined` is "whatever its imports
 * reach"): correct, judge and rounds carry the deployment's provider, so both providers' bundles
 * are prebuilt. tests/infra/construct-bundles.test.ts checks every function of dev's and prod's stack
 * finds its bundle here.
 */
export const LAMBDA_BUNDLES: Readonly<Record<string, readonly (BundledModelSdk | undefined)[]>> = {
  validate: ["none"],
  correct: ["anthropic", "bedrock"],
  revalidate: ["none"],
  judge: ["anthropic", "bedrock"],
  outcome: ["none"],
  rounds: ["anthropic", "bedrock"],
  batch: ["none"],
  finalize: [undefined],
  start: [undefined],
};

/** A prebuilt bundle's folder name: the handler, and the model SDK it carries when one is set. */
export const bundleName = (name: string, modelSdk?: BundledModelSdk): string =>
  modelSdk ? `${name}.${modelSdk}` : name;

/**
 * The CDK context key naming a folder of prebuilt bundles (as {@link writeLambdaBundles} writes
 * them), in place of the one beside the compiled construct.
 */
export const LAMBDA_BUNDLES_CONTEXT = "redraft:lambdaBundles";

/**
 * Where prebuilt bundles are looked for by default: `lambda-bundles/` one folder up from this module:
 * `<package>/lambda-bundles/` beside the bundled construct (`dist/index.js`) in the published CDK package. In this repository (run from
 * source) there is none, and every function is bundled from source as before.
 */
const PREBUILT_BUNDLES_DIR = fileURLToPath(new URL("../lambda-bundles/", import.meta.url));

/**
 * The folder of the prebuilt bundle of one function, when `<root>/<bundleName>/index.mjs` exists:
 * a construct used outside this repository has no functions/ sources, lockfile or esbuild to bundle
 * with, so it deploys the bundles its package carries (`lambda.Code.fromAsset`).
 */
export function prebuiltBundleDir(
  name: string,
  modelSdk: BundledModelSdk | undefined,
  root: string = PREBUILT_BUNDLES_DIR,
): string | undefined {
  const dir = join(resolve(root), bundleName(name, modelSdk));
  return existsSync(join(dir, "index.mjs")) ? dir : undefined;
}

/**
 * Writes every bundle of {@link LAMBDA_BUNDLES} to `outDir/<bundleName>/` (index.mjs, its source
 * map and the side files), with the options a deploy bundles with ({@link esbuildOptions}), for a
 * package that carries them (see {@link prebuiltBundleDir}). Needs esbuild (a dev dependency) and
 * this repository's sources. Returns the folders written.
 */
export async function writeLambdaBundles(outDir: string): Promise<string[]> {
  const { build } = await import("esbuild");
  const written: string[] = [];
  for (const [name, sdks] of Object.entries(LAMBDA_BUNDLES)) {
    for (const modelSdk of sdks) {
      const dir = join(resolve(outDir), bundleName(name, modelSdk));
      mkdirSync(dir, { recursive: true });
      await build({
        ...esbuildOptions(modelSdk),
        entryPoints: [join(PROJECT_ROOT, "functions", `${name}.ts`)],
        outfile: join(dir, "index.mjs"),
        logLevel: "error",
      });
      for (const side of BUNDLE_SIDE_FILES) copyFileSync(join(PROJECT_ROOT, side), join(dir, basename(side)));
      written.push(dir);
    }
  }
  return written;
}
