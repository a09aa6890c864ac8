import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type { CfnFunction } from "aws-cdk-lib/aws-lambda";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import type { Asset } from "aws-cdk-lib/aws-s3-assets";
import { afterAll, describe, expect, it } from "vitest";
import {
  BUNDLE_SIDE_FILES,
  bundleName,
  LAMBDA_BUNDLES,
  LAMBDA_BUNDLES_CONTEXT,
  prebuiltBundleDir,
  writeLambdaBundles,
} from "../../infra/bundling.js";
import { loadConfig } from "../../infra/config.js";
import { Redraft } from "../../infra/redraft.js";
import { unbundledApp } from "./synth.js";

const TEAM_TOPIC = "arn:aws:sns:us-east-1:123456789012:team-oncall";
const tmp = mkdtempSync(join(tmpdir(), "redraft-bundles-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A folder of stand-in bundles, one per LAMBDA_BUNDLES entry, each saying which it is. */
function fakeBundles(): string {
  const root = join(tmp, "fake");
  for (const [name, sdks] of Object.entries(LAMBDA_BUNDLES)) {
    for (const sdk of sdks) {
      const dir = join(root, bundleName(name, sdk));
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, "index.mjs"),
        `export const handler = async () => ${JSON.stringify(bundleName(name, sdk))};\n`,
      );
    }
  }
  return root;
}

/** The index.mjs CDK staged for a function's code, if it staged one (bundling is skipped in tests). */
function stagedIndex(app: ReturnType<typeof unbundledApp>, fn: NodejsFunction): string | undefined {
  const asset = fn.node.findChild("Code") as Asset;
  const file = join(app.outdir, asset.assetPath, "index.mjs");
  return existsSync(file) ? readFileSync(file, "utf8") : undefined;
}

/** Redraft in a team's app whose context points at a folder of prebuilt bundles. */
function synthWithBundles(env: "dev" | "prod", root: string) {
  const app = unbundledApp();
  app.node.setContext(LAMBDA_BUNDLES_CONTEXT, root);
  const stack = new Stack(app, "TeamStack");
  const config = loadConfig(env, env === "prod" ? { alarmTopicArn: TEAM_TOPIC } : {});
  const redraft = new Redraft(stack, "Redraft", { config });
  const template = Template.fromStack(stack);
  const functions = redraft.node.findAll().filter((c): c is NodejsFunction => c instanceof NodejsFunction);
  return { app, stack, template, functions };
}

describe("prebuilt Lambda bundles (the construct outside this repository)", () => {
  it("this repository has none beside infra/, so its stacks bundle from source", () => {
    for (const [name, sdks] of Object.entries(LAMBDA_BUNDLES)) {
      for (const sdk of sdks) expect(prebuiltBundleDir(name, sdk)).toBeUndefined();
    }
  });

  it.each(["dev", "prod"] as const)(
    "%s: every function deploys its own prebuilt bundle when the folder has them",
    (env) => {
      const { app, functions } = synthWithBundles(env, fakeBundles());
      expect(functions.length).toBe(9);
      const used = new Set<string>();
      for (const fn of functions) {
        expect((fn.node.defaultChild as CfnFunction).handler).toBe("index.handler");
        const staged = stagedIndex(app, fn) ?? "";
        const which = JSON.parse(staged.slice(staged.indexOf("=>") + 2, staged.lastIndexOf(";"))) as string;
        // The bundle of this function's handler (the model SDK suffix aside).
        expect(which.split(".")[0]).toBe(fn.node.id);
        used.add(which);
      }
      // dev is anthropic, prod bedrock: each picks its provider's correct, judge and rounds.
      const provider = loadConfig(env).model.provider;
      for (const step of ["correct", "judge", "rounds"]) expect(used).toContain(`${step}.${provider}`);
    },
  );

  it("a folder missing a bundle falls back to bundling that function from source", () => {
    const root = fakeBundles();
    rmSync(join(root, "start"), { recursive: true });
    const { app, functions } = synthWithBundles("dev", root);
    for (const fn of functions) {
      // Bundling from source is skipped in unit tests, so nothing is staged for start.
      if (fn.node.id === "start") expect(stagedIndex(app, fn)).toBeUndefined();
      else expect(stagedIndex(app, fn)).toContain(`"${fn.node.id}`);
    }
  });

  it("writeLambdaBundles writes every bundle with its side files, and a stack deploys them", async () => {
    const out = join(tmp, "real");
    const dirs = await writeLambdaBundles(out);
    expect(dirs.map((d) => basename(d)).sort()).toEqual(
      Object.entries(LAMBDA_BUNDLES)
        .flatMap(([name, sdks]) => sdks.map((sdk) => bundleName(name, sdk)))
        .sort(),
    );
    for (const dir of dirs) {
      expect(readFileSync(join(dir, "index.mjs"), "utf8").length).toBeGreaterThan(10_000);
      expect(existsSync(join(dir, "index.mjs.map"))).toBe(true);
      for (const side of BUNDLE_SIDE_FILES) expect(existsSync(join(dir, basename(side)))).toBe(true);
    }
    // The model SDK's define reaches esbuild: the two providers' bundles of one handler differ.
    const bundleOf = (name: string) => readFileSync(join(out, name, "index.mjs"), "utf8");
    expect(bundleOf("correct.anthropic").length).not.toBe(bundleOf("correct.bedrock").length);
    // dev (anthropic) deploys these very files: each function's staged code is its bundle.
    const { app, functions } = synthWithBundles("dev", out);
    for (const fn of functions) {
      const sdk = LAMBDA_BUNDLES[fn.node.id]?.includes("anthropic")
        ? "anthropic"
        : LAMBDA_BUNDLES[fn.node.id]?.[0];
      expect(stagedIndex(app, fn) === bundleOf(bundleName(fn.node.id, sdk))).toBe(true);
    }
  }, 240_000);
});
