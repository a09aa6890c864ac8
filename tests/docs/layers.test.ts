import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { imports, topOf } from "../../scripts/import-graph.js";

/**
 * The import edges between top-level folders are the ones docs/DESIGN.md §3 allows, read from its
 * table ("imports" column), so the map and the code cannot drift apart: a new edge either goes in
 * the table, with its reason, or out of the code. The allowed edges themselves form no cycle.
 */
const ROOT = join(import.meta.dirname, "..", "..");
const DESIGN = readFileSync(join(ROOT, "docs/DESIGN.md"), "utf8");
/** Packages the pure core and the contracts must never import (docs/DESIGN.md §3, shared/ and contracts/ rows). */
const CLOUD_PACKAGES = /^(@aws-sdk\/|aws-cdk-lib|constructs$|@aws-lambda-powertools\/|aws-lambda$)/;

/** `folder → folders it may import`, from the §3 table: `| [name/](…) | what | \`a/\`, \`b/\` |`. */
function allowedEdges(): Map<string, Set<string>> {
  const section = DESIGN.slice(DESIGN.indexOf("## 3. Layers"), DESIGN.indexOf("## 4."));
  const allowed = new Map<string, Set<string>>();
  for (const line of section.split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    const from = /^\[`?([\w.-]+?)\/?`?\]\(/.exec(cells[1] ?? "")?.[1];
    if (from === undefined || cells.length < 5) continue;
    const imports = cells[3] ?? "";
    allowed.set(from, new Set([...imports.matchAll(/`([\w.-]+)\/?`/g)].map((m) => m[1] as string)));
  }
  return allowed;
}

interface Edge {
  from: string;
  to: string;
  file: string;
  specifier: string;
}

function edges(): Edge[] {
  const found: Edge[] = [];
  for (const { file, specifier, target } of imports(ROOT)) {
    const from = topOf(file);
    if (target === undefined) {
      found.push({ from, to: `package:${specifier}`, file, specifier });
      continue;
    }
    const to = topOf(target);
    if (to !== from) found.push({ from, to, file, specifier });
  }
  return found;
}

describe("import edges between layers (docs/DESIGN.md §3)", () => {
  const allowed = allowedEdges();
  const all = edges();

  it("reads a rule for every folder an import leaves", () => {
    const sources = new Set(all.filter((e) => !e.to.startsWith("package:")).map((e) => e.from));
    expect([...sources].filter((f) => !allowed.has(f)).sort()).toEqual([]);
  });

  it("finds only the edges the table allows", () => {
    const offences = all
      .filter((e) => !e.to.startsWith("package:"))
      .filter((e) => !allowed.get(e.from)?.has(e.to))
      .map((e) => `${e.file} imports ${e.specifier} (${e.from} → ${e.to})`);
    expect(offences).toEqual([]);
  });

  it("keeps the pure core and the contracts free of cloud packages", () => {
    const offences = all
      .filter(
        (e) =>
          (e.from === "shared" || e.from === "contracts") &&
          CLOUD_PACKAGES.test(e.to.replace(/^package:/, "")),
      )
      .map((e) => `${e.file} imports ${e.specifier}`);
    expect(offences).toEqual([]);
  });

  it("allows no cycle: the layers form a chain", () => {
    expect(DESIGN).toContain("No cycle remains: the layers form a chain.");
    const cycles: string[] = [];
    const visit = (node: string, path: string[]) => {
      for (const next of allowed.get(node) ?? []) {
        if (next === node) continue;
        if (path.includes(next)) cycles.push([...path.slice(path.indexOf(next)), next].join(" → "));
        else visit(next, [...path, next]);
      }
    };
    for (const start of allowed.keys()) visit(start, [start]);
    expect(cycles).toEqual([]);
  });

  it("forbids infra → functions, local → infra and ui → infra: the two sides meet only in contracts/", () => {
    expect(allowed.get("contracts")).toEqual(new Set(["shared"]));
    expect(allowed.get("infra")?.has("functions")).toBe(false);
    expect(allowed.get("local")?.has("infra")).toBe(false);
    expect(allowed.get("ui")?.has("infra")).toBe(false);
    // and the folders that used to need those edges now import the contracts instead
    for (const from of ["infra", "local", "ui", "functions"]) {
      expect(all.some((e) => e.from === from && e.to === "contracts")).toBe(true);
    }
  });

  it("would catch an edge the table does not allow", () => {
    // The check itself can fail: shared/ may import nothing outside itself.
    expect(allowed.get("shared")?.has("functions")).toBe(false);
    expect(all.some((e) => e.from === "tests" && e.to === "shared")).toBe(true);
  });
});
