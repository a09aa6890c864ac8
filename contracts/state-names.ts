/**
 * The state machine's state names: what a person reads in the Step Functions console, and a contract
 * with the local runtime, which binds each Task state to a local adapter by name. Tests and the local
 * runtime import these; nothing repeats them as literals.
 */
export const StateNames = {
  /** λ validate: load the draft, reject bad input, register the run, repair, check (attempt 0). */
  Validate: "Validate",
  /** Severity filter: only error-severity violations go on to correction. */
  HasErrors: "HasErrors?",
  InputRejected: "InputRejected",
  DuplicateIgnored: "DuplicateIgnored",
  NoModelConfigured: "NoModelConfigured",

  /** λ correct: one model call on the best draft so far (execution phase). */
  CorrectExecution: "CorrectExecution",
  /** Pass state: `States.MathAdd` on the execution counter. */
  CountExecutionAttempt: "CountExecutionAttempt",
  /** λ revalidate: repair and full re-validation of the candidate, attempt record, verdict. */
  Revalidate: "Revalidate",
  /** The loop's stop rules as visible branches: validated, breaker, stuck, budget, attempts, else correct again. */
  NextStep: "NextStep?",
  CircuitBreakerTripped: "CircuitBreakerTripped",
  StuckNoImprovement: "StuckNoImprovement",
  BudgetExhausted: "BudgetExhausted",
  MaxAttemptsReached: "MaxAttemptsReached",

  /** s3:CopyObject of the best draft to `results/<draftId>/<runId>.json`. */
  PublishCorrectedDraft: "PublishCorrectedDraft",
  /** dynamodb:UpdateItem: status validated. */
  MarkValidated: "MarkValidated",
  /** events:PutEvents "Draft Validated". */
  AnnounceValidated: "AnnounceValidated",
  DraftValidated: "DraftValidated",

  PublishBestDraft: "PublishBestDraft",
  MarkNeedsReview: "MarkNeedsReview",
  AnnounceNeedsReview: "AnnounceNeedsReview",
  DraftNeedsReview: "DraftNeedsReview",

  /** Logic phase (seeds 000/002): runs only once the execution phase has no error left. */
  JudgeEnabled: "JudgeEnabled?",
  /** λ judge: the LLM judge on intent, rubric, personas and method. */
  Judge: "Judge",
  /** Confidence-gated findings: none blocking → validated; logic budget used → review; else correct. */
  HasCriticalFindings: "HasCriticalFindings?",
  LogicUnresolved: "LogicUnresolved",
  /** λ correct, logic phase: one model call carrying the judge's findings and evidence. */
  CorrectLogic: "CorrectLogic",
  /** Pass state: `States.MathAdd` on the logic counter, apart from the execution one. */
  CountLogicAttempt: "CountLogicAttempt",
  /** λ revalidate after a logic fix: the execution checks again (a logic fix may break the format). */
  RevalidateLogic: "RevalidateLogic",

  /** Which failure: a model failure (after its retries) or anything else. */
  ClassifyFailure: "ClassifyFailure?",
  /** dynamodb:UpdateItem: status failed, reason model_error, the error as message. */
  RecordModelFailure: "RecordModelFailure",
  /** dynamodb:UpdateItem: status failed, reason system_error, the error as message. */
  RecordFailure: "RecordFailure",
  /** dynamodb:UpdateItem: status failed, reason deadline: model work waited past the run's deadline. */
  RecordDeadline: "RecordDeadline",
  CorrectionFailed: "CorrectionFailed",
} as const;

export type StateName = (typeof StateNames)[keyof typeof StateNames];

/** Task states bound to a Lambda function (the local runtime binds them to the handlers). */
export const LAMBDA_STATES = [
  StateNames.Validate,
  StateNames.CorrectExecution,
  StateNames.Revalidate,
  StateNames.Judge,
  StateNames.CorrectLogic,
  StateNames.RevalidateLogic,
] as const;

/**
 * The model states among them: their work waits for a slot in the model queue
 * (`sqs:sendMessage.waitForTaskToken`), which λ correct and λ judge consume.
 */
export const MODEL_STATES = [StateNames.CorrectExecution, StateNames.Judge, StateNames.CorrectLogic] as const;

/** Task states that copy the best draft under `results/` (a blob copy locally). */
export const PUBLISH_STATES = [StateNames.PublishCorrectedDraft, StateNames.PublishBestDraft] as const;

/** Task states doing a DynamoDB UpdateItem on the run record (locally the same update, against the data folder's store: local/update-item.ts). */
export const RECORD_STATES = [
  StateNames.MarkValidated,
  StateNames.MarkNeedsReview,
  StateNames.RecordModelFailure,
  StateNames.RecordFailure,
  StateNames.RecordDeadline,
] as const;

/** Task states publishing an outcome event on the project's bus (an event log locally). */
export const ANNOUNCE_STATES = [StateNames.AnnounceValidated, StateNames.AnnounceNeedsReview] as const;

/**
 * The batch state machine's states (infra/constructs/batch-workflow.ts): the console's names, and
 * what the local runtime binds its stand-ins to (local/batch.ts).
 */
export const BatchStateNames = {
  /** dynamodb:PutItem, conditional: the batch record; a duplicate delivery ends at BatchAlreadyStarted. */
  CreateBatch: "CreateBatch",
  BatchAlreadyStarted: "BatchAlreadyStarted",
  /** λ batch (prepare): the manifest split into one blob per item and the Map's item list. */
  PrepareItems: "PrepareItems",
  /** Distributed Map: one child execution of the per-draft state machine per item. */
  RunItems: "RunItems",
  /** In the item processor: StartExecution.sync:2 of the per-draft state machine, named `<batchId>-<line>`. */
  RunDraft: "RunDraft",
  /** The child already exists (a retried item, a resumed batch): its run is read by AggregateBatch. */
  ItemAlreadyRan: "ItemAlreadyRan",
  /** λ batch (aggregate): the children's runs summed up into the batch record and a results file. */
  AggregateBatch: "AggregateBatch",
  /** events:PutEvents "Batch Completed". */
  AnnounceBatch: "AnnounceBatch",
  BatchEndedHow: "BatchEnded?",
  BatchCompleted: "BatchCompleted",
  BatchFailed: "BatchFailed",

  // Batch pricing (infra/constructs/batch-rounds.ts).
  /** Whether the request said how to price it; if not, DefaultPricing writes the deployment's default. */
  PricingGiven: "PricingGiven?",
  DefaultPricing: "DefaultPricing",
  /** One child per item (on demand), or rounds of batch requests (batch pricing). */
  PricedHow: "PricedHow?",
  /** Pass: the rounds' state, round 0 reading the item list. */
  StartRounds: "StartRounds",
  /** Distributed Map: every item still correcting through the correction loop, up to its next model call. */
  RunRound: "RunRound",
  /** In RunRound's processor: a new item starts at Validate, a parked one at the step that asked the batch. */
  ResumeAt: "ResumeAt?",
  CorrectionParked: "CorrectionParked?",
  LogicCorrectionParked: "LogicCorrectionParked?",
  JudgeParked: "JudgeParked?",
  /** The item's model call waits for the next batch request. */
  AwaitingBatch: "AwaitingBatch",
  /** λ rounds (submit): the parked calls as one batch request (split by the service's limits). */
  SubmitRound: "SubmitRound",
  RoundSubmitted: "RoundSubmitted?",
  /** Wait: the poll interval, doubled each time. */
  WaitForBatch: "WaitForBatch",
  /** λ rounds (poll): whether the batch request has ended; at the deadline, cancel it. */
  PollBatch: "PollBatch",
  BatchRequestEnded: "BatchRequestEnded?",
  /** λ rounds (collect): the results where the parked calls find them. */
  CollectRound: "CollectRound",
  /** λ rounds (abandon): a round step failed; the round's batches still running are canceled before AggregateBatch. */
  AbandonRounds: "AbandonRounds",
  /** Distributed Map: the items left at the deadline (or that no batch takes), each a per-draft child execution. */
  RunOnDemand: "RunOnDemand",
  RunDraftOnDemand: "RunDraftOnDemand",
  OnDemandAlreadyRan: "OnDemandAlreadyRan",
} as const;

/** The execution statuses that end a run (per-draft machine) or a batch without the state machine having finished it. */
export const STOPPED_STATUSES = ["FAILED", "TIMED_OUT", "ABORTED"] as const;
export type StoppedStatus = (typeof STOPPED_STATUSES)[number];
