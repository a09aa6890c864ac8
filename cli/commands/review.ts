import { Argument } from "commander";
import { UsageError } from "../../app/inputs.js";
import { REVIEW_DECISIONS, type ReviewDecision, UNDO_MS } from "../../app/review.js";
import { defineCommand } from "./define.js";

interface ReviewCommandOptions {
  note?: string;
  override?: boolean;
  reviewer: string;
  json?: boolean;
}

/** `redraft review`: a person's decision on a run that needs review (app/review.ts). */
export const reviewCommand = defineCommand("review", (cli, ctx) => {
  cli
    .command("review")
    .description(
      "record a person's decision on a draft that needs review; edit resubmits the edited draft as a new run",
    )
    .argument("<runId>")
    .addArgument(new Argument("<decision>").choices([...REVIEW_DECISIONS, "undo"]))
    .argument("[file]", "the edited draft (edit only)")
    .option("--note <text>", "why")
    .option(
      "--override",
      "approve a draft that still has error violations (the record keeps the rules it overrode)",
    )
    .option("--reviewer <name>", "who decided", process.env.USER ?? "reviewer")
    .option("--json", "the run as the decision left it, as one JSON line")
    .addHelpText(
      "after",
      `\nundo takes back your own approval or rejection, within ${UNDO_MS / 60_000} minutes and while the run is where it left it.\n\nExamples:\n  $ npx redraft review 3f2c9a1e approve --note 'homogeneity is fine here'\n  $ npx redraft review 3f2c9a1e approve --override --note 'the flagged option is right here'\n  $ npx redraft review 3f2c9a1e undo\n  $ npx redraft review 3f2c9a1e edit fixed.json`,
    )
    .action(
      async (
        runId: string,
        decision: ReviewDecision | "undo",
        file: string | undefined,
        cmd: ReviewCommandOptions,
      ) => {
        if (decision === "edit" && !file) throw new UsageError("review … edit needs the edited draft's file");
        if (decision !== "edit" && file)
          throw new UsageError(`review … ${decision} takes no file (only edit does): ${file}`);
        if (cmd.override && decision !== "approve")
          throw new UsageError(
            `--override goes with approve (it says the errors left are meant), not ${decision}`,
          );
        const line = await (await ctx.runtime()).review(runId, decision, {
          ...(file && { file }),
          ...(cmd.note && { note: cmd.note }),
          ...(cmd.override && { override: true }),
          reviewer: cmd.reviewer,
          ...(cmd.json && { json: true }),
        });
        process.stdout.write(`${line}\n`);
      },
    );
});
