import { type ChildProcess, spawn } from "node:child_process";

/**
 * Runs `body` while `count` other processes spin on the CPU (plain Node busy loops this helper
 * starts, and kills when the body ends): the machine as loaded as a busy CI runner.
 */
export async function besideBusyProcesses<T>(count: number, body: () => T | Promise<T>): Promise<T> {
  const busy: ChildProcess[] = [];
  try {
    for (let i = 0; i < count; i++)
      busy.push(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
    // Let them reach their loops before the body starts.
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const child of busy) if (child.exitCode !== null) throw new Error("a busy process ended early");
    return await body();
  } finally {
    for (const child of busy) child.kill("SIGKILL");
  }
}
