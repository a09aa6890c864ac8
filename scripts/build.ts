/**
 * `npm run build` (also run by `npm ci` and `npm pack`, through `prepare`): compiles the command
 * line, the local runtime, the library's entries (index.ts, models.ts) and what they import to
 * JavaScript in dist/, in the same folder layout, so that bin/redraft.js starts without compiling
 * TypeScript and plain `node` can import the package. The files they read beside their code (the
 * committed state machine, the viewer's page) are copied next to the compiled modules.
 *
 * Transpiled, not type-checked (`npm run typecheck` does that), like tsx does at run time. The
 * library's declaration files (tsconfig.lib.json) are the one part that needs the type checker:
 * they let a consumer's tsc read redraft's types without reading its sources. The last file
 * written, dist/build.json, names every source the build read and when it started: bin/redraft.js
 * uses dist/ only while none of them has changed since.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { BUILD_ASSETS as ASSETS } from "./build-assets.js";
import { buildViewerBundle } from "./build-viewer.js";

const ROOT = join(import.meta.dirname, "..");
const DIST = join(ROOT, "dist");

// `npm ci --omit=dev` has no TypeScript: bin/redraft.js then runs the sources through tsx.
const ts = await import("typescript").then(
  (module) => module.default,
  () => undefined,
);
if (!ts) {
  process.stderr.write(
    "redraft build: TypeScript is not installed; the command line will run through tsx.\n",
  );
  process.exit(0);
}

const startedAt = Date.now();
rmSync(DIST, { recursive: true, force: true });

function readConfig(file: string) {
  const parsed = ts?.getParsedCommandLineOfConfigFile(join(ROOT, file), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
    },
  });
  if (!parsed) throw new Error(`${file} could not be read`);
  return parsed;
}
const config = readConfig("tsconfig.build.json");
// Both programs parse each source once.
const parsedSources = new Map<string, import("typescript").SourceFile | undefined>();
const host = ts.createCompilerHost(config.options);
const getSourceFile = host.getSourceFile.bind(host);
host.getSourceFile = (fileName, ...rest) => {
  if (!parsedSources.has(fileName)) parsedSources.set(fileName, getSourceFile(fileName, ...rest));
  return parsedSources.get(fileName);
};
// The program only finds the modules the entry points import; each is then compiled on its own,
// which isolatedModules and verbatimModuleSyntax make safe.
const program = ts.createProgram({ rootNames: config.fileNames, options: config.options, host });
const sources = program
  .getSourceFiles()
  .map((file) => relative(ROOT, file.fileName))
  .filter((file) => !file.startsWith("node_modules") && !file.startsWith(".."));
const problems: import("typescript").Diagnostic[] = [];
for (const source of sources) {
  const fileName = join(ROOT, source);
  const out = join(DIST, source.replace(/\.ts$/, ".js"));
  const {
    outputText,
    sourceMapText,
    diagnostics = [],
  } = ts.transpileModule(readFileSync(fileName, "utf8"), {
    // One file on its own cannot see package.json's "type": say ES modules outright.
    compilerOptions: {
      ...config.options,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
    },
    fileName,
    reportDiagnostics: true,
  });
  problems.push(...diagnostics);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, outputText);
  if (sourceMapText) writeFileSync(`${out}.map`, sourceMapText);
}
// The library's .d.ts files, beside its .js files: the one step that type-checks (what the entries reach).
const library = readConfig("tsconfig.lib.json");
const declarations = ts
  .createProgram({ rootNames: library.fileNames, options: library.options, host })
  .emit(undefined, undefined, undefined, true);
problems.push(...declarations.diagnostics);
if (problems.length > 0) {
  process.stderr.write(
    ts.formatDiagnostics(problems, {
      getCanonicalFileName: (name) => name,
      getCurrentDirectory: () => ROOT,
      getNewLine: () => "\n",
    }),
  );
  process.exit(1);
}

for (const asset of ASSETS) cpSync(join(ROOT, asset), join(DIST, asset), { recursive: true });
// The viewer's browser modules (ui/web/), bundled into the page's one script beside the page.
const viewerSources = await buildViewerBundle(ROOT, DIST);

writeFileSync(
  join(DIST, "build.json"),
  `${JSON.stringify({ startedAt, sources: [...sources, ...ASSETS, ...viewerSources] })}\n`,
);
