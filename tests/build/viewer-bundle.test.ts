/**
 * The viewer's page script: ui/web/*.ts bundled by esbuild into one ES module (ui/bundle.ts), which
 * `npm run build` writes into dist/ beside the page (scripts/build-viewer.ts) so that the installed
 * command line never needs esbuild, and which the server bundles in memory when run from sources.
 */
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildViewerBundle } from "../../scripts/build-viewer.js";
import { bundleViewer } from "../../ui/bundle.js";

const ROOT = join(import.meta.dirname, "../..");
const made: string[] = [];
afterAll(async () => {
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

describe("the viewer's bundle", () => {
  it("is one ES module holding every browser module, JavaScript only, importing nothing", async () => {
    const { code, inputs } = await bundleViewer(ROOT);
    expect(code).not.toMatch(/^\s*import\b|^\s*export\b/m);
    // Type-only modules (view.ts) leave nothing behind; every other one is in the bundle.
    const modules = (await readdir(join(ROOT, "ui", "web"))).filter((name) => name.endsWith(".ts"));
    for (const name of modules.filter((name) => name !== "view.ts")) {
      expect(inputs, name).toContain(`ui/web/${name}`);
      expect(code, name).toContain(`// ui/web/${name}`);
    }
    // Only the page's own modules: no server module reached through a type import.
    expect(inputs.filter((input) => !input.startsWith("ui/web/"))).toEqual([]);
    // No TypeScript reaches the browser.
    expect(code).not.toMatch(/\bimport type\b|\binterface \w+ \{|\): Promise<void>/);
  });

  it("is written beside the page in dist/ by the build, with the sources it was made from", async () => {
    const dist = await mkdtemp(join(tmpdir(), "redraft-viewer-dist-"));
    made.push(dist);
    await mkdir(join(dist, "ui", "assets"), { recursive: true });
    const sources = await buildViewerBundle(ROOT, dist);
    expect(sources).toContain("ui/web/app.ts");
    const written = await readFile(join(dist, "ui", "assets", "app.js"), "utf8");
    expect(written).toBe((await bundleViewer(ROOT)).code);
  });
});
