/**
 * The fidelity tier: runs `tests/stores` against DynamoDB Local (AWS's own emulator) instead of the
 * in-process dynalite, to catch where dynalite is more forgiving than DynamoDB.
 *
 * DynamoDB Local is fetched through npm only: the `amplify-dynamodb-simulator` package carries
 * DynamoDBLocal.jar and its native libraries. The tarball is packed and unpacked once into
 * `.cache/ddb-local/<version>` (gitignored); Java 17+ must be on the PATH.
 *
 *   npx tsx scripts/fidelity.ts [extra vitest arguments]
 *
 * Exits with vitest's exit code.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { localDynamoClient } from "../local/dynalite.js";

/** 2.9.30 carries DynamoDB Local 1.25.1 (checked: `emulator/DynamoDBLocal.jar` is in the tarball). */
const SIMULATOR = "amplify-dynamodb-simulator@2.9.30";
const STARTUP_TIMEOUT_MS = 60_000;

const run = promisify(execFile);
const root = fileURLToPath(new URL("..", import.meta.url));
const emulatorDir = path.join(root, ".cache", "ddb-local", SIMULATOR.split("@")[1] ?? "unknown");
const jar = path.join(emulatorDir, "DynamoDBLocal.jar");
const libDir = path.join(emulatorDir, "DynamoDBLocal_lib");

/** Packs the simulator from npm and keeps only its `emulator/` folder; skipped when cached. */
async function ensureEmulator(): Promise<void> {
  if (existsSync(jar) && existsSync(libDir)) return;
  // Unpacked beside the cache and renamed into place, so an interrupted download leaves no half cache.
  const work = `${emulatorDir}.partial-${process.pid}`;
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  try {
    console.log(`fidelity: fetching ${SIMULATOR} through npm (about 57 MB, once)…`);
    const { stdout } = await run("npm", ["pack", SIMULATOR, "--pack-destination", work, "--silent"], {
      cwd: work,
      maxBuffer: 16 * 1024 * 1024,
    });
    const tarball = path.join(work, stdout.trim().split("\n").pop() ?? "");
    await run("tar", ["xzf", tarball, "-C", work]);
    const unpacked = path.join(work, "package", "emulator");
    if (
      !existsSync(path.join(unpacked, "DynamoDBLocal.jar")) ||
      !existsSync(path.join(unpacked, "DynamoDBLocal_lib"))
    ) {
      throw new Error(`${SIMULATOR} no longer ships emulator/DynamoDBLocal.jar and DynamoDBLocal_lib`);
    }
    await rm(emulatorDir, { recursive: true, force: true });
    await rename(unpacked, emulatorDir);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

function startDynamoDbLocal(port: number): { java: ChildProcess; output: () => string } {
  const java = spawn(
    "java",
    [
      `-Djava.library.path=${libDir}`,
      "-jar",
      jar,
      "-inMemory",
      // One database whatever the credentials and region, and no telemetry from a test run.
      "-sharedDb",
      "-disableTelemetry",
      "-port",
      String(port),
    ],
    { cwd: emulatorDir, stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  java.stdout?.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  java.stderr?.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  return { java, output: () => log };
}

/** Polls ListTables until DynamoDB Local answers; fails early when Java exits. */
async function waitUntilReady(endpoint: string, java: ChildProcess, output: () => string): Promise<void> {
  const client = localDynamoClient(endpoint);
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  try {
    for (;;) {
      if (java.exitCode !== null || java.signalCode !== null) {
        throw new Error(
          `DynamoDB Local exited (${java.exitCode ?? java.signalCode}) before answering:\n${output()}`,
        );
      }
      try {
        await client.send(new ListTablesCommand({}));
        return;
      } catch {
        if (Date.now() > deadline)
          throw new Error(`DynamoDB Local did not answer within ${STARTUP_TIMEOUT_MS} ms`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  } finally {
    client.destroy();
  }
}

async function stop(java: ChildProcess): Promise<void> {
  if (java.exitCode !== null || java.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => java.once("exit", () => resolve()));
  java.kill("SIGTERM");
  const timer = setTimeout(() => java.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

function runVitest(endpoint: string, extraArgs: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const vitest = spawn("npx", ["vitest", "run", "tests/stores", ...extraArgs], {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, DYNAMODB_ENDPOINT: endpoint },
    });
    vitest.once("error", reject);
    vitest.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<number> {
  await ensureEmulator();
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const { java, output } = startDynamoDbLocal(port);
  const interrupted = () => void stop(java).then(() => process.exit(130));
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    await new Promise<void>((resolve, reject) => {
      java.once("spawn", resolve);
      java.once("error", (error) =>
        reject(new Error(`cannot start java (Java 17+ is needed): ${error.message}`)),
      );
    });
    await waitUntilReady(endpoint, java, output);
    console.log(`fidelity: DynamoDB Local answering at ${endpoint}`);
    return await runVitest(endpoint, process.argv.slice(2));
  } finally {
    await stop(java);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`fidelity: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
