/**
 * `npm run build` (also run by `npm ci`, through `prepare`): compiles the command line, the local
 * runtime and what they import to JavaScript in dist/, in the same folder layout, so that
 * bin/redraft.js starts without compiling TypeScript. The files they read beside their code (the
 * committed state machine, the viewer's page) are copied next to the compiled modules.
 *
 * Transpiled, not type-checked (`npm run typecheck` does that), like tsx does at run time. The
 * last file written, dist/build.json, names every source the build read and when it started:
 * bin/redraft.js uses dist/ only while none of them has changed since.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { BUILD_ASSETS as ASSETS } from "./build-assets.js";

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

const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, "tsconfig.build.json"), undefined, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
    throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
  },
});
if (!config) throw new Error("tsconfig.build.json could not be read");
// The program only finds the modules the entry points import; each is then compiled on its own,
// which isolatedModules and verbatimModuleSyntax make safe.
const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
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

writeFileSync(
  join(DIST, "build.json"),
  `${JSON.stringify({ startedAt, sources: [...sources, ...ASSETS] })}\n`,
);
