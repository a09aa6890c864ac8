import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { CreateTableCommand, type CreateTableCommandInput } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { GetExecutionHistoryCommand, SFNClient, type HistoryEvent as SfnEvent } from "@aws-sdk/client-sfn";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { type AwsClientStub, mockClient } from "aws-sdk-client-mock";
import pLimit from "p-limit";
import { notificationKey } from "../../cli/cloud/submit.js";
import { BatchEvents, SubmissionEvent } from "../../contracts/events.js";
import {
  BATCH_KEY_PREFIX,
  BATCH_SORT_KEY,
  BATCHES_PARTITION,
  INDEXES,
  PARTITION_KEY,
  SORT_KEY,
} from "../../contracts/table.js";
import { DynamoBatchStore } from "../../functions/lib/batch-store.js";
import { DynamoRunStore } from "../../functions/lib/dynamo-store.js";
import { S3BlobStore } from "../../functions/lib/s3-blobs.js";
import { startFor } from "../../functions/start.js";
import { type LocalDynamo, startDynalite } from "../../local/dynalite.js";
import { type CorrectDraftOptions, correctDraft } from "../../local/in-process.js";
import type { BatchInput } from "../../shared/batch/record.js";
import { aggregateBatch, prepareBatch, readMapItems } from "../../shared/batch/steps.js";
import { readUpload } from "../../shared/loop/steps/input.js";
import type { ModelClient } from "../../shared/model/types.js";
import { PackRegistry } from "../../shared/registry.js";
import { BATCHES_PREFIX, DRAFTS_PREFIX } from "../../shared/store/bucket-layout.js";
import { refusedDraftKey } from "../../shared/store/draft-ref.js";
import { getByEventKey } from "../../shared/store/event-key.js";
import { synthesize } from "../infra/synth.js";
import { synthesizedAsl } from "../workflow/harness.js";
import { LOCAL_CREDENTIALS, type LocalS3, startS3 } from "./s3.js";

/**
 * A deployed stack with no AWS account, for cloud mode's tests and the smoke script:
 *
 * - the table exactly as the synthesized template declares it, in dynalite; the bucket in s3rver,
 *   versioned as the stack's is (s3rver keeps no versions, so each PUT is given a version id);
 *   both reached by the command line through the SDK's standard endpoint variables;
 * - CloudFormation (the stack's outputs), Step Functions' history and EventBridge through
 *   aws-sdk-client-mock;
 * - the deployment's side: each trigger the stack has — an upload under `drafts/` or `batches/`
 *   (delivered with its key in notification form, `+` for a space, so clients must follow either
 *   spelling), a `Draft Submitted` or `Batch Submitted` event — named by λ start's own `startFor`, and
 *   the per-draft state machine run in-process over the handlers' own stores (correctDraft with
 *   DynamoRunStore and S3BlobStore). A batch runs as the batch machine's steps do (CreateBatch's
 *   record, prepareBatch, one child per item named `<batchId>-<line>`, aggregateBatch); the
 *   Distributed Map itself is not emulated. A delivery is handled before the request that caused it
 *   returns, so a client's first read already finds the outcome.
 */
const STACK = "Redraft-test";
export const BUCKET = "redraft-test-drafts";
export const TABLE = "redraft-test-runs";
export const BUS = "redraft-test";
export const STATE_MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:redraft-test";
/** The model queues' URLs, the stack's `CorrectQueueUrl` / `JudgeQueueUrl` outputs. */
export const MODEL_QUEUES = {
  correct: "https://sqs.eu-west-1.amazonaws.com/123456789012/Redraft-test-ModelQueuecorrect",
  judge: "https://sqs.eu-west-1.amazonaws.com/123456789012/Redraft-test-ModelQueuejudge",
} as const;
/** A stack deployed before the model queues were outputs: `--stack redraft-before-queues` finds the same resources without them. */
export const STACK_WITHOUT_QUEUE_OUTPUTS = "redraft-before-queues";

export interface Deployment {
  dynamo: LocalDynamo;
  s3: LocalS3;
  runs: DynamoRunStore;
  blobs: S3BlobStore;
  batches: DynamoBatchStore;
  /** Every event put on the bus, in order. */
  bus: PutEventsRequestEntry[];
  /** Runs the deployment started, by execution name. */
  started: string[];
  /** Resolves once every detached delivery's run has ended. */
  idle(): Promise<void>;
  /** Detached deliveries that failed before their run started. */
  failedDeliveries: { count: number };
  /**
   * Step Functions' history of an execution, by run id, where a test gives one; any other execution
   * answers the canned path Validate → HasErrors? → NoModelConfigured → succeeded.
   */
  histories: Map<string, Omit<SfnEvent, "previousEventId">[]>;
  /** The run id of every GetExecutionHistory call, in order (a throttled, account-wide API). */
  historyReads: string[];
  /**
   * What SQS's GetQueueAttributes answers, by queue URL: the queue's message counts, or the name of
   * the error it throws (`AccessDenied`: a reviewer policy without sqs:GetQueueAttributes). A queue
   * not set holds no message. Every call is recorded in `queueReads`.
   */
  queueAttributes: Map<string, { visible: number; notVisible: number } | string>;
  queueReads: { QueueUrl?: string; AttributeNames?: string[] }[];
  close(): Promise<void>;
}

export interface DeploymentOptions {
  model?: ModelClient;
  /** What every run of the per-draft machine gets beyond the stores (tests/cloud/burst.ts, bench:burst: Lambda's throttling). */
  correct?: Pick<CorrectDraftOptions, "invoke" | "retryDelayMs" | "onExecution" | "modelQueue">;
  /** Sockets of the deployment's S3 client (the runs' blob store). @default the SDK's 50 */
  maxSockets?: number;
  /**
   * An upload's PUT answers before its run ends (as S3 does) instead of after; `idle()` waits for the
   * runs. For a burst whose runs outlast an HTTP request. @default false
   */
  detached?: boolean;
  /** How many items of a batch run at once (the Distributed Map's MaxConcurrency). @default 1 */
  batchConcurrency?: number;
}

export async function startDeployment(options: DeploymentOptions = {}): Promise<Deployment> {
  await synthesizedAsl();
  const inFlight = new Set<Promise<void>>();
  const failedDeliveries = { count: 0 };
  const versions = new AsyncLocalStorage<{ versionId: string; delivered?: Promise<void> }>();
  const [dynamo, s3] = await Promise.all([
    startDynalite(),
    startS3(BUCKET, {
      ...(options.maxSockets && { maxSockets: options.maxSockets }),
      // The stack's bucket is versioned: every PUT gets a version id, and its upload event waits
      // for the deployment to handle it before the response leaves.
      around: async (ctx, next) => {
        if (ctx.method !== "PUT" || ctx.querystring.includes("tagging")) return next();
        const put = { versionId: randomUUID().replace(/-/g, "") } as {
          versionId: string;
          delivered?: Promise<void>;
        };
        await versions.run(put, next);
        if (ctx.status === 200) ctx.set("x-amz-version-id", put.versionId);
        if (options.detached && put.delivered) {
          // A delivery that fails (λ start could not read the upload) starts no run: counted, not thrown.
          const delivered = put.delivered.catch(() => {
            failedDeliveries.count += 1;
          });
          inFlight.add(delivered);
          void delivered.then(() => inFlight.delete(delivered));
        } else await put.delivered;
      },
      onCreated: (bucket, key) => {
        const put = versions.getStore();
        if (put) put.delivered = uploaded(bucket, key, put.versionId);
      },
    }),
  ]);
  const { template } = synthesize("dev");
  const [table] = Object.values(template.findResources("AWS::DynamoDB::Table")) as {
    Properties: Omit<CreateTableCommandInput, "TableName">;
  }[];
  const { KeySchema, AttributeDefinitions, GlobalSecondaryIndexes } = table?.Properties ?? {};
  await dynamo.client.send(
    new CreateTableCommand({
      TableName: TABLE,
      BillingMode: "PAY_PER_REQUEST",
      KeySchema,
      AttributeDefinitions,
      GlobalSecondaryIndexes,
    }),
  );
  const savedEnv = { ...process.env };
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_REGION: "eu-west-1",
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
  });
  const runs = new DynamoRunStore({ client: dynamo.client, tableName: TABLE, ttlDays: 7 });
  const blobs = new S3BlobStore({ client: s3.client, bucket: BUCKET });
  const batches = new DynamoBatchStore({ client: dynamo.client, tableName: TABLE });
  const bus: PutEventsRequestEntry[] = [];
  const started: string[] = [];
  const registry = new PackRegistry();

  async function runDraft(
    draft: unknown,
    runId: string,
    extra: { parentRunId?: string; submissionId?: string },
  ) {
    started.push(runId);
    await correctDraft(draft, {
      registry,
      runs,
      blobs,
      model: options.model,
      runId,
      ...options.correct,
      ...extra,
    });
  }

  /** CreateBatch, PrepareItems, RunItems (each child a run of the per-draft machine), AggregateBatch. */
  async function runBatch(input: BatchInput) {
    started.push(input.batchId);
    const startedAt = new Date().toISOString();
    await DynamoDBDocumentClient.from(dynamo.client).send(
      new PutCommand({
        TableName: TABLE,
        Item: {
          [PARTITION_KEY]: `${BATCH_KEY_PREFIX}${input.batchId}`,
          [SORT_KEY]: BATCH_SORT_KEY,
          batchId: input.batchId,
          status: "running",
          manifest: JSON.stringify(input.manifestRef),
          pricing: input.pricing ?? "on_demand",
          startedAt,
          [INDEXES.byCreated.partitionKey]: BATCHES_PARTITION,
          [INDEXES.byCreated.sortKey]: `${startedAt}#${input.batchId}`,
        },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    );
    const deps = { blobs, runs, bucketName: BUCKET };
    const prepared = await prepareBatch(input, deps);
    const limit = pLimit(options.batchConcurrency ?? 1);
    await Promise.all(
      (await readMapItems(blobs, prepared.itemsKey)).map((item) =>
        limit(async () => {
          const text = await blobs.get(item.draftRef.key);
          let draft: unknown = text;
          try {
            draft = JSON.parse(text);
          } catch {
            // left as text: Validate rejects it
          }
          await runDraft(draft, item.runId, { submissionId: input.batchId });
        }),
      ),
    );
    await aggregateBatch({ batchId: input.batchId, prepared }, { ...deps, batches });
  }

  /**
   * The draft a `Draft Submitted` carries, or the upload its `draftRef` names, read as Validate reads
   * it (shared/loop/steps/input.ts): only where shared/store/draft-ref.ts lets a run read; a key it
   * refuses, or no object there, is given on as text for Validate to reject with its reason.
   */
  async function submittedDraft(
    detail: { draft?: unknown; draftRef?: { key?: unknown; versionId?: unknown } },
    runId: string,
  ) {
    const ref = detail.draftRef;
    if (!ref || typeof ref.key !== "string") return detail.draft;
    if (refusedDraftKey(ref.key, runId)) return undefined;
    const text = await readUpload(
      blobs,
      ref.key,
      typeof ref.versionId === "string" ? ref.versionId : undefined,
    ).catch(() => undefined);
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }

  /** An `Object Created` as EventBridge delivers it to λ start, its key in notification form. */
  async function uploaded(bucket: string, rawKey: string, versionId: string) {
    if (!rawKey.startsWith(DRAFTS_PREFIX) && !rawKey.startsWith(BATCHES_PREFIX)) return;
    const key = notificationKey(rawKey);
    const { name, input, machine } = startFor({
      id: randomUUID(),
      source: "aws.s3",
      detail: { bucket: { name: bucket }, object: { key, "version-id": versionId } },
    } as never);
    if (machine === "batch") return runBatch(input as BatchInput);
    // Validate finds the object under the key as the event gives it, or its decoded form.
    const { text } = await getByEventKey(blobs, key, versionId);
    let draft: unknown = text;
    try {
      draft = JSON.parse(text);
    } catch {
      // left as text: Validate rejects it
    }
    await runDraft(draft, name, {});
  }

  const cfn: AwsClientStub<CloudFormationClient> = mockClient(CloudFormationClient);
  // The CDK app's stack is Redraft-<env>: --stack redraft-test finds it by that spelling.
  cfn
    .on(DescribeStacksCommand, { StackName: "redraft-test" })
    .rejects(
      Object.assign(new Error("Stack with id redraft-test does not exist"), { name: "ValidationError" }),
    );
  cfn.on(DescribeStacksCommand, { StackName: STACK }).resolves({
    Stacks: [
      {
        StackName: STACK,
        CreationTime: new Date(),
        StackStatus: "CREATE_COMPLETE",
        Outputs: [
          { OutputKey: "TableName", OutputValue: TABLE },
          { OutputKey: "BucketName", OutputValue: BUCKET },
          { OutputKey: "EventBusName", OutputValue: BUS },
          { OutputKey: "StateMachineArn", OutputValue: STATE_MACHINE },
          { OutputKey: "CorrectQueueUrl", OutputValue: MODEL_QUEUES.correct },
          { OutputKey: "JudgeQueueUrl", OutputValue: MODEL_QUEUES.judge },
        ],
      },
    ],
  });
  cfn.on(DescribeStacksCommand, { StackName: STACK_WITHOUT_QUEUE_OUTPUTS }).resolves({
    Stacks: [
      {
        StackName: STACK_WITHOUT_QUEUE_OUTPUTS,
        CreationTime: new Date(),
        StackStatus: "UPDATE_COMPLETE",
        Outputs: [
          { OutputKey: "TableName", OutputValue: TABLE },
          { OutputKey: "BucketName", OutputValue: BUCKET },
          { OutputKey: "EventBusName", OutputValue: BUS },
          { OutputKey: "StateMachineArn", OutputValue: STATE_MACHINE },
        ],
      },
    ],
  });
  const sqs: AwsClientStub<SQSClient> = mockClient(SQSClient);
  const queueAttributes = new Map<string, { visible: number; notVisible: number } | string>();
  const queueReads: { QueueUrl?: string; AttributeNames?: string[] }[] = [];
  sqs
    .on(GetQueueAttributesCommand)
    .callsFake(async (input: { QueueUrl?: string; AttributeNames?: string[] }) => {
      queueReads.push(input);
      const given = queueAttributes.get(input.QueueUrl ?? "") ?? { visible: 0, notVisible: 0 };
      if (typeof given === "string")
        throw Object.assign(new Error(`${given}: not authorized to perform sqs:GetQueueAttributes`), {
          name: given,
        });
      // SQS answers the counts as strings, only those asked for.
      const all: Record<string, string> = {
        ApproximateNumberOfMessages: String(given.visible),
        ApproximateNumberOfMessagesNotVisible: String(given.notVisible),
      };
      return {
        Attributes: Object.fromEntries(
          Object.entries(all).filter(([name]) => input.AttributeNames?.includes(name)),
        ),
      };
    });
  const sfn: AwsClientStub<SFNClient> = mockClient(SFNClient);
  const histories = new Map<string, Omit<SfnEvent, "previousEventId">[]>();
  const historyReads: string[] = [];
  sfn.on(GetExecutionHistoryCommand).callsFake(async ({ executionArn }: { executionArn: string }) => {
    historyReads.push(executionArn.split(":").at(-1) ?? "");
    const given = histories.get(executionArn.split(":").at(-1) ?? "");
    if (given) return { events: given.map((e) => ({ ...e, previousEventId: 0, executionArn })) };
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    return {
      events: [
        { id: 1, type: "ExecutionStarted", timestamp: at(0), executionStartedEventDetails: {} },
        { id: 2, type: "TaskStateEntered", timestamp: at(1), stateEnteredEventDetails: { name: "Validate" } },
        {
          id: 3,
          type: "ChoiceStateEntered",
          timestamp: at(2),
          stateEnteredEventDetails: { name: "HasErrors?" },
        },
        {
          id: 4,
          type: "PassStateEntered",
          timestamp: at(3),
          stateEnteredEventDetails: { name: "NoModelConfigured" },
        },
        { id: 5, type: "ExecutionSucceeded", timestamp: at(4), executionSucceededEventDetails: {} },
      ].map((e) => ({ ...e, previousEventId: 0, executionArn })),
    };
  });
  const events: AwsClientStub<EventBridgeClient> = mockClient(EventBridgeClient);
  events.on(PutEventsCommand).callsFake(async ({ Entries }: { Entries: PutEventsRequestEntry[] }) => {
    const answered = [];
    for (const entry of Entries) {
      bus.push(entry);
      const id = `evt-${randomUUID()}`;
      const detail = JSON.parse(entry.Detail ?? "{}");
      if (entry.Source === SubmissionEvent.source) {
        const { name, input, machine } = startFor({
          id,
          source: entry.Source,
          "detail-type": entry.DetailType,
          detail,
        } as never);
        if (entry.DetailType === BatchEvents.submitted && machine === "batch")
          await runBatch(input as BatchInput);
        else if (entry.DetailType === SubmissionEvent.detailType)
          await runDraft(await submittedDraft(detail, name), name, {
            ...(detail.parentRunId && { parentRunId: detail.parentRunId }),
          });
      }
      answered.push({ EventId: id });
    }
    return { FailedEntryCount: 0, Entries: answered };
  });

  return {
    dynamo,
    s3,
    runs,
    blobs,
    batches,
    bus,
    started,
    failedDeliveries,
    histories,
    historyReads,
    queueAttributes,
    queueReads,
    async idle() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    async close() {
      cfn.restore();
      sfn.restore();
      sqs.restore();
      events.restore();
      process.env = savedEnv;
      await Promise.all([dynamo.close(), s3.close()]);
    },
  };
}
