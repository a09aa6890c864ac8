import { describe, expect, it } from "vitest";
import { haikuPack } from "../../examples/packs/haiku.js";
import { builtinPacks } from "../../shared/packs/index.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

describe("a kind added as a TypeScript module (docs/packs.md's worked example)", () => {
  const registry = new PackRegistry({}, [...builtinPacks, haikuPack]);

  it("validates drafts of the new kind next to the built-in ones", async () => {
    const bad = await validateDraft(
      { id: "h1", kind: "haiku", content: { lines: ["an old silent pond"] } },
      { registry },
    );
    expect(bad.passed).toBe(false);
    expect(bad.violations).toContainEqual(
      expect.objectContaining({ ruleId: "haiku_three_lines", path: "/lines" }),
    );
    const good = await validateDraft(
      {
        id: "h2",
        kind: "haiku",
        content: { lines: ["an old silent pond", "a frog jumps into the pond", "splash silence again"] },
      },
      { registry },
    );
    expect(good.passed).toBe(true);
    expect(registry.kinds()).toEqual(["code", "haiku", "json", "mcq"]);
  });

  it("takes a deployment's overrides without code changes", async () => {
    const lenient = new PackRegistry(
      { packs: { haiku: { rules: { haiku_three_lines: { severity: "warning" } } } } },
      [...builtinPacks, haikuPack],
    );
    const report = await validateDraft(
      { id: "h3", kind: "haiku", content: { lines: ["one line"] } },
      { registry: lenient },
    );
    expect(report.passed).toBe(true);
    expect(report.counts.warning).toBeGreaterThan(0);
  });
});
