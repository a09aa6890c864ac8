import { Argument } from "commander";
import { COMPLETION_SHELLS, type CompletionShell, completionScript } from "../completion.js";
import { defineCommand } from "./define.js";

/** `redraft completion`: a shell completion script built from the program's own commands and options. */
export const completionCommand = defineCommand("completion", (cli) => {
  cli
    .command("completion")
    .description("print a shell completion script for redraft's commands and options")
    .addArgument(new Argument("<shell>").choices(COMPLETION_SHELLS))
    .addHelpText(
      "after",
      "\nExamples:\n  $ source <(npx redraft completion bash)      # in ~/.bashrc\n  $ npx redraft completion fish | source",
    )
    .action(async (shell: CompletionShell) => {
      process.stdout.write(completionScript(cli, shell));
    });
});
