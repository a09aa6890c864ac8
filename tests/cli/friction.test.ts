import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_DATA_DIR, findDataDir } from "../../cli/data-dir.js";
import { BIN, jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

const exec = promisify(execFile);
const CLEAN = join(ROOT, "examples", "drafts", "mcq-clean.json");

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-friction-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("the data folder of a project, from a subfolder", () => {
  it("is the nearest .redraft that holds a database, in the folder or above; else ./.redraft", async () => {
    const project = join(work, "project");
    const deeper = join(project, "src", "deeper");
    await mkdir(deeper, { recursive: true });
    expect(findDataDir(deeper)).toBe(DEFAULT_DATA_DIR);
    // An empty .redraft on the way up is not a data folder redraft has used.
    await mkdir(join(project, "src", ".redraft"));
    const ran = await redraft([
      "--data-dir",
      join(project, ".redraft"),
      "--llm",
      "none",
      "run",
      CLEAN,
      "--json",
    ]);
    expect(ran.code).toBe(0);
    expect(findDataDir(deeper)).toBe(join(project, ".redraft"));
    expect(findDataDir(project)).toBe(join(project, ".redraft"));

    // The command line itself, started in the subfolder with no --data-dir, lists the project's run.
    const { stdout } = await exec(process.execPath, [BIN, "runs", "--json"], { cwd: deeper });
    expect(jsonLines(stdout).map((r) => r.runId)).toEqual(jsonLines(ran.stdout).map((r) => r.runId));
    await expect(exec("ls", ["-A", deeper])).resolves.toMatchObject({ stdout: "" });
  }, 60_000);
});

describe("one line for each mistake", () => {
  it("redraft ui on a port in use says so, suggests --port, exit 2", async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const address = holder.address();
    const port = typeof address === "object" && address ? address.port : 0;
    try {
      const out = await redraft([
        "--data-dir",
        join(work, "ui"),
        "--llm",
        "none",
        "ui",
        "--port",
        String(port),
      ]);
      expect(out.code).toBe(2);
      const last = out.stderr.trim().split("\n").at(-1);
      expect(last).toBe(
        `redraft: port ${port} on 127.0.0.1 is in use: choose another with --port <n> (--port 0 picks a free one)`,
      );
    } finally {
      holder.close();
    }
  });

  it("batch with a manifest that is not there is one line, exit 2", async () => {
    const out = await redraft(["--data-dir", join(work, "b"), "batch", "nope.jsonl"]);
    expect(out).toMatchObject({ code: 2, stdout: "" });
    expect(out.stderr).toBe("redraft: cannot read the manifest nope.jsonl: no such file\n");
    const folder = await redraft(["--data-dir", join(work, "b"), "batch", work]);
    expect(folder.stderr).toMatch(/^redraft: cannot read the manifest .+: it is a folder .*\n$/);
  });

  it("a --pack that cannot be loaded names the file, never a file inside redraft's install", async () => {
    const out = await redraft(["--pack", join(work, "missing-pack.ts"), "packs"]);
    expect(out.code).toBe(2);
    expect(out.stderr.trim().split("\n")).toHaveLength(1);
    expect(out.stderr).toContain("missing-pack.ts");
    for (const own of ["cli", "dist", "shared", "node_modules"])
      expect(out.stderr).not.toContain(join(ROOT, own));
  });
});

describe("a re-run of the same drafts", () => {
  it("marks them as duplicates in the table, and says how many under it", async () => {
    const dataDir = join(work, "rerun");
    const first = await redraft(["--data-dir", dataDir, "--llm", "none", "run", CLEAN]);
    expect(first.stdout).not.toContain("duplicate");
    const again = await redraft(["--data-dir", dataDir, "--llm", "none", "run", CLEAN]);
    const head = again.stdout.split("\n").find((l) => l.includes(" draft "));
    expect(head).toContain(" duplicate ");
    expect(again.stdout.split("\n").find((l) => l.includes(" mcq-clean "))).toMatch(/ yes +│$/);
    expect(again.stderr).toContain("1 draft(s) had already run to an end in this data folder");
  });
});
