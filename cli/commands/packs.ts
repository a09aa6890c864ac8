import type { AnyPack } from "../../shared/pack.js";
import { globalOptions } from "../session.js";
import { defineCommand } from "./define.js";

/** `redraft packs`: the kinds, their rules and settings (cli/pack-catalog.ts). */
export const packsCommand = defineCommand("packs", (cli, ctx) => {
  cli
    .command("packs")
    .description(
      "the kinds of draft, each rule (id, default severity, description) and each setting (type, default) a config can name",
    )
    .argument("[kind]", "only this kind")
    .option("--json", "the same as JSON")
    .addHelpText(
      "after",
      "\nExamples:\n  $ npx redraft packs mcq\n  $ npx redraft packs --pack examples/packs/haiku.ts --json",
    )
    .action(async (kind: string | undefined, cmd: { json?: boolean }) => {
      const [{ loadPacks }, { builtinPacks }, { catalogText, packCatalog }, { stdoutStyle }] =
        await Promise.all([
          import("../packs.js"),
          import("../../shared/packs/index.js"),
          import("../pack-catalog.js"),
          import("../output.js"),
        ]);
      const extra: AnyPack[] = [];
      for (const file of globalOptions(ctx).pack ?? []) extra.push(...(await loadPacks(file)));
      const entries = packCatalog([...builtinPacks, ...extra], kind);
      process.stdout.write(
        cmd.json ? `${JSON.stringify(entries, null, 2)}\n` : `${catalogText(entries, stdoutStyle())}\n`,
      );
    });
});
