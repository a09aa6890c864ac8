import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PackRegistry } from "../../shared/registry.js";
import { jsonLines, ROOT, redraft, spawnCli, stopChild } from "../helpers/run-cli.js";

/**
 * Every way a `--pack` can fail to load is one line naming the pack (exit 2, no stack): a module that
 * throws a string, `undefined` or an error whose message cannot be read, one that exports a Proxy
 * whose traps throw, a pack whose rules cannot be iterated, a rule of an unknown severity. And a
 * pack's own rule pattern is matched under a schema's guard, so it cannot hold `redraft run`.
 */

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-pack-loading-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const MODULES: [string, string, RegExp][] = [
  ["throws a string", 'throw "boom\\nat the second line";', /cannot be loaded: boom at the second line/],
  ["throws undefined", "throw undefined;", /cannot be loaded: undefined was thrown/],
  ["throws a number", "throw 42;", /cannot be loaded: the number 42 was thrown/],
  [
    "throws an error whose message cannot be read",
    'const e = new Error("x"); Object.defineProperty(e, "message", { get() { throw new Error("no"); } }); throw e;',
    /cannot be loaded: a value that is not an error was thrown/,
  ],
  [
    "throws a Proxy whose every trap throws",
    "throw new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('proto'); } });",
    // Node's loader reads the thrown value (to decorate it) and meets the trap's error first.
    /cannot be loaded: (trap|a value that is not an error was thrown)$/,
  ],
  [
    "exports a Proxy whose traps throw",
    "export const pack = new Proxy({}, { get() { throw new Error('trapped\\nagain'); }, has() { throw new Error('has'); } });",
    /export pack: its kind cannot be read: trapped again/,
  ],
  [
    "exports a revoked Proxy",
    "const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); export const pack = proxy;",
    /export pack: its kind cannot be read: .*revoked/,
  ],
  [
    "exports a pack whose rules cannot be iterated",
    "export const pack = { kind: 'iter', description: 'd', settings: {}, rules: new Proxy([], { get(t, k) { if (k === 'length') throw new Error('no length'); return Reflect.get(t, k); } }) };",
    /its rules cannot be read: no length/,
  ],
  [
    "exports a pack with a rule whose check is a getter that throws",
    "export const pack = { kind: 'getter', description: 'd', settings: {}, rules: [{ id: 'r', description: 'd', severity: 'error', get check() { throw 'no check'; } }] };",
    /its rules\[0\]\.check cannot be read: no check/,
  ],
  [
    "exports a pack with a rule of severity eror",
    "export const pack = { kind: 'typo', description: 'd', settings: {}, rules: [{ id: 'r1', description: 'd', severity: 'eror', check: () => [] }] };",
    /pack "typo": rule "r1": severity "eror" is not one of error, warning, info/,
  ],
  [
    "throws an object that is not an error",
    'throw { code: 1, reason: "no", toString() { throw new Error("no string either"); } };',
    /cannot be loaded: a value that is not an error was thrown$/,
  ],
  [
    "throws an object whose message is not a string",
    "throw { message: { text: 'nested' } };",
    /cannot be loaded: a value that is not an error was thrown$/,
  ],
  [
    "imports a module that does not exist",
    'import "./nowhere-at-all.mjs";\nexport const pack = {};',
    /cannot be loaded: Cannot find module '.*nowhere-at-all\.mjs'/,
  ],
  [
    "exports as default a Proxy whose traps throw",
    "export default new Proxy({}, { get() { throw new Error('default trap'); }, ownKeys() { throw new Error('keys'); } });",
    /export default: its kind cannot be read: default trap/,
  ],
  [
    "exports a pack whose settings spread throws",
    "export const pack = { kind: 'settings', description: 'd', settings: new Proxy({}, { ownKeys() { throw new Error('no keys'); } }), rules: [] };",
    /no keys/,
  ],
];

/**
 * The command's lines on stderr, without Node's own process warnings: the suite runs in one process
 * per worker (isolate: false), and a warning another test caused there (a module whose top-level await
 * never settles keeps its beforeExit listener for good, so after ten Node warns) lands in the stderr
 * this test captures.
 */
const commandLines = (stderr: string) =>
  stderr.split("\n").filter((line) => line.trim() !== "" && !/^\(node:\d+\) /.test(line));

describe("a --pack module that fails to load", () => {
  it.each(MODULES)("one that %s: exit 2, one line naming the pack", async (name, source, said) => {
    const file = join(work, `${name.replace(/\W+/g, "-")}.mjs`);
    await writeFile(file, `${source}\n`);
    for (const args of [
      ["packs"],
      ["run", join(ROOT, "examples", "drafts", "mcq-clean.json"), "--llm", "none"],
    ]) {
      const out = await redraft(["--data-dir", join(work, "data"), "--pack", file, ...args]);
      expect(out.code, out.stderr).toBe(2);
      const lines = commandLines(out.stderr);
      expect(lines, out.stderr).toHaveLength(1);
      expect(lines[0]).toContain(file);
      expect(lines[0]).toMatch(said);
      expect(out.stderr).not.toMatch(/system failure|^\s+at /m);
      expect(out.stdout).toBe("");
    }
  });
});

/** `redraft --pack <file> packs`: exit 2 and the one line it printed (no stack, nothing on stdout). */
async function refusedPack(file: string): Promise<string> {
  const out = await redraft(["--data-dir", join(work, "data"), "--pack", file, "packs"]);
  expect(out.code, out.stderr).toBe(2);
  const lines = commandLines(out.stderr);
  expect(lines, out.stderr).toHaveLength(1);
  expect(out.stderr).not.toMatch(/system failure|^\s+at /m);
  expect(out.stdout).toBe("");
  return lines[0] ?? "";
}

describe("a --pack module with a syntax error, or a TypeScript one that throws (Node's loader and tsx)", () => {
  it.each([
    [
      "syntax-error.mjs",
      'export const pack = { kind: "syn", description: ;',
      /cannot be loaded: Unexpected token ';'$/,
    ],
    [
      "syntax-error.ts",
      "export const pack: = { kind: 'syn' };",
      // tsx's esbuild from the sources; Node's own type stripping (amaro) when dist/ is built and fresh.
      /cannot be loaded: (Transform failed .*Unexpected "="|Unexpected token `=`)/,
    ],
    [
      "throws-a-symbol.ts",
      "export const n: number = 1;\nthrow Symbol('s');",
      /cannot be loaded: the symbol Symbol\(s\) was thrown$/,
    ],
  ])(
    "%s: exit 2, one line naming the module",
    async (name, source, said) => {
      const file = join(work, name);
      await writeFile(file, `${source}\n`);
      // Spawned: in this process the test runner's own loader would read the module, not Node's or tsx's.
      const finished = await spawnCli(["--data-dir", join(work, "data"), "--pack", file, "packs"]).done;
      expect(finished.code, finished.stderr).toBe(2);
      const lines = finished.stderr
        .split("\n")
        .filter((line) => line.trim() !== "" && !line.startsWith("redraft needs Node 22"));
      expect(lines, finished.stderr).toHaveLength(1);
      expect(lines[0]).toContain(`pack module ${file}`);
      expect(lines[0]).toMatch(said);
      expect(lines[0]).not.toContain("\u001b[");
      expect(finished.stdout).toBe("");
    },
    60_000,
  );
});

describe("a --pack file (JSON) that fails to load", () => {
  it.each([
    ["is not JSON", Buffer.from('{"kind": "x",'), /pack file .* is not valid JSON: /],
    [
      "is Latin-1",
      Buffer.from('{"kind":"x","description":"café","rules":[]}', "latin1"),
      /is not UTF-8 text \(byte 0xE9/,
    ],
    [
      "is UTF-16 without a mark",
      Buffer.from('{"kind":"x","rules":[]}', "utf16le"),
      /is not UTF-8 text \(a NUL byte at offset 1/,
    ],
    ["is not an object", Buffer.from("[1, 2]"), /pack file .*/],
  ])("one that %s: exit 2, one line naming the file", async (name, bytes, said) => {
    const file = join(work, `${name.replace(/\W+/g, "-")}.pack.json`);
    await writeFile(file, bytes);
    const line = await refusedPack(file);
    expect(line).toContain(file);
    expect(line).toMatch(said);
  });

  it.each(["fifo.pack.json", "fifo.mjs"])(
    "%s, a FIFO (or a folder): exit 2, one line naming it, never opened (it would hold the command)",
    async (name) => {
      const fifo = join(work, name);
      execFileSync("mkfifo", [fifo]);
      expect(await refusedPack(fifo)).toMatch(
        new RegExp(
          `^redraft: pack (file|module) ${fifo.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not a regular file`,
        ),
      );
      const folder = join(work, `folder-${name}`);
      await mkdir(folder);
      expect(await refusedPack(folder)).toMatch(/is not a regular file; a pack (file|module) must be one$/);
    },
    30_000,
  );

  it("one that does not exist: exit 2, one line naming it", async () => {
    const file = join(work, "nowhere.pack.json");
    expect(await refusedPack(file)).toBe(`redraft: pack file ${file} cannot be read: does not exist`);
  });
});

describe("a --pack module whose top-level await never settles", () => {
  it.each([["packs"], ["run", join(ROOT, "examples", "drafts", "mcq-clean.json"), "--llm", "none"]])(
    "redraft %s: exit 2, one line naming the module (not Node's exit 13 and its warning)",
    async (...args) => {
      const file = join(work, "never-settles.mjs");
      await writeFile(file, "await new Promise(() => {});\nexport const pack = {};\n");
      // Spawned: the test runner's own handles keep its event loop busy, so only a real process empties it.
      const child = spawnCli(["--data-dir", join(work, "tla-data"), "--pack", file, ...args]);
      const stuck = setTimeout(() => void stopChild(child.child, "SIGKILL"), 90_000);
      const finished = await child.done;
      clearTimeout(stuck);
      expect(finished.signal).toBeNull();
      expect(finished.code, finished.stderr).toBe(2);
      const lines = finished.stderr
        .split("\n")
        .filter((line) => line.trim() !== "" && !line.startsWith("redraft needs Node 22"));
      expect(lines, finished.stderr).toEqual([
        `redraft: pack module ${file} cannot be loaded: its top-level await never settles: nothing is left that could settle it`,
      ]);
      expect(finished.stdout).toBe("");
    },
    120_000,
  );
});

describe("a library pack registered with a wrong shape is named, with the rule", () => {
  it.each([
    [{ kind: "norules", description: "d", settings: {} }, /pack "norules": rules must be an array/],
    [
      {
        kind: "nocheck",
        description: "d",
        settings: {},
        rules: [{ id: "r", description: "d", severity: "error" }],
      },
      /pack "nocheck": rule "r": check must be a function/,
    ],
    [
      {
        kind: "sev",
        description: "d",
        settings: {},
        rules: [{ id: "r", description: "d", severity: "eror", check: () => [] }],
      },
      /pack "sev": rule "r": severity "eror"/,
    ],
    [{ kind: "Bad Kind", description: "d", settings: {}, rules: [] }, /invalid pack kind "Bad Kind"/],
  ])("%#", (pack, said) => {
    expect(() => new PackRegistry({}, [pack as never])).toThrow(said);
  });
});

describe("a pack's own schema patterns go through a draft schema's guard", () => {
  const packWith = (properties: unknown) =>
    JSON.stringify({
      kind: "schemed",
      description: "a pack whose schema's patterns backtrack",
      schema: { type: "object", properties },
      rules: [],
    });

  it("an exponential pattern in the pack's schema is refused at load, in one line naming the pack", async () => {
    const file = join(work, "exponential-schema.pack.json");
    await writeFile(file, packWith({ text: { type: "string", pattern: "^(a+)+$" } }));
    const line = await refusedPack(file);
    expect(line).toContain(`pack file ${file}: schema: `);
    expect(line).toMatch(/the pattern "\^\(a\+\)\+\$" can take exponential time to match/);
  });

  it("a lookahead RE2 cannot read is stopped past its budget: that draft is rejected too_slow, the benign one validated", async () => {
    const dir = await mkdtemp(join(work, "schema-lookahead-"));
    await writeFile(
      join(dir, "pack.json"),
      packWith({ look: { type: "string", pattern: "^(?=a)(a|aa)+$" } }),
    );
    const drafts = [
      { id: "hostile", kind: "schemed", content: { look: `${"a".repeat(60)}!` } },
      { id: "benign", kind: "schemed", content: { look: "aaa" } },
    ];
    await writeFile(join(dir, "drafts.jsonl"), drafts.map((d) => JSON.stringify(d)).join("\n"));
    const child = spawnCli([
      "--data-dir",
      join(dir, "data"),
      "--pack",
      join(dir, "pack.json"),
      "run",
      join(dir, "drafts.jsonl"),
      "--llm",
      "none",
      "--json",
    ]);
    const stuck = setTimeout(() => void stopChild(child.child, "SIGKILL"), 90_000);
    const finished = await child.done;
    clearTimeout(stuck);
    expect(finished.signal, "redraft run was stopped: the pattern held it").toBeNull();
    const results = Object.fromEntries(jsonLines(finished.stdout).map((r) => [r.draftId, r]));
    expect(results.hostile).toMatchObject({ status: "rejected", reason: "invalid_schema" });
    expect(String(results.hostile?.message)).toContain("too_slow");
    expect(results.benign).toMatchObject({ status: "validated" });
  }, 120_000);
});

describe("a pack's own rule pattern", () => {
  const packFile = (pattern: string, mustMatch: boolean) =>
    JSON.stringify({
      kind: "patterned",
      description: "a pack whose own pattern backtracks",
      rules: [{ id: "shape", type: "regex", path: "/text", pattern, mustMatch }],
    });

  it.each([
    ["nested quantifiers, must match", "^(a+)+$", true, "needs_manual_review"],
    ["nested quantifiers, forbidden", "(x+x+)+y", false, "validated"],
  ])(
    "%s: redraft run finishes with the rule's verdict, the pattern matched without backtracking",
    async (_name, pattern, mustMatch, status) => {
      const dir = await mkdtemp(join(work, "pattern-"));
      await writeFile(join(dir, "pack.json"), packFile(pattern, mustMatch));
      // Exponential for a backtracking RegExp: hours, where RE2 takes microseconds.
      const text = pattern.startsWith("^") ? `${"a".repeat(40)}!` : "x".repeat(40);
      await writeFile(
        join(dir, "draft.json"),
        JSON.stringify({ id: "hostile", kind: "patterned", content: { text } }),
      );
      const child = spawnCli([
        "--data-dir",
        join(dir, "data"),
        "--pack",
        join(dir, "pack.json"),
        "run",
        join(dir, "draft.json"),
        "--llm",
        "none",
        "--json",
      ]);
      // A bound for the test only: a run that backtracks never ends, and is stopped here.
      const stuck = setTimeout(() => void stopChild(child.child, "SIGKILL"), 90_000);
      const finished = await child.done;
      clearTimeout(stuck);
      expect(finished.signal, "redraft run was stopped: the pattern held it").toBeNull();
      expect(finished.code, finished.stderr).toBe(0);
      const [result] = jsonLines(finished.stdout);
      expect(result).toMatchObject({ draftId: "hostile", status });
    },
    120_000,
  );

  it("a pattern RE2 cannot read (a lookahead) is tested in the guard's worker: the draft is rejected too_slow, the run ends", async () => {
    const dir = await mkdtemp(join(work, "lookahead-"));
    await writeFile(join(dir, "pack.json"), packFile("^(?=a)(a|aa)+$", true));
    await writeFile(
      join(dir, "draft.json"),
      JSON.stringify({ id: "hostile", kind: "patterned", content: { text: `${"a".repeat(60)}!` } }),
    );
    const child = spawnCli([
      "--data-dir",
      join(dir, "data"),
      "--pack",
      join(dir, "pack.json"),
      "run",
      join(dir, "draft.json"),
      "--llm",
      "none",
      "--json",
    ]);
    const stuck = setTimeout(() => void stopChild(child.child, "SIGKILL"), 90_000);
    const finished = await child.done;
    clearTimeout(stuck);
    expect(finished.signal, "redraft run was stopped: the pattern held it").toBeNull();
    const [result] = jsonLines(finished.stdout);
    expect(result).toMatchObject({ draftId: "hostile", status: "rejected", reason: "invalid_schema" });
    expect(JSON.stringify(result)).toContain("too_slow");
  }, 120_000);
});
