import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
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
