import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parseAsl, STATE_MACHINE_FILE } from "../../local/state-machine.js";

const ROOT = new URL("../..", import.meta.url).pathname;

describe("infra/state-machine.asl.json", () => {
  it("is what the CDK app synthesizes now", async () => {
    const dir = await mkdtemp(join(tmpdir(), "redraft-asl-"));
    try {
      const fresh = join(dir, "state-machine.asl.json");
      // The script itself, so the test checks the one way the file is made.
      await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/asl.ts", "--out", fresh], {
        cwd: ROOT,
      });
      const committed = await readFile(STATE_MACHINE_FILE, "utf8");
      expect(committed, "infra/state-machine.asl.json is stale: run `npm run asl` and commit it").toBe(
        await readFile(fresh, "utf8"),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("holds no account, region or deployed name: only placeholders the runtime fills", async () => {
    const committed = await readFile(STATE_MACHINE_FILE, "utf8");
    expect(committed).not.toMatch(/\d{12}|us-east-1|redraft-(dev|staging|prod)/);
    const asl = parseAsl(committed);
    expect(JSON.stringify(asl)).not.toContain("${");
  });

  it("refuses a definition the runtime could not run, naming the problem", () => {
    const ok = { StartAt: "A", States: { A: { Type: "Succeed" } } };
    expect(parseAsl(JSON.stringify(ok)).StartAt).toBe("A");
    expect(() => parseAsl(JSON.stringify({ ...ok, StartAt: "B" }))).toThrow(/goes to "B"/);
    expect(() => parseAsl(JSON.stringify({ StartAt: "A", States: { A: { Type: "Sleep" } } }))).toThrow(
      /States\.A\.Type/,
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the artifact's placeholder syntax, not a template
    const unknownKind = "${QueueUrl:Dlq}";
    expect(() => parseAsl(JSON.stringify({ ...ok, Comment: unknownKind }))).toThrow(
      /no local value for the placeholder \$\{QueueUrl:Dlq\}/,
    );
  });
});
