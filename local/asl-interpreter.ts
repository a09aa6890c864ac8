import type { UpdateItemCommandInput } from "@aws-sdk/client-dynamodb";
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import type { AslDefinition } from "../contracts/asl.js";
import { StateNames } from "../contracts/state-names.js";
import { DraftTooDeepError } from "../shared/errors.js";
import { topLevelField, valueDepth } from "../shared/json-depth.js";
import type { InputRejection } from "../shared/loop/steps/input.js";
import { DEFAULT_MODEL_CONCURRENCY } from "../shared/model/limited.js";
import type { BlobStore } from "../shared/store/types.js";
import { DEFAULT_MAX_DRAFT_DEPTH } from "../shared/validate.js";
import type { ExecutionSummary, HistoryEvent, LambdaSteps, TaskHandler } from "./execution-types.js";
import { LocalModelQueue } from "./model-queue.js";

export type { ExecutionSummary, HistoryEvent, LambdaSteps, TaskHandler };

/**
 * How the committed state machine runs in aws-local-stepfunctions, whatever stores lie behind it:
 * every Task state bound by name to a Lambda step or to a stand-in for its direct integration. The
 * local runtime (its data folder's store, SQLite or dynalite, and an event log) and the in-process
 * `correctDraft` (memory stores)
 * both bind through here.
 */

interface CopyObjectInput {
  Bucket: string;
  CopySource: string;
  Key: string;
}

export interface PutEventsInput {
  Entries: Record<string, unknown>[];
}

/** Stand-ins for the state machine's direct service integrations. */
export interface Integrations {
  updateItem(input: UpdateItemCommandInput): Promise<unknown>;
  copyObject(input: CopyObjectInput): Promise<unknown>;
  putEvents(input: PutEventsInput): Promise<unknown>;
}

/** Stands for `$$.State.EnteredTime` in the local context; an adapter replaces it by the time of the call. */
export const ENTERED_TIME_MARKER = "1970-01-01T00:00:00.000Z#entered";

/**
 * Builds the machine: once per definition, not per draft. The engine's own validation of the
 * definition (asl-validator, which compiles its JSON schema: a fifth of a second, more on a busy
 * machine, at every start of every command) runs only when asked. The definitions run here are the
 * committed artifacts (local/state-machine.ts), checked once where they are made instead:
 * tests/infra/workflow.test.ts validates the synthesized state machine, tests/infra/asl-artifact.test.ts
 * that the committed files are what infra/ synthesizes, and tests/local/asl-interpreter.test.ts that the
 * engine accepts both as they are.
 */
export function buildMachine(asl: AslDefinition, options: { validate?: boolean } = {}): StateMachine {
  return new StateMachine(asl as unknown as StateMachineDefinition, {
    validationOptions: options.validate ? { checkArn: false } : { noValidate: true },
  });
}

/**
 * Binds each Task state by name, as aws-local-stepfunctions' overrides require. A model state that
 * sends its work to the model queue (`sqs:sendMessage.waitForTaskToken`) is served by `modelQueue`,
 * whose slots stand for the queue consumer's concurrency.
 */
export function bindTasks(
  asl: AslDefinition,
  steps: LambdaSteps,
  integrations: Integrations,
  modelQueue: LocalModelQueue = new LocalModelQueue({ slots: DEFAULT_MODEL_CONCURRENCY }),
): Record<string, TaskHandler> {
  const lambdas: Record<string, TaskHandler> = {
    [StateNames.Validate]: steps.validate,
    [StateNames.CorrectExecution]: steps.correct,
    [StateNames.Revalidate]: steps.revalidate,
    [StateNames.Judge]: steps.judge,
    [StateNames.CorrectLogic]: steps.correct,
    [StateNames.RevalidateLogic]: steps.revalidate,
  };
  const handlers: Record<string, TaskHandler> = {};
  for (const [name, state] of Object.entries(asl.States)) {
    if (state.Type !== "Task") continue;
    const resource = String(state.Resource);
    const lambda = lambdas[name];
    if (resource.endsWith(":sqs:sendMessage.waitForTaskToken")) {
      handlers[name] = modelQueue.handler({ correct: steps.correct, judge: steps.judge });
    } else if (lambda) {
      // `lambda:invoke` hands over {FunctionName, Payload} and expects the Invoke response back.
      handlers[name] = resource.endsWith(":lambda:invoke")
        ? async (input) => ({
            StatusCode: 200,
            ExecutedVersion: "$LATEST",
            Payload: await lambda((input as { Payload: unknown }).Payload),
          })
        : lambda;
    } else if (resource.endsWith(":dynamodb:updateItem")) {
      handlers[name] = (input) => integrations.updateItem(input as UpdateItemCommandInput);
    } else if (resource.endsWith(":s3:copyObject")) {
      handlers[name] = (input) => integrations.copyObject(input as CopyObjectInput);
    } else if (resource.endsWith(":events:putEvents")) {
      handlers[name] = (input) => integrations.putEvents(input as PutEventsInput);
    } else {
      throw new Error(`the local runtime has no adapter for task state "${name}" (${resource})`);
    }
  }
  return handlers;
}

/**
 * S3 CopyObject within one blob store: the bucket in `CopySource` is the store itself. Its failures
 * are named as Step Functions names the `aws-sdk:s3` integration's: `S3.SdkClientException` when the
 * store could not be reached (a file-system error that passes), `S3.S3Exception` for any refusal.
 */
export function copyObjectIn(blobs: BlobStore): Integrations["copyObject"] {
  return async (input) => {
    const source = decodeURIComponent(input.CopySource.replace(/^\/?[^/]+\//, ""));
    try {
      await blobs.put(input.Key, await blobs.get(source));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw integrationError(
        "S3",
        typeof code === "string" && UNREACHABLE_FS_CODES.has(code) ? CLIENT_ERROR : "S3Exception",
        error,
      );
    }
    return { CopyObjectResult: { LastModified: new Date().toISOString() } };
  };
}

/** File-system errors that pass: the local stand-in for a request that got no answer. */
const UNREACHABLE_FS_CODES = new Set(["EAGAIN", "EBUSY", "EMFILE", "ENFILE", "ETIMEDOUT"]);

/** What the AWS SDK reports when it got no answer from the service. */
const CLIENT_ERROR = "SdkClientException";

/**
 * The errors DynamoDB's API model gives UpdateItem. Step Functions reports these by name (with the
 * `Exception` suffix: `DynamoDB.InternalServerErrorException`) and any other under the SDK's base
 * exception, `DynamoDB.AmazonDynamoDBException` (AccessDenied, ValidationException…).
 */
const UPDATE_ITEM_ERRORS = new Set([
  "ConditionalCheckFailedException",
  "InternalServerError",
  "InvalidEndpointException",
  "ItemCollectionSizeLimitExceededException",
  "ProvisionedThroughputExceededException",
  "ReplicatedWriteConflictException",
  "RequestLimitExceeded",
  "ResourceNotFoundException",
  "ThrottlingException",
  "TransactionConflictException",
]);

/**
 * A DynamoDB SDK error (from the runtime's UpdateItem adapter) named as the optimized
 * `dynamodb:updateItem` integration names it, for the state's Retry and Catch: see the retriers in
 * infra/constructs/workflow.ts.
 */
export function dynamoDbIntegrationError(error: unknown): Error {
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: number } };
  const name = typeof e?.name === "string" ? e.name : "";
  if (!e?.$metadata?.httpStatusCode) return integrationError("DynamoDB", CLIENT_ERROR, error);
  return integrationError(
    "DynamoDB",
    UPDATE_ITEM_ERRORS.has(name) ? withExceptionSuffix(name) : "AmazonDynamoDBException",
    error,
  );
}

const withExceptionSuffix = (name: string) => (name.endsWith("Exception") ? name : `${name}Exception`);

/**
 * `<Service>.<name>`, with the original error in the cause the way the AWS SDK for Java words it
 * (`… (Service: DynamoDB, Status Code: 400, Error Code: AccessDeniedException)`), so that the run
 * record's message says what the service answered.
 */
function integrationError(service: string, name: string, error: unknown): Error {
  const e = error as {
    name?: unknown;
    message?: unknown;
    code?: unknown;
    $metadata?: { httpStatusCode?: number };
  };
  const status = e?.$metadata?.httpStatusCode;
  const details = [
    `Service: ${service}`,
    ...(status ? [`Status Code: ${status}`] : []),
    `Error Code: ${String(typeof e?.code === "string" ? e.code : e?.name)}`,
  ];
  const named = new Error(`${String(e?.message ?? error)} (${details.join(", ")})`, { cause: error });
  named.name = `${service}.${name}`;
  return named;
}

/**
 * A PutEvents whose entry could not be put, as the optimized `events:putEvents` integration reports
 * a non-zero FailedEntryCount: `EventBridge.FailedEntry`, the response as the cause.
 */
export function failedEntryError(entries: number, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  const named = new Error(
    JSON.stringify({
      FailedEntryCount: entries,
      Entries: Array.from({ length: entries }, () => ({
        ErrorCode: "InternalFailure",
        ErrorMessage: message,
      })),
    }),
    { cause: error },
  );
  named.name = "EventBridge.FailedEntry";
  return named;
}

/**
 * The wait before each retry of every state with a `Retry`, instead of the ASL's backoff; undefined
 * keeps the ASL's own intervals. Which errors are retried, and how often, stays the ASL's.
 */
export function retryIntervals(
  asl: AslDefinition,
  delayMs: number | undefined,
): Record<string, number> | undefined {
  if (delayMs === undefined) return undefined;
  return Object.fromEntries(
    Object.entries(asl.States)
      .filter(([, s]) => Array.isArray(s.Retry))
      .map(([name]) => [name, delayMs]),
  );
}

/**
 * An inline draft too deep for the engine's JSONPath handling, which recurses over the input and
 * would overflow before Validate runs, is refused here with the reason Validate would give.
 */
export function boundInlineDraft<T extends { draft?: unknown; rejectWith?: InputRejection | undefined }>(
  input: T,
  maxDraftDepth: number | undefined,
): T {
  if (input.draft === undefined) return input;
  const limit = maxDraftDepth ?? DEFAULT_MAX_DRAFT_DEPTH;
  const depth = valueDepth(input.draft, limit);
  if (depth <= limit) return input;
  const { draft, ...rest } = input;
  const draftId = topLevelField(draft, "id");
  return {
    ...rest,
    rejectWith: {
      reason: "too_deep",
      message: new DraftTooDeepError(depth, limit).message,
      ...(draftId && { draftId }),
    },
  } as T;
}

/** Runs one execution named `runId` to its end, keeping its event history like the console does. */
export async function runExecution(
  machine: StateMachine,
  input: unknown,
  runId: string,
  tasks: { handlers: Record<string, TaskHandler>; retryIntervals: Record<string, number> | undefined },
): Promise<ExecutionSummary> {
  const execution = machine.run(input as never, {
    overrides: {
      taskResourceLocalHandlers: tasks.handlers as never,
      ...(tasks.retryIntervals && { retryIntervalOverrides: tasks.retryIntervals }),
    },
    context: {
      Execution: { Name: runId, Id: `arn:aws:states:local:000000000000:execution:redraft:${runId}` },
      State: { EnteredTime: ENTERED_TIME_MARKER },
      // What a model state sends with its work; the local queue answers in-process, by the promise.
      Task: { Token: `local:${runId}` },
    },
  });
  const history: HistoryEvent[] = [];
  const collecting = (async () => {
    for await (const event of execution.eventLogs) history.push(toHistory(event as LibraryEvent));
  })();
  try {
    const output = await execution.result;
    await collecting;
    return { runId, status: "SUCCEEDED", terminalState: lastState(history), output, history };
  } catch (error) {
    // An engine fault outside any state ends no event stream: take the events so far, do not wait.
    await Promise.race([collecting, new Promise((resolve) => setImmediate(resolve))]);
    const e = error as Error & { cause?: { name?: string; message?: string } };
    const failed = [...history].reverse().find((h) => h.type === "ExecutionFailed");
    return {
      runId,
      status: "FAILED",
      terminalState: lastState(history),
      error: { error: failed?.error ?? e.name, cause: failed?.cause ?? e.message },
      history,
    };
  }
}

function lastState(history: readonly HistoryEvent[]): string {
  return [...history].reverse().find((h) => h.type === "StateEntered")?.state ?? "";
}

/** aws-local-stepfunctions does not export its event type; these are the fields read here. */
interface LibraryEvent {
  type: string;
  timestamp: number;
  state?: { name: string; type: string; input?: unknown; output?: unknown };
  Error?: unknown;
  Cause?: unknown;
  retry?: { attempt: number };
}

function toHistory(event: LibraryEvent): HistoryEvent {
  const h: HistoryEvent = { type: event.type, at: new Date(event.timestamp).toISOString() };
  if (event.state) {
    h.state = event.state.name;
    h.stateType = event.state.type;
    if (event.type === "StateEntered") h.input = event.state.input;
    if (event.type === "StateExited") h.output = event.state.output;
  }
  if (event.Error !== undefined) {
    h.error = String(event.Error);
    h.cause = typeof event.Cause === "string" ? event.Cause : JSON.stringify(event.Cause);
  }
  if (event.retry) h.retry = { attempt: event.retry.attempt };
  return h;
}
