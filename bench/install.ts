/**
 * `npm run bench:install`: what a developer pays to adopt the core library `redraft`, beside
 * instructor-js (`@instructor-ai/instructor` with its peers openai and zod) and the AI SDK (`ai` with
 * its peer zod), measured side by side in one run.
 *
 * The core is packed from this checkout (scripts/pack.ts, after `npm run build`); each of the three
 * is installed into a scratch folder of its own with plain `npm install --prefer-offline`, at the
 * versions this repository's lockfile holds (so the npm cache has them). Then:
 * - install size: `du -sb` of the scratch node_modules, and its package count;
 * - import time: `await import(<package>)` in a fresh `node` process, timed inside the process (wall
 *   time and CPU time of the import, not Node's own start), the median of `--n` processes each (9 by
 *   default), the three measured in interleaved rounds so that the machine's load weighs on all alike.
 * The goals: the core installs in ≤ 40 MB and imports in ≤ 1.5× instructor-js's time.
 *
 * `--smoke`: 1 process each, the build reused when dist/ exists. `--write-docs` rewrites this
 * bench's section of docs/BENCHMARKS.md with the output (never with `--smoke`).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { sectionRecorder, writeSections } from "./lib/docs.js";
import { median, table } from "./lib/stats.js";

const SMOKE = process.argv.includes("--smoke");
const WRITE_DOCS = process.argv.includes("--write-docs") && !SMOKE;
const nAt = process.argv.indexOf("--n");
const N = nAt >= 0 ? Number(process.argv[nAt + 1]) : SMOKE ? 1 : 9;
const { date, load, commit, output, say } = sectionRecorder();
const ROOT = resolve(import.meta.dirname, "..");
const MAX_CORE_BYTES = 40 * 1024 * 1024;
const MAX_IMPORT_RATIO = 1.5;

/** The version of a package this checkout installed (what its lockfile holds). */
const installed = (name: string): string =>
  (JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string })
    .version;

const scratch = mkdtempSync(join(tmpdir(), "redraft-bench-install-"));
try {
  const packArgs = [join(ROOT, "node_modules", "tsx", "dist", "cli.mjs"), join(ROOT, "scripts", "pack.ts")];
  packArgs.push("--only", "core", "--out", join(scratch, "packs"));
  if (SMOKE && existsSync(join(ROOT, "dist", "index.js"))) packArgs.push("--no-build");
  const packed = execFileSync(process.execPath, packArgs, { cwd: ROOT, encoding: "utf8" });
  const { core } = JSON.parse(packed.trim().split("\n").at(-1) ?? "{}") as { core: string };

  const subjects = [
    { label: "redraft (core)", module: "redraft", installs: [core] },
    {
      label: `@instructor-ai/instructor ${installed("@instructor-ai/instructor")}`,
      module: "@instructor-ai/instructor",
      installs: [
        `@instructor-ai/instructor@${installed("@instructor-ai/instructor")}`,
        `openai@${installed("openai")}`,
        `zod@${installed("zod")}`,
      ],
    },
    {
      label: `ai ${installed("ai")}`,
      module: "ai",
      installs: [`ai@${installed("ai")}`, `zod@${installed("zod")}`],
    },
  ].map((subject, index) => {
    const dir = join(scratch, String(index));
    mkdirSync(dir);
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name: `bench-${index}`, private: true, type: "module" }),
    );
    execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...subject.installs], {
      cwd: dir,
      stdio: ["ignore", "ignore", "inherit"],
    });
    const bytes = Number(
      execFileSync("du", ["-sb", join(dir, "node_modules")], { encoding: "utf8" }).split("\t")[0],
    );
    // npm ls exits 1 over a peer range it dislikes (instructor's zod-stream); the listing is still whole.
    const packages = spawnSync("npm", ["ls", "--all", "--parseable"], { cwd: dir, encoding: "utf8" })
      .stdout.split("\n")
      .filter((line) => line.includes("node_modules")).length;
    return { ...subject, dir, bytes, packages, wall: [] as number[], cpu: [] as number[] };
  });

  // Timed inside the child: from just before the import to just after it, wall and CPU (user + system).
  const probe = (module: string) => `
    const cpu = process.cpuUsage(); const start = performance.now();
    await import(${JSON.stringify(module)});
    const wall = performance.now() - start; const used = process.cpuUsage(cpu);
    process.stdout.write(JSON.stringify({ wall, cpu: (used.user + used.system) / 1000 }));`;
  for (let round = 0; round < N; round++)
    for (const subject of subjects) {
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", probe(subject.module)], {
        cwd: subject.dir,
        encoding: "utf8",
      });
      if (child.status !== 0) throw new Error(`importing ${subject.module} failed: ${child.stderr}`);
      const { wall, cpu } = JSON.parse(child.stdout) as { wall: number; cpu: number };
      subject.wall.push(wall);
      subject.cpu.push(cpu);
    }

  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  const [ours, instructor] = subjects;
  if (!ours || !instructor) throw new Error("no subjects");
  say(`Install size and import time, ${N} fresh processes each (medians), measured in one run:`);
  say("");
  say(
    table(
      ["package", "installed MB", "packages", "import wall ms", "import CPU ms", "wall / instructor's"],
      subjects.map((subject) => [
        subject.label,
        mb(subject.bytes),
        String(subject.packages),
        median(subject.wall).toFixed(0),
        median(subject.cpu).toFixed(0),
        `${(median(subject.wall) / median(instructor.wall)).toFixed(2)}×`,
      ]),
    ),
  );
  say("");
  const sizeOk = ours.bytes <= MAX_CORE_BYTES;
  const ratio = median(ours.wall) / median(instructor.wall);
  say(`goal ${sizeOk ? "met" : "MISSED"}: the core installs in ${mb(ours.bytes)} MB (≤ 40 MB)`);
  say(
    `goal ${ratio <= MAX_IMPORT_RATIO ? "met" : "MISSED"}: the core imports in ${ratio.toFixed(2)}× instructor-js's wall time (≤ ${MAX_IMPORT_RATIO}×)`,
  );
  if (WRITE_DOCS)
    writeSections([
      {
        bench: "install",
        command: "npm run bench:install -- --write-docs",
        output: output.join("\n"),
        date,
        load,
        commit,
      },
    ]);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
