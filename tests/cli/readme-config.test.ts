import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

const MARKER = "<!-- readme-config:example -->";
let readme: string;
let work: string;

beforeAll(async () => {
  // The README's sections moved: the config example to docs/packs.md, the pack-drafts command to docs/cli.md.
  readme = (
    await Promise.all(["packs.md", "cli.md"].map((page) => readFile(join(ROOT, "docs", page), "utf8")))
  ).join("\n");
  work = await mkdtemp(join(tmpdir(), "redraft-readme-"));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The fenced block of the given language right after the marker comment. */
function blockAfter(marker: string, language: string): string {
  const at = readme.indexOf(marker);
  expect(at, `docs/packs.md and docs/cli.md have no ${marker}`).toBeGreaterThanOrEqual(0);
  const match = new RegExp(`^\\s*\`\`\`${language}\\n([\\s\\S]*?)\\n\`\`\``).exec(
    readme.slice(at + marker.length),
  );
  expect(match, `no \`\`\`${language} block right after ${marker}`).not.toBeNull();
  return match?.[1] ?? "";
}

describe("README", () => {
  it("has a config example that the command line accepts as it is", async () => {
    const config = join(work, "config.json");
    await writeFile(config, blockAfter(MARKER, "json"));
    const data = join(work, "config-data");
    const { code, stderr } = await redraft([
      "--data-dir",
      data,
      "--config",
      config,
      "--llm",
      "none",
      "run",
      "examples/drafts",
      "--json",
    ]);
    expect(stderr).not.toMatch(/^redraft: /m);
    expect(code).toBe(0);
  }, 60_000);

  it("names only settings and rules that redraft packs lists", async () => {
    const config = JSON.parse(blockAfter(MARKER, "json")) as {
      packs: Record<string, { settings?: object; disabledRules?: string[]; rules?: object }>;
    };
    const catalog = JSON.parse((await redraft(["packs", "--json"])).stdout) as {
      kind: string;
      rules: { id: string }[];
      settings: { key: string }[];
    }[];
    for (const [kind, override] of Object.entries(config.packs)) {
      const entry = catalog.find((e) => e.kind === kind);
      expect(entry, kind).toBeDefined();
      const settings = entry?.settings.map((s) => s.key) ?? [];
      const rules = entry?.rules.map((r) => r.id) ?? [];
      for (const key of Object.keys(override.settings ?? {})) expect(settings).toContain(key);
      for (const id of [...(override.disabledRules ?? []), ...Object.keys(override.rules ?? {})])
        expect(rules).toContain(id);
    }
  });

  it("tries the example packs in the one command it gives", async () => {
    const line = readme.split("\n").find((l) => l.startsWith("npx redraft run examples/pack-drafts/"));
    expect(line).toBeDefined();
    const args = String(line).split(/\s+/).slice(2);
    const { code, stdout } = await redraft([
      "--data-dir",
      join(work, "pack-data"),
      "--llm",
      "none",
      ...args,
      "--json",
    ]);
    expect(code).toBe(0);
    const byId = Object.fromEntries(jsonLines(stdout).map((r) => [r.draftId, r]));
    expect(Object.keys(byId).sort()).toEqual([
      "abstract-hype",
      "abstract-trial",
      "haiku-four-lines",
      "haiku-pond",
    ]);
    expect(byId["haiku-pond"]).toMatchObject({ status: "validated" });
    expect(byId["abstract-trial"]).toMatchObject({ status: "validated" });
    expect(byId["haiku-four-lines"]).toMatchObject({ status: "needs_manual_review", reason: "no_model" });
    expect(byId["abstract-hype"]).toMatchObject({ status: "needs_manual_review", reason: "no_model" });
  }, 60_000);
});
