import { join } from "node:path";

/** The page's entry module: every other browser module is reached from its imports. */
const ENTRY = join(import.meta.dirname, "web", "app.ts");

/**
 * The viewer's browser code (ui/web/*.ts) bundled into one ES module, the page's /app.js.
 *
 * `npm run build` calls this once (scripts/build-viewer.ts) and writes the bundle into dist/, where
 * the compiled server finds it beside the page: an installed package never runs esbuild, which is a
 * devDependency. Run from the sources (tsx, the tests), there is no built bundle beside the page,
 * and the server bundles in memory here once per process (ui/server.ts loadAssets).
 *
 * `inputs` are the files the bundle was made from, relative to `root`, for dist/build.json's
 * freshness check.
 */
export async function bundleViewer(root: string): Promise<{ code: string; inputs: string[] }> {
  // A checkout installed without devDependencies has neither a built bundle nor esbuild: say what to do.
  const esbuild = await import("esbuild").catch((error: unknown) => {
    throw new Error(
      "the viewer's page script is built by esbuild, a devDependency: run `npm install` then `npm run build`",
      { cause: error },
    );
  });
  const result = await esbuild.build({
    entryPoints: [ENTRY],
    bundle: true,
    format: "esm",
    platform: "browser",
    // The browsers the viewer's tests drive (Debian's chromium) and every current one.
    target: "es2022",
    write: false,
    metafile: true,
    charset: "utf8",
    legalComments: "none",
    logLevel: "silent",
    // The metafile's inputs are then named from the root, as dist/build.json names sources.
    absWorkingDir: root,
  });
  const code = result.outputFiles[0]?.text;
  if (code === undefined) throw new Error("esbuild wrote no bundle for the viewer");
  return { code, inputs: Object.keys(result.metafile.inputs) };
}
