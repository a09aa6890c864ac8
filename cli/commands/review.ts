import { Argument, type Command } from "commander";
import { UsageError } from "../../app/inputs.js";
import { REVIEW_DECISIONS, type ReviewDecision } from "../../app/review.js";
import { say } from "../options.js";
import { type CommandContext, cloud, globalOptions, inCloud, openSession, submitter } from "../session.js";

interface ReviewCommandOptions {
  note?: string;
  reviewer: string;
  json?: boolean;
}

/** `redraft review`: a person's decision on a run that needs review (app/review.ts). */
export function registerReview(cli: Command, ctx: CommandContext): void {
  cli
    .command("review")
    .description(
      "record a person's decision on a draft that needs review; edit resubmits the edited draft as a new run",
    )
    .argument("<runId>")
    .addArgument(new Argument("<decision>").choices(REVIEW_DECISIONS))
    .argument("[file]", "the edited draft (edit only)")
    .option("--note <text>", "why")
    .option("--reviewer <name>", "who decided", process.env.USER ?? "reviewer")
    .option("--json", "the run as the decision left it, as one JSON line")
    .addHelpText(
      "after",
      "\nExamples:\n  $ npx redraft review 3f2c9a1e approve --note 'homogeneity is fine here'\n  $ npx redraft review 3f2c9a1e edit fixed.json",
    )
    .action(
      async (
        runId: string,
        decision: ReviewDecision,
        file: string | undefined,
        cmd: ReviewCommandOptions,
      ) => {
        if (decision === "edit" && !file) throw new UsageError("review … edit needs the edited draft's file");
        if (decision !== "edit" && file)
          throw new UsageError(`review … ${decision} takes no file (only edit does): ${file}`);
        const opts = globalOptions(ctx);
        if (inCloud(opts)) {
          const outcome = await (await cloud()).cloudReview(opts, runId, decision, {
            ...(file && { file }),
            ...(cmd.note && { note: cmd.note }),
            reviewer: cmd.reviewer,
          });
          process.stdout.write(`${outcome}\n`);
          return;
        }
        // A session rather than withRuntime: the model's notices are said only once an edit is accepted.
        const { runtime, notices } = await openSession(opts);
        try {
          const [{ reviewDecision }, { localRunIds }] = await Promise.all([
            import("../../app/review.js"),
            import("../../app/ids.js"),
          ]);
          const outcome = await reviewDecision(runtime, runId, decision, {
            listIds: localRunIds(runtime),
            where: opts.dataDir,
            ...(file && { file }),
            ...(cmd.note && { note: cmd.note }),
            reviewer: cmd.reviewer,
            submit: submitter(runtime),
          });
          // Which model answered the edit, said once it was accepted: a refused edit stays one line.
          if (decision === "edit") for (const line of notices) say(line);
          process.stdout.write(`${cmd.json ? JSON.stringify(outcome) : outcome.message}\n`);
        } finally {
          await runtime.close();
        }
      },
    );
}
