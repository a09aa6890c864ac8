import { describe, expect, it } from "vitest";
import * as z from "zod";
import { describeType, packSettings } from "../../cli/pack-catalog.js";
import { mcqPack } from "../../shared/packs/mcq/mcq.js";
import { redraft } from "../helpers/run-cli.js";

describe("redraft packs", () => {
  it("lists each built-in kind with its rules and settings, generated from the packs", async () => {
    const { code, stdout } = await redraft(["packs"]);
    expect(code).toBe(0);
    for (const kind of ["code", "json", "mcq"]) expect(stdout).toMatch(new RegExp(`^${kind} — `, "m"));
    for (const rule of mcqPack.rules) expect(stdout).toContain(rule.id);
    expect(stdout).toMatch(/│ nbme_negation_detection\s+│ error\s+│ The stem must not be negatively/);
    expect(stdout).toMatch(/│ rationaleMinWords\s+│ integer ≥ 0\s+│ \d+\s+│/);
    expect(stdout).toMatch(/│ homogeneityUnit\s+│ "words" \| "chars"\s+│/);
  });

  it("gives one kind as JSON: every rule with its default severity, every setting with type and default", async () => {
    const { code, stdout } = await redraft(["packs", "mcq", "--json"]);
    expect(code).toBe(0);
    const [mcq, ...rest] = JSON.parse(stdout) as Array<{
      kind: string;
      rules: { id: string; severity: string; description: string }[];
      settings: { key: string; type: string; default: unknown }[];
    }>;
    expect(rest).toEqual([]);
    expect(mcq?.kind).toBe("mcq");
    expect(mcq?.rules).toContainEqual({
      id: "mcq_correct_not_longest",
      severity: "warning",
      description: expect.any(String),
    });
    expect(mcq?.settings.find((s) => s.key === "rationaleMinWords")).toEqual({
      key: "rationaleMinWords",
      type: "integer ≥ 0",
      default: mcqPack.settings.rationaleMinWords,
    });
    // Every key of the settings schema is listed, none invented.
    expect(mcq?.settings.map((s) => s.key).sort()).toEqual(Object.keys(mcqPack.settings).sort());
  });

  it("includes packs loaded with --pack, a module and a declarative file", async () => {
    const { code, stdout } = await redraft([
      "--pack",
      "examples/packs/haiku.ts",
      "--pack",
      "examples/packs/abstract.pack.json",
      "packs",
      "--json",
    ]);
    expect(code).toBe(0);
    const entries = JSON.parse(stdout) as { kind: string; settings: unknown[]; rules: { id: string }[] }[];
    expect(entries.map((e) => e.kind)).toEqual(["abstract", "code", "haiku", "json", "mcq"]);
    expect(entries.find((e) => e.kind === "haiku")?.settings).toEqual([
      { key: "syllables", type: "integer[]", default: [5, 7, 5] },
    ]);
    expect(entries.find((e) => e.kind === "abstract")?.rules.map((r) => r.id)).toContain("no_hype");
  });

  it("is a usage error, in one line, for a kind no pack has", async () => {
    const { code, stdout, stderr } = await redraft(["packs", "poem"]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toBe("redraft: no pack of kind poem (known: code, json, mcq)\n");
  });

  it("reads types from zod v4 schemas", () => {
    expect(describeType(z.number().int().min(10).max(60_000))).toBe("integer 10–60000");
    expect(describeType(z.number().min(1))).toBe("number ≥ 1");
    expect(describeType(z.array(z.enum(["a", "b"])).optional())).toBe('("a" | "b")[]');
    expect(describeType(z.boolean().default(true))).toBe("boolean");
    expect(describeType(z.string().nullable())).toBe("string | null");
    expect(describeType(z.array(z.object({ keys: z.array(z.string()) })))).toBe("object[]");
    const pack = { ...mcqPack, settings: {}, settingsSchema: z.object({ n: z.number().int().default(3) }) };
    expect(packSettings(pack)).toEqual([{ key: "n", type: "integer", default: 3 }]);
  });
});
