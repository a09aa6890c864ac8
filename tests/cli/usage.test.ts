import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { RunStatusSchema } from "../../shared/store/types.js";
import { redraft as runCli, spawnCli } from "../helpers/run-cli.js";
import { synthesizedAsl } from "../workflow/harness.js";

const ROOT = join(import.meta.dirname, "..", "..");
const DRAFT = join(ROOT, "examples", "drafts", "mcq-clean.json");
let work: string;

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The command line in this process: main() returns the exit code, and its output is captured. */
const redraft = (...args: string[]) => runCli(args);

/** The real executable in a child process, for what only a process shows: its exit status. */
const spawned = (...args: string[]): Promise<Outcome> => spawnCli(args).done;

/**
 * The command's lines on stderr. Node's own process warnings are left out: the suite runs its files in
 * one process (isolate: false), and a warning another file caused (a deprecation it meant to trigger)
 * can land in the stderr this file captures.
 */
const stderrLines = (out: Outcome) =>
  out.stderr.split("\n").filter((line) => line !== "" && !/^\(node:\d+\) /.test(line));

/** Exit 2, one non-empty line on stderr naming the problem, no stack, nothing on stdout. */
function expectUsageError(out: Outcome, problem: RegExp): void {
  expect(out.code, out.stderr).toBe(2);
  expect(stderrLines(out)).toHaveLength(1);
  expect(`${stderrLines(out).join("\n")}\n`).toMatch(/^redraft: .+\n$/);
  expect(out.stderr).not.toMatch(/^\s+at /m);
  expect(out.stderr).toMatch(problem);
  expect(out.stdout).toBe("");
}

const file = async (name: string, text: string) => {
  const path = join(work, name);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
  return path;
};

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-usage-"));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

beforeEach(() => {
  vi.stubEnv("ANTHROPIC_API_KEY", "");
});

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("usage errors: exit 2 and one line, before anything is opened", () => {
  // Every case names a data folder that must not exist afterwards: options are checked first.
  const dataDir = () => join(work, "never-opened");
  afterEach(() => {
    expect(existsSync(dataDir()), "a usage error opened the data folder").toBe(false);
  });

  it.each([
    ["an unknown command", ["frobnicate"], /unknown command 'frobnicate'/],
    ["a misspelt command, with commander's suggestion on the same line", ["rnu", DRAFT], /'rnu'.*run/],
    [
      "no command",
      [],
      /missing command: one of run, ([a-z]+, )*runs, show, ([a-z]+, )*review, ([a-z]+, )*asl, watch(, [a-z]+)* \(redraft --help/,
    ],
    ["an unknown option", ["run", DRAFT, "--bogus"], /unknown option '--bogus'/],
    ["an unknown global option before the command", ["--bogus", "run", DRAFT], /unknown option '--bogus'/],
    ["a missing argument", ["run"], /missing required argument 'paths'/],
    ["a missing run id", ["show"], /missing required argument 'runId'/],
    ["an option without its value", ["run", DRAFT, "--config"], /option '--config <file>' argument missing/],
    ["--concurrency 0", ["run", DRAFT, "--concurrency", "0"], /--concurrency.*'0' is invalid.*whole number/],
    ["--concurrency that is not a number", ["run", DRAFT, "--concurrency", "four"], /--concurrency.*'four'/],
    ["--concurrency that is not whole", ["run", DRAFT, "--concurrency", "1.5"], /--concurrency.*'1\.5'/],
    [
      "--max-attempts that is not a number",
      ["run", DRAFT, "--max-attempts", "many"],
      /--max-attempts.*'many'/,
    ],
    ["--max-attempts above the loop's bound", ["run", DRAFT, "--max-attempts", "11"], /from 0 to 10/],
    ["--limit 0", ["runs", "--limit", "0"], /--limit.*'0' is invalid/],
    ["an unknown --llm", ["run", DRAFT, "--llm", "gpt"], /unknown --llm "gpt"/],
    ["--llm replay: without a file", ["run", DRAFT, "--llm", "replay:"], /needs a cassette file/],
    ["a review decision that is not one", ["review", "r1", "maybe"], /'maybe'.*approve, reject, edit/],
    ["review edit without a file", ["review", "r1", "edit"], /edit needs the edited draft's file/],
    ["a file given to approve", ["review", "r1", "approve", "x.json"], /approve takes no file/],
  ])("%s", async (_, args, problem) => {
    expectUsageError(await redraft("--data-dir", dataDir(), ...args), problem);
  });

  it("runs --status with an unknown status lists the valid ones", async () => {
    const out = await redraft("runs", "--status", "done", "--data-dir", dataDir());
    expectUsageError(out, /--status.*'done' is invalid/);
    for (const status of RunStatusSchema.options) expect(out.stderr).toContain(status);
  });

  describe("--config", () => {
    const run = (config: string) => redraft("run", DRAFT, "--config", config, "--data-dir", dataDir());

    it("names a missing file", async () => {
      expectUsageError(await run(join(work, "missing.json")), /--config .*missing\.json: no such file/);
    });

    it("names a file that is not JSON", async () => {
      const config = await file("broken-config.json", "{ packs:");
      expectUsageError(await run(config), /--config .*broken-config\.json: not valid JSON/);
    });

    it.each([
      [
        "an unknown setting of a pack",
        { packs: { mcq: { settings: { minRationaleWords: 12 } } } },
        /: packs\.mcq\.settings\.minRationaleWords: unknown key$/m,
      ],
      [
        "a setting of the wrong type",
        { packs: { mcq: { settings: { rationaleMinWords: "twelve" } } } },
        /: packs\.mcq\.settings\.rationaleMinWords: invalid input: expected number/,
      ],
      ["an unknown top-level key", { pack: {} }, /: pack: unknown key$/m],
      ["a loop limit out of bounds", { loop: { maxAttempts: 99 } }, /: loop\.maxAttempts: too big/],
      [
        "an unknown kind",
        { packs: { mqc: {} } },
        /: packs\.mqc: no pack of this kind \(known: code, json, mcq\)/,
      ],
      [
        "an unknown rule in disabledRules",
        { packs: { mcq: { disabledRules: ["mcq_no_such_rule"] } } },
        /: packs\.mcq\.disabledRules\[0\]: unknown rule "mcq_no_such_rule"/,
      ],
      [
        "an unknown rule in rules",
        { packs: { mcq: { rules: { mcq_no_such_rule: { severity: "warning" } } } } },
        /: packs\.mcq\.rules\.mcq_no_such_rule: unknown rule/,
      ],
      [
        "a severity that is not one",
        { packs: { mcq: { rules: { mcq_no_all_none_of_above: { severity: "fatal" } } } } },
        /: packs\.mcq\.rules\.mcq_no_all_none_of_above\.severity: invalid option/,
      ],
    ])("names the key of %s", async (_, config, problem) => {
      const path = await file("config.json", JSON.stringify(config));
      expectUsageError(await run(path), problem);
    });
  });

  describe("--llm replay:<cassette>", () => {
    const run = (cassette: string) =>
      redraft("run", DRAFT, "--llm", `replay:${cassette}`, "--data-dir", dataDir());

    it("names a missing file", async () => {
      expectUsageError(
        await run(join(work, "missing.cassette.json")),
        /replay:.*missing\.cassette\.json: no such file/,
      );
    });

    it("names a file that is not JSON", async () => {
      const cassette = await file("broken.cassette.json", "{ version: 1");
      expectUsageError(await run(cassette), /replay:.*broken\.cassette\.json: not valid JSON/);
    });

    it("names the bad entry and its field", async () => {
      const cassette = await file(
        "bad-entry.cassette.json",
        JSON.stringify({
          version: 1,
          responses: [
            { draftId: "q1", purpose: "correct", raw: "fine" },
            { draftId: "q1", purpose: "correct", raw: "fine" },
            { draftId: "q1", purpose: "correct", raw: "fine" },
            { draftId: "q1", purpose: "fix", raw: "the purpose is wrong" },
          ],
        }),
      );
      expectUsageError(await run(cassette), /: responses\[3\] \(draft "q1", fix\): purpose: invalid option/);
    });

    it("names a cassette of another version", async () => {
      const cassette = await file("v2.cassette.json", JSON.stringify({ version: 2, responses: [] }));
      expectUsageError(await run(cassette), /v2\.cassette\.json: version: invalid input: expected 1/);
    });
  });

  describe("--pack", () => {
    const run = (pack: string) => redraft("run", DRAFT, "--pack", pack, "--data-dir", dataDir());

    it("names a missing file", async () => {
      expectUsageError(await run(join(work, "missing.pack.json")), /missing\.pack\.json.*does not exist/);
    });

    it("names a file that is not JSON", async () => {
      expectUsageError(
        await run(await file("broken.pack.json", "{ kind")),
        /broken\.pack\.json is not valid JSON/,
      );
    });

    it("names the bad field of a declarative pack", async () => {
      const pack = await file(
        "bad-rule.pack.json",
        JSON.stringify({
          kind: "note",
          description: "notes",
          rules: [{ id: "r", type: "regex", path: "/text", pattern: "(" }],
        }),
      );
      expectUsageError(await run(pack), /bad-rule\.pack\.json: rules\[0\]/);
    });

    it("names a module that exports no pack", async () => {
      const pack = await file("empty-pack.mjs", "export const notAPack = { kind: 1 };\n");
      expectUsageError(await run(pack), /pack module .*empty-pack\.mjs exports no pack/);
    });

    it("names a module that cannot be loaded, on one line", async () => {
      const pack = await file("throws-pack.mjs", 'throw new Error("first line\\nsecond line");\n');
      expectUsageError(
        await run(pack),
        /pack module .*throws-pack\.mjs cannot be loaded: first line second line/,
      );
    });
  });
});

describe("--pack once per flag", () => {
  beforeAll(async () => {
    // The state machine is synthesized once and cached; the first synthesis takes a while.
    await synthesizedAsl();
  }, 180_000);

  it("takes one file per flag, repeatable, and leaves the command and its paths alone", async () => {
    const drafts = await file(
      "kinds.json",
      JSON.stringify([
        {
          id: "h1",
          kind: "haiku",
          content: { lines: ["an old silent pond", "a frog jumps into the pond", "splash silence again"] },
        },
        { id: "a1", kind: "abstract", content: { abstract: "short", studyType: "cohort" } },
      ]),
    );
    const out = await redraft(
      "--pack",
      join(ROOT, "examples", "packs", "abstract.pack.json"),
      "--pack",
      join(ROOT, "examples", "packs", "haiku.ts"),
      "run",
      drafts,
      "--json",
      "--llm",
      "none",
      "--data-dir",
      join(work, "packs-data"),
    );

    expect(out.code, out.stderr).toBe(0);
    const results = out.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { draftId: string; status: string });
    expect(results.map((r) => r.draftId).sort()).toEqual(["a1", "h1"]);
    // Both kinds were registered: neither draft is rejected as an unknown kind.
    expect(results.every((r) => r.status !== "rejected")).toBe(true);
  });
});

describe("system failures: exit 1, the error's name and message", () => {
  // dynalite's folder layout gives a fault no check foresees (`executions` a file); SQLite's file has none.
  beforeAll(() => {
    process.env.REDRAFT_LOCAL_STORE = "dynalite";
  });
  afterAll(() => {
    delete process.env.REDRAFT_LOCAL_STORE;
  });

  it("says what failed on one line, with the stack only under --debug", async () => {
    // A data folder whose `executions` is a file: a fault no check foresees.
    const broken = await file("broken-data/executions", "");
    const dataDir = join(broken, "..");

    const plain = await redraft("runs", "--data-dir", dataDir);
    const debug = await redraft("runs", "--data-dir", dataDir, "--debug");

    expect(plain.code).toBe(1);
    expect(stderrLines(plain)).toHaveLength(1);
    expect(plain.stderr).toMatch(/^redraft: system failure: Error: EEXIST: .*--debug/);
    expect(plain.stderr).not.toMatch(/^\s+at /m);
    expect(debug.code).toBe(1);
    expect(stderrLines(debug)[0]).toMatch(/^redraft: system failure: Error: EEXIST/);
    expect(debug.stderr).toMatch(/^\s+at /m);
  });
});

describe("the executable", () => {
  it("exits 2 on a usage error and 1 on a system failure, one line each", async () => {
    const usage = await spawned("run", DRAFT, "--concurrency", "0");
    const notADir = await spawned("runs", "--data-dir", await file("also-a-file", ""));
    process.env.REDRAFT_LOCAL_STORE = "dynalite";
    const failure = await spawned(
      "runs",
      "--data-dir",
      join(await file("broken-too/executions", ""), ".."),
    ).finally(() => {
      delete process.env.REDRAFT_LOCAL_STORE;
    });

    expectUsageError(usage, /--concurrency/);
    expectUsageError(notADir, /is a file, not a folder/);
    expect(failure.code).toBe(1);
    expect(stderrLines(failure)).toEqual([expect.stringMatching(/^redraft: system failure: Error: EEXIST/)]);
  });
});
