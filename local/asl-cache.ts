import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type AslDefinition, aslFromTemplate, type TemplateJson } from "../infra/asl.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Shared by every data folder: the synthesized ASL depends on the code, not on the data. */
export const DEFAULT_CACHE_DIR = join(ROOT, ".cache", "asl");
/** What the synthesized state machine depends on: the infrastructure, the handlers, and the error names. */
const SOURCES = ["infra", "functions", "shared/errors.ts", "cdk.json", "package-lock.json"];

async function filesOf(path: string): Promise<string[]> {
  const full = join(ROOT, path);
  const entries = await readdir(full, { recursive: true, withFileTypes: true }).catch(() => undefined);
  if (!entries) return [full];
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

/** A hash of every source the synthesized ASL depends on. */
export async function sourceHash(): Promise<string> {
  const hash = createHash("sha256");
  for (const path of SOURCES) {
    for (const file of await filesOf(path)) {
      hash.update(file.slice(ROOT.length));
      hash.update(await readFile(file));
    }
  }
  return hash.digest("hex").slice(0, 16);
}

/**
 * Synthesizes the CDK app in-process (bundling skipped: the local runtime calls the handlers'
 * source, not a bundle) and returns the CloudFormation template of the stack.
 */
export async function synthesizeTemplate(envName = "dev"): Promise<TemplateJson> {
  const [{ App }, { RedraftStack, stackName }, { loadConfig }] = await Promise.all([
    import("aws-cdk-lib"),
    import("../infra/stack.js"),
    import("../infra/config.js"),
  ]);
  const outdir = await mkdtemp(join(tmpdir(), "redraft-synth-"));
  try {
    // The feature flags of cdk.json, so that this synthesizes what `cdk synth` does.
    const { context } = JSON.parse(await readFile(join(ROOT, "cdk.json"), "utf8")) as {
      context: Record<string, unknown>;
    };
    const app = new App({ outdir, context: { ...context, "aws:cdk:bundling-stacks": [] } });
    const config = loadConfig(envName);
    const stack = new RedraftStack(app, stackName(config.envName), { config });
    return app.synth().getStackArtifact(stack.artifactId).template as TemplateJson;
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}

/**
 * The state machine's ASL, taken from the synthesized template. Synthesis takes seconds, so the
 * result is cached under `cacheDir` and redone only when `infra/` or `functions/` change.
 */
export async function loadAsl(options: { cacheDir?: string } = {}): Promise<AslDefinition> {
  const cacheDir = options.cacheDir ?? DEFAULT_CACHE_DIR;
  const file = join(cacheDir, `asl-${await sourceHash()}.json`);
  try {
    return JSON.parse(await readFile(file, "utf8")) as AslDefinition;
  } catch {
    // not cached yet, or unreadable: synthesize
  }
  const asl = aslFromTemplate(await synthesizeTemplate());
  await mkdir(cacheDir, { recursive: true });
  await writeFile(file, JSON.stringify(asl));
  return asl;
}
