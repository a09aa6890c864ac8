import "./quiet.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command, CommanderError } from "commander";
import { UsageError } from "../app/inputs.js";
import { dataDirFault } from "../local/data-dir.js";
import { ErrorNames } from "../shared/errors.js";
import { COMMANDS } from "./commands/index.js";
import { DEFAULT_DATA_DIR, findDataDir } from "./data-dir.js";
import { installRoot } from "./install-root.js";
import { collect, say } from "./options.js";
import { openCommandRuntime } from "./runtime.js";
import type { CommandResult, GlobalOptions } from "./session.js";

// The program and its global options, built from the registry of commands (cli/commands/index.ts):
// each command is defined in its own file under cli/commands/, imports what it runs only when it
// runs, and works through the runtime the global options name (cli/runtime.ts), local or cloud.

function program(result: CommandResult = { code: 0 }): Command {
  const cli = new Command("redraft")
    .description(
      "Check LLM drafts against rules, schemas, tests and a judge; have Claude correct what fails; escalate the rest.",
    )
    .option(
      "--data-dir <dir>",
      "where runs, drafts and events are kept (default: the nearest .redraft in this folder or one above it, else ./.redraft)",
      DEFAULT_DATA_DIR,
    )
    .option(
      "--llm <model>",
      "anthropic | bedrock | replay:<cassette.json> | none (default: anthropic when ANTHROPIC_API_KEY is set, else none)",
    )
    .option("--model <id>", "model id for anthropic or bedrock")
    .option("--record <file>", "record the live model's answers into a cassette file")
    .option("--config <file>", "deployment config JSON: loop limits, caps, per-kind rule overrides")
    .option(
      "--pack <file>",
      "an extra pack to register, a declarative file (JSON) or a TypeScript/JavaScript module; repeat for more",
      collect,
    )
    .option("--debug", "on a system failure, print the stack too")
    .version(packageVersion(), "-V, --version", "print the version of redraft")
    // Without --data-dir, a subfolder of a project uses the project's data folder (cli/data-dir.ts).
    .hook("preAction", () => {
      if (cli.getOptionValueSource("dataDir") === "default")
        cli.setOptionValueWithSource("dataDir", findDataDir(), "default");
    })
    .option(
      "--stack <name>",
      "work on a deployed stack (its CloudFormation outputs name the resources): runs, show, export, batches, review",
    )
    .option("--table <name>", "cloud mode without --stack: the runs table")
    .option("--bucket <name>", "cloud mode without --stack: the drafts bucket")
    .option("--bus <name>", "cloud mode without --stack: the project's event bus")
    .option("--state-machine <arn>", "cloud mode without --stack: the per-draft state machine")
    // Errors are printed by main(), one line each; commander's own output is only --help, on stdout.
    .exitOverride()
    .configureOutput({ writeErr: () => {}, outputError: () => {} })
    .addHelpText(
      "after",
      "\nExample:\n  $ npx redraft run examples/drafts/ --llm replay:examples/example.cassette.json\n  $ npx redraft runs --status needs_manual_review --explain\n  $ npx redraft run examples/pack-drafts/ --pack examples/packs/haiku.ts --pack examples/packs/abstract.pack.json --llm none",
    );

  const ctx = { program: cli, result, runtime: () => openCommandRuntime(cli.opts<GlobalOptions>()) };
  for (const command of COMMANDS) command.register(cli, ctx);
  return cli;
}

/** The version in redraft's own package.json. */
function packageVersion(): string {
  const parsed: unknown = JSON.parse(readFileSync(join(installRoot(), "package.json"), "utf8"));
  return typeof parsed === "object" && parsed !== null && "version" in parsed
    ? String(parsed.version)
    : "unknown";
}

/** A message that spans lines (zod's, a compiler's) joined into one, so an error stays one line. */
const oneLine = (text: string) => text.trim().replace(/\s*\n\s*/g, " ");

/**
 * Says what went wrong and returns the exit code: 2 for a usage error (one line naming the problem,
 * nothing else), 1 for a system failure (its name and message on one line; the stack with --debug).
 */
function reportError(error: unknown, cli: Command): number {
  if (error instanceof CommanderError) {
    // --help (and `redraft help`) end with these codes and exit code 0; the help is on stdout.
    if (error.exitCode === 0) return 0;
    if (error.code === "commander.help") {
      const commands = cli.commands.map((c) => c.name()).join(", ");
      say(`redraft: missing command: one of ${commands} (redraft --help describes them)`);
    } else {
      say(`redraft: ${oneLine(error.message.replace(/^error: /, ""))}`);
    }
    return 2;
  }
  if (
    error instanceof UsageError ||
    (error instanceof Error &&
      (error.name === ErrorNames.InvalidPack ||
        error.name === "DataDirError" ||
        error.name === "RepairRefusedError" ||
        error.name === "ReviewConflictError" ||
        error.name === "OverrideRequiredError"))
  ) {
    say(`redraft: ${oneLine(error.message)}`);
    return 2;
  }
  const e = error instanceof Error ? error : new Error(String(error));
  const debug = cli.opts<GlobalOptions>().debug === true;
  // A full disk, a damaged database, a lock held elsewhere: what it is and what to do, in one line.
  const fault = dataDirFault(error, cli.opts<GlobalOptions>().dataDir);
  if (fault) {
    say(`redraft: ${oneLine(fault)}`);
    if (debug)
      say(
        (e.stack ?? "")
          .split("\n")
          .filter((line) => /^\s+at /.test(line))
          .join("\n"),
      );
    return 1;
  }
  const hint = debug ? "" : " (--debug shows the stack)";
  say(`redraft: system failure: ${e.name}: ${oneLine(e.message)}${hint}`);
  const frames = (e.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line));
  if (debug && frames.length > 0) say(frames.join("\n"));
  return 1;
}

/**
 * Runs the command line and returns its exit code, never calling process.exit: 0 when the command
 * did its work (whatever the drafts' outcomes), 2 on a usage error, 1 on a system failure.
 */
export async function main(argv: string[] = process.argv): Promise<number> {
  const result: CommandResult = { code: 0 };
  const cli = program(result);
  try {
    await cli.parseAsync(argv);
    return result.code;
  } catch (error) {
    return reportError(error, cli);
  }
}
