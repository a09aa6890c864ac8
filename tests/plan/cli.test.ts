import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, redraft } from "../helpers/run-cli.js";

describe("redraft plan", () => {
  it("--json prints one JSON object with the contract's fields", async () => {
    const out = await redraft(["plan", "--drafts-per-day", "1000000", "--env", "prod", "--json"]);
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const plan = JSON.parse(lines[0] as string);
    expect(typeof plan.bottleneck).toBe("string");
    expect(plan.drainHours).toBeGreaterThan(0);
    expect(plan.costPerDraftUsd).toBeGreaterThan(0);
    expect(plan.components.length).toBeGreaterThan(8);
    for (const c of plan.components) {
      expect(Object.keys(c)).toEqual(
        expect.arrayContaining(["name", "ceilingPerSecond", "costPerDraftUsd", "source"]),
      );
      expect(c.source).not.toBe("");
    }
    for (const key of ["transitions", "invocations", "reads", "writes"])
      expect(plan.counts[key]).toBeGreaterThan(0);
    expect(plan.components.map((c: { name: string }) => c.name)).toContain(plan.bottleneck);
    // Extended, never renamed: the fields before the queue are all still there.
    for (const key of [
      "keepsUp",
      "raiseFirst",
      "bottleneckAfterConfig",
      "express",
      "numbersUsed",
      "unconfirmed",
    ])
      expect(plan).toHaveProperty(key);
    expect(plan.queue.failedByLoad).toBe(0);
    expect(plan.modelQuota.outputBurndown).toBe(5);
    for (const s of plan.settings)
      expect(Object.keys(s)).toEqual(
        expect.arrayContaining(["name", "value", "current", "where", "source", "confirmed"]),
      );
    expect(plan.withSettings.keepsUp).toBe(true);
  });

  it("--drafts-per-day prints the queue and the settings to deploy, each confirmed or not", async () => {
    const out = await redraft(["plan", "--drafts-per-day", "1000000", "--env", "prod"]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("failures from load: 0");
    expect(out.stdout).toMatch(/settings to deploy for 1,000,000 drafts a day/);
    expect(out.stdout).toMatch(
      /model slots: [\d,]+ calls at once \(now 12\); infra\/config\.ts prod\.deployment\.modelConcurrency; confirmed/,
    );
    expect(out.stdout).toMatch(/Bedrock tokens per minute \(cross-Region\): [\d,]+ .*; unconfirmed/);
    expect(out.stdout).toMatch(/with these deployed: keeps up/);
  });

  it("prints a table, the bottleneck and what to raise first for a person", async () => {
    const out = await redraft(["plan", "--backlog", "50000", "--env", "staging"]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("bottleneck:");
    expect(out.stdout).toContain("raise first:");
    expect(out.stdout).toContain("the backlog drains in");
    expect(out.stdout).toMatch(/│ component/);
  });

  it.each([
    [["plan", "--env", "qa"], /unknown environment "qa"/],
    [["plan", "--drafts-per-day", "1", "--backlog", "1"], /not both/],
    [["plan", "--drafts-per-day", "-3"], /--drafts-per-day/],
    [["plan", "--mix", "sideways=1"], /--mix knows the paths/],
    [["plan", "--mix", "rejected"], /name=weight/],
    [["plan", "--pricing", "free"], /--pricing/],
  ])("%j is a usage error (exit 2, one line)", async (args, message) => {
    const out = await redraft(args as string[]);
    expect(out.code).toBe(2);
    expect(out.stdout).toBe("");
    expect(out.stderr.trim().split("\n")).toHaveLength(1);
    expect(out.stderr).toMatch(message);
  });

  it("is what `npm run plan` runs", async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8"));
    expect(pkg.scripts.plan).toBe("node bin/redraft.js plan");
  });

  it("runs from the built bin with its data beside it (one JSON line on stdout)", () => {
    const stdout = execFileSync(process.execPath, [join(ROOT, "bin", "redraft.js"), "plan", "--json"], {
      cwd: ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    expect(stdout.trim().split("\n")).toHaveLength(1);
    expect(JSON.parse(stdout).counts.transitions).toBeGreaterThan(0);
  }, 60_000);
});
