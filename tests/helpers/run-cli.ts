import { type ChildProcess, type ChildProcessByStdio, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { vi } from "vitest";
import { main } from "../../cli/main.js";

export const ROOT = join(import.meta.dirname, "..", "..");
export const CASSETTE = join(ROOT, "examples", "example.cassette.json");

export interface CliOutput {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the command line in this process, as `redraft <args…>` would, and returns its exit code
 * and what it wrote. `tty` says whether stdout is a terminal for the call (it is not, by default).
 */
export async function redraft(args: string[], options: { tty?: boolean } = {}): Promise<CliOutput> {
  let stdout = "";
  let stderr = "";
  const wasTty = process.stdout.isTTY;
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  process.stdout.isTTY = options.tty === true;
  try {
    const code = await main(["node", "redraft", ...args]);
    return { code, stdout, stderr };
  } finally {
    process.stdout.isTTY = wasTty;
    out.mockRestore();
    err.mockRestore();
  }
}

/** The JSON lines of `--json` output. */
export const jsonLines = (text: string) =>
  text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/**
 * Stops a spawned `redraft` and waits until it has exited. A `watch` told SIGTERM still closes its
 * database and removes its lock and owner files: a test that deleted the data folder before then
 * raced that shutdown (rm -r failing ENOTEMPTY under load). Killed outright if it takes over 30 s.
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill(signal);
  const stuck = setTimeout(() => child.kill("SIGKILL"), 30_000);
  try {
    await exited;
  } finally {
    clearTimeout(stuck);
  }
}

/** The executable a person runs: `bin/redraft.js`. */
export const BIN = join(ROOT, "bin", "redraft.js");

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface SpawnedCli {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** What the process has written so far. */
  out: { stdout: string; stderr: string };
  /** Settles when the process has exited and its output is read. */
  done: Promise<Finished>;
  /** Waits until `condition` holds, polling; fails after `timeoutMs` with what stderr said. */
  waitFor(condition: () => boolean, timeoutMs?: number): Promise<void>;
}

/**
 * The real command line in a child process, as a person would run it, for what only a process
 * shows: its exit status, a kill, two processes on one data folder, a `watch` left running. No
 * model key from the environment chooses a live model.
 */
export function spawnCli(args: readonly string[]): SpawnedCli {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, ANTHROPIC_API_KEY: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (d) => {
    out.stdout += d;
  });
  child.stderr.on("data", (d) => {
    out.stderr += d;
  });
  const done = new Promise<Finished>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, ...out }));
  });
  const waitFor = async (condition: () => boolean, timeoutMs = 90_000) => {
    const start = Date.now();
    while (!condition()) {
      if (Date.now() - start > timeoutMs) throw new Error(`timed out; stderr: ${out.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { child, out, done, waitFor };
}
