import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { CloudCommands } from "../../cli/cloud/commands.js";
import { COMMANDS } from "../../cli/commands/index.js";
import { LocalCommands } from "../../cli/local-commands.js";
import { type CommandRuntime, openCommandRuntime } from "../../cli/runtime.js";
import { jsonLines, ROOT, redraft } from "../helpers/run-cli.js";

/**
 * Issue 36: one runtime interface for the command line. Each command is a module of the registry
 * (cli/commands/index.ts) and calls cli/runtime.ts's CommandRuntime only; where the runs are (a data
 * folder or a stack) is decided once, by openCommandRuntime. The cloud side of the same read is in
 * tests/cloud/command-runtime.test.ts (it needs the emulated stack).
 */

const COMMANDS_DIR = join(ROOT, "cli", "commands");

/** What a command module may not contain: each is a way of deciding, or reaching, where it runs. */
const FORKS: [RegExp, string][] = [
  [/\binCloud\b/, "the inCloud test"],
  [/\b(opts|options|globals?)\.(stack|table|bucket|bus|stateMachine)\b/, "a cloud option read"],
  [/\bif\s*\([^)]*\bstack\b/, "an if on the stack"],
  [/["']\.\.\/cloud\//, "an import of cli/cloud/"],
  [/["']\.\.\/local-commands\.js["']/, "an import of the local runtime"],
  [/["']\.\.\/\.\.\/local\/runtime\.js["']/, "an import of local/runtime.ts"],
  [/\b(withRuntime|openRuntime|openSession|LocalRuntime|CloudRuntime)\b/, "a runtime opened by hand"],
];

/** The forks found in one module's source, as "<what> (line n)". */
function forksIn(source: string): string[] {
  const found: string[] = [];
  source.split("\n").forEach((line, i) => {
    for (const [pattern, what] of FORKS) if (pattern.test(line)) found.push(`${what} (line ${i + 1})`);
  });
  return found;
}

describe("command modules do not fork on where they run", () => {
  it("finds a fork in the code a command had before (the scan can fail)", () => {
    const before = `
      const opts = globalOptions(ctx);
      if (inCloud(opts)) return (await cloud()).cloudRuns(opts, cmd);
      await withRuntime(opts, READ_ONLY, async (runtime) => {});
      if (opts.stack) say("cloud");`;
    expect(forksIn(before)).toEqual([
      "the inCloud test (line 3)",
      "a runtime opened by hand (line 4)",
      "a cloud option read (line 5)",
      "an if on the stack (line 5)",
    ]);
  });

  it("no module under cli/commands/ tests, imports or opens a runtime itself", async () => {
    const files = (await readdir(COMMANDS_DIR)).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThanOrEqual(COMMANDS.length);
    const forks: Record<string, string[]> = {};
    for (const file of files) {
      const found = forksIn(await readFile(join(COMMANDS_DIR, file), "utf8"));
      if (found.length > 0) forks[file] = found;
    }
    expect(forks).toEqual({});
  });
});

describe("the registry the program is built from", () => {
  it("each module adds the one command it names, and every command of redraft is in it", async () => {
    const names = COMMANDS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    const ctx = {
      program: new Command(),
      result: { code: 0 },
      runtime: () => Promise.reject(new Error("unused")),
    };
    for (const command of COMMANDS) {
      const cli = new Command("redraft");
      command.register(cli, ctx);
      expect(cli.commands.map((c) => c.name())).toEqual([command.name]);
    }
    // One module per file under cli/commands/ (the registry and define.ts aside).
    const modules = (await readdir(COMMANDS_DIR))
      .filter((f) => f.endsWith(".ts") && f !== "index.ts" && f !== "define.ts")
      .map((f) => f.replace(/\.ts$/, ""))
      .sort();
    expect([...names].sort()).toEqual(modules);
    // The help lists them in the registry's order.
    const help = await redraft(["--help"]);
    const listed = [...help.stdout.matchAll(/^ {2}([a-z]+)\b/gm)]
      .map((m) => m[1])
      .filter((n) => n !== "help");
    expect(listed).toEqual(names);
  });
});

describe("the local runtime", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "redraft-runtime-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("implements the interface, and is the one the options name without a cloud option", async () => {
    expectTypeOf<LocalCommands>().toMatchTypeOf<CommandRuntime>();
    expectTypeOf<CloudCommands>().toMatchTypeOf<CommandRuntime>();
    expect(await openCommandRuntime({ dataDir: dir })).toBeInstanceOf(LocalCommands);
    expect(await openCommandRuntime({ dataDir: dir, stack: "s" })).toBeInstanceOf(CloudCommands);
    expect(await openCommandRuntime({ dataDir: dir, table: "t" })).toBeInstanceOf(CloudCommands);
  });

  it("reads the runs a run wrote, through runs and the interface's batches", async () => {
    const data = join(dir, "data");
    const draft = join(ROOT, "examples", "drafts", "mcq-clean.json");
    const ran = await redraft(["run", draft, "--json", "--llm", "none", "--data-dir", data]);
    expect(ran.code, ran.stderr).toBe(0);
    const [result] = jsonLines(ran.stdout);
    const listed = await redraft(["runs", "--json", "--data-dir", data]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(jsonLines(listed.stdout).map((r) => r.runId)).toEqual([result?.runId]);
    const runtime = await openCommandRuntime({ dataDir: data });
    expect(await runtime.listBatches(10)).toEqual([]);
    const story = await runtime.readRun(String(result?.runId), { evidence: false });
    expect(story).toMatchObject({ run: { runId: result?.runId }, result: { status: result?.status } });
    expect(story.evidence).toBeUndefined();
    expect(story.consoleUrl).toBeUndefined();
    expect(await runtime.showBatch("b-none", false)).toBeUndefined();
  });
});
