import type { Command } from "commander";
import type { CommandContext } from "../session.js";

/**
 * One command of the command line, defined in its own module under cli/commands/: its name and
 * how it adds itself (options, help, action) to the program. An action that needs the runs asks
 * cli/runtime.ts's interface for them ({@link CommandContext.runtime}), never where they are.
 */
export interface CommandModule {
  readonly name: string;
  register(cli: Command, ctx: CommandContext): void;
}

/** A command module: `name` is the command `register` adds (tests/cli/command-runtime.test.ts checks). */
export const defineCommand = (name: string, register: CommandModule["register"]): CommandModule => ({
  name,
  register,
});
