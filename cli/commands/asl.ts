import { defineCommand } from "./define.js";

/** `redraft asl`: the committed state machine, or a Mermaid flowchart of it. */
export const aslCommand = defineCommand("asl", (cli) => {
  cli
    .command("asl")
    .description("print the state machine (contracts/state-machine.asl.json), or a Mermaid flowchart of it")
    .option("--mermaid", "a Mermaid flowchart instead of the ASL JSON")
    .addHelpText("after", "\nExample:\n  $ npx redraft asl --mermaid")
    .action(async (cmd: { mermaid?: boolean }) => {
      const { loadAsl, readAslArtifact } = await import("../../local/state-machine.js");
      if (cmd.mermaid) {
        const { aslToMermaid } = await import("../../local/mermaid.js");
        process.stdout.write(`${aslToMermaid(await loadAsl())}\n`);
      }
      // The committed file as it is, its placeholders for deployed names included.
      else process.stdout.write(await readAslArtifact());
    });
});
