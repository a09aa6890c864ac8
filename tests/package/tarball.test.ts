/**
 * The three packages as users get them (issue 36): `npm run packages` builds and packs `redraft`
 * (the core), `@redraft/cli` and `@redraft/cdk` (scripts/pack.ts); each tarball is installed into a
 * scratch project of its own with plain `npm install --prefer-offline`, then: the core's installed
 * size and what importing it loads (a module hook preloaded with --import, so it sees the sandbox's
 * thread too), a consumer type-checked with the settings `tsc --init` writes, the CLI's bin run on
 * examples/drafts with the cassette, and a scratch CDK app with its own bucket and bus synthesizing
 * the construct. Minutes, not seconds: `npm run test:package`, apart from `npm test`.
 */
import { execFile } from "node:child_process";
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
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
const run = promisify(execFile);
const big = { maxBuffer: 64 * 1024 * 1024 };
/** The bound on the core's installed size (its scratch node_modules, dependencies included). */
const CORE_MAX_BYTES = 40 * 1024 * 1024;

let scratch: string;
let tarballs: { core: string; cli: string; cdk?: string };

/** A scratch project in scratch/<name> with the given tarballs or packages installed by plain npm. */
async function project(name: string, installs: string[]): Promise<string> {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: `consumer-${name}`, private: true, type: "module" }),
  );
  await install(dir, installs);
  return dir;
}

async function install(dir: string, installs: string[]): Promise<void> {
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...installs], {
    cwd: dir,
    ...big,
  });
}

/** Tarball paths of a package, relative paths inside it. */
async function listing(tarball: string): Promise<string[]> {
  const { stdout } = await run("tar", ["-tzf", tarball], big);
  return stdout
    .split("\n")
    .filter(Boolean)
    .map((path) => path.replace(/^package\//, ""));
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "redraft-package-"));
  const { stdout } = await run(
    process.execPath,
    [TSX, join(ROOT, "scripts", "pack.ts"), "--out", join(scratch, "packs")],
    {
      cwd: ROOT,
      ...big,
    },
  );
  tarballs = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}");
  if (!tarballs.core || !tarballs.cli) throw new Error(`npm run packages printed no tarballs: ${stdout}`);
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("redraft (the core library)", () => {
  let core: string;
  let files: string[];
  beforeAll(async () => {
    files = await listing(tarballs.core);
    core = await project("core", [tarballs.core]);
  });

  it("carries the compiled library with its declarations, no command line, no tests and no sources", () => {
    for (const file of [
      "package.json",
      "README.md",
      "LICENSE",
      "dist/index.js",
      "dist/index.d.ts",
      "dist/models.js",
      "dist/models.d.ts",
      "dist/vendor/aws-local-stepfunctions.js",
      "dist/contracts/state-machine.asl.json",
      "dist/shared/packs/code/sandbox-harness.guest.js",
    ])
      expect(files).toContain(file);
    expect(files.filter((file) => file.endsWith("/state-machine.asl.json"))).toHaveLength(1);
    expect(
      files.filter((file) => /^(bin|dist\/cli|dist\/ui|dist\/app|dist\/functions\/(?!lib\/))/.test(file)),
    ).toEqual([]);
    expect(files.filter((file) => /^(tests|tests-ui|examples|scripts|bench)\//.test(file))).toEqual([]);
    expect(files.filter((file) => /(?<!\.d)\.ts$/.test(file) || file.endsWith(".map"))).toEqual([]);
  });

  it("installs in at most 40 MB, dependencies included, with no AWS SDK, model SDK or local runtime", async () => {
    const { stdout } = await run("du", ["-sb", join(core, "node_modules")]);
    const bytes = Number(stdout.split("\t")[0]);
    expect(bytes).toBeGreaterThan(1024 * 1024);
    expect(bytes).toBeLessThanOrEqual(CORE_MAX_BYTES);
    const { stdout: tree } = await run("npm", ["ls", "--all", "--parseable"], { cwd: core, ...big });
    expect(tree).not.toMatch(
      /node_modules\/(@aws-sdk|@anthropic-ai|aws-local-stepfunctions|dynalite|mermaid|tsx)\b/,
    );
  });

  it("is imported by plain node without loading an AWS SDK or QuickJS; QuickJS loads when a code draft runs", async () => {
    // With the model SDK (the models entry's optional peer) beside it, as a user of `redraft/models` has it.
    await install(core, ["@anthropic-ai/sdk@1.12.0"]);
    for (const file of ["example.cassette.json", "drafts/mcq-seed004.json", "drafts/code-add.json"])
      cpSync(join(ROOT, "examples", file), join(core, file.replace("drafts/", "")));
    // Preloaded with --import, the hook also runs in the sandbox's worker thread; lines are appended
    // synchronously to one log, so their order is the order things happened in.
    writeFileSync(
      join(core, "hook.mjs"),
      `import { registerHooks } from "node:module";
      import { appendFileSync } from "node:fs";
      registerHooks({ resolve: (specifier, context, next) => {
        const resolved = next(specifier, context); appendFileSync("loaded.log", resolved.url + "\\n"); return resolved; } });`,
    );
    writeFileSync(join(core, "probe.mjs"), PROBE);
    const { stdout } = await run(process.execPath, ["--import", "./hook.mjs", "probe.mjs"], {
      cwd: core,
      ...big,
    });
    const seen = JSON.parse(stdout) as Record<string, unknown> & { names: string[] };
    const log = readFileSync(join(core, "loaded.log"), "utf8").split("\n");
    const phase = (from: string, to: string) => log.slice(log.indexOf(from) + 1, log.indexOf(to));
    const onImport = phase("mark:start", "mark:imported");
    expect(onImport.length).toBeGreaterThan(10);
    expect(
      onImport.filter((url) =>
        /@aws-sdk\/|quickjs|@anthropic-ai\/|node_modules\/aws-local-stepfunctions\//.test(url),
      ),
    ).toEqual([]);
    // The probe sees what it looks for: the code draft loads QuickJS, the models entry Anthropic's SDK.
    expect(phase("mark:imported", "mark:code").some((url) => /quickjs-emscripten-core/.test(url))).toBe(true);
    expect(phase("mark:code", "mark:models").some((url) => /@anthropic-ai\/sdk/.test(url))).toBe(true);
    expect(log.filter((url) => /@aws-sdk\//.test(url))).toEqual([]);
    expect(seen.names).toEqual(expect.arrayContaining(["validateDraft", "correctDraft", "PackRegistry"]));
    for (const internal of ["embedJson", "buildMessageParams", "AnthropicModelClient", "validateStep"])
      expect(seen.names).not.toContain(internal);
    expect(seen).toMatchObject({
      passed: false,
      codeChecked: true,
      status: "validated",
      attempts: 2,
      internal: "ERR_PACKAGE_PATH_NOT_EXPORTED",
    });
  });

  describe("type-checks a consumer against its declarations only", () => {
    beforeAll(async () => {
      await run(process.execPath, [TSC, "--init"], { cwd: core });
      writeFileSync(join(core, "consumer.ts"), CONSUMER);
    });

    it("with the settings `tsc --init` writes", async () => {
      const { stdout } = await run(process.execPath, [TSC, "--noEmit", "--listFiles", "-p", "."], {
        cwd: core,
        ...big,
      });
      const redraftFiles = stdout.split("\n").filter((file) => file.includes("/node_modules/redraft/"));
      expect(redraftFiles).toContain(join(core, "node_modules/redraft/dist/index.d.ts"));
      expect(redraftFiles.filter((file) => !file.endsWith(".d.ts"))).toEqual([]);
    });

    it("and with its declarations checked too, under lib ES2022 + DOM and no @types/node", async () => {
      const tsconfig = readFileSync(join(core, "tsconfig.json"), "utf8");
      expect(tsconfig).toMatch(/"types": \[\]/);
      // No Node types anywhere in the scratch project; the DOM lib is there for the model SDK's
      // declarations (the optional peer of redraft/models names fetch's Headers and Response).
      expect(existsSync(join(core, "node_modules", "@types", "node"))).toBe(false);
      await run(
        process.execPath,
        [TSC, "--noEmit", "-p", ".", "--skipLibCheck", "false", "--target", "es2022", "--lib", "es2022,dom"],
        { cwd: core, ...big },
      ).catch((error: { stdout?: string }) => {
        // tsc says what is wrong on stdout.
        throw new Error(`tsc failed:\n${error.stdout ?? String(error)}`);
      });
    });
  });
});

describe("@redraft/cli (the command line)", () => {
  let cli: string;
  beforeAll(async () => {
    cli = await project("cli", [tarballs.cli]);
    cpSync(join(ROOT, "examples", "drafts"), join(cli, "drafts"), { recursive: true });
    cpSync(join(ROOT, "examples", "example.cassette.json"), join(cli, "example.cassette.json"));
  });

  it("carries its bin and the compiled command line, no sources", async () => {
    const files = await listing(tarballs.cli);
    for (const file of [
      "package.json",
      "LICENSE",
      "bin/redraft.js",
      "bin/check-node.js",
      "dist/cli/main.js",
      "dist/shared/packs/code/sandbox-harness.guest.js",
    ])
      expect(files).toContain(file);
    expect(files.filter((file) => file.endsWith(".asl.json")).length).toBeGreaterThan(0);
    expect(files.filter((file) => /(?<!\.d)\.ts$/.test(file) || file.endsWith(".map"))).toEqual([]);
  });

  it("runs the examples with the cassette from its bin, from dist/", async () => {
    const { stdout } = await run(
      join(cli, "node_modules", ".bin", "redraft"),
      ["run", "drafts/", "--llm", "replay:example.cassette.json", "--json"],
      { cwd: cli, ...big },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
    const results = stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { draftId: string; status: string; attempts: number });
    expect(results.map((result) => result.draftId).sort()).toEqual(EXAMPLE_IDS);
    expect(results.find((result) => result.draftId === "mcq-seed004")).toMatchObject({
      status: "validated",
      attempts: 2,
    });
  });
});

describe("@redraft/cdk (the construct)", () => {
  // scripts/pack.ts skips the package (and says so) until infra/redraft.ts and writeLambdaBundles exist.
  it.skipIf(!existsSync(join(ROOT, "infra", "redraft.ts")))(
    "synthesizes new Redraft in a scratch app that brings its own bucket and bus",
    async () => {
      expect(tarballs.cdk).toBeDefined();
      const files = await listing(tarballs.cdk ?? "");
      expect(files).toContain("dist/index.js");
      expect(files.filter((file) => /^lambda-bundles\/[^/]+\/index\.mjs$/.test(file)).length).toBeGreaterThan(
        0,
      );
      const app = await project("cdk", [tarballs.cdk ?? "", "aws-cdk-lib@2.276.0", "constructs@10.8.1"]);
      writeFileSync(join(app, "app.mjs"), CDK_APP);
      const { stdout } = await run(process.execPath, ["app.mjs"], { cwd: app, ...big });
      const template = JSON.parse(stdout) as { Resources: Record<string, { Type: string }> };
      const types = Object.values(template.Resources).map((resource) => resource.Type);
      // The team's own bucket and bus, one of each: the construct made none of its own.
      expect(types.filter((type) => type === "AWS::S3::Bucket")).toHaveLength(1);
      expect(types.filter((type) => type === "AWS::Events::EventBus")).toHaveLength(1);
      expect(types).toContain("AWS::StepFunctions::StateMachine");
    },
  );
});

/** A TypeScript user of the library; the @ts-expect-error fails the check if the types were `any`. */
const CONSUMER = `
import { correctDraft, type Draft, MemoryBlobStore, MemoryRunStore, type Pack, PackRegistry,
  type RunResult, UnknownKindError, type ValidationReport, validateDraft } from "redraft";
import { ReplayModelClient } from "redraft/models";
import * as z from "zod";

const haiku: Pack<{ lines: string[] }> = {
  kind: "haiku",
  description: "Three lines",
  settings: {},
  rules: [{
    id: "haiku_three_lines",
    description: "A haiku has three lines",
    severity: "error",
    check: ({ content }) => (content.lines.length === 3 ? [] : [{ message: "not three lines" }]),
  }],
};
const draft: Draft = { id: "d1", kind: "haiku", content: { lines: ["a", "b"] } };
const registry = new PackRegistry({}, [haiku]);
const report: ValidationReport = await validateDraft(draft, { registry });
// @ts-expect-error a report's score is a number
const score: string = report.score;
const result: RunResult = await correctDraft(draft, {
  registry,
  runs: new MemoryRunStore(),
  blobs: new MemoryBlobStore(),
  model: ReplayModelClient.fromFile("example.cassette.json"),
});
console.log(report.passed, score, result.status, new UnknownKindError("x", []).name);

// Results typed from a zod schema: the content is the schema's type once the run is validated.
const Point = z.object({ label: z.string(), point: z.tuple([z.number(), z.number()]) });
const typed = await correctDraft(
  { id: "p1", content: { label: "origin", point: [0, 0] } },
  { registry, runs: new MemoryRunStore(), blobs: new MemoryBlobStore(), schema: Point },
);
// @ts-expect-error the content is only typed once the status says validated
typed.finalDraft?.content.label;
if (typed.status === "validated") {
  const label: string = typed.finalDraft.content.label;
  // @ts-expect-error the point holds numbers
  const x: string = typed.finalDraft.content.point[0];
  console.log(label, x);
}
`;

/** What the core's probe does, in order, marking each phase in the hook's log. */
const PROBE = `
import { appendFileSync, readFileSync } from "node:fs";
const mark = (name) => appendFileSync("loaded.log", "mark:" + name + "\\n");
mark("start");
const lib = await import("redraft");
mark("imported");
const code = await lib.validateDraft(JSON.parse(readFileSync("code-add.json", "utf8")));
mark("code");
const { ReplayModelClient } = await import("redraft/models");
mark("models");
const draft = JSON.parse(readFileSync("mcq-seed004.json", "utf8"));
const report = await lib.validateDraft(draft);
const result = await lib.correctDraft(draft, {
  registry: new lib.PackRegistry(),
  runs: new lib.MemoryRunStore(),
  blobs: new lib.MemoryBlobStore(),
  model: ReplayModelClient.fromFile("example.cassette.json"),
});
let internal = "imported";
try { await import("redraft/dist/shared/loop/prompt.js"); } catch (error) { internal = error.code; }
process.stdout.write(JSON.stringify({
  names: Object.keys(lib), passed: report.passed, codeChecked: typeof code.passed === "boolean",
  status: result.status, attempts: result.attempts, internal,
}));
`;

/** A team's own CDK app: its bucket and bus, handed to the construct. */
const CDK_APP = `
import { App, Stack } from "aws-cdk-lib";
import { Bucket } from "aws-cdk-lib/aws-s3";
import { EventBus } from "aws-cdk-lib/aws-events";
import { Redraft } from "@redraft/cdk";
const app = new App();
const stack = new Stack(app, "TeamStack", { env: { account: "123456789012", region: "eu-west-1" } });
const bucket = new Bucket(stack, "TeamBucket");
const bus = new EventBus(stack, "TeamBus");
new Redraft(stack, "Redraft", { existingBucket: bucket, existingEventBus: bus });
process.stdout.write(JSON.stringify(app.synth().getStackByName("TeamStack").template));
`;

/** The ids of the example drafts, read from the files the CLI runs. */
const EXAMPLE_IDS = readdirSync(join(ROOT, "examples", "drafts"))
  .map(
    (file) => (JSON.parse(readFileSync(join(ROOT, "examples", "drafts", file), "utf8")) as { id: string }).id,
  )
  .sort();
