import type { Resubmission, ResubmitFilter } from "../app/resubmit.js";
import type { ReviewDecision } from "../app/review.js";
import type { ExecutionSummary } from "../local/execution-types.js";
import type { BatchRecord } from "../shared/batch/record.js";
import type { Draft } from "../shared/draft.js";
import type { RunResult } from "../shared/loop/run.js";
import type { RunRecord } from "../shared/store/types.js";
import type { BatchCommandOptions } from "./batch.js";
import type { QueueDepth } from "./cloud/waiting.js";
import type { RunCommandOptions, WatchCommandOptions } from "./run.js";
import type { GlobalOptions } from "./session.js";
import type { RunEvidence } from "./show.js";

// The one interface every command calls (issue 36): a command parses its options, asks the runtime
// and prints; where the runs are (a data folder, or a deployed stack) is the runtime's business.
// LocalCommands (cli/local-commands.ts) works on the data folder through local/runtime.ts;
// CloudCommands (cli/cloud/commands.ts) on a stack's table, bucket, bus and state machine.
// Opening one loads nothing heavy: each operation imports what it needs when it runs, so that the
// read-only commands stay light (tests/cli/read-only-imports.test.ts).

/** `redraft runs`' options. */
export interface RunsOptions {
  status?: string;
  draft?: string;
  limit: number;
  json?: boolean;
  explain?: boolean;
  after?: string;
}

/** `redraft run`'s options: the local ones, with the cloud's `--no-wait` and `--via`. */
export interface RunOptions extends RunCommandOptions {
  modelSlots?: number;
  wait: boolean;
  via: "upload" | "event";
}

/** `redraft batch`'s options: the local ones, with the cloud's `--no-wait` and `--via`. */
export interface BatchOptions extends BatchCommandOptions {
  wait: boolean;
  via: "upload" | "event";
}

/** A review decision as `redraft review` (and the viewer) asks for it. */
export interface ReviewRequest {
  file?: string;
  note?: string;
  override?: boolean;
  reviewer: string;
  /** The line printed is the run as the decision left it, as JSON (where the runtime has it). */
  json?: boolean;
}

/** A run as `show` tells it: its record and result, the execution path, and what one side alone knows. */
export interface RunStory {
  run: RunRecord;
  result: RunResult;
  execution: ExecutionSummary | undefined;
  /** What the timeline reads beside the result (repairs, judge rounds, …); when asked for. */
  evidence?: RunEvidence;
  /** The run waits for a model slot, since when and for how long so far. */
  waiting?: {
    state: "waiting_for_model_slot";
    since: string;
    ageSeconds: number;
    /** A stack's run: the depth of the model queue it waits in (cli/cloud/waiting.ts). */
    queue?: QueueDepth;
  };
  /** The run's execution in the Step Functions console (a stack's run). */
  consoleUrl?: string;
}

/** `redraft ui`'s options. */
export interface ViewerCommandOptions {
  port: number;
  reviewer: string;
}

/**
 * What the commands need of where the runs are. Operations that print do so exactly as their
 * command's contract says (text, `--json` lines); those that return data leave the printing to the
 * command. One that a runtime cannot do throws a UsageError naming why, in one line (exit code 2).
 */
export interface CommandRuntime {
  /** `run`: drafts from files and folders, run (or submitted) and printed as they end. */
  run(paths: string[], cmd: RunOptions): Promise<void>;
  /** `batch`: a manifest through the batch state machine; the exit code (1 when the batch failed). */
  batch(manifest: string, cmd: BatchOptions): Promise<number>;
  /** `batches`: the batch records, newest first, at most `limit`. */
  listBatches(limit: number): Promise<BatchRecord[]>;
  /** `runs`: the runs, newest first, printed as a table or `--json` lines. */
  runs(cmd: RunsOptions): Promise<void>;
  /** `show <run>`: the run a run id (or a unique prefix of one) names; its evidence read too when asked. */
  readRun(runId: string, read: { evidence: boolean }): Promise<RunStory>;
  /** `show <b-…>`: the batch's summary and items as printed (`json`: as JSON), or undefined when there is no such batch. */
  showBatch(batchId: string, json: boolean): Promise<string | undefined>;
  /** `export`: the run a run id (or a unique prefix of one) names, and its best draft (null when it has none). */
  bestDraft(runId: string): Promise<{ run: RunRecord; finalDraft: Draft | null }>;
  /** `review`: a decision (or `undo`) on a run; the line to print. */
  review(runId: string, decision: ReviewDecision | "undo", request: ReviewRequest): Promise<string>;
  /** `resubmit`: failed runs run again, each once; `onEach` hears of each as it is decided. */
  resubmitFailed(filter: ResubmitFilter, onEach: (entry: Resubmission) => void): Promise<Resubmission[]>;
  /** `ui`: the viewer, served until stopped. */
  ui(cmd: ViewerCommandOptions): Promise<void>;
  /** `watch`: a folder's files run like uploads, until stopped. */
  watch(dir: string, cmd: WatchCommandOptions): Promise<void>;
  /** `doctor`: the database read whole (rebuilt first with `repair`), printed. */
  doctor(cmd: { repair?: boolean }): Promise<void>;
}

/** Whether the global options name a deployment (`--stack`, or its resources one by one). */
const inCloud = (opts: GlobalOptions) =>
  Boolean(opts.stack || opts.table || opts.bucket || opts.bus || opts.stateMachine);

/**
 * The runtime the global options name: the deployed stack's when a cloud option is given, else the
 * data folder's. The only place the command line decides where it runs.
 */
export async function openCommandRuntime(opts: GlobalOptions): Promise<CommandRuntime> {
  if (inCloud(opts)) return new (await import("./cloud/commands.js")).CloudCommands(opts);
  return new (await import("./local-commands.js")).LocalCommands(opts);
}
