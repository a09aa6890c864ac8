/**
 * The package as a user gets it: `npm pack` (which builds dist/ through `prepare`), the tarball
 * installed into a scratch project (`npm install --prefer-offline`), imported with plain `node`,
 * its bin run, and a consumer type-checked with the settings `tsc --init` writes. Minutes, not
 * seconds: `npm run test:package`, apart from `npm test`.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const run = promisify(execFile);
const big = { maxBuffer: 64 * 1024 * 1024 };

let scratch: string;
let tarballFiles: string[];

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "redraft-package-"));
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", scratch], {
    cwd: ROOT,
    ...big,
  });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  if (!packed) throw new Error(`npm pack printed no tarball: ${stdout}`);
  tarballFiles = packed.files.map((file) => file.path);
  writeFileSync(
    join(scratch, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  await run(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", join(scratch, packed.filename)],
    { cwd: scratch, ...big },
  );
  cpSync(join(ROOT, "examples", "example.cassette.json"), join(scratch, "example.cassette.json"));
  cpSync(join(ROOT, "examples", "drafts", "mcq-seed004.json"), join(scratch, "mcq-seed004.json"));
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("the packed tarball", () => {
  it("carries the compiled library with its declarations and the command line, no tests and no sources", () => {
    for (const file of [
      "package.json",
      "README.md",
      "LICENSE",
      "bin/redraft.js",
      "bin/check-node.js",
      "dist/index.js",
      "dist/index.d.ts",
      "dist/models.js",
      "dist/models.d.ts",
      "dist/cli/main.js",
      "dist/contracts/state-machine.asl.json",
      "dist/shared/packs/code/sandbox-harness.guest.js",
    ])
      expect(tarballFiles).toContain(file);
    expect(tarballFiles.filter((file) => /^(tests|tests-ui|examples|scripts|bench)\//.test(file))).toEqual(
      [],
    );
    expect(tarballFiles.filter((file) => /(?<!\.d)\.ts$/.test(file) || file.endsWith(".map"))).toEqual([]);
  });

  it("is imported by plain node: validates and corrects a draft, loads no model SDK, keeps its internals private", async () => {
    const probe = `
      import { registerHooks } from "node:module";
      import { readFileSync } from "node:fs";
      const loaded = [];
      registerHooks({ resolve: (specifier, context, next) => { const r = next(specifier, context); loaded.push(r.url); return r; } });
      const sdk = () => loaded.filter((url) => /@anthropic-ai\\//.test(url)).length;
      const lib = await import("redraft");
      const sdkWithLibrary = sdk();
      const draft = JSON.parse(readFileSync("mcq-seed004.json", "utf8"));
      const report = await lib.validateDraft(draft);
      const { ReplayModelClient } = await import("redraft/models");
      const result = await lib.correctDraft(draft, {
        registry: new lib.PackRegistry(),
        runs: new lib.MemoryRunStore(),
        blobs: new lib.MemoryBlobStore(),
        model: ReplayModelClient.fromFile("example.cassette.json"),
      });
      let internal = "imported";
      try { await import("redraft/dist/shared/loop/prompt.js"); } catch (error) { internal = error.code; }
      process.stdout.write(JSON.stringify({
        names: Object.keys(lib), sdkWithLibrary, sdkWithModels: sdk(), passed: report.passed,
        status: result.status, attempts: result.attempts, internal,
      }));
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", probe], { cwd: scratch });
    const seen = JSON.parse(stdout) as Record<string, unknown> & { names: string[] };
    expect(seen.names).toEqual(expect.arrayContaining(["validateDraft", "correctDraft", "PackRegistry"]));
    for (const internal of ["embedJson", "buildMessageParams", "AnthropicModelClient", "validateStep"])
      expect(seen.names).not.toContain(internal);
    expect(seen).toMatchObject({
      sdkWithLibrary: 0,
      passed: false,
      status: "validated",
      attempts: 2,
      internal: "ERR_PACKAGE_PATH_NOT_EXPORTED",
    });
    // The probe sees an SDK when one is loaded: the models entry loads Anthropic's.
    expect(seen.sdkWithModels).toBeGreaterThan(0);
  });

  it("runs its bin from dist/, with no sources beside it", async () => {
    const { stdout } = await run(
      join(scratch, "node_modules", ".bin", "redraft"),
      ["run", "mcq-seed004.json", "--llm", "replay:example.cassette.json", "--json"],
      { cwd: scratch, ...big },
    );
    expect(JSON.parse(stdout)).toMatchObject({ draftId: "mcq-seed004", status: "validated", attempts: 2 });
  });

  describe("type-checks a consumer against its declarations only", () => {
    beforeAll(async () => {
      await run(process.execPath, [TSC, "--init"], { cwd: scratch });
      writeFileSync(join(scratch, "consumer.ts"), CONSUMER);
    });

    it("with the settings `tsc --init` writes", async () => {
      const { stdout } = await run(process.execPath, [TSC, "--noEmit", "--listFiles", "-p", "."], {
        cwd: scratch,
        ...big,
      });
      const redraftFiles = stdout.split("\n").filter((file) => file.includes("/node_modules/redraft/"));
      expect(redraftFiles).toContain(join(scratch, "node_modules/redraft/dist/index.d.ts"));
      expect(redraftFiles.filter((file) => !file.endsWith(".d.ts"))).toEqual([]);
    });

    it("and with its declarations checked too, under lib ES2022 and no @types/node", async () => {
      const tsconfig = readFileSync(join(scratch, "tsconfig.json"), "utf8");
      expect(tsconfig).toMatch(/"types": \[\]/);
      await run(
        process.execPath,
        [TSC, "--noEmit", "-p", ".", "--skipLibCheck", "false", "--target", "es2022", "--lib", "es2022"],
        { cwd: scratch, ...big },
      );
    });
  });
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
