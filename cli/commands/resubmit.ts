import { Option } from "commander";
import { UsageError } from "../../app/inputs.js";
import type { Resubmission, ResubmitFilter } from "../../app/resubmit.js";
import { StopReasonSchema } from "../../shared/store/types.js";
import { say } from "../options.js";
import { defineCommand } from "./define.js";

interface ResubmitOptions {
  reason?: string;
  since?: string;
  batch?: string;
  json?: boolean;
}

/** The filter the options name; a --since that is no instant is a usage error, said in one line. */
function resubmitFilter(cmd: ResubmitOptions): ResubmitFilter {
  if (cmd.since !== undefined && Number.isNaN(Date.parse(cmd.since)))
    throw new UsageError(`--since ${cmd.since} is not an ISO time (such as 2026-11-28T02:00:00Z)`);
  return {
    ...(cmd.reason && { reason: StopReasonSchema.parse(cmd.reason) }),
    ...(cmd.since && { since: new Date(Date.parse(cmd.since)).toISOString() }),
    ...(cmd.batch && { batch: cmd.batch }),
  };
}

/** One resubmission as a person reads it, or as one JSON line. */
function resubmissionLine(entry: Resubmission, json: boolean | undefined): string {
  if (json) return JSON.stringify(entry);
  const draft = `${entry.runId} (${entry.draftId})`;
  switch (entry.outcome) {
    case "resubmitted":
      return `${draft}: resubmitted as ${entry.resubmittedAs}${entry.status ? `, ${entry.status}` : ""}`;
    case "already":
      return `${draft}: already resubmitted${entry.resubmittedAs ? ` as ${entry.resubmittedAs}` : ""}${entry.message ? ` (${entry.message})` : ""}`;
    default:
      return `${draft}: not resubmitted: ${entry.message}`;
  }
}

/** `redraft resubmit`: failed runs run again, each once, linked to the run they replace (app/resubmit.ts). */
export const resubmitCommand = defineCommand("resubmit", (cli, ctx) => {
  cli
    .command("resubmit")
    .description(
      "run failed drafts again, each failed run once however often this is called, the new run linked to the one it replaces",
    )
    .addOption(
      new Option("--reason <reason>", "only runs that failed for this reason").choices(
        StopReasonSchema.options,
      ),
    )
    .option("--since <time>", "only runs that failed at or after this ISO time")
    .option("--batch <id>", "only the runs of this batch's items")
    .option("--json", "one JSON line per failed run: what became of it")
    .addHelpText(
      "after",
      "\nExamples:\n  $ npx redraft resubmit --reason system_error\n  $ npx redraft resubmit --batch b-1a2b3c --since 2026-11-28T00:00:00Z",
    )
    .action(async (cmd: ResubmitOptions) => {
      const filter = resubmitFilter(cmd);
      const print = (entry: Resubmission) => {
        process.stdout.write(`${resubmissionLine(entry, cmd.json)}\n`);
      };
      const done = await (await ctx.runtime()).resubmitFailed(filter, print);
      if (!cmd.json) {
        const started = done.filter((d) => d.outcome === "resubmitted").length;
        say(
          done.length === 0
            ? "No failed run matches."
            : `${started} of ${done.length} failed run${done.length === 1 ? "" : "s"} resubmitted now; the others before, or not at all (said above).`,
        );
      }
    });
});
