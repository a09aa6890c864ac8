/**
 * bin/redraft.js runs the compiled modules in dist/, which read some files beside their code
 * (`new URL(…, import.meta.url)`). A file the build does not copy exists in a checkout and is
 * missing from dist/, so the command fails only after `npm run build`: this test finds every such
 * read in the compiled folders and checks that scripts/build-assets.ts names what it reads.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { BUILD_ASSETS } from "../../scripts/build-assets.js";

const ROOT = join(import.meta.dirname, "../..");
const COMPILED = ["cli", "local", "shared", "functions", "ui"];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

/** Each file a module reads through `new URL(<literal or const>, import.meta.url)`, from the root. */
function filesRead(source: string): string[] {
  const text = readFileSync(join(ROOT, source), "utf8");
  const read: string[] = [];
  for (const match of text.matchAll(/new URL\(\s*(?:"([^"]+)"|([A-Za-z_]\w*))\s*,\s*import\.meta\.url/g)) {
    const literal = match[1] ?? new RegExp(`const ${match[2]}\\s*=\\s*"([^"]+)"`).exec(text)?.[1];
    if (literal === undefined) throw new Error(`${source}: cannot tell what ${match[2]} names`);
    read.push(relative(ROOT, join(dirname(join(ROOT, source)), literal)));
  }
  return read;
}

function copied(file: string): boolean {
  return BUILD_ASSETS.some(
    (asset) => file === asset || file.startsWith(`${asset}/`) || `${file}/` === `${asset}/`,
  );
}

describe("the build's assets", () => {
  const reads = COMPILED.flatMap(sources).flatMap((source) =>
    filesRead(source).map((file) => ({ source, file })),
  );

  it("finds the files the compiled modules read beside their code", () => {
    // The state machines, the viewer's page and the sandbox's guest script at least.
    expect(reads.map((read) => read.file)).toEqual(
      expect.arrayContaining([
        "contracts/state-machine.asl.json",
        "contracts/batch-state-machine.asl.json",
        "shared/packs/code/sandbox-harness.guest.js",
      ]),
    );
  });

  it("copies every one of them into dist/", () => {
    const missing = reads.filter((read) => !copied(read.file.replace(/\/$/, "")));
    expect(missing, "add them to scripts/build-assets.ts").toEqual([]);
  });
});
