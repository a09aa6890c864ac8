/**
 * The stand-ins the Lambda bundles take instead of some packages (LAMBDA_ALIASES in
 * infra/constructs/functions.ts, functions/lib/aliases/): bundled with the deploy's esbuild options,
 * an AWS SDK client and the Bedrock model client's signer still find the credentials Lambda gives
 * them (the environment), the chain still
 * passes over the links that were replaced to the ones after them, the replaced packages are not in
 * the bundle, and the X-Ray SDK under Powertools Tracer still loads on the one `semver` function it
 * calls. Run in child processes: the chain reads the environment, which the test sets exactly.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { build, type Metafile } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { esbuildOptions } from "../../infra/bundling.js";

const ROOT = join(import.meta.dirname, "..", "..");
// Inside the repository (ignored by git), like the other bundles tests and benches build.
const DIR = join(ROOT, ".cache", "test-bundle-aliases", String(process.pid));
const BUNDLE = join(DIR, "index.mjs");

const ENTRY = `
import { getAuthHeaders } from "@anthropic-ai/bedrock-sdk/core/auth";
import { S3Client } from "@aws-sdk/client-s3";
import { Tracer } from "@aws-lambda-powertools/tracer";
new Tracer({ serviceName: "alias-test" });
const failed = (error) => ({ error: error.name, message: error.message });
let s3;
try {
  s3 = { accessKeyId: (await new S3Client({ region: "us-east-1" }).config.credentials()).accessKeyId };
} catch (error) {
  s3 = failed(error);
}
// The Bedrock model client's signer (shared/model/bedrock.ts), with its own credential chain.
let bedrock;
try {
  const url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke";
  const headers = await getAuthHeaders(
    { method: "POST", headers: { "content-type": "application/json" }, body: "{}" },
    { url, regionName: "us-east-1", awsAccessKey: null, awsSecretKey: null, awsSessionToken: null },
  );
  bedrock = { credential: headers.authorization?.split("Credential=")[1]?.split("/")[0] };
} catch (error) {
  bedrock = failed(error);
}
console.log(JSON.stringify({ s3, bedrock }));
`;

let metafile: Metafile;

beforeAll(async () => {
  mkdirSync(DIR, { recursive: true });
  ({ metafile } = await build({
    ...esbuildOptions("none"),
    stdin: { contents: ENTRY, resolveDir: ROOT, loader: "ts", sourcefile: "entry.ts" },
    sourcemap: false,
    outfile: BUNDLE,
    metafile: true,
    logLevel: "error",
  }));
});

afterAll(() => rmSync(DIR, { recursive: true, force: true }));

interface Outcome {
  error?: string;
  message?: string;
}

/** Runs the bundle with exactly this environment (and PATH); what it printed. */
function run(env: Record<string, string>): {
  s3: Outcome & { accessKeyId?: string };
  bedrock: Outcome & { credential?: string };
} {
  const child = spawnSync(process.execPath, ["--no-warnings", BUNDLE], {
    env: { PATH: process.env.PATH ?? "", ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
  expect(child.stderr).toBe("");
  return JSON.parse(child.stdout) as ReturnType<typeof run>;
}

describe("the Lambda bundles' stand-ins (esbuild alias)", () => {
  it("leave the credentials in the environment, Lambda's, to the SDK's chain", () => {
    const got = run({
      AWS_ACCESS_KEY_ID: "AKIAFROMENVIRONMENT",
      AWS_SECRET_ACCESS_KEY: "secret",
      AWS_SESSION_TOKEN: "token",
      AWS_LAMBDA_FUNCTION_NAME: "alias-test",
    });
    expect(got).toEqual({
      s3: { accessKeyId: "AKIAFROMENVIRONMENT" },
      bedrock: { credential: "AKIAFROMENVIRONMENT" },
    });
  });

  it("pass over the replaced links to the ones after them, as links that find nothing do", () => {
    // AWS_PROFILE sends the chain past fromEnv into fromIni and the other replaced links; instance
    // metadata (the last link) is off, so the chain ends with the SDK's own message, not a crash.
    const got = run({ AWS_PROFILE: "developer", AWS_EC2_METADATA_DISABLED: "true" });
    expect(got.s3).toEqual({
      error: "CredentialsProviderError",
      message: "Could not load credentials from any providers",
    });
    // The signer wraps the chain's failure in its own retryable error.
    expect(got.bedrock).toEqual({
      error: "APIConnectionError",
      message: "Failed to resolve AWS credentials from the credential provider chain.",
    });
  });

  it("keep the replaced packages, and all of semver but gte, out of the bundle", () => {
    // What the bundle holds: files esbuild read but left out (unused exports) count 0 bytes.
    const output = Object.values(metafile.outputs).find((o) => o.entryPoint !== undefined);
    const inputs = Object.entries(output?.inputs ?? {})
      .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
      .map(([path]) => path);
    expect(
      inputs.filter((p) => /credential-provider-(ini|sso|process|web-identity|login)\//.test(p)),
    ).toEqual([]);
    expect(inputs.filter((p) => /nested-clients|token-providers|cognito|bowser/.test(p))).toEqual([]);
    expect(inputs).toContain("functions/lib/aliases/credentials.ts");
    // Of @aws-sdk/credential-providers, the three modules the Bedrock signer uses, and not its index.
    const providers = inputs.filter((p) => p.includes("@aws-sdk/credential-providers/"));
    expect(providers.map((p) => p.slice(p.lastIndexOf("node_modules/"))).sort()).toEqual([
      "node_modules/@aws-sdk/credential-providers/dist-es/createCredentialChain.js",
      "node_modules/@aws-sdk/credential-providers/dist-es/fromEnv.js",
      "node_modules/@aws-sdk/credential-providers/dist-es/fromNodeProviderChain.js",
    ]);
    const semver = inputs.filter((p) => p.includes("node_modules/semver/"));
    expect(semver.filter((p) => p.endsWith("node_modules/semver/functions/gte.js"))).toHaveLength(1);
    expect(semver.filter((p) => /semver\/(index|ranges\/)/.test(p))).toEqual([]);
  });
});
