/**
 * The types an execution is described by, apart from the interpreter: correctDraft's options name
 * them, and the interpreter's own module names AWS SDK types, which the library's declarations must
 * never reach (a consumer without @types/node or the SDK type-checks them: tests/package).
 */

export type TaskHandler = (input: unknown) => Promise<unknown>;

/** The four Lambda functions the state machine invokes; the logic phase reuses correct and revalidate. */
export interface LambdaSteps {
  validate: TaskHandler;
  correct: TaskHandler;
  revalidate: TaskHandler;
  judge: TaskHandler;
}

/** One entry of an execution's event history, as the Step Functions console lists them. */
export interface HistoryEvent {
  type: string;
  at: string;
  state?: string;
  stateType?: string;
  error?: string;
  cause?: string;
  retry?: { attempt: number };
  /** The state's input and output, as the console shows them. */
  input?: unknown;
  output?: unknown;
}

export interface ExecutionSummary {
  runId: string;
  status: "SUCCEEDED" | "FAILED";
  /** The last state entered: DraftValidated, DraftNeedsReview, InputRejected, CorrectionFailed… */
  terminalState: string;
  output?: unknown;
  error?: { error: string; cause: string };
  history: HistoryEvent[];
}
