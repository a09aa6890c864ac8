import { aslCommand } from "./asl.js";
import { batchCommand } from "./batch.js";
import { batchesCommand } from "./batches.js";
import { completionCommand } from "./completion.js";
import type { CommandModule } from "./define.js";
import { doctorCommand } from "./doctor.js";
import { exportCommand } from "./export.js";
import { packsCommand } from "./packs.js";
import { planCommand } from "./plan.js";
import { resubmitCommand } from "./resubmit.js";
import { reviewCommand } from "./review.js";
import { runCommand } from "./run.js";
import { runsCommand } from "./runs.js";
import { schemaCommand } from "./schema.js";
import { showCommand } from "./show.js";
import { uiCommand } from "./ui.js";
import { watchCommand } from "./watch.js";

/** The registry the program is built from, in the order `redraft --help` lists the commands. */
export const COMMANDS: readonly CommandModule[] = [
  runCommand,
  batchCommand,
  batchesCommand,
  runsCommand,
  showCommand,
  exportCommand,
  packsCommand,
  reviewCommand,
  resubmitCommand,
  aslCommand,
  watchCommand,
  doctorCommand,
  planCommand,
  uiCommand,
  completionCommand,
  schemaCommand,
];
