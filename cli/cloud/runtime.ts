import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { S3Client } from "@aws-sdk/client-s3";
import { GetExecutionHistoryCommand, SFNClient, type HistoryEvent as SfnEvent } from "@aws-sdk/client-sfn";
import { SQSClient } from "@aws-sdk/client-sqs";
import { UsageError } from "../../app/inputs.js";
import type { ReviewRuntime } from "../../app/review.js";
import { OUTCOME_EVENT_SOURCE } from "../../contracts/events.js";
import { DynamoBatchStore } from "../../functions/lib/batch-store.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import type { ExecutionSummary, HistoryEvent } from "../../local/asl-interpreter.js";
import { PackRegistry } from "../../shared/registry.js";
import { blobKeys } from "../../shared/store/bucket-layout.js";
import type { RunRecord } from "../../shared/store/types.js";
import { type CloudResources, consoleUrl, executionArn } from "./resources.js";
import { type CloudWaiting, modelSlotWait, type QueueDepth, queueDepth, queueOfWait } from "./waiting.js";

/** Clients the cloud runtime sends through; each defaults to the SDK's own chain (credentials, region, endpoint variables). */
export interface CloudClients {
  dynamo?: DynamoDBClient;
  s3?: S3Client;
  sfn?: SFNClient;
  events?: EventBridgeClient;
  sqs?: SQSClient;
}

/**
 * An emulator behind `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` is addressed path-style (its host
 * has no bucket subdomains); AWS itself virtual-hosted, the SDK's default.
 */
const pathStyle = () => Boolean(process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL);

/**
 * A deployed stack seen through the same stores its handlers write (DynamoRunStore, S3BlobStore),
 * for `redraft --stack …`: what `runs`, `show`, `export`, `batches` and `review` need of a runtime.
 */
export class CloudRuntime implements ReviewRuntime {
  readonly resources: CloudResources;
  readonly dynamo: DynamoDBClient;
  /** The clients a submission sends through (cli/cloud/submit.ts). */
  readonly s3: S3Client;
  readonly events: EventBridgeClient;
  readonly runs: DynamoRunStore;
  readonly blobs: S3BlobStore;
  readonly batches: DynamoBatchStore;
  readonly deps: { registry: PackRegistry; runs: DynamoRunStore; blobs: S3BlobStore };
  readonly #sfn: SFNClient;
  /** Only GetQueueAttributes of the model queues: how deep the queue a waiting run is in. */
  readonly #sqs: SQSClient;
  /**
   * The reviewer policy allows `Draft Reviewed` only: λ outcome announces an approval as `Draft
   * Validated` once the run item says so, and counts the decision (functions/outcome.ts).
   */
  readonly announcesApproval = false;
  /** Where messages say the runs are: the stack, or the table. */
  readonly where: string;

  constructor(resources: CloudResources, clients: CloudClients = {}) {
    this.resources = resources;
    this.dynamo = clients.dynamo ?? new DynamoDBClient({});
    const s3 = clients.s3 ?? new S3Client({ forcePathStyle: pathStyle() });
    this.s3 = s3;
    this.#sfn = clients.sfn ?? new SFNClient({});
    this.#sqs = clients.sqs ?? new SQSClient({});
    this.events = clients.events ?? new EventBridgeClient({});
    this.runs = new DynamoRunStore({ client: this.dynamo, tableName: resources.table });
    this.blobs = new S3BlobStore({ client: s3, bucket: resources.bucket });
    this.batches = new DynamoBatchStore({ client: this.dynamo, tableName: resources.table });
    this.deps = { registry: new PackRegistry(), runs: this.runs, blobs: this.blobs };
    this.where = resources.stackName ? `stack ${resources.stackName}` : `table ${resources.table}`;
  }

  /** Puts one event on the project's bus, as the Announce states do (source `redraft`). */
  async publish(detailType: string, detail: Record<string, unknown>): Promise<void> {
    const bus = this.resources.bus;
    if (!bus) throw new UsageError("the stack's bus is not known: pass --bus (or --stack)");
    const { FailedEntryCount, Entries } = await this.events.send(
      new PutEventsCommand({
        Entries: [
          {
            Source: OUTCOME_EVENT_SOURCE,
            DetailType: detailType,
            Detail: JSON.stringify(detail),
            EventBusName: bus,
          },
        ],
      }),
    );
    if (FailedEntryCount) {
      const entry = Entries?.find((e) => e.ErrorCode);
      throw Object.assign(
        new Error(`${detailType} was not put on ${bus}: ${entry?.ErrorCode}: ${entry?.ErrorMessage}`),
        {
          name: "EventBridge.FailedEntry",
        },
      );
    }
  }

  /** A decided run's objects expire again like any other run's (they were kept while it awaited review). */
  async retainDecided(run: RunRecord): Promise<void> {
    const prefix = blobKeys.original(run.runId).replace(/[^/]+$/, "");
    await this.blobs.retain(prefix, run.resultRef ? [run.resultRef] : [], "standard");
  }

  /** A decision taken back: the run's objects are held for review again, as λ outcome holds them. */
  async retainAwaiting(run: RunRecord): Promise<void> {
    const prefix = blobKeys.original(run.runId).replace(/[^/]+$/, "");
    await this.blobs.retain(prefix, run.resultRef ? [run.resultRef] : [], "review");
  }

  /** The execution of a run, when the state machine is known. */
  executionArn(runId: string): string | undefined {
    return this.resources.stateMachineArn && executionArn(this.resources.stateMachineArn, runId);
  }

  consoleUrl(runId: string): string | undefined {
    const arn = this.executionArn(runId);
    return arn && consoleUrl(arn);
  }

  /**
   * The run's execution path from GetExecutionHistory, in the shape the local runtime keeps
   * (states entered, failures caught, how it ended); undefined without a state machine, or when
   * Step Functions no longer has the execution (90 days after it closed).
   */
  async history(runId: string): Promise<ExecutionSummary | undefined> {
    return (await this.historyAndWait(runId, false)).execution;
  }

  /**
   * The execution path as `history` gives it and, when `active` (the run is under way), whether it
   * waits for a model slot (cli/cloud/waiting.ts): both from one read of GetExecutionHistory, the
   * call the reviewer policy already allows for `show`.
   */
  async historyAndWait(
    runId: string,
    active: boolean,
  ): Promise<{ execution?: ExecutionSummary; waiting?: CloudWaiting }> {
    const events = await this.#events(runId);
    if (!events) return {};
    const found = modelSlotWait(events);
    this.#remember(runId, found);
    const waiting = active ? found : undefined;
    return { execution: summarize(runId, events), ...(waiting && { waiting }) };
  }

  /**
   * What the last read of each run's history said of its wait, and when it was read: the viewer
   * polls its list every second, and each read is a GetExecutionHistory, an account-wide bucket of
   * 250 refilled at 5 a second that every other reader of histories shares.
   */
  readonly #waits = new Map<string, { readAt: number; wait: CloudWaiting | undefined }>();

  #remember(runId: string, wait: CloudWaiting | undefined): void {
    // Bounded: a long-open viewer over a busy stack sees many runs come and go.
    if (this.#waits.size >= 1000) this.#waits.clear();
    this.#waits.set(runId, { readAt: Date.now(), wait });
  }

  /**
   * The viewer's question (ui/api.ts ViewerData.modelSlotWait): whether a run under way waits for a
   * model slot, since when, and how deep its queue is; what `show --stack` prints. The history read
   * within `maxAgeMs` (by this or by `history`, the run page's) is used again, its age counted to
   * now; the queue's depth is read every time (GetQueueAttributes is not the scarce call).
   */
  async modelSlotWait(
    runId: string,
    maxAgeMs = 0,
  ): Promise<{ since: string; ageSeconds: number; queue: QueueDepth } | undefined> {
    const known = this.#waits.get(runId);
    const wait =
      known && Date.now() - known.readAt <= maxAgeMs
        ? known.wait
        : (await this.historyAndWait(runId, true)).waiting;
    if (!wait) return undefined;
    const ageSeconds = Math.max(0, Math.round((Date.now() - Date.parse(wait.since)) / 1000));
    return { since: wait.since, ageSeconds, queue: await this.queueDepthOf(wait) };
  }

  /** How deep the model queue a waiting run is in (GetQueueAttributes); unknown, with why, when it cannot be read. */
  async queueDepthOf(wait: CloudWaiting): Promise<QueueDepth> {
    const urls = this.resources.modelQueues ?? {};
    const queue = queueOfWait(wait, urls);
    return queueDepth(this.#sqs, queue, urls[queue]);
  }

  async #events(runId: string): Promise<SfnEvent[] | undefined> {
    const arn = this.executionArn(runId);
    if (!arn) return undefined;
    const events: SfnEvent[] = [];
    let nextToken: string | undefined;
    try {
      do {
        const page = await this.#sfn.send(
          new GetExecutionHistoryCommand({
            executionArn: arn,
            maxResults: 1000,
            ...(nextToken && { nextToken }),
          }),
        );
        events.push(...(page.events ?? []));
        nextToken = page.nextToken;
      } while (nextToken);
    } catch (error) {
      if ((error as { name?: string }).name === "ExecutionDoesNotExist") return undefined;
      throw error;
    }
    return events;
  }
}

/** Step Functions' history events as the timeline reads them. */
function summarize(runId: string, events: readonly SfnEvent[]): ExecutionSummary {
  const history: HistoryEvent[] = [];
  let state: string | undefined;
  let terminalState = "";
  let ended: string | undefined;
  let error: { error: string; cause: string } | undefined;
  for (const event of events) {
    const at = (event.timestamp ?? new Date(0)).toISOString();
    const type = event.type ?? "";
    if (event.stateEnteredEventDetails) {
      state = event.stateEnteredEventDetails.name ?? "";
      terminalState = state;
      history.push({ type: "StateEntered", at, state, stateType: type.replace(/StateEntered$/, "") });
    } else if (/Failed$|TimedOut$/.test(type) && !type.startsWith("Execution")) {
      const details =
        event.taskFailedEventDetails ??
        event.lambdaFunctionFailedEventDetails ??
        event.taskTimedOutEventDetails;
      history.push({
        type: "StateFailed",
        at,
        ...(state && { state }),
        error: details?.error ?? type,
        cause: details?.cause ?? "",
      });
    } else if (type === "ExecutionSucceeded") ended = "SUCCEEDED";
    else if (type === "ExecutionFailed" || type === "ExecutionTimedOut" || type === "ExecutionAborted") {
      ended = type.replace(/^Execution/, "").toUpperCase();
      const details =
        event.executionFailedEventDetails ??
        event.executionTimedOutEventDetails ??
        event.executionAbortedEventDetails;
      error = { error: details?.error ?? type, cause: details?.cause ?? "" };
      history.push({ type: "ExecutionFailed", at, ...(state && { state }), ...error });
    }
  }
  // The local summary knows two ends; a deployed execution may also be running, timed out or aborted.
  const status = (ended ?? "RUNNING") as ExecutionSummary["status"];
  return { runId, status, terminalState, history, ...(error && { error }) };
}
