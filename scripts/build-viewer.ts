/**
 * The viewer's page script for dist/: its TypeScript modules (ui/web/) bundled by esbuild into one
 * ES module, written beside the page (dist/ui/assets/app.js) where the compiled server reads it. The
 * installed package thus never needs esbuild; the sources (tsx, the tests) bundle in memory instead.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundleViewer } from "../ui/bundle.js";

/** Writes dist/ui/assets/app.js; returns the sources it was built from (for dist/build.json). */
export async function buildViewerBundle(root: string, dist: string): Promise<string[]> {
  const { code, inputs } = await bundleViewer(root);
  writeFileSync(join(dist, "ui", "assets", "app.js"), code);
  return inputs;
}
