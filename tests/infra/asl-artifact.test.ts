import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { BATCH_STATE_MACHINE_FILE, parseAsl, STATE_MACHINE_FILE } from "../../local/state-machine.js";

const ROOT = new URL("../..", import.meta.url).pathname;

describe("contracts/state-machine.asl.json", () => {
  it("is what the CDK app synthesizes now", async () => {
    const dir = await mkdtemp(join(tmpdir(), "redraft-asl-"));
    try {
      const fresh = join(dir, "state-machine.asl.json");
      const freshBatch = join(dir, "batch-state-machine.asl.json");
      // The script itself, so the test checks the one way the files are made.
      await promisify(execFile)(
        process.execPath,
        ["--import", "tsx", "scripts/asl.ts", "--out", fresh, "--batch-out", freshBatch],
        { cwd: ROOT },
      );
      const committed = await readFile(STATE_MACHINE_FILE, "utf8");
      expect(committed, "contracts/state-machine.asl.json is stale: run `npm run asl` and commit it").toBe(
        await readFile(fresh, "utf8"),
      );
      const committedBatch = await readFile(BATCH_STATE_MACHINE_FILE, "utf8");
      expect(
        committedBatch,
        "contracts/batch-state-machine.asl.json is stale: run `npm run asl` and commit it",
      ).toBe(await readFile(freshBatch, "utf8"));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it.each([
    ["per-draft", STATE_MACHINE_FILE],
    ["batch", BATCH_STATE_MACHINE_FILE],
  ])(
    "(%s) holds no account, region or deployed name: only placeholders the runtime fills",
    async (_name, file) => {
      const committed = await readFile(file, "utf8");
      expect(committed).not.toMatch(/\d{12}|us-east-1|redraft-(dev|staging|prod)/);
      const asl = parseAsl(committed);
      expect(JSON.stringify(asl)).not.toContain("${");
    },
  );

  it("refuses a definition the runtime could not run, naming the problem", () => {
    const ok = { StartAt: "A", States: { A: { Type: "Succeed" } } };
    expect(parseAsl(JSON.stringify(ok)).StartAt).toBe("A");
    expect(() => parseAsl(JSON.stringify({ ...ok, StartAt: "B" }))).toThrow(/goes to "B"/);
    expect(() => parseAsl(JSON.stringify({ StartAt: "A", States: { A: { Type: "Sleep" } } }))).toThrow(
      /States\.A\.Type/,
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the artifact's placeholder syntax, not a template
    const unknownKind = "${TopicArn:Alarms}";
    expect(() => parseAsl(JSON.stringify({ ...ok, Comment: unknownKind }))).toThrow(
      /no local value for the placeholder \$\{TopicArn:Alarms\}/,
    );
  });
});

/** The CommonJS files loaded once `entry` is imported (aws-cdk-lib and constructs are CommonJS). */
async function loadedBy(entry: string): Promise<string[]> {
  const probe = `
    import { createRequire } from "node:module";
    await import(${JSON.stringify(entry)});
    process.stdout.write(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", probe],
    { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as string[];
}

/**
 * The loaded files of aws-cdk-lib or constructs: devDependencies that nothing redraft needs at run
 * time depends on, so `npm ci --omit=dev` leaves them out. (Other devDependencies, such as esbuild,
 * are also installed as a runtime package's own dependency.)
 */
const cdkModules = (files: string[]) =>
  files.filter((f) => /\/node_modules\/(aws-cdk-lib|constructs)\//.test(f));

describe("running redraft needs no CDK (aws-cdk-lib and constructs are devDependencies)", () => {
  it("loads neither with the CLI's module graph, nor with the library's", async () => {
    for (const entry of ["./cli/main.ts", "./index.ts"]) {
      const files = await loadedBy(entry);
      expect(files.length, `${entry} loaded no CommonJS at all: the probe is broken`).toBeGreaterThan(0);
      expect(cdkModules(files), entry).toEqual([]);
    }
  }, 60_000);

  it("would see them if a module pulled them in", async () => {
    // infra/config.ts pulls in aws-cdk-lib/aws-logs, as any module of the CDK app would.
    const files = await loadedBy("./infra/config.ts");
    expect(cdkModules(files).some((f) => f.includes("/node_modules/aws-cdk-lib/"))).toBe(true);
  }, 60_000);
});
